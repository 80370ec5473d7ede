/* test_function.c — tj_function: one program per input signature in a
 * bounded least-recently-used cache; hits, misses, retraces and evictions
 * counted; results equal to the eager model; parameters by reference; bad
 * arguments; and calls from several threads while programs are evicted. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/runtime_testing.h"

/* y = tanh(x W^T + b), x [batch, 4] -> [batch, 3] */
typedef struct layer {
    tj_tensor *w, *b;
    atomic_int traces; /* how often the model ran under the tracer or eagerly */
} layer;

static tj_status layer_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in;
    (void)n_out;
    layer *m = ctx;
    m->traces++;
    out[0] = tj_tanh(tj_linear(in[0], m->w, m->b));
    return out[0] ? TJ_OK : tj_last_status();
}

static void layer_init(layer *m, tj_generator *gen) {
    m->w = tt_random(gen, (int64_t[]){3, 4}, 2, TJ_F32, -1, 1);
    m->b = tt_random(gen, (int64_t[]){3}, 1, TJ_F32, -1, 1);
    m->traces = 0;
}

static tj_tensor *batch(tj_generator *gen, int64_t rows) {
    return tt_random(gen, (int64_t[]){rows, 4}, 2, TJ_F32, -2, 2);
}

static void assert_stats(const tj_function *f, int64_t calls, int64_t hits, int64_t misses,
                         int64_t retraces, int64_t evictions, int cached) {
    tj_function_stats s = tj_function_get_stats(f);
    if (s.calls != calls || s.hits != hits || s.misses != misses || s.retraces != retraces ||
        s.evictions != evictions || s.cached != cached) {
        fprintf(stderr, "stats: calls %lld hits %lld misses %lld retraces %lld evictions %lld "
                "cached %d; expected %lld %lld %lld %lld %lld %d\n", (long long)s.calls,
                (long long)s.hits, (long long)s.misses, (long long)s.retraces,
                (long long)s.evictions, s.cached, (long long)calls, (long long)hits,
                (long long)misses, (long long)retraces, (long long)evictions, cached);
        fail();
    }
}

/* Calls f on x and checks the result against the eager model. */
static void call_and_check(tj_function *f, layer *m, tj_tensor *x) {
    tj_tensor *got = NULL, *want = NULL;
    if (tj_function_call(f, &x, &got) != TJ_OK) {
        fprintf(stderr, "tj_function_call: %s\n", tj_last_error());
        fail();
    }
    int traces = m->traces;
    assert_int_equal(layer_model(m, &x, 1, &want, 1), TJ_OK);
    m->traces = traces;
    tt_assert_same(got, want);
}

static void test_cache_counts(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(1);
    layer m;
    layer_init(&m, gen);
    tj_function *f = tj_function_new(layer_model, &m, 1, 1, 2, NULL);
    assert_non_null(f);
    assert_stats(f, 0, 0, 0, 0, 0, 0);
    tj_tensor *a = batch(gen, 2), *a2 = batch(gen, 2), *b = batch(gen, 3), *c = batch(gen, 5);
    call_and_check(f, &m, a); /* traces for batch 2 */
    assert_stats(f, 1, 0, 1, 0, 0, 1);
    call_and_check(f, &m, a2); /* same signature, other values */
    assert_stats(f, 2, 1, 1, 0, 0, 1);
    call_and_check(f, &m, b); /* a new size: retrace */
    assert_stats(f, 3, 1, 2, 1, 0, 2);
    call_and_check(f, &m, a); /* batch 2 is now the most recent ... */
    assert_stats(f, 4, 2, 2, 1, 0, 2);
    call_and_check(f, &m, c); /* ... so batch 3 is dropped for batch 5 */
    assert_stats(f, 5, 2, 3, 2, 1, 2);
    call_and_check(f, &m, a);
    assert_stats(f, 6, 3, 3, 2, 1, 2);
    call_and_check(f, &m, b); /* traced again; batch 5 goes */
    assert_stats(f, 7, 3, 4, 3, 2, 2);
    assert_int_equal(m.traces, 4); /* the model ran under the tracer once per miss */
    /* another dtype is another signature */
    tj_tensor *d = tj_to_dtype(a, TJ_F64);
    tj_tensor *out;
    assert_int_equal(tj_function_call(f, &d, &out), TJ_ERR_DTYPE); /* the weights are f32 */
    assert_stats(f, 8, 3, 4, 3, 2, 2); /* a failed trace caches nothing */
    tj_function_free(f);
    tj_generator_free(gen);
}

static void test_parameters_by_reference(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(2);
    layer m;
    layer_init(&m, gen);
    tj_function *f = tj_function_new(layer_model, &m, 1, 1, 4, NULL);
    tj_tensor *x = batch(gen, 2);
    call_and_check(f, &m, x);
    assert_non_null(tj_mul_scalar_(m.w, -0.5));
    assert_non_null(tj_add_scalar_(m.b, 1.0, 1.0));
    call_and_check(f, &m, x); /* a hit that sees the new weights */
    assert_stats(f, 2, 1, 1, 0, 0, 1);
    tj_function_free(f);
    tj_generator_free(gen);
}

static void test_allow_size_change(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(3);
    layer m;
    layer_init(&m, gen);
    /* the signature still has the sizes: one program per batch size, each
     * compiled with the option */
    tj_compile_options opts = {.allow_size_change = true};
    tj_function *f = tj_function_new(layer_model, &m, 1, 1, 1, &opts);
    call_and_check(f, &m, batch(gen, 2));
    call_and_check(f, &m, batch(gen, 7));
    assert_stats(f, 2, 0, 2, 1, 1, 1);
    tj_function_free(f);
    tj_generator_free(gen);
}

static void test_bad_arguments(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(4);
    layer m;
    layer_init(&m, gen);
    assert_null(tj_function_new(NULL, &m, 1, 1, 2, NULL));
    tt_assert_error("tj_function_new: the model function is NULL");
    assert_null(tj_function_new(layer_model, &m, -1, 1, 2, NULL));
    tt_assert_error("needs n_in >= 0, n_out >= 1 and capacity >= 1 (got -1, 1, 2)");
    assert_null(tj_function_new(layer_model, &m, 1, 0, 2, NULL));
    tt_assert_error("(got 1, 0, 2)");
    assert_null(tj_function_new(layer_model, &m, 1, 1, 0, NULL));
    tt_assert_error("(got 1, 1, 0)");
    tj_clear_error();
    tj_tensor *out = NULL, *x = batch(gen, 2), *none = NULL;
    assert_int_equal(tj_function_call(NULL, &x, &out), TJ_ERR_ARG);
    tt_assert_error("tj_function_call: function is NULL");
    tj_clear_error();
    tj_function *f = tj_function_new(layer_model, &m, 1, 1, 2, NULL);
    assert_int_equal(tj_function_call(f, NULL, &out), TJ_ERR_ARG);
    tt_assert_error("tj_function_call: input 0 is NULL");
    tj_clear_error();
    assert_int_equal(tj_function_call(f, &none, &out), TJ_ERR_ARG);
    tt_assert_error("input 0 is NULL");
    tj_clear_error();
    assert_int_equal(tj_function_call(f, &x, NULL), TJ_ERR_ARG);
    assert_stats(f, 1, 0, 1, 0, 0, 1); /* traced, then refused by tj_run */
    tj_function_stats zero = tj_function_get_stats(NULL);
    assert_int_equal(zero.calls, 0);
    tj_function_free(f);
    tj_function_free(NULL);
    tj_generator_free(gen);
}

/* ---- threads: calls race with evictions ----------------------------------------------- */

enum { THREADS = 4, CALLS = 20 };

typedef struct worker {
    tj_function *f;
    tj_tensor *x[2], *want[2];
    int mismatches, failures;
} worker;

static void *call_worker(void *arg) {
    worker *w = arg;
    for (int k = 0; k < CALLS; k++) {
        int which = k % 2;
        tj_scope_begin();
        tj_tensor *out = NULL;
        if (tj_function_call(w->f, &w->x[which], &out) != TJ_OK) w->failures++;
        size_t n = (size_t)tj_numel(w->want[which]) * sizeof(float);
        if (!out || tj_numel(out) != tj_numel(w->want[which]) ||
            memcmp(tj_data(out), tj_data(w->want[which]), n) != 0)
            w->mismatches++;
        tj_scope_end();
    }
    return NULL;
}

static void test_concurrent_calls_with_evictions(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(5);
    layer m;
    layer_init(&m, gen);
    tj_function *f = tj_function_new(layer_model, &m, 1, 1, 1, NULL); /* room for one */
    tj_tensor *x[2] = {batch(gen, 2), batch(gen, 3)}, *want[2];
    for (int i = 0; i < 2; i++) assert_int_equal(layer_model(&m, &x[i], 1, &want[i], 1), TJ_OK);
    pthread_t threads[THREADS];
    worker w[THREADS];
    for (int t = 0; t < THREADS; t++) {
        w[t] = (worker){f, {x[0], x[1]}, {want[0], want[1]}, 0, 0};
        assert_int_equal(pthread_create(&threads[t], NULL, call_worker, &w[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        assert_int_equal(pthread_join(threads[t], NULL), 0);
        assert_int_equal(w[t].failures, 0);
        assert_int_equal(w[t].mismatches, 0);
    }
    tj_function_stats s = tj_function_get_stats(f);
    assert_int_equal(s.calls, THREADS * CALLS);
    assert_int_equal(s.hits + s.misses, s.calls);
    assert_int_equal(s.cached, 1);
    tj_function_free(f);
    tj_generator_free(gen);
}

/* Two threads miss on the same signature at once: both trace (the model
 * waits until both are inside it), and the cache keeps one entry. */
static pthread_barrier_t both_tracing;

static tj_status waits_for_other(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out,
                                 int n_out) {
    pthread_barrier_wait(&both_tracing);
    return layer_model(ctx, in, n_in, out, n_out);
}

typedef struct racer {
    tj_function *f;
    tj_tensor *x;
    tj_status st;
} racer;

static void *race(void *arg) {
    racer *r = arg;
    tj_scope_begin();
    tj_tensor *out;
    r->st = tj_function_call(r->f, &r->x, &out);
    tj_scope_end();
    return NULL;
}

static void test_concurrent_misses_share_one_entry(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(6);
    layer m;
    layer_init(&m, gen);
    assert_int_equal(pthread_barrier_init(&both_tracing, NULL, 2), 0);
    tj_function *f = tj_function_new(waits_for_other, &m, 1, 1, 4, NULL);
    racer r[2] = {{f, batch(gen, 2), TJ_OK}, {f, batch(gen, 2), TJ_OK}};
    pthread_t threads[2];
    for (int t = 0; t < 2; t++) assert_int_equal(pthread_create(&threads[t], NULL, race, &r[t]), 0);
    for (int t = 0; t < 2; t++) {
        assert_int_equal(pthread_join(threads[t], NULL), 0);
        assert_int_equal(r[t].st, TJ_OK);
    }
    assert_stats(f, 2, 0, 2, 1, 0, 1);
    tj_function_free(f);
    pthread_barrier_destroy(&both_tracing);
    tj_generator_free(gen);
}

int main(void) {
#define T(f) TT_SCOPED_TEST(f)
    const struct CMUnitTest tests[] = {
        T(test_cache_counts),
        T(test_parameters_by_reference),
        T(test_allow_size_change),
        T(test_bad_arguments),
        T(test_concurrent_calls_with_evictions),
        T(test_concurrent_misses_share_one_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
