/* test_npy.c — tj_save_npy / tj_load_npy: round trips for every dtype, 0-dim,
 * empty and non-contiguous tensors; hand-written files in Fortran order, as
 * <i4, and in format version 2; and malformed files, which must give a clear
 * error and never crash. Files live in a temporary directory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/runtime_testing.h"

static char *dir;

static int setup_dir(void **state) {
    (void)state;
    dir = tt_mkdtemp();
    return 0;
}
static int teardown_dir(void **state) {
    (void)state;
    tt_rmtree(dir);
    dir = NULL;
    return 0;
}
/* Saves t as name in the temporary directory and loads it back. */
static tj_tensor *round_trip(const tj_tensor *t, const char *name) {
    char *path = tt_path(dir, name);
    if (tj_save_npy(path, t) != TJ_OK) {
        fprintf(stderr, "tj_save_npy: %s\n", tj_last_error());
        fail();
    }
    tj_tensor *back = tj_load_npy(path);
    if (!back) fprintf(stderr, "tj_load_npy: %s\n", tj_last_error());
    assert_non_null(back);
    free(path);
    return back;
}

/* ---- round trips ------------------------------------------------------------------- */

static void test_round_trip_dtypes(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(1);
    const tj_dtype dtypes[] = {TJ_F32, TJ_F64, TJ_I64, TJ_BOOL};
    int64_t sizes[3] = {2, 3, 4};
    for (size_t k = 0; k < sizeof dtypes / sizeof *dtypes; k++) {
        tt_context("%s", tj_dtype_name(dtypes[k]));
        tj_tensor *t = tt_random(gen, sizes, 3, dtypes[k], -1000, 1000);
        tj_tensor *back = round_trip(t, "t.npy");
        tt_assert_same(back, t);
        assert_true(tj_is_contiguous(back));
    }
    tt_context(NULL);
    /* special values survive bit for bit */
    double special[4] = {NAN, INFINITY, -INFINITY, -0.0};
    tj_tensor *s = tj_from_array(special, (int64_t[]){4}, 1, TJ_F64);
    tt_assert_same(round_trip(s, "special.npy"), s);
    tj_generator_free(gen);
}

static void test_round_trip_shapes(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(2);
    tj_tensor *scalar = tj_scalar_tensor(2.5, TJ_F32);
    tj_tensor *back = round_trip(scalar, "scalar.npy");
    assert_int_equal(tj_ndim(back), 0);
    tt_assert_same(back, scalar);
    tj_tensor *empty = tj_zeros((int64_t[]){0, 3}, 2, TJ_F64);
    back = round_trip(empty, "empty.npy");
    tt_assert_sizes(back, ((int64_t[]){0, 3}), 2);
    assert_int_equal(tj_tensor_dtype(back), TJ_F64);
    tj_tensor *vec = tt_random(gen, (int64_t[]){5}, 1, TJ_I64, -9, 9);
    tt_assert_same(round_trip(vec, "vec.npy"), vec);
    int64_t eight[8] = {2, 1, 2, 1, 2, 1, 2, 3};
    tj_tensor *high = tt_random(gen, eight, 8, TJ_F32, 0, 1);
    tt_assert_same(round_trip(high, "eight.npy"), high);
    /* a non-contiguous view is saved by value, in C order */
    tj_tensor *base = tt_random(gen, (int64_t[]){4, 6}, 2, TJ_F32, -1, 1);
    tj_tensor *view = tj_narrow(tj_t(base), 1, 1, 2);
    assert_false(tj_is_contiguous(view));
    back = round_trip(view, "view.npy");
    tt_assert_same(back, view);
    assert_true(tj_is_contiguous(back));
    tj_generator_free(gen);
}

static void test_saved_header(void **state) {
    (void)state;
    tj_tensor *t = tj_zeros((int64_t[]){7}, 1, TJ_BOOL);
    char *path = tt_path(dir, "header.npy");
    assert_int_equal(tj_save_npy(path, t), TJ_OK);
    char *bytes = tt_read_file(path);
    assert_non_null(bytes);
    assert_memory_equal(bytes, "\x93NUMPY\x01\x00", 8);
    int hlen = (unsigned char)bytes[8] | (unsigned char)bytes[9] << 8;
    assert_int_equal((10 + hlen) % 64, 0); /* the data starts aligned */
    assert_int_equal(bytes[10 + hlen - 1], '\n');
    bytes[10 + hlen] = '\0';
    assert_non_null(strstr(bytes + 10, "{'descr': '|b1', 'fortran_order': False, 'shape': (7,), }"));
    free(bytes);
    free(path);
}

/* ---- hand-written files ------------------------------------------------------------------ */

/* Writes a .npy file: magic, version, header (padded to 64 bytes), data. */
static char *write_npy(const char *name, int version, const char *header, const void *data,
                       size_t n) {
    size_t pre = version == 1 ? 10 : 12, hlen = strlen(header);
    size_t padded = (pre + hlen + 1 + 63) / 64 * 64 - pre;
    size_t total = pre + padded + n;
    unsigned char *buf = calloc(1, total);
    assert_non_null(buf);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)version;
    for (size_t i = 0; i < pre - 8; i++) buf[8 + i] = (unsigned char)(padded >> (8 * i));
    memset(buf + pre, ' ', padded);
    memcpy(buf + pre, header, hlen);
    buf[pre + padded - 1] = '\n';
    if (n) memcpy(buf + pre + padded, data, n);
    char *path = tt_path(dir, name);
    tt_write_file(path, buf, total);
    free(buf);
    return path;
}

static tj_tensor *load_ok(char *path) {
    tj_tensor *t = tj_load_npy(path);
    if (!t) fprintf(stderr, "tj_load_npy: %s\n", tj_last_error());
    assert_non_null(t);
    free(path);
    return t;
}

static void test_fortran_order(void **state) {
    (void)state;
    /* [[1, 2, 3], [4, 5, 6]] stored column by column */
    const double col_major[6] = {1, 4, 2, 5, 3, 6};
    tj_tensor *t = load_ok(write_npy("f.npy", 1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }",
                                     col_major, sizeof col_major));
    tt_assert_sizes(t, ((int64_t[]){2, 3}), 2);
    const double want[6] = {1, 2, 3, 4, 5, 6};
    tt_assert_values(t, want, 6, 0);
    assert_true(tj_is_contiguous(t));
    /* three dims, as <i4: element [i][j][k] is 100i + 10j + k */
    int32_t f3[2 * 3 * 2];
    for (int k = 0, n = 0; k < 2; k++)
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < 2; i++) f3[n++] = 100 * i + 10 * j + k;
    t = load_ok(write_npy("f3.npy", 1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 2), }",
                          f3, sizeof f3));
    assert_int_equal(tj_tensor_dtype(t), TJ_I64);
    double want3[12];
    for (int i = 0, n = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 2; k++) want3[n++] = 100 * i + 10 * j + k;
    tt_assert_values(t, want3, 12, 0);
}

static void test_i4_widened(void **state) {
    (void)state;
    const int32_t v[4] = {-1, 2, 2147483647, -2147483647 - 1};
    tj_tensor *t = load_ok(write_npy("i4.npy", 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }",
                                     v, sizeof v));
    assert_int_equal(tj_tensor_dtype(t), TJ_I64);
    const double want[4] = {-1, 2, 2147483647.0, -2147483648.0};
    tt_assert_values(t, want, 4, 0);
}

static void test_other_spellings(void **state) {
    (void)state;
    /* format version 2 (a 4-byte header length), '=' for native order, no
     * trailing comma, and keys in another order */
    const float v[3] = {1.5f, -2, 3};
    tj_tensor *t = load_ok(write_npy("v2.npy", 2, "{'shape': (3,), 'fortran_order': False, 'descr': '=f4'}",
                                     v, sizeof v));
    const double want[3] = {1.5, -2, 3};
    tt_assert_values(t, want, 3, 0);
    /* bools other than 0 and 1 read as true */
    const unsigned char b[3] = {0, 1, 7};
    t = load_ok(write_npy("b.npy", 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", b, 3));
    const double wantb[3] = {0, 1, 1};
    tt_assert_values(t, wantb, 3, 0);
    /* a 0-dim file */
    const int64_t one = 42;
    t = load_ok(write_npy("s.npy", 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", &one, 8));
    assert_int_equal(tj_ndim(t), 0);
    double x = 0;
    assert_int_equal(tj_item(t, &x), TJ_OK);
    assert_true(x == 42);
}

/* ---- malformed files ------------------------------------------------------------------------ */

static void expect_error(char *path, tj_status status, const char *needle) {
    tj_clear_error();
    tj_tensor *t = tj_load_npy(path);
    if (t) fprintf(stderr, "%s loaded, expected an error with \"%s\"\n", path, needle);
    assert_null(t);
    assert_int_equal(tj_last_status(), status);
    tt_assert_error(needle);
    free(path);
}

static void test_malformed(void **state) {
    (void)state;
    const float v[4] = {1, 2, 3, 4};
    char *path = tt_path(dir, "magic.npy");
    tt_write_file(path, "\x93NUMPX\x01\x00\x10\x00{}", 12);
    expect_error(path, TJ_ERR_PARSE, "is not a .npy file (bad magic)");
    path = tt_path(dir, "tiny.npy");
    tt_write_file(path, "\x93NU", 3);
    expect_error(path, TJ_ERR_PARSE, "bad magic");
    path = tt_path(dir, "empty.npy");
    tt_write_file(path, "", 0);
    expect_error(path, TJ_ERR_PARSE, "bad magic");
    path = tt_path(dir, "version.npy");
    tt_write_file(path, "\x93NUMPY\x09\x00\x10\x00", 10);
    expect_error(path, TJ_ERR_PARSE, "format version 9 is not supported");
    expect_error(write_npy("short.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (10,), }",
                           v, sizeof v),
                 TJ_ERR_PARSE, "short.npy is truncated: 'shape' needs 40 bytes of data, the file "
                               "holds 16");
    expect_error(write_npy("c8.npy", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }",
                           v, sizeof v),
                 TJ_ERR_DTYPE, "dtype '<c8' is not supported (tjit reads <f4, <f8, <i8, <i4 and |b1)");
    expect_error(write_npy("be.npy", 1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }",
                           v, sizeof v),
                 TJ_ERR_DTYPE, "dtype '>f4' is not supported");
    expect_error(write_npy("nodescr.npy", 1, "{'fortran_order': False, 'shape': (2,), }", v, 8),
                 TJ_ERR_PARSE, "the header has no 'descr'");
    expect_error(write_npy("noorder.npy", 1, "{'descr': '<f4', 'shape': (2,), }", v, 8),
                 TJ_ERR_PARSE, "the header has no 'fortran_order'");
    expect_error(write_npy("noshape.npy", 1, "{'descr': '<f4', 'fortran_order': False, }", v, 8),
                 TJ_ERR_PARSE, "the header has no 'shape' tuple");
    expect_error(write_npy("badshape.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1), }",
                           v, 8),
                 TJ_ERR_PARSE, "malformed 'shape'");
    expect_error(write_npy("open.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, ", v, 8),
                 TJ_ERR_PARSE, "malformed 'shape'");
    expect_error(write_npy("dims.npy", 1,
                           "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }",
                           v, 4),
                 TJ_ERR_SHAPE, "more than 8 dims");
    /* sizes whose product overflows, or that the file cannot hold: refused
     * before anything is allocated */
    expect_error(write_npy("huge.npy", 1,
                           "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }",
                           v, sizeof v),
                 TJ_ERR_PARSE, "huge.npy: 'shape' holds more elements than can be addressed");
    expect_error(write_npy("big.npy", 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }",
                           v, sizeof v),
                 TJ_ERR_PARSE, "big.npy is truncated: 'shape' needs 8796093022208 bytes of data, "
                               "the file holds 16");
    /* a header length far beyond the file, in versions 1 and 2 */
    path = tt_path(dir, "hlen1.npy");
    tt_write_file(path, "\x93NUMPY\x01\x00\xff\xff{'descr'", 18);
    expect_error(path, TJ_ERR_PARSE, "is truncated");
    path = tt_path(dir, "hlen2.npy");
    tt_write_file(path, "\x93NUMPY\x02\x00\xff\xff\xff\xff{'descr'", 20);
    expect_error(path, TJ_ERR_PARSE, "header of 4294967295 bytes is too long");
    path = tt_path(dir, "hlen_cut.npy");
    tt_write_file(path, "\x93NUMPY\x02\x00\x10", 9);
    expect_error(path, TJ_ERR_PARSE, "is truncated");
    /* not there at all */
    expect_error(tt_path(dir, "missing.npy"), TJ_ERR_IO, "cannot open");
    tj_clear_error();
    assert_null(tj_load_npy(NULL));
    tt_assert_error("path is NULL");
}

static void test_save_errors(void **state) {
    (void)state;
    tj_tensor *t = tj_ones((int64_t[]){2}, 1, TJ_F32);
    char *path = tt_path(dir, "no/such/dir/x.npy");
    assert_int_equal(tj_save_npy(path, t), TJ_ERR_IO);
    tt_assert_error("cannot create");
    free(path);
    assert_int_equal(tj_save_npy(NULL, t), TJ_ERR_ARG);
    tt_assert_error("path is NULL");
    tj_clear_error();
    assert_int_equal(tj_save_npy("unused.npy", NULL), TJ_ERR_ARG);
    tt_assert_error("tensor is NULL");
}

int main(void) {
#define T(f) TT_SCOPED_TEST(f)
    const struct CMUnitTest tests[] = {
        T(test_round_trip_dtypes),
        T(test_round_trip_shapes),
        T(test_saved_header),
        T(test_fortran_order),
        T(test_i4_widened),
        T(test_other_spellings),
        T(test_malformed),
        T(test_save_errors),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
