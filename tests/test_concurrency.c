/* test_concurrency.c — tjit used from several threads at once: one program
 * replayed by four threads (planned and op by op, forward and training),
 * different programs traced and compiled on four threads, plans for new
 * input signatures made by threads racing on the same program, and a
 * tj_function called from several threads. Every thread's results equal the
 * single-threaded ones. make test also runs this test under ThreadSanitizer
 * (build-tsan), which reports any data race in the library. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/models/models.h"
#include "tests/support/testing.h"

enum { THREADS = 4 };

/* Values equal to 1e-5 relative: BLAS on a thread of its own may split its
 * sums otherwise than on the main thread. */
static bool close_enough(const tj_tensor *a, const tj_tensor *b) {
    tt_ref x = tt_ref_of(a), y = tt_ref_of(b);
    bool same = x.numel == y.numel;
    for (int64_t i = 0; same && i < x.numel; i++)
        same = fabs(x.v[i] - y.v[i]) <= 1e-5 * (1.0 + fabs(y.v[i])) ||
               (isnan(x.v[i]) && isnan(y.v[i]));
    tt_ref_free(&x);
    tt_ref_free(&y);
    return same;
}

typedef struct model_run {
    const tjx_model *m;
    tj_generator *gen;
    void *params;
    tj_tensor *in[8];
    tj_tensor *expected[8]; /* eager results */
} model_run;

static void model_open(model_run *r, const char *name, uint64_t seed) {
    memset(r, 0, sizeof *r);
    r->m = tjx_find_model(name);
    assert_non_null(r->m);
    r->gen = tj_generator_new(seed);
    r->params = r->m->create(r->gen);
    assert_non_null(r->params);
    assert_int_equal(r->m->make_inputs(r->params, r->gen, r->in), TJ_OK);
    assert_int_equal(r->m->forward(r->params, r->in, r->m->n_in, r->expected, r->m->n_out), TJ_OK);
}

static void model_close(model_run *r) {
    for (int i = 0; i < r->m->n_in; i++) tj_release(r->in[i]);
    for (int i = 0; i < r->m->n_out; i++) tj_release(r->expected[i]);
    r->m->destroy(r->params);
    tj_generator_free(r->gen);
}

/* ---- one program, four threads ------------------------------------------------ */

typedef struct replayer {
    tj_program *p;
    const model_run *r;
    int reps;
    bool train;
    int failures;
} replayer;

static void *replay_many(void *arg) {
    replayer *w = arg;
    for (int k = 0; k < w->reps; k++) {
        tj_tensor *out[8] = {0};
        if (tj_run(w->p, w->r->in, out)) {
            w->failures++;
            continue;
        }
        for (int o = 0; o < w->r->m->n_out; o++) {
            w->failures += !close_enough(out[o], w->r->expected[o]);
            tj_release(out[o]);
        }
    }
    return NULL;
}

static void replay_on_threads(tj_program *p, const model_run *r, int reps) {
    pthread_t th[THREADS];
    replayer w[THREADS];
    for (int t = 0; t < THREADS; t++) {
        w[t] = (replayer){p, r, reps, false, 0};
        assert_int_equal(pthread_create(&th[t], NULL, replay_many, &w[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        if (w[t].failures) fail_msg("%s: thread %d: %d failed or wrong replays", r->m->name, t, w[t].failures);
    }
}

/* (Not the CNN: its forward updates batch_norm's running statistics, state
 * that concurrent replays of one program share and write at once, as
 * concurrent calls of one PyTorch module in training mode would.) */
static void one_program_replayed_by_four_threads(void **state) {
    (void)state;
    const char *models[] = {"mlp", "lstm_cell", "lstm", "transformer"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        model_run r;
        model_open(&r, models[i], 11);
        tj_graph *g = tj_trace(r.m->forward, r.params, r.in, r.m->n_in, r.m->n_out, NULL);
        assert_non_null(g);
        for (int dynamic = 0; dynamic < 2; dynamic++) {
            tj_compile_options o = {.dynamic_replay = dynamic};
            tj_program *p = tj_compile(g, &o);
            assert_non_null(p);
            replay_on_threads(p, &r, 6);
            tj_program_free(p);
        }
        tj_graph_free(g);
        model_close(&r);
    }
}

/* ---- tracing and compiling on four threads --------------------------------------- */

typedef struct tracer_job {
    const char *model;
    int failures;
    char message[256];
} tracer_job;

/* Each thread traces its own model (tracing state is per thread), compiles it
 * with gradients and replays it against its own eager results. */
static void *trace_compile_run(void *arg) {
    tracer_job *job = arg;
    model_run r;
    memset(&r, 0, sizeof r);
    r.m = tjx_find_model(job->model);
    r.gen = tj_generator_new(5);
    r.params = r.m->create(r.gen);
    if (!r.params || r.m->make_inputs(r.params, r.gen, r.in) ||
        r.m->forward(r.params, r.in, r.m->n_in, r.expected, r.m->n_out)) {
        job->failures++;
        snprintf(job->message, sizeof job->message, "setup: %s", tj_last_error());
        return NULL;
    }
    for (int rep = 0; rep < 2; rep++) {
        tj_graph *g = tj_trace(r.m->forward, r.params, r.in, r.m->n_in, r.m->n_out, NULL);
        tj_compile_options o = {.grad_parameters = rep == 1};
        tj_program *p = g ? tj_compile(g, &o) : NULL;
        tj_tensor *out[8] = {0};
        if (!p || tj_run(p, r.in, out) || (rep == 1 && tj_backward(p, NULL, NULL))) {
            job->failures++;
            snprintf(job->message, sizeof job->message, "%s", tj_last_error());
        } else {
            for (int o2 = 0; o2 < r.m->n_out; o2++) job->failures += !close_enough(out[o2], r.expected[o2]);
        }
        for (int o2 = 0; o2 < r.m->n_out; o2++) tj_release(out[o2]);
        tj_program_free(p);
        tj_graph_free(g);
    }
    model_close(&r);
    return NULL;
}

static void four_threads_trace_and_compile_at_once(void **state) {
    (void)state;
    tracer_job jobs[THREADS] = {{"mlp", 0, ""}, {"lstm_cell", 0, ""}, {"cnn", 0, ""}, {"transformer", 0, ""}};
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) assert_int_equal(pthread_create(&th[t], NULL, trace_compile_run, &jobs[t]), 0);
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        if (jobs[t].failures) fail_msg("%s: %d failures (%s)", jobs[t].model, jobs[t].failures, jobs[t].message);
    }
}

/* ---- plans made by racing threads ------------------------------------------------------ */

static tj_status affine(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    tj_scope_begin();
    out[0] = tj_keep(tj_tanh(tj_add(tj_matmul(in[0], in[1]), in[2], 1.0)));
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

typedef struct sizes_job {
    tj_program *p;
    tj_tensor *w, *b;
    int rows0, failures;
} sizes_job;

/* Threads replay one allow_size_change program on batch sizes the others use
 * too, so that several ask for the same new plan at once. */
static void *new_sizes(void *arg) {
    sizes_job *j = arg;
    tj_generator *gen = tj_generator_new((uint64_t)j->rows0);
    for (int k = 0; k < 12; k++) {
        int64_t s[2] = {1 + (j->rows0 + k) % 6, 6};
        tj_tensor *x = tt_random(gen, s, 2, TJ_F32, -1, 1);
        tj_tensor *args[3] = {x, j->w, j->b}, *out = NULL, *want = NULL;
        if (tj_run(j->p, args, &out) || affine(NULL, args, 3, &want, 1)) j->failures++;
        else j->failures += !close_enough(out, want);
        tj_release(out);
        tj_release(want);
        tj_release(x);
    }
    tj_generator_free(gen);
    return NULL;
}

static void threads_race_for_new_plans(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(3);
    int64_t xs[2] = {4, 6}, ws[2] = {6, 5}, bs[1] = {5};
    tj_tensor *in[3] = {tt_random(gen, xs, 2, TJ_F32, -1, 1), tt_random(gen, ws, 2, TJ_F32, -1, 1),
                        tt_random(gen, bs, 1, TJ_F32, -1, 1)};
    tj_graph *g = tj_trace(affine, NULL, in, 3, 1, NULL);
    assert_non_null(g);
    tj_compile_options o = {.allow_size_change = true};
    tj_program *p = tj_compile(g, &o);
    assert_non_null(p);
    pthread_t th[THREADS];
    sizes_job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t] = (sizes_job){p, in[1], in[2], t, 0};
        assert_int_equal(pthread_create(&th[t], NULL, new_sizes, &jobs[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(jobs[t].failures, 0);
    }
    tj_program_free(p);
    tj_graph_free(g);
    for (int i = 0; i < 3; i++) tj_release(in[i]);
    tj_generator_free(gen);
}

/* ---- tj_function from several threads ------------------------------------------------ */

typedef struct function_job {
    tj_function *f;
    const model_run *r;
    int failures;
} function_job;

static void *call_function(void *arg) {
    function_job *j = arg;
    for (int k = 0; k < 5; k++) {
        tj_tensor *out[8] = {0};
        if (tj_function_call(j->f, j->r->in, out)) {
            j->failures++;
            continue;
        }
        for (int o = 0; o < j->r->m->n_out; o++) {
            j->failures += !close_enough(out[o], j->r->expected[o]);
            tj_release(out[o]);
        }
    }
    return NULL;
}

static void one_function_called_from_four_threads(void **state) {
    (void)state;
    model_run r;
    model_open(&r, "mlp", 9);
    tj_function *f = tj_function_new(r.m->forward, r.params, r.m->n_in, r.m->n_out, 4, NULL);
    assert_non_null(f);
    pthread_t th[THREADS];
    function_job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t] = (function_job){f, &r, 0};
        assert_int_equal(pthread_create(&th[t], NULL, call_function, &jobs[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(jobs[t].failures, 0);
    }
    tj_function_free(f);
    model_close(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_program_replayed_by_four_threads),
        cmocka_unit_test(four_threads_trace_and_compile_at_once),
        cmocka_unit_test(threads_race_for_new_plans),
        cmocka_unit_test(one_function_called_from_four_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
