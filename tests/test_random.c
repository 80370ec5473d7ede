/* test_random.c — the Philox generator and tj_rand, tj_randn, tj_bernoulli:
 * the known-answer vector, reproducibility by seed and across thread counts,
 * offsets, ranges and distribution statistics, and argument errors. */
#include <math.h>
#include <string.h>

#include "core/random.h"
#include "tests/support/testing.h"

enum { BIG = 200003 }; /* above the threading threshold, and odd to split unevenly */

static int setup(void **state) {
    (void)state;
    tj_clear_error();
    tj_set_num_threads(0);
    tj_scope_begin();
    return 0;
}
static int teardown(void **state) {
    (void)state;
    tj_scope_end();
    tj_set_num_threads(0);
    tj_clear_error();
    return 0;
}

static bool same_bytes(tj_tensor *a, tj_tensor *b) {
    return tj_numel(a) == tj_numel(b) && tj_tensor_dtype(a) == tj_tensor_dtype(b) &&
           memcmp(tj_data(a), tj_data(b), (size_t)tj_numel(a) * tj_dtype_size(tj_tensor_dtype(a))) == 0;
}

static void philox_known_answer(void **state) {
    (void)state;
    /* Random123's known-answer test for philox4x32-10: counter 0, key 0 */
    uint32_t w[4];
    tjc_philox(0, 0, w);
    assert_true(w[0] == 0x6627e8d5u && w[1] == 0xe169c58du && w[2] == 0xbc57ac4cu &&
                w[3] == 0x9b00dbd8u);
    uint32_t v[4];
    tjc_philox(0, 1, v);
    assert_true(memcmp(w, v, sizeof w) != 0);
    tjc_philox(1, 0, v);
    assert_true(memcmp(w, v, sizeof w) != 0);
    assert_true(tjc_uniform24(0xffffffffu) < 1.0f);
    assert_true(tjc_uniform53(0xffffffffu, 0xffffffffu) < 1.0);
    assert_true(tjc_uniform24(0) == 0.0f && tjc_uniform53(0, 0) == 0.0);
}

static void same_seed_same_numbers(void **state) {
    (void)state;
    int64_t n = 1000;
    tj_generator *a = tj_generator_new(42), *b = tj_generator_new(42), *c = tj_generator_new(43);
    for (tj_dtype d = TJ_F32; d <= TJ_F64; d++) {
        assert_true(same_bytes(tj_rand(&n, 1, d, a), tj_rand(&n, 1, d, b)));
        assert_true(same_bytes(tj_randn(&n, 1, d, a), tj_randn(&n, 1, d, b)));
    }
    assert_true(same_bytes(tj_bernoulli(&n, 1, 0.5, TJ_BOOL, a), tj_bernoulli(&n, 1, 0.5, TJ_BOOL, b)));
    assert_false(same_bytes(tj_rand(&n, 1, TJ_F64, a), tj_rand(&n, 1, TJ_F64, c)));
    assert_int_equal(tj_generator_seed(a), 42);
    tj_generator_free(a);
    tj_generator_free(b);
    tj_generator_free(c);
}

static void thread_count_does_not_change_the_numbers(void **state) {
    (void)state;
    int64_t n = BIG;
    tj_tensor *r[2][4];
    for (int threads = 1; threads <= 2; threads++) {
        tj_set_num_threads(threads);
        assert_int_equal(tj_get_num_threads(), threads);
        tj_generator *g = tj_generator_new(7);
        tj_tensor **out = r[threads - 1];
        out[0] = tj_rand(&n, 1, TJ_F32, g);
        out[1] = tj_randn(&n, 1, TJ_F64, g);
        out[2] = tj_bernoulli(&n, 1, 0.25, TJ_I64, g);
        out[3] = tj_rand((int64_t[]){n, 3}, 2, TJ_F64, g);
        tj_generator_free(g);
    }
    for (int k = 0; k < 4; k++) {
        assert_non_null(r[0][k]);
        assert_true(same_bytes(r[0][k], r[1][k]));
    }
}

static void offsets_advance_by_the_elements_drawn(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(5);
    assert_int_equal(tj_generator_offset(g), 0);
    int64_t n = 100, two_n = 200;
    tj_tensor *first = tj_rand(&n, 1, TJ_F64, g);
    assert_int_equal(tj_generator_offset(g), 100);
    tj_tensor *second = tj_rand(&n, 1, TJ_F64, g);
    assert_int_equal(tj_generator_offset(g), 200);
    assert_false(same_bytes(first, second));
    /* element i of a draw depends only on (seed, offset + i) */
    tj_generator_set_state(g, 5, 0);
    const double *both = tj_data(tj_rand(&two_n, 1, TJ_F64, g));
    assert_memory_equal(both, tj_data(first), 100 * sizeof(double));
    assert_memory_equal(both + 100, tj_data(second), 100 * sizeof(double));
    tj_generator_set_state(g, 5, 100);
    assert_true(same_bytes(tj_rand(&n, 1, TJ_F64, g), second));
    /* a 0-element draw reserves nothing; reserve hands out counters */
    assert_non_null(tj_rand((int64_t[]){0, 4}, 2, TJ_F32, g));
    assert_int_equal(tj_generator_offset(g), 200);
    assert_int_equal(tj_generator_reserve(g, 10), 200);
    assert_int_equal(tj_generator_offset(g), 210);
    tj_tensor *zero_dim = tj_randn(NULL, 0, TJ_F32, g);
    assert_int_equal(tj_ndim(zero_dim), 0);
    assert_int_equal(tj_generator_offset(g), 211);
    tj_generator_free(g);
}

static void rand_is_uniform_on_0_1(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(11);
    int64_t n = BIG;
    for (tj_dtype d = TJ_F32; d <= TJ_F64; d++) {
        tt_ref r = tt_ref_of(tj_rand(&n, 1, d, g));
        double sum = 0, lo = 1, hi = 0;
        int64_t below_tenth = 0;
        for (int64_t i = 0; i < n; i++) {
            double v = r.v[i];
            sum += v;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            below_tenth += v < 0.1;
        }
        tt_ref_free(&r);
        assert_true(lo >= 0 && hi < 1);
        assert_true(lo < 1e-4 && hi > 1 - 1e-4);
        /* five standard errors: a false alarm once in millions of seeds */
        assert_true(fabs(sum / (double)n - 0.5) < 5 * sqrt(1.0 / 12 / (double)n));
        double p = (double)below_tenth / (double)n;
        assert_true(fabs(p - 0.1) < 5 * sqrt(0.1 * 0.9 / (double)n));
    }
    tj_generator_free(g);
}

static void randn_has_mean_0_and_variance_1(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(12);
    int64_t n = BIG;
    for (tj_dtype d = TJ_F32; d <= TJ_F64; d++) {
        tt_ref r = tt_ref_of(tj_randn(&n, 1, d, g));
        double sum = 0, sq = 0;
        int64_t within_one = 0;
        for (int64_t i = 0; i < n; i++) {
            assert_true(isfinite(r.v[i]));
            sum += r.v[i];
            within_one += fabs(r.v[i]) < 1;
        }
        double mean = sum / (double)n;
        for (int64_t i = 0; i < n; i++) sq += (r.v[i] - mean) * (r.v[i] - mean);
        double var = sq / (double)(n - 1);
        tt_ref_free(&r);
        assert_true(fabs(mean) < 5 / sqrt((double)n));
        assert_true(fabs(var - 1) < 5 * sqrt(2.0 / (double)n));
        double p = (double)within_one / (double)n, p1 = 0.6826894921370859;
        assert_true(fabs(p - p1) < 5 * sqrt(p1 * (1 - p1) / (double)n));
    }
    tj_generator_free(g);
}

static void bernoulli_rate(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(13);
    int64_t n = BIG;
    const double ps[] = {0.3, 0.9};
    const tj_dtype dtypes[] = {TJ_F32, TJ_F64, TJ_I64, TJ_BOOL};
    for (size_t k = 0; k < 2; k++)
        for (size_t d = 0; d < 4; d++) {
            tt_ref r = tt_ref_of(tj_bernoulli(&n, 1, ps[k], dtypes[d], g));
            int64_t ones = 0;
            for (int64_t i = 0; i < n; i++) {
                assert_true(r.v[i] == 0 || r.v[i] == 1);
                ones += r.v[i] == 1;
            }
            tt_ref_free(&r);
            double rate = (double)ones / (double)n;
            assert_true(fabs(rate - ps[k]) < 5 * sqrt(ps[k] * (1 - ps[k]) / (double)n));
        }
    int64_t m = 1000;
    tt_ref none = tt_ref_of(tj_bernoulli(&m, 1, 0, TJ_F32, g));
    tt_ref all = tt_ref_of(tj_bernoulli(&m, 1, 1, TJ_I64, g));
    for (int64_t i = 0; i < m; i++) assert_true(none.v[i] == 0 && all.v[i] == 1);
    tt_ref_free(&none);
    tt_ref_free(&all);
    tj_generator_free(g);
}

static void bad_arguments_are_errors(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(1);
    int64_t n = 4, neg = -1;
#define EXPECT_ERROR(call, status, text)            \
    do {                                            \
        tj_clear_error();                           \
        assert_null(call);                          \
        assert_int_equal(tj_last_status(), status); \
        tt_assert_error(text);                      \
    } while (0)
    EXPECT_ERROR(tj_rand(&n, 1, TJ_F32, NULL), TJ_ERR_ARG, "tj_rand: generator is NULL");
    EXPECT_ERROR(tj_randn(&n, 1, TJ_F32, NULL), TJ_ERR_ARG, "tj_randn: generator is NULL");
    EXPECT_ERROR(tj_bernoulli(&n, 1, 0.5, TJ_F32, NULL), TJ_ERR_ARG,
                 "tj_bernoulli: generator is NULL");
    EXPECT_ERROR(tj_bernoulli(&n, 1, -0.1, TJ_F32, g), TJ_ERR_ARG,
                 "tj_bernoulli: probability -0.1 is not in [0, 1]");
    EXPECT_ERROR(tj_bernoulli(&n, 1, 1.5, TJ_F32, g), TJ_ERR_ARG, "probability 1.5");
    EXPECT_ERROR(tj_bernoulli(&n, 1, NAN, TJ_F32, g), TJ_ERR_ARG, "probability nan");
    EXPECT_ERROR(tj_rand(&n, 1, TJ_I64, g), TJ_ERR_DTYPE,
                 "tj_rand: dtype i64 is not a floating dtype");
    EXPECT_ERROR(tj_randn(&n, 1, TJ_BOOL, g), TJ_ERR_DTYPE, "tj_randn: dtype bool");
    EXPECT_ERROR(tj_rand(&neg, 1, TJ_F32, g), TJ_ERR_ARG, "size -1 at dim 0 is negative");
#undef EXPECT_ERROR
    /* nothing was drawn by the failed calls */
    assert_int_equal(tj_generator_offset(g), 0);
    tj_clear_error();
    assert_int_equal(tj_generator_reserve(NULL, 3), 0);
    tt_assert_error("tj_generator_reserve: generator is NULL");
    tj_clear_error();
    assert_int_equal(tj_generator_seed(NULL), 0);
    assert_int_equal(tj_generator_offset(NULL), 0);
    tj_generator_set_state(NULL, 1, 2);
    tj_generator_free(NULL);
    tj_generator_free(g);
}

int main(void) {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(philox_known_answer),
        T(same_seed_same_numbers),
        T(thread_count_does_not_change_the_numbers),
        T(offsets_advance_by_the_elements_drawn),
        T(rand_is_uniform_on_0_1),
        T(randn_has_mean_0_and_variance_1),
        T(bernoulli_rate),
        T(bad_arguments_are_errors),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
