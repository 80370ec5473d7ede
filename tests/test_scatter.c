/* test_scatter.c — select_scatter, slice_scatter, diagonal_scatter,
 * as_strided_scatter and as_strided_copy (core/scatter_rules.c),
 * table-driven: each case runs for every pair of
 * self and src dtypes among f32, f64, i64 and bool, with self contiguous and
 * strided. The reference takes the view (select, slice, diagonal) of a
 * tensor holding its own row-major positions, which says where each element
 * of src goes; every other element is self's. src is converted to self's
 * dtype as copy_ converts. Also the errors, which name the scatter. The
 * derivatives are in test_grad_view.c, CUDA's kernels in test_cuda_shape.c. */
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/testing.h"

#define BIG INT64_MAX

static const tj_dtype dtypes[] = {TJ_F32, TJ_F64, TJ_I64, TJ_BOOL};

typedef struct scase {
    const char *op;
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
    int64_t p[4]; /* the view's int arguments in schema order (as_strided: storage_offset) */
    int nd;       /* as_strided: size and stride */
    int64_t size[4], stride[4];
} scase;

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#define S(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}

static const scase cases[] = {
    {"aten::select_scatter", S(3, 4), {0, 1}},
    {"aten::select_scatter", S(3, 4), {1, -1}},
    {"aten::select_scatter", S(2, 3, 4), {-2, 0}},
    {"aten::select_scatter", S(5), {0, 4}},
    {"aten::select_scatter", S(2, 0, 3), {2, 1}},
    {"aten::slice_scatter", S(10), {0, 2, 8, 3}},
    {"aten::slice_scatter", S(4, 6), {1, -4, BIG, 2}},
    {"aten::slice_scatter", S(4, 6), {0, 0, BIG, 1}},
    {"aten::slice_scatter", S(4, 6), {-1, 5, 2, 1}},
    {"aten::slice_scatter", S(2, 3, 4), {1, -100, 100, 2}},
    {"aten::diagonal_scatter", S(3, 4), {0, 0, 1}},
    {"aten::diagonal_scatter", S(3, 4), {2, 1, 0}},
    {"aten::diagonal_scatter", S(4, 3), {-1, 0, 1}},
    {"aten::diagonal_scatter", S(2, 3, 4), {1, -1, 0}},
    {"aten::diagonal_scatter", S(3, 4), {9, 0, 1}},
    {"aten::as_strided_scatter", S(3, 4), {1}, 2, {2, 2}, {4, 1}},
    {"aten::as_strided_scatter", S(3, 4), {0}, 2, {2, 3}, {1, 4}},
    {"aten::as_strided_scatter", S(2, 3, 2), {5}, 1, {3}, {2}},
    {"aten::as_strided_scatter", S(4), {0}, 1, {0}, {7}},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

static tj_generator *gen;

static tj_tensor *view_of(const scase *k, tj_tensor *x) {
    const int64_t *p = k->p;
    if (!strcmp(k->op, "aten::as_strided_scatter"))
        return tj_as_strided_copy(x, k->size, k->nd, k->stride, k->nd, p[0]);
    if (!strcmp(k->op, "aten::select_scatter")) return tj_select(x, p[0], p[1]);
    if (!strcmp(k->op, "aten::slice_scatter")) return tj_slice(x, p[0], p[1], p[2], p[3]);
    return tj_diagonal(x, p[0], p[1], p[2]);
}

static tj_tensor *scatter(const scase *k, tj_tensor *x, tj_tensor *src) {
    const int64_t *p = k->p;
    if (!strcmp(k->op, "aten::as_strided_scatter"))
        return tj_as_strided_scatter(x, src, k->size, k->nd, k->stride, k->nd, p[0]);
    if (!strcmp(k->op, "aten::select_scatter")) return tj_select_scatter(x, src, p[0], p[1]);
    if (!strcmp(k->op, "aten::slice_scatter")) return tj_slice_scatter(x, src, p[0], p[1], p[2], p[3]);
    return tj_diagonal_scatter(x, src, p[0], p[1], p[2]);
}

/* Row-major positions offset + sum_d i_d stride_d over the multi-indices i
 * of size: what as_strided_copy reads, computed here on its own. */
static tt_ref strided_positions(const int64_t *size, const int64_t *stride, int nd, int64_t offset) {
    tt_ref r = tt_ref_new(size, nd);
    int64_t i[4] = {0}, k = 0;
    if (r.numel == 0) return r;
    do {
        int64_t pos = offset;
        for (int d = 0; d < nd; d++) pos += i[d] * stride[d];
        r.v[k++] = (double)pos;
    } while (tt_next_index(i, size, nd));
    return r;
}

/* Where each element of the case's view of a tensor of these sizes lies, in
 * row-major positions of the tensor. */
static tt_ref view_positions(const scase *k) {
    if (!strcmp(k->op, "aten::as_strided_scatter"))
        return strided_positions(k->size, k->stride, k->nd, k->p[0]);
    tj_tensor *r = tj_arange(0, (double)tjc_numel(k->sizes, k->ndim), 1, TJ_F64);
    tj_tensor *pos = tj_view(r, k->sizes, k->ndim), *v = pos ? view_of(k, pos) : NULL;
    if (!v) fail_msg("%s: the view: %s", k->op, tj_last_error());
    tt_ref out = tt_ref_of(v);
    tj_release(v), tj_release(pos), tj_release(r);
    return out;
}

static void run_case(const scase *k, tj_dtype self_dt, tj_dtype src_dt, bool strided) {
    tj_tensor *x = tt_random(gen, k->sizes, k->ndim, self_dt, -5, 5);
    if (strided) {
        tj_tensor *s = tt_noncontiguous(gen, x);
        tj_release(x);
        x = s;
    }
    tt_ref at = view_positions(k);
    tj_tensor *src = tt_random(gen, at.sizes, at.ndim, src_dt, -5, 5);
    tj_tensor *converted = tj_to_dtype(src, self_dt); /* what copy_ would write */
    tt_ref want = tt_ref_of(x), put = tt_ref_of(converted);
    for (int64_t j = 0; j < at.numel; j++) want.v[(int64_t)at.v[j]] = put.v[j];
    tj_tensor *got = scatter(k, x, src);
    if (!got) fail_msg("%s: %s", k->op, tj_last_error());
    assert_int_equal(tj_tensor_dtype(got), self_dt);
    tt_assert_close_ref(got, &want, 0, 0);
    assert_false(tj_shares_storage(got, x));
    assert_false(tj_shares_storage(got, src));
    tt_ref_free(&at), tt_ref_free(&want), tt_ref_free(&put);
    tj_release(got), tj_release(converted), tj_release(src), tj_release(x);
}

static void test_values(void **state) {
    (void)state;
    int n = 0;
    for (int c = 0; c < N_CASES; c++)
        for (size_t a = 0; a < sizeof dtypes / sizeof dtypes[0]; a++)
            for (size_t b = 0; b < sizeof dtypes / sizeof dtypes[0]; b++)
                for (int strided = 0; strided < 2; strided++, n++)
                    run_case(&cases[c], dtypes[a], dtypes[b], strided);
    printf("  scatter cases: %d\n", n);
}

/* Every scatter of the table has cases here. */
static void test_every_scatter_has_cases(void **state) {
    (void)state;
    const char *const scatters[] = {"aten::select_scatter", "aten::slice_scatter",
                                    "aten::diagonal_scatter", "aten::as_strided_scatter"};
    for (size_t i = 0; i < sizeof scatters / sizeof scatters[0]; i++) {
        assert_non_null(tj_op_find(scatters[i]));
        bool found = false;
        for (int c = 0; c < N_CASES; c++) found |= !strcmp(cases[c].op, scatters[i]);
        if (!found) fail_msg("%s has no case", scatters[i]);
    }
    int n = 0;
    for (int id = 0; id < tj_op_count(); id++) {
        const char *name = tj_op_name(tj_op_at(id));
        size_t len = strlen(name);
        n += len > 8 && !strcmp(name + len - 8, "_scatter");
    }
    assert_int_equal(n, 4);
}

/* as_strided_copy: the elements at strided positions of self read
 * row-major, overlapping reads included, every dtype and self contiguous or
 * not. */
static void test_as_strided_copy(void **state) {
    (void)state;
    static const struct {
        int ndim;
        int64_t sizes[3];
        int nd;
        int64_t size[3], stride[3], offset;
    } cc[] = {
        {2, {3, 4}, 2, {2, 2}, {4, 1}, 1},  {2, {3, 4}, 2, {4, 3}, {1, 4}, 0},
        {2, {3, 4}, 2, {3, 3}, {1, 1}, 2},  /* overlapping windows */
        {1, {5}, 2, {2, 3}, {0, 1}, 1},      /* a repeated row */
        {3, {2, 3, 2}, 1, {0}, {3}, 11},    {2, {3, 4}, 0, {0}, {0}, 7},
    };
    int n = 0;
    for (size_t c = 0; c < sizeof cc / sizeof cc[0]; c++)
        for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
            for (int strided = 0; strided < 2; strided++, n++) {
                tj_tensor *x = tt_random(gen, cc[c].sizes, cc[c].ndim, dtypes[d], -5, 5);
                if (strided) {
                    tj_tensor *s = tt_noncontiguous(gen, x);
                    tj_release(x);
                    x = s;
                }
                tt_ref xr = tt_ref_of(x), at = strided_positions(cc[c].size, cc[c].stride, cc[c].nd, cc[c].offset);
                for (int64_t j = 0; j < at.numel; j++) at.v[j] = xr.v[(int64_t)at.v[j]];
                tj_tensor *got = tj_as_strided_copy(x, cc[c].size, cc[c].nd, cc[c].stride, cc[c].nd, cc[c].offset);
                if (!got) fail_msg("as_strided_copy case %zu: %s", c, tj_last_error());
                assert_int_equal(tj_tensor_dtype(got), dtypes[d]);
                tt_assert_close_ref(got, &at, 0, 0);
                assert_false(tj_shares_storage(got, x));
                tt_ref_free(&xr), tt_ref_free(&at);
                tj_release(got), tj_release(x);
            }
    printf("  as_strided_copy cases: %d\n", n);
}

#define EXPECT_NULL(call, msg)          \
    do {                                \
        tj_tensor *r_ = (call);         \
        assert_null(r_);                \
        tt_assert_error(msg);           \
        tj_clear_error();               \
    } while (0)

static void test_errors(void **state) {
    (void)state;
    int64_t s34[] = {3, 4}, s3[] = {3}, s4[] = {4}, s5[] = {5};
    tj_tensor *x = tj_zeros(s34, 2, TJ_F32), *v3 = tj_ones(s3, 1, TJ_F32);
    tj_tensor *v4 = tj_ones(s4, 1, TJ_F32), *v5 = tj_ones(s5, 1, TJ_F32);
    EXPECT_NULL(tj_select_scatter(x, v3, 0, 1),
                "aten::select_scatter: expected src to have a size equal to the slice of self: "
                "src has sizes [3], the slice [4]");
    EXPECT_NULL(tj_select_scatter(x, v4, 0, 3), "aten::select_scatter: index 3 is out of range");
    EXPECT_NULL(tj_select_scatter(x, v4, 2, 0), "aten::select_scatter");
    EXPECT_NULL(tj_slice_scatter(x, v4, 1, 0, BIG, 1), "src has sizes [4], the slice [3, 4]");
    EXPECT_NULL(tj_slice_scatter(x, v5, 0, 0, BIG, 0), "aten::slice_scatter");
    EXPECT_NULL(tj_diagonal_scatter(x, v4, 0, 0, 1), "src has sizes [4], the slice [3]");
    EXPECT_NULL(tj_diagonal_scatter(x, v3, 0, 1, -1), "diagonal dimensions cannot be identical");
    EXPECT_NULL(tj_diagonal_scatter(v3, v3, 0, 0, 1), "aten::diagonal_scatter");
    EXPECT_NULL(tj_select_scatter(NULL, v3, 0, 0), "aten::select_scatter");
    int64_t sz2[] = {2, 2}, st41[] = {4, 1}, st10[] = {1, 0}, st1[] = {1}, neg[] = {-1, 1};
    tj_tensor *v22 = tj_ones(sz2, 2, TJ_F32);
    EXPECT_NULL(tj_as_strided_copy(x, sz2, 2, st41, 2, 7),
                "aten::as_strided_copy: size [2, 2], stride [4, 1] and storage_offset 7 reach element 12 of self, which has 12");
    EXPECT_NULL(tj_as_strided_copy(x, sz2, 2, st1, 1, 0), "must have the same number of entries");
    EXPECT_NULL(tj_as_strided_copy(x, sz2, 2, neg, 2, 0), "must not be negative");
    EXPECT_NULL(tj_as_strided_copy(x, sz2, 2, st41, 2, -1), "storage_offset -1 is negative");
    EXPECT_NULL(tj_as_strided_scatter(x, v22, sz2, 2, st10, 2, 0),
                "aten::as_strided_scatter: size [2, 2] and stride [1, 0] pick some element more than once");
    EXPECT_NULL(tj_as_strided_scatter(x, v3, sz2, 2, st41, 2, 0), "src has sizes [3], the slice [2, 2]");
    tj_release(v22);
    tj_release(x), tj_release(v3), tj_release(v4), tj_release(v5);
}

static int setup(void **state) {
    (void)state;
    gen = tj_generator_new(77);
    return gen ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    tj_generator_free(gen);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_scatter_has_cases),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_as_strided_copy),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests_name("scatter", tests, setup, teardown);
}
