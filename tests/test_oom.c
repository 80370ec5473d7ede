/* test_oom.c — allocation failures are survived everywhere: for each example
 * model, the whole pipeline trace -> tj_compile (with the parameters'
 * gradients) -> tj_run -> tj_backward runs with the k-th allocation of tjit
 * failing, for every k up to the pipeline's total count. Every run ends in
 * success or in TJ_ERR_MEMORY with a message, never in a crash or another
 * status, and leaves no storage behind (the live-bytes counter is back where
 * it was; under ASan, LeakSanitizer checks every other block at exit).
 *
 * The sweep covers every k in the plain build. The sanitizer build is some
 * ten times slower, so there it tries the first 200 k and then every 7th;
 * TJIT_OOM_STRIDE=1 (or any stride) overrides the step; TJIT_OOM_K=k runs
 * only that k (to follow one failure in a debugger). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/storage.h"
#include "examples/models/models.h"
#include "tests/support/testing.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

enum { MAX_IO = 8, DENSE_PREFIX = 200 };

typedef struct fixture {
    tj_generator *gen;
    tjx_task task;
    tj_tensor *in[MAX_IO]; /* the model's inputs, then the loss's target */
    int n_in;
} fixture;

/* Parameters, inputs and target are made before the failures start: the
 * sweep is over the pipeline, not over the model's set-up. */
static void fixture_init(fixture *f, const tjx_model *m, const char *loss) {
    *f = (fixture){.task = {m, NULL, loss}, .n_in = m->n_in + 1};
    f->gen = tj_generator_new(11);
    assert_non_null(f->gen);
    f->task.params = m->create(f->gen);
    assert_non_null(f->task.params);
    assert_int_equal(m->make_inputs(f->task.params, f->gen, f->in), TJ_OK);
    if (!strcmp(loss, "nll")) {
        int64_t b = tj_size(f->in[0], 0);
        tj_scope_begin();
        tj_tensor *u = tj_mul_scalar(tj_rand(&b, 1, TJ_F64, f->gen), 10.0);
        f->in[m->n_in] = tj_retain(tj_to_dtype(tj_floor(u), TJ_I64));
        tj_scope_end();
    } else {
        f->in[m->n_in] = tj_zeros(NULL, 0, TJ_F32);
    }
    assert_non_null(f->in[m->n_in]);
}

static void fixture_free(fixture *f) {
    for (int i = 0; i < f->n_in; i++) tj_release(f->in[i]);
    f->task.model->destroy(f->task.params);
    tj_generator_free(f->gen);
}

/* The pipeline under test; its status, with tj_last_error() saying why. */
static tj_status pipeline(fixture *f) {
    tj_clear_error();
    tj_graph *g = tj_trace(tjx_loss_fn, &f->task, f->in, f->n_in, 1, NULL);
    if (!g) return tj_last_status();
    tj_compile_options o = {.grad_parameters = true, .backend = "portable"}; /* LLVM allocates outside tjit's hook */
    tj_program *p = tj_compile(g, &o);
    tj_graph_free(g);
    if (!p) return tj_last_status();
    tj_tensor *loss = NULL;
    tj_status st = tj_run(p, f->in, &loss);
    if (!st) st = tj_backward(p, NULL, NULL);
    tj_release(loss);
    tj_program_free(p);
    return st;
}

static long long live_bytes(void) {
    tjc_alloc_counts c;
    tjc_alloc_counts_get(&c);
    return c.live_bytes;
}

/* Prints one run that went wrong (the first few of a model) and counts it;
 * the sweep goes on, so that one run of the test lists many causes. */
static int report(const tjx_model *m, long long k, long long total, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int report(const tjx_model *m, long long k, long long total, const char *fmt, ...) {
    static const tjx_model *last_model;
    static int n_printed;
    if (m != last_model) last_model = m, n_printed = 0;
    if (n_printed++ >= 20) return 1;
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    print_message("%s, allocation %lld of %lld failing: %s\n", m->name, k, total, msg);
    return 1;
}

static long long stride_from_env(void) {
    const char *s = getenv("TJIT_OOM_STRIDE");
    long long v = s ? atoll(s) : 0;
    return v > 0 ? v : SANITIZED ? 7 : 1;
}

static void sweep(const tjx_model *m, const char *loss) {
    fixture f;
    fixture_init(&f, m, loss);
    /* twice without failures: the first run may fill process-wide tables
     * that later runs only read */
    for (int i = 0; i < 2; i++) assert_int_equal(pipeline(&f), TJ_OK);
    long long before = tjc_alloc_count(), live = live_bytes();
    assert_int_equal(pipeline(&f), TJ_OK);
    long long total = tjc_alloc_count() - before;
    assert_true(total > 0);
    assert_int_equal(live_bytes(), live);

    long long stride = stride_from_env(), tried = 0, failed = 0, survived = 0, wrong = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const char *only = getenv("TJIT_OOM_K");
    long long first = only ? atoll(only) : 1, last = only ? first : total;
    for (long long k = first; k <= last; k += k < DENSE_PREFIX ? 1 : stride) {
        tjc_alloc_fail_at(k);
        tj_status st = pipeline(&f);
        bool injected = tjc_alloc_failure_injected();
        tjc_alloc_fail_at(0);
        tried++;
        if (st == TJ_OK) {
            survived++;
        } else {
            failed++;
            if (st != TJ_ERR_MEMORY || !tj_last_error()[0] || !injected)
                wrong += report(m, k, total, "status %s (%d), \"%s\"%s", tj_status_name(st),
                                (int)st, tj_last_error(),
                                injected ? "" : " (no allocation was made to fail)");
        }
        long long leaked = live_bytes() - live;
        if (leaked) {
            wrong += report(m, k, total, "%lld bytes of storage leaked", leaked);
            live += leaked; /* report the next leak on its own */
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (wrong) fail_msg("%s: %lld runs went wrong", m->name, wrong);
    /* the pipeline still works after all of that */
    assert_int_equal(pipeline(&f), TJ_OK);
    print_message("%s: %lld allocations per pipeline; %lld runs (stride %lld after the first %d): "
                  "%lld failed with TJ_ERR_MEMORY, %lld succeeded anyway; %.1f s\n",
                  m->name, total, tried, stride, DENSE_PREFIX, failed, survived,
                  (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    fixture_free(&f);
}

static void mlp(void **s) { (void)s; sweep(&tjx_mlp, "nll"); }
static void lstm_cell(void **s) { (void)s; sweep(&tjx_lstm_cell, "square"); }
static void lstm(void **s) { (void)s; sweep(&tjx_lstm, "square"); }
static void cnn(void **s) { (void)s; sweep(&tjx_cnn, "square"); }
static void transformer(void **s) { (void)s; sweep(&tjx_transformer, "square"); }

int main(void) {
    /* the sweep is about failure paths, not speed: one thread does not spin
     * in OpenMP barriers when the machine is shared */
    tj_set_num_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mlp), cmocka_unit_test(lstm_cell), cmocka_unit_test(lstm),
        cmocka_unit_test(cnn), cmocka_unit_test(transformer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
