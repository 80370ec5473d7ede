/* test_view_errors.c — errors of the view and shape ops: each bad call
 * returns NULL (or -1 for list outputs) and sets a message that names the
 * op, the argument and the sizes involved, in the spirit of PyTorch's. */
#include <string.h>

#include "core/core.h"
#include "tests/support/testing.h"

#define MAXP 32
#define BIG INT64_MAX

#define EXPECT_NULL(call, needle) \
    do { tj_tensor *r_ = (call); assert_null(r_); tt_assert_error(needle); tj_clear_error(); } while (0)
#define EXPECT_FAIL(call, needle) \
    do { assert_int_equal((call), -1); tt_assert_error(needle); tj_clear_error(); } while (0)

/* Inputs shared by the tests: [3, 4], [2, 3, 4], its transpose, a 0-dim
 * tensor, an empty 1-D one and one of eight dims. */
static tj_tensor *x, *x3, *xt, *sc, *e, *x8, *out[MAXP];

static int setup(void **state) {
    (void)state;
    x = tj_zeros((int64_t[]){3, 4}, 2, TJ_F32);
    x3 = tj_zeros((int64_t[]){2, 3, 4}, 3, TJ_F32);
    xt = tj_t(x);
    sc = tj_scalar_tensor(1, TJ_F32);
    e = tj_zeros((int64_t[]){0}, 1, TJ_F32);
    x8 = tj_zeros((int64_t[]){1, 1, 1, 1, 1, 1, 1, 1}, 8, TJ_F32);
    return x && x3 && xt && sc && e && x8 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    tj_release(x), tj_release(x3), tj_release(xt), tj_release(sc), tj_release(e), tj_release(x8);
    return 0;
}

/* view and reshape: element counts, -1, and layouts a view cannot read */
static void test_view_reshape(void **state) {
    (void)state;
    EXPECT_NULL(tj_view(x, (int64_t[]){5, -1}, 2),
                "aten::view: shape [5, -1] is invalid for an input of 12 elements (sizes [3, 4])");
    EXPECT_NULL(tj_view(xt, (int64_t[]){12}, 1), "aten::view: view size is not compatible with "
                "input tensor's size and stride (sizes [4, 3], strides [1, 4], requested [12])");
    EXPECT_NULL(tj_view(xt, (int64_t[]){12}, 1), "Use reshape instead");
    EXPECT_NULL(tj_view(x, (int64_t[]){-1, -1}, 2), "only one dimension can be inferred");
    EXPECT_NULL(tj_view(x, (int64_t[]){-2, 6}, 2), "aten::view: invalid size -2 at dim 0");
    EXPECT_NULL(tj_view(e, (int64_t[]){0, -1}, 2), "-1 dim could be anything");
    EXPECT_NULL(tj_reshape(x, (int64_t[]){5}, 1), "aten::reshape: shape [5] is invalid");
    EXPECT_NULL(tj_reshape(x, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 12}, 9), "has 9 dims");
    EXPECT_NULL(tj_reshape(x, (int64_t[]){BIG, BIG, 2}, 3), "is invalid for an input of 12");
    tj_view(x, (int64_t[]){5}, 1);
    assert_int_equal(tj_last_status(), TJ_ERR_SHAPE);
    tj_clear_error();
}

/* dims out of range, repeated, or too many */
static void test_dims(void **state) {
    (void)state;
    EXPECT_NULL(tj_flatten(x3, 2, 1), "aten::flatten.using_ints: start_dim 2 comes after end_dim 1");
    EXPECT_NULL(tj_flatten(x3, 0, 3), "aten::flatten.using_ints: dim 3 is out of range");
    EXPECT_NULL(tj_squeeze_dim(x, 2), "aten::squeeze.dim: dim 2 is out of range for a tensor of 2");
    EXPECT_NULL(tj_unsqueeze(x, 3), "aten::unsqueeze: dim 3 is out of range");
    EXPECT_NULL(tj_unsqueeze(x8, 0), "aten::unsqueeze: the result would have 9 dims");
    EXPECT_NULL(tj_transpose(x, 0, -3), "aten::transpose.int: dim -3 is out of range");
    EXPECT_NULL(tj_t(x3), "aten::t: expects a tensor with <= 2 dims, but self has 3");
    EXPECT_NULL(tj_permute(x3, (int64_t[]){0, 1}, 2),
                "aten::permute: dims [0, 1] has 2 entries but the tensor has 3 dims");
    EXPECT_NULL(tj_permute(x3, (int64_t[]){0, 1, -3}, 3), "names dim 0 twice");
    EXPECT_NULL(tj_permute(x3, (int64_t[]){0, 1, 3}, 3), "aten::permute: dim 3 is out of range");
    EXPECT_NULL(tj_expand(x, (int64_t[]){3, 5}, 2), "aten::expand: the expanded size 5 must match "
                "the existing size 4 at non-singleton dim 1 (target sizes [3, 5], tensor sizes [3, 4])");
    EXPECT_NULL(tj_expand(x, (int64_t[]){4}, 1), "needs at least the tensor's 2 dims");
    EXPECT_NULL(tj_expand(x, (int64_t[]){-1, 3, 4}, 3), "-1 is not allowed at the new leading dim 0");
    EXPECT_NULL(tj_expand(x, (int64_t[]){-2, 3, 4}, 3), "invalid size -2");
    EXPECT_NULL(tj_expand(sc, (int64_t[]){BIG, BIG}, 2), "has too many elements");
}

/* select, narrow and slice: indexes and lengths */
static void test_parts(void **state) {
    (void)state;
    EXPECT_NULL(tj_select(sc, 0, 0), "aten::select.int: cannot be applied to a 0-dim tensor");
    EXPECT_NULL(tj_select(x, 1, 4), "aten::select.int: index 4 is out of range for dim 1 of size 4");
    EXPECT_NULL(tj_select(x, 0, -4), "index -4 is out of range for dim 0 of size 3");
    EXPECT_NULL(tj_narrow(x, 1, 2, 3), "aten::narrow: start (2) + length (3) exceeds the size 4");
    EXPECT_NULL(tj_narrow(x, 0, 0, -1), "length must be non-negative");
    EXPECT_NULL(tj_narrow(x, 0, 4, 0), "start 4 is out of range for dim 0 of size 3");
    EXPECT_NULL(tj_narrow(sc, 0, 0, 1), "cannot be applied to a 0-dim tensor");
    EXPECT_NULL(tj_slice(x, 0, 0, 2, 0), "aten::slice.Tensor: step must be positive, got 0");
    EXPECT_NULL(tj_slice(x, 2, 0, 2, 1), "aten::slice.Tensor: dim 2 is out of range");
}

/* chunk, split and unbind */
static void test_split(void **state) {
    (void)state;
    EXPECT_FAIL(tj_chunk(x, 0, 0, out, MAXP), "aten::chunk: chunks must be greater than 0, got 0");
    EXPECT_FAIL(tj_chunk(sc, 2, 0, out, MAXP), "aten::chunk: cannot be applied to a 0-dim tensor");
    EXPECT_FAIL(tj_chunk(x, 3, 0, out, 2), "aten::chunk: produces 3 outputs but the output array holds 2");
    EXPECT_FAIL(tj_chunk(e, BIG, 0, out, MAXP), "aten::chunk: would produce 9223372036854775807 outputs");
    EXPECT_FAIL(tj_split(x, -1, 0, out, MAXP), "aten::split.Tensor: split_size must be positive");
    EXPECT_FAIL(tj_split(x, 0, 1, out, MAXP), "got 0 for dim 1 of size 4");
    EXPECT_FAIL(tj_split_with_sizes(x, (int64_t[]){2, 3}, 2, 1, out, MAXP), "aten::split_with_sizes: "
                "split_sizes [2, 3] must sum exactly to 4");
    EXPECT_FAIL(tj_split_with_sizes(x, (int64_t[]){2, 2}, 2, 0, out, MAXP),
                "split_sizes [2, 2] must sum exactly to 3, the size of dim 0");
    EXPECT_FAIL(tj_split_with_sizes(x, (int64_t[]){5, -2}, 2, 0, out, MAXP), "has a negative entry");
    EXPECT_FAIL(tj_unbind(sc, 0, out, MAXP), "aten::unbind.int: cannot be applied to a 0-dim tensor");
    EXPECT_FAIL(tj_unbind(x, 2, out, MAXP), "aten::unbind.int: dim 2 is out of range");
}

/* cat and stack: which tensor of the list is wrong, and how */
static void test_cat_stack(void **state) {
    (void)state;
    tj_tensor *bad_ndim[] = {x, x3}, *bad_size[] = {x, x, x3}, *zero[] = {x, sc};
    tj_tensor *with_null[] = {x, NULL};
    EXPECT_NULL(tj_cat(NULL, 0, 0), "aten::cat: expected a non-empty list of tensors");
    EXPECT_NULL(tj_cat(zero, 2, 0), "aten::cat: zero-dimensional tensor (at position 1) cannot be "
                "concatenated");
    EXPECT_NULL(tj_cat(bad_ndim, 2, 0), "aten::cat: tensors must have the same number of dims: "
                "tensor 0 has 2 (sizes [3, 4]) but tensor 1 has 3 (sizes [2, 3, 4])");
    tj_tensor *x3v = tj_view(x3, (int64_t[]){2, 12}, 2);
    bad_size[2] = x3v;
    EXPECT_NULL(tj_cat(bad_size, 3, 0), "aten::cat: sizes of tensors must match except in dim 0: "
                "expected size 4 but got size 12 at dim 1 for tensor number 2 in the list");
    EXPECT_NULL(tj_cat(bad_size, 2, 2), "aten::cat: dim 2 is out of range");
    EXPECT_NULL(tj_cat(with_null, 2, 0), "aten::cat: element 1 of 'tensors' is NULL");
    EXPECT_NULL(tj_stack(NULL, 0, 0), "aten::stack: expected a non-empty list of tensors");
    EXPECT_NULL(tj_stack(bad_size, 3, 0), "aten::stack: expects each tensor to be equal size, but "
                "got [3, 4] at entry 0 and [2, 12] at entry 2");
    EXPECT_NULL(tj_stack(bad_size, 2, 3), "aten::stack: dim 3 is out of range");
    tj_tensor *eights[] = {x8, x8};
    EXPECT_NULL(tj_stack(eights, 2, 0), "aten::stack: the result would have 9 dims");
    tj_release(x3v);
}

/* a NULL input gives NULL and keeps the first error */
static void test_null_inputs(void **state) {
    (void)state;
    tj_clear_error();
    EXPECT_NULL(tj_view(NULL, (int64_t[]){3, 4}, 2), "aten::view: argument 'self' is NULL");
    EXPECT_NULL(tj_contiguous(tj_t(x3)), "aten::t: expects a tensor with <= 2 dims");
    EXPECT_FAIL(tj_chunk(NULL, 2, 0, out, MAXP), "aten::chunk: argument 'self' is NULL");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_reshape), cmocka_unit_test(test_dims),
        cmocka_unit_test(test_parts),        cmocka_unit_test(test_split),
        cmocka_unit_test(test_cat_stack),    cmocka_unit_test(test_null_inputs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
