/* test_tensor.c — the tensor core: creation, accessors, tj_item, printing,
 * names, clone and dtype conversion, reference counting, scopes and the
 * error API. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/testing.h"

static long refs(const tj_tensor *t) { return atomic_load(&t->refcount); }

static int clear(void **state) {
    (void)state;
    tj_clear_error();
    return 0;
}

#define EXPECT_ERROR(call, status, text)                  \
    do {                                                  \
        tj_clear_error();                                 \
        assert_null(call);                                \
        assert_int_equal(tj_last_status(), status);       \
        tt_assert_error(text);                            \
        tj_clear_error();                                 \
    } while (0)

/* ---- creation ------------------------------------------------------------------ */

static void creation_functions(void **state) {
    (void)state;
    int64_t s[3] = {2, 3, 4};
    tj_tensor *e = tj_empty(s, 3, TJ_F64);
    assert_non_null(e);
    assert_int_equal(tj_ndim(e), 3);
    assert_int_equal(tj_numel(e), 24);
    assert_int_equal(tj_strides(e)[0], 12);
    assert_int_equal(tj_strides(e)[1], 4);
    assert_int_equal(tj_strides(e)[2], 1);
    assert_int_equal(tj_tensor_dtype(e), TJ_F64);
    assert_true(tj_is_contiguous(e));
    assert_int_equal(tj_storage_offset(e), 0);
    assert_int_equal(tj_tensor_device(e).type, TJ_CPU);
    assert_int_equal((uintptr_t)tj_data(e) % 64, 0);
    tj_release(e);

    for (tj_dtype d = TJ_F32; d < TJ_NUM_DTYPES; d++) {
        tj_tensor *z = tj_zeros(s, 2, d), *o = tj_ones(s, 2, d), *f = tj_full(s, 2, -3, d);
        tt_assert_values(z, ((double[]){0, 0, 0, 0, 0, 0}), 6, 0);
        tt_assert_values(o, ((double[]){1, 1, 1, 1, 1, 1}), 6, 0);
        double v = d == TJ_BOOL ? 1 : -3;
        tt_assert_values(f, ((double[]){v, v, v, v, v, v}), 6, 0);
        assert_int_equal(tj_tensor_dtype(f), d);
        tj_release(z);
        tj_release(o);
        tj_release(f);
    }
    tj_tensor *sc = tj_scalar_tensor(2.5, TJ_F32);
    assert_int_equal(tj_ndim(sc), 0);
    assert_int_equal(tj_numel(sc), 1);
    assert_true(tj_is_contiguous(sc));
    tt_assert_values(sc, ((double[]){2.5}), 1, 0);
    tj_release(sc);
    int64_t zero_sizes[2] = {0, 5};
    tj_tensor *empty = tj_zeros(zero_sizes, 2, TJ_I64);
    assert_int_equal(tj_numel(empty), 0);
    assert_true(tj_is_contiguous(empty));
    tj_release(empty);
}

static void creation_errors(void **state) {
    (void)state;
    int64_t neg[2] = {3, -1}, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    int64_t huge[3] = {INT64_C(1) << 40, INT64_C(1) << 40, 4}, s = 3;
    EXPECT_ERROR(tj_empty(neg, 2, TJ_F32), TJ_ERR_ARG, "tj_empty: size -1 at dim 1 is negative");
    EXPECT_ERROR(tj_zeros(nine, 9, TJ_F32), TJ_ERR_ARG, "tj_zeros: 9 dims requested");
    EXPECT_ERROR(tj_ones(NULL, 2, TJ_F32), TJ_ERR_ARG, "tj_ones: sizes is NULL");
    EXPECT_ERROR(tj_full(&s, 1, 1, (tj_dtype)7), TJ_ERR_DTYPE, "tj_full: invalid dtype 7");
    EXPECT_ERROR(tj_full(&s, 1, 1e19, TJ_I64), TJ_ERR_ARG, "tj_full: value 1e+19 does not fit");
    EXPECT_ERROR(tj_full(&s, 1, NAN, TJ_I64), TJ_ERR_ARG, "does not fit in i64");
    EXPECT_ERROR(tj_empty(huge, 3, TJ_F32), TJ_ERR_MEMORY,
                 "tj_empty: sizes [1099511627776, 1099511627776, 4] hold more elements than can "
                 "be addressed");
    EXPECT_ERROR(tj_from_array(NULL, &s, 1, TJ_F32), TJ_ERR_ARG, "tj_from_array: data is NULL");
}

static void arange(void **state) {
    (void)state;
    tj_scope_begin();
    tj_tensor *a = tj_arange(0, 5, 1, TJ_I64);
    assert_int_equal(tj_tensor_dtype(a), TJ_I64);
    tt_assert_values(a, ((double[]){0, 1, 2, 3, 4}), 5, 0);
    tt_assert_values(tj_arange(5, 0, -1.5, TJ_F32), ((double[]){5, 3.5, 2, 0.5}), 4, 0);
    tt_assert_values(tj_arange(2, -2, -1, TJ_F64), ((double[]){2, 1, 0, -1}), 4, 0);
    tt_assert_values(tj_arange(0, 1, 0.25, TJ_F64), ((double[]){0, 0.25, 0.5, 0.75}), 4, 0);
    tt_assert_values(tj_arange(0, 10, 3, TJ_I64), ((double[]){0, 3, 6, 9}), 4, 0);
    tt_assert_values(tj_arange(-3, 0, 1, TJ_F32), ((double[]){-3, -2, -1}), 3, 0);
    assert_int_equal(tj_numel(tj_arange(1, 1, 1, TJ_F32)), 0);
    assert_int_equal(tj_numel(tj_arange(1, 1, -1, TJ_F32)), 0);
    assert_int_equal(tj_numel(tj_arange(0, 1, 0.1, TJ_F64)), 10);
    tj_scope_end();
    EXPECT_ERROR(tj_arange(0, 5, 0, TJ_F32), TJ_ERR_ARG, "tj_arange: step must be nonzero");
    EXPECT_ERROR(tj_arange(0, 5, -1, TJ_F32), TJ_ERR_ARG,
                 "tj_arange: step -1 has the wrong sign for start=0, end=5");
    EXPECT_ERROR(tj_arange(5, 0, 1, TJ_F32), TJ_ERR_ARG, "wrong sign");
    EXPECT_ERROR(tj_arange(0, NAN, 1, TJ_F32), TJ_ERR_ARG, "finite");
    EXPECT_ERROR(tj_arange(0, INFINITY, 1, TJ_F32), TJ_ERR_ARG, "finite");
    EXPECT_ERROR(tj_arange(0, 1, 0, TJ_F32), TJ_ERR_ARG, "nonzero");
    EXPECT_ERROR(tj_arange(0, 2, 1, TJ_BOOL), TJ_ERR_DTYPE, "tj_arange: bool");
    EXPECT_ERROR(tj_arange(0, 2, 1, (tj_dtype)-1), TJ_ERR_DTYPE, "tj_arange: invalid dtype");
    EXPECT_ERROR(tj_arange(0, 1e300, 1e-300, TJ_F64), TJ_ERR_ARG, "too many elements");
    EXPECT_ERROR(tj_arange(-1e308, 1e308, 1, TJ_F64), TJ_ERR_ARG, "too many elements");
    EXPECT_ERROR(tj_arange(0, 3e19, 1e19, TJ_I64), TJ_ERR_ARG, "do not fit in i64");
}

static void from_array_copies(void **state) {
    (void)state;
    float data[6] = {1, 2, 3, 4, 5, 6};
    int64_t s[2] = {2, 3};
    tj_tensor *t = tj_from_array(data, s, 2, TJ_F32);
    data[0] = 100; /* the tensor owns a copy */
    tt_assert_values(t, ((double[]){1, 2, 3, 4, 5, 6}), 6, 0);
    assert_ptr_not_equal(tj_data(t), data);
    tj_release(t);
    unsigned char bytes[3] = {0, 1, 7}; /* any nonzero byte reads as true */
    int64_t n = 3;
    tj_tensor *b = tj_from_array(bytes, &n, 1, TJ_BOOL);
    const unsigned char *stored = tj_data(b);
    assert_true(stored[0] == 0 && stored[1] == 1 && stored[2] == 1);
    tj_release(b);
    double one = 4;
    tj_tensor *zero_dim = tj_from_array(&one, NULL, 0, TJ_F64);
    double v = 0;
    assert_int_equal(tj_item(zero_dim, &v), TJ_OK);
    assert_true(v == 4);
    tj_release(zero_dim);
    int64_t none = 0;
    tj_tensor *empty = tj_from_array(NULL, &none, 1, TJ_F32); /* nothing to read */
    assert_non_null(empty);
    tj_release(empty);
}

/* ---- accessors --------------------------------------------------------------------- */

static void accessors_and_contiguity(void **state) {
    (void)state;
    int64_t s[3] = {2, 3, 4};
    tj_tensor *t = tj_zeros(s, 3, TJ_F32);
    assert_int_equal(tj_size(t, 0), 2);
    assert_int_equal(tj_size(t, -1), 4);
    assert_int_equal(tj_size(t, -3), 2);
    assert_int_equal(tj_size(t, 3), -1);
    tt_assert_error("tj_size: dim 3 is out of range for a tensor of 3 dims");
    tj_clear_error();
    assert_int_equal(tj_size(t, -4), -1);
    tj_clear_error();
    tj_tensor *sc = tj_scalar_tensor(1, TJ_F32);
    assert_int_equal(tj_size(sc, 0), -1);
    tt_assert_error("tj_size: a 0-dim tensor has no dim 0");
    tj_clear_error();

    /* a transposed view and views whose odd strides do not matter */
    int64_t ts[2] = {4, 3}, tstr[2] = {1, 4}, one_s[3] = {2, 1, 4}, one_str[3] = {4, 99, 1};
    tj_tensor *tr = tjc_make_view(t, ts, tstr, 2, 0);
    assert_false(tj_is_contiguous(tr));
    assert_true(tj_shares_storage(tr, t));
    tj_tensor *ones = tjc_make_view(t, one_s, one_str, 3, 0);
    assert_true(tj_is_contiguous(ones));
    int64_t zs[2] = {0, 3}, zstr[2] = {1, 7};
    tj_tensor *empty_view = tjc_make_view(t, zs, zstr, 2, 5);
    assert_true(tj_is_contiguous(empty_view));
    assert_int_equal(tj_storage_offset(empty_view), 5);
    int64_t idx[2] = {1, 2};
    float *p = tj_data(t);
    p[2 * 4 + 1] = 7; /* t[0, 2, 1] is tr[1, 2] */
    assert_true(tj_get(tr, idx) == 7);
    tj_tensor *other = tj_zeros(s, 3, TJ_F32);
    assert_false(tj_shares_storage(other, t));

    /* NULL gives failure values and a message, never a crash */
    tj_clear_error();
    assert_int_equal(tj_ndim(NULL), -1);
    tt_assert_error("tj_ndim: tensor is NULL");
    assert_null(tj_sizes(NULL));
    assert_null(tj_strides(NULL));
    assert_int_equal(tj_numel(NULL), -1);
    assert_false(tj_is_contiguous(NULL));
    assert_false(tj_shares_storage(NULL, t));
    assert_null(tj_data(NULL));
    assert_int_equal(tj_tensor_dtype(NULL), TJ_NUM_DTYPES);
    assert_int_equal(tj_size(NULL, 0), -1);
    tj_clear_error();
    for (tj_tensor **x = (tj_tensor *[]){t, sc, tr, ones, empty_view, other, NULL}; *x; x++)
        tj_release(*x);
}

static void item(void **state) {
    (void)state;
    double v = 0;
    tj_tensor *f = tj_scalar_tensor(-1.25, TJ_F32), *i = tj_full((int64_t[]){1, 1}, 2, 7, TJ_I64);
    tj_tensor *b = tj_scalar_tensor(1, TJ_BOOL), *three = tj_zeros((int64_t[]){3}, 1, TJ_F32);
    assert_int_equal(tj_item(f, &v), TJ_OK);
    assert_true(v == -1.25);
    assert_int_equal(tj_item(i, &v), TJ_OK);
    assert_true(v == 7);
    assert_int_equal(tj_item(b, &v), TJ_OK);
    assert_true(v == 1);
    v = 42;
    assert_int_equal(tj_item(three, &v), TJ_ERR_SHAPE);
    assert_string_equal(tj_last_error(),
                        "tj_item: a tensor with 3 elements (sizes [3]) cannot be read as one "
                        "number");
    assert_true(v == 42);
    tj_clear_error();
    assert_int_equal(tj_item(NULL, &v), TJ_ERR_ARG);
    tt_assert_error("tj_item: tensor is NULL");
    tj_clear_error();
    assert_int_equal(tj_item(f, NULL), TJ_ERR_ARG);
    tt_assert_error("tj_item: value is NULL");
    for (tj_tensor **x = (tj_tensor *[]){f, i, b, three, NULL}; *x; x++) tj_release(*x);
}

/* ---- printing ------------------------------------------------------------------------ */

static void expect_text(tj_tensor *t, const char *want) {
    char *s = tj_tensor_to_string(t);
    assert_non_null(s);
    assert_string_equal(s, want);
    free(s);
}

#define F32(...) vec(TJ_F32, (double[]){__VA_ARGS__}, sizeof((double[]){__VA_ARGS__}) / 8)
#define F64(...) vec(TJ_F64, (double[]){__VA_ARGS__}, sizeof((double[]){__VA_ARGS__}) / 8)
#define I64(...) vec(TJ_I64, (double[]){__VA_ARGS__}, sizeof((double[]){__VA_ARGS__}) / 8)
#define BOOL(...) vec(TJ_BOOL, (double[]){__VA_ARGS__}, sizeof((double[]){__VA_ARGS__}) / 8)

static tj_tensor *vec(tj_dtype d, const double *v, size_t n) {
    int64_t len = (int64_t)n;
    tj_tensor *f = tj_from_array(v, &len, 1, TJ_F64);
    tj_tensor *t = tj_to_dtype(f, d);
    assert_non_null(t);
    return t;
}

static tj_tensor *reshaped(tj_tensor *t, int ndim, const int64_t *sizes) {
    int64_t strides[TJ_MAX_DIMS];
    tjc_contiguous_strides(sizes, ndim, strides);
    tj_tensor *v = tjc_make_view(t, sizes, strides, ndim, 0);
    tjc_scope_track(v);
    return v;
}

static void printing_small_tensors(void **state) {
    (void)state;
    tj_scope_begin();
    expect_text(F32(1.5, -2), "tensor([ 1.5000, -2.0000])");
    expect_text(reshaped(F32(1, 2, 3, 4), 2, (int64_t[]){2, 2}),
                  "tensor([[1., 2.],\n        [3., 4.]])");
    expect_text(F32(0, 0, 0), "tensor([0., 0., 0.])");
    expect_text(F32(-0.5, 0.25), "tensor([-0.5000,  0.2500])");
    expect_text(F32(1e-5, 1), "tensor([1.0000e-05, 1.0000e+00])");
    expect_text(F32(1, 2000), "tensor([1.0000e+00, 2.0000e+03])");
    expect_text(F32(NAN, 1, -INFINITY), "tensor([nan, 1., -inf])");
    expect_text(F64(0.1, 2.25), "tensor([0.1000, 2.2500], dtype=f64)");
    expect_text(I64(1, -20, 300), "tensor([  1, -20, 300])");
    expect_text(BOOL(1, 0), "tensor([ True, False])");
    expect_text(reshaped(I64(0, 1, 2, 3, 4, 5, 6, 7), 3, (int64_t[]){2, 2, 2}),
                  "tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])");
    expect_text(tj_scalar_tensor(2.5, TJ_F32), "tensor(2.5000)");
    expect_text(tj_scalar_tensor(2, TJ_F32), "tensor(2.)");
    expect_text(tj_scalar_tensor(3, TJ_I64), "tensor(3)");
    expect_text(tj_scalar_tensor(2.5, TJ_F64), "tensor(2.5000, dtype=f64)");
    expect_text(tj_scalar_tensor(1, TJ_BOOL), "tensor(True)");
    expect_text(tj_zeros((int64_t[]){0}, 1, TJ_F32), "tensor([])");
    expect_text(tj_zeros((int64_t[]){2, 0}, 2, TJ_F32), "tensor([], size=(2, 0))");
    expect_text(tj_zeros((int64_t[]){0}, 1, TJ_I64), "tensor([], dtype=i64)");
    expect_text(tj_zeros((int64_t[]){0, 3}, 2, TJ_BOOL), "tensor([], size=(0, 3), dtype=bool)");
    /* a transposed view prints in its logical order */
    tj_tensor *m = reshaped(I64(1, 2, 3, 4, 5, 6), 2, (int64_t[]){2, 3});
    tj_tensor *mt = tjc_make_view(m, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 2, 0);
    tjc_scope_track(mt);
    expect_text(mt, "tensor([[1, 4],\n        [2, 5],\n        [3, 6]])");
    expect_text(NULL, "(null)");
    tj_scope_end();
}

static void printing_wraps_and_summarises(void **state) {
    (void)state;
    tj_scope_begin();
    expect_text(tj_arange(0, 30, 1, TJ_I64),
                  "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,"
                  "\n        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29])");
    expect_text(tj_arange(0.5, 5, 0.5, TJ_F64),
                  "tensor([0.5000, 1.0000, 1.5000, 2.0000, 2.5000, 3.0000, 3.5000, 4.0000, "
                  "4.5000],\n       dtype=f64)");
    expect_text(tj_arange(0, 1001, 1, TJ_I64), "tensor([   0,    1,    2,  ...,  998,  999, 1000])");
    expect_text(tj_arange(0, 2000, 1, TJ_F32),
                  "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
                  "        1.9990e+03])");
    expect_text(reshaped(tj_arange(0, 2000, 1, TJ_I64), 2, (int64_t[]){100, 20}),
                  "tensor([[   0,    1,    2,  ...,   17,   18,   19],\n"
                  "        [  20,   21,   22,  ...,   37,   38,   39],\n"
                  "        [  40,   41,   42,  ...,   57,   58,   59],\n"
                  "        ...,\n"
                  "        [1940, 1941, 1942,  ..., 1957, 1958, 1959],\n"
                  "        [1960, 1961, 1962,  ..., 1977, 1978, 1979],\n"
                  "        [1980, 1981, 1982,  ..., 1997, 1998, 1999]])");
    /* a large tensor prints quickly and stays short */
    tj_tensor *big = tj_zeros((int64_t[]){1000, 1000, 10}, 3, TJ_F32);
    char *s = tj_tensor_to_string(big);
    assert_non_null(s);
    assert_true(strlen(s) < 2000);
    assert_non_null(strstr(s, "...,\n\n"));
    free(s);
    tj_scope_end();
}

/* ---- names, copies, conversion, reference counts ------------------------------------ */

static void names(void **state) {
    (void)state;
    tj_tensor *t = tj_zeros((int64_t[]){2}, 1, TJ_F32);
    assert_null(tj_tensor_name(t));
    char name[16] = "fc1.weight";
    assert_int_equal(tj_tensor_set_name(t, name), TJ_OK);
    name[0] = 'X'; /* the tensor keeps its own copy */
    assert_string_equal(tj_tensor_name(t), "fc1.weight");
    assert_int_equal(tj_tensor_set_name(t, "fc2.bias"), TJ_OK);
    assert_string_equal(tj_tensor_name(t), "fc2.bias");
    tj_tensor *c = tj_clone(t);
    assert_null(tj_tensor_name(c)); /* a name belongs to one tensor, not its copies */
    assert_int_equal(tj_tensor_set_name(t, NULL), TJ_OK);
    assert_null(tj_tensor_name(t));
    assert_int_equal(tj_tensor_set_name(NULL, "x"), TJ_ERR_ARG);
    tt_assert_error("tj_tensor_set_name: tensor is NULL");
    assert_null(tj_tensor_name(NULL));
    assert_int_equal(tj_tensor_set_name(t, "kept"), TJ_OK); /* freed with the tensor */
    tj_release(c);
    tj_release(t);
}

static void clone_and_to_dtype(void **state) {
    (void)state;
    tj_scope_begin();
    tj_tensor *m = reshaped(F64(1.5, -2.5, 3.7, -0.2, 0, 9), 2, (int64_t[]){2, 3});
    tj_tensor *mt = tjc_make_view(m, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 2, 0);
    tjc_scope_track(mt);
    tj_tensor *c = tj_clone(mt);
    assert_true(tj_is_contiguous(c));
    assert_false(tj_shares_storage(c, m));
    tt_assert_values(c, ((double[]){1.5, -0.2, -2.5, 0, 3.7, 9}), 6, 0);
    tj_tensor *i = tj_to_dtype(mt, TJ_I64);
    assert_int_equal(tj_tensor_dtype(i), TJ_I64);
    tt_assert_values(i, ((double[]){1, 0, -2, 0, 3, 9}), 6, 0);
    tt_assert_values(tj_to_dtype(mt, TJ_BOOL), ((double[]){1, 1, 1, 0, 1, 1}), 6, 0);
    tt_assert_values(tj_to_dtype(tj_to_dtype(mt, TJ_F32), TJ_F64),
                     ((double[]){1.5, (double)-0.2f, -2.5, 0, (double)3.7f, 9}), 6, 0);
    tj_tensor *same = tj_to_dtype(m, TJ_F64);
    assert_false(tj_shares_storage(same, m));
    assert_null(tj_to_dtype(m, (tj_dtype)9));
    tt_assert_error("aten::to.dtype: argument 'dtype' is not a valid dtype (9)");
    tj_clear_error();
    tj_scope_end();
}

static void reference_counts(void **state) {
    (void)state;
    assert_null(tj_retain(NULL));
    tj_release(NULL);
    tj_tensor *t = tj_arange(0, 4, 1, TJ_F32);
    assert_int_equal(refs(t), 1);
    assert_ptr_equal(tj_retain(t), t);
    assert_int_equal(refs(t), 2);
    tj_release(t);
    assert_int_equal(refs(t), 1);
    /* a view keeps the storage alive after its base is gone */
    tj_tensor *v = tjc_make_view(t, (int64_t[]){2}, (int64_t[]){2}, 1, 1);
    assert_int_equal(atomic_load(&t->storage->refcount), 2);
    tj_release(t);
    tt_assert_values(v, ((double[]){1, 3}), 2, 0);
    tj_release(v);
}

/* Large blocks go back to a cache on release (see core/storage.c); the
 * sanitizer build turns it off so that it still sees every use after free. */
static void *churn_big_tensors(void *arg) {
    int id = (int)(uintptr_t)arg;
    int64_t sizes[2] = {1 << 10, 1 << (9 + id % 2)}; /* 2 MiB and 4 MiB of f32 */
    for (int rep = 0; rep < 40; rep++) {
        tj_tensor *t = tj_full(sizes, 2, id * 1000 + rep, TJ_F32);
        if (!t) return NULL;
        const float *p = tj_data(t);
        int64_t n = tj_numel(t);
        bool ok = p[0] == (float)(id * 1000 + rep) && p[n / 2] == p[0] && p[n - 1] == p[0];
        tj_release(t);
        if (!ok) return NULL;
    }
    return arg;
}

/* Mid-sized blocks too (from 64 KiB, in whole pages), since glibc hands
 * those back to the kernel and they would fault again on every replay. */
static void block_of_numel_is_reused(int64_t numel) {
    int64_t sizes[1] = {numel};
    tj_tensor *a = tj_zeros(sizes, 1, TJ_F32);
    void *first = tj_data(a);
    tj_release(a);
    tj_tensor *b = tj_ones(sizes, 1, TJ_F32);
    const float *p = tj_data(b);
    assert_true(p[0] == 1 && p[numel - 1] == 1);
#if !defined(__SANITIZE_ADDRESS__)
    assert_ptr_equal(tj_data(b), first); /* the same block, not fresh pages */
    assert_int_equal((uintptr_t)first % 4096, 0);
#else
    (void)first;
#endif
    tj_release(b);
}

static void large_blocks_are_reused_safely(void **state) {
    (void)state;
    block_of_numel_is_reused(3 << 20);  /* 12 MiB */
    block_of_numel_is_reused(64 << 10); /* 256 KiB */
    block_of_numel_is_reused(200000);   /* 800 KB, not a whole number of pages */
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(
            pthread_create(&th[i], NULL, churn_big_tensors, (void *)(uintptr_t)(i + 1)), 0);
    for (int i = 0; i < 4; i++) {
        void *ok = NULL;
        assert_int_equal(pthread_join(th[i], &ok), 0);
        assert_ptr_equal(ok, (void *)(uintptr_t)(i + 1));
    }
}

/* ---- scopes --------------------------------------------------------------------- */

static void scopes_release_what_they_own(void **state) {
    (void)state;
    tj_scope_begin();
    tj_tensor *a = tj_zeros((int64_t[]){3}, 1, TJ_F32);
    tj_tensor *sum = tj_add(a, a, 1);
    tj_retain(a);
    tj_retain(sum);
    assert_int_equal(refs(a), 2);
    tj_scope_end();
    assert_int_equal(refs(a), 1); /* the scope let go of its references */
    assert_int_equal(refs(sum), 1);
    tj_release(a);
    tj_release(sum);
}

static void scopes_nest_and_keep_moves_to_the_parent(void **state) {
    (void)state;
    tj_scope_begin();
    tj_tensor *outer = tj_ones((int64_t[]){2}, 1, TJ_F32);
    tj_retain(outer);
    tj_scope_begin();
    tj_tensor *inner = tj_mul_scalar(outer, 3);
    tj_tensor *kept = tj_keep(tj_neg(inner));
    tj_retain(inner);
    tj_retain(kept);
    tj_scope_end();
    assert_int_equal(refs(inner), 1); /* released by the inner scope */
    assert_int_equal(refs(kept), 2);  /* now owned by the outer scope */
    assert_int_equal(refs(outer), 2);
    tt_assert_values(kept, ((double[]){-3, -3}), 2, 0);
    tj_scope_end();
    assert_int_equal(refs(kept), 1);
    assert_int_equal(refs(outer), 1);
    tj_release(inner);
    tj_release(kept);
    tj_release(outer);

    /* keep in the outermost scope hands the tensor to the caller */
    tj_scope_begin();
    tj_tensor *mine = tj_keep(tj_zeros((int64_t[]){2}, 1, TJ_F64));
    tj_scope_end();
    assert_int_equal(refs(mine), 1);
    /* keeping a tensor no scope owns changes nothing */
    assert_ptr_equal(tj_keep(mine), mine);
    assert_null(tj_keep(NULL));
    tj_release(mine);
}

static void scope_end_without_a_scope_is_an_error(void **state) {
    (void)state;
    tj_scope_end();
    assert_int_equal(tj_last_status(), TJ_ERR_ARG);
    assert_string_equal(tj_last_error(), "tj_scope_end: no scope is open on this thread");
    tj_clear_error();
    /* many tensors in one scope */
    tj_scope_begin();
    for (int i = 0; i < 1000; i++) assert_non_null(tj_scalar_tensor(i, TJ_F32));
    tj_scope_end();
    assert_int_equal(tj_last_status(), TJ_OK);
}

/* ---- errors --------------------------------------------------------------------- */

static void *other_thread(void *arg) {
    (void)arg;
    return (void *)(uintptr_t)(tj_last_status() == TJ_OK && tj_last_error()[0] == '\0');
}

static void error_api(void **state) {
    (void)state;
    assert_int_equal(tj_last_status(), TJ_OK);
    assert_string_equal(tj_last_error(), "");
    tj_scope_begin();
    tj_tensor *x = tj_zeros((int64_t[]){3, 4}, 2, TJ_F32), *y = tj_zeros((int64_t[]){5}, 1, TJ_F32);
    /* a chain fails at its first op, and the message stays that op's */
    tj_tensor *r = tj_exp(tj_mul_scalar(tj_add(x, y, 1), 2));
    assert_null(r);
    assert_int_equal(tj_last_status(), TJ_ERR_SHAPE);
    assert_string_equal(tj_last_error(), "aten::add: cannot broadcast sizes [3, 4] and [5]");
    double v;
    assert_int_equal(tj_item(NULL, &v), TJ_ERR_SHAPE);
    tt_assert_error("aten::add: cannot broadcast");
    /* the error is this thread's alone */
    pthread_t th;
    void *clean = NULL;
    assert_int_equal(pthread_create(&th, NULL, other_thread, NULL), 0);
    assert_int_equal(pthread_join(th, &clean), 0);
    assert_true(clean != NULL);
    tj_clear_error();
    assert_int_equal(tj_last_status(), TJ_OK);
    assert_string_equal(tj_last_error(), "");

    /* NULL inputs name the argument */
    EXPECT_ERROR(tj_neg(NULL), TJ_ERR_ARG, "aten::neg: argument 'self' is NULL");
    EXPECT_ERROR(tj_add(x, NULL, 1), TJ_ERR_ARG, "aten::add: argument 'other' is NULL");
    EXPECT_ERROR(tj_where(NULL, x, x), TJ_ERR_ARG, "aten::where.self: argument 'condition' is NULL");
    EXPECT_ERROR(tj_copy_(x, NULL), TJ_ERR_ARG, "aten::copy_: argument 'src' is NULL");
    EXPECT_ERROR(tj_clone(NULL), TJ_ERR_ARG, "aten::clone: argument 'self' is NULL");
    EXPECT_ERROR(tj_to_dtype(NULL, TJ_F32), TJ_ERR_ARG, "aten::to.dtype: argument 'self' is NULL");
    EXPECT_ERROR(tj_lerp_tensor(x, x, NULL), TJ_ERR_ARG, "aten::lerp.Tensor: argument 'weight'");
    tj_scope_end();

    for (int s = TJ_OK; s <= TJ_ERR_COMM; s++) assert_true(strlen(tj_status_name(s)) > 1);
    assert_string_equal(tj_status_name(TJ_ERR_SHAPE), "shape mismatch");
    assert_string_equal(tj_status_name((tj_status)99), "unknown status");
    assert_string_equal(tj_dtype_name(TJ_BOOL), "bool");
    assert_string_equal(tj_dtype_name((tj_dtype)9), "invalid");
    assert_int_equal(tj_dtype_size(TJ_I64), 8);
    assert_true(tj_dtype_is_float(TJ_F64) && !tj_dtype_is_float(TJ_I64));
    assert_true(tj_is_none(TJ_NONE) && !tj_is_none(0));
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, clear, clear)
    const struct CMUnitTest tests[] = {
        T(creation_functions),
        T(creation_errors),
        T(arange),
        T(from_array_copies),
        T(accessors_and_contiguity),
        T(item),
        T(printing_small_tensors),
        T(printing_wraps_and_summarises),
        T(names),
        T(clone_and_to_dtype),
        T(reference_counts),
        T(large_blocks_are_reused_safely),
        T(scopes_release_what_they_own),
        T(scopes_nest_and_keep_moves_to_the_parent),
        T(scope_end_without_a_scope_is_an_error),
        T(error_api),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
