/* test_plan.c — static execution plans (interpreter/plan.h): planned replay
 * equals the register interpreter's op-by-op replay bit for bit on every
 * example model, forward and backward; steady-state replay allocates nothing
 * but its outputs; the memory plan is sound and its checker catches a bad
 * one; several threads replay one program at once; new input signatures
 * (sizes, strides) get plans of their own. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/storage.h"
#include "examples/models/models.h"
#include "interpreter/program.h"
#include "tests/support/fuser_cases.h"
#include "tests/support/runtime_testing.h"

typedef struct model_case {
    const tjx_model *m;
    tj_generator *gen;
    void *params;
    tj_tensor *in[8];
    tj_graph *g;
} model_case;

static void model_open(model_case *c, int i) {
    memset(c, 0, sizeof *c);
    c->m = tjx_model_at(i);
    c->gen = tj_generator_new(7);
    c->params = c->m->create(c->gen);
    assert_non_null(c->params);
    assert_int_equal(c->m->make_inputs(c->params, c->gen, c->in), TJ_OK);
    c->g = tj_trace(c->m->forward, c->params, c->in, c->m->n_in, c->m->n_out, NULL);
    if (!c->g) fail_msg("%s: trace: %s", c->m->name, tj_last_error());
}

static void model_close(model_case *c) {
    tj_graph_free(c->g);
    for (int i = 0; i < c->m->n_in; i++) tj_release(c->in[i]);
    c->m->destroy(c->params);
    tj_generator_free(c->gen);
}

static tj_program *compile(const tj_graph *g, const char *backend, bool dynamic, bool grads) {
    tj_compile_options o = {.backend = backend, .dynamic_replay = dynamic, .grad_parameters = grads};
    tj_program *p = tj_compile(g, &o);
    if (!p) fail_msg("compile: %s", tj_last_error());
    return p;
}

static void assert_planned(const tj_program *p, const char *what) {
    tj_plan_stats st;
    assert_int_equal(tj_program_plan_stats(p, &st), TJ_OK);
    if (!st.planned) fail_msg("%s: not planned: %s", what, st.plan_error);
}

/* Runs the planned and the dynamic program twice each and compares every
 * output. */
static void compare_forward(const char *name, tj_program *planned, tj_program *dynamic,
                            tj_tensor *const *in, int n_out) {
    for (int rep = 0; rep < 2; rep++) {
        tj_tensor *a[8], *b[8];
        if (tj_run(planned, in, a)) fail_msg("%s: planned: %s", name, tj_last_error());
        if (tj_run(dynamic, in, b)) fail_msg("%s: dynamic: %s", name, tj_last_error());
        for (int o = 0; o < n_out; o++) {
            tt_assert_identical(a[o], b[o], name, rep);
            tj_release(a[o]);
            tj_release(b[o]);
        }
    }
}

static const char *backends[] = {"portable",
#ifdef TJIT_HAVE_LLVM
                                 "llvm"
#endif
};

static void planned_equals_dynamic_on_every_model(void **state) {
    (void)state;
    for (int i = 0; i < tjx_num_models(); i++)
        for (size_t b = 0; b < sizeof backends / sizeof *backends; b++) {
            model_case c;
            model_open(&c, i);
            tj_program *planned = compile(c.g, backends[b], false, false);
            tj_program *dynamic = compile(c.g, backends[b], true, false);
            assert_planned(planned, c.m->name);
            char what[96];
            snprintf(what, sizeof what, "%s forward (%s)", c.m->name, backends[b]);
            compare_forward(what, planned, dynamic, c.in, c.m->n_out);
            tj_program_free(planned);
            tj_program_free(dynamic);
            model_close(&c);
        }
}

/* Forward and backward of the parameters' gradients, planned and dynamic:
 * the outputs and every parameter's gradient equal bit for bit. */
static void planned_backward_equals_dynamic(void **state) {
    (void)state;
    for (int i = 0; i < tjx_num_models(); i++) {
        model_case c;
        model_open(&c, i);
        tj_program *p[2] = {compile(c.g, NULL, false, true), compile(c.g, NULL, true, true)};
        assert_planned(p[0], c.m->name);
        tj_tensor *out[2][8];
        for (int k = 0; k < 2; k++) {
            if (tj_run(p[k], c.in, out[k])) fail_msg("%s: forward: %s", c.m->name, tj_last_error());
            if (tj_backward(p[k], NULL, NULL)) fail_msg("%s: backward: %s", c.m->name, tj_last_error());
        }
        for (int o = 0; o < c.m->n_out; o++) {
            tt_assert_identical(out[0][o], out[1][o], c.m->name, 0);
            tj_release(out[0][o]);
            tj_release(out[1][o]);
        }
        tj_tensor *params[64];
        int n = c.m->parameters(c.params, params, 64);
        for (int k = 0; k < n; k++) {
            const char *name = tj_tensor_name(params[k]);
            tj_tensor *ga = tj_program_grad(p[0], name), *gb = tj_program_grad(p[1], name);
            if (!ga || !gb) fail_msg("%s: no gradient of %s", c.m->name, name);
            tt_assert_identical(ga, gb, name, 0);
            tj_release(ga);
            tj_release(gb);
        }
        tj_program_free(p[0]);
        tj_program_free(p[1]);
        model_close(&c);
    }
}

/* Storages and tensor headers made by n replays (outputs released). */
static tjc_alloc_counts replays_allocate(tj_program *p, tj_tensor *const *in, int n_out, int n,
                                         bool backward) {
    tjc_alloc_counts before, after;
    tjc_alloc_counts_get(&before);
    for (int r = 0; r < n; r++) {
        tj_tensor *out[8];
        if (tj_run(p, in, out)) fail_msg("replay: %s", tj_last_error());
        for (int o = 0; o < n_out; o++) tj_release(out[o]);
        if (backward && tj_backward(p, NULL, NULL)) fail_msg("backward: %s", tj_last_error());
    }
    tjc_alloc_counts_get(&after);
    return (tjc_alloc_counts){after.storages - before.storages, after.headers - before.headers,
                              after.live_bytes - before.live_bytes, 0};
}

static void steady_state_replay_allocates_only_outputs(void **state) {
    (void)state;
    enum { REPS = 5 };
    for (int i = 0; i < tjx_num_models(); i++) {
        model_case c;
        model_open(&c, i);
        tj_program *p = compile(c.g, NULL, false, false);
        replays_allocate(p, c.in, c.m->n_out, 2, false); /* warm up: frames, kernels */
        tjc_alloc_counts got = replays_allocate(p, c.in, c.m->n_out, REPS, false);
        const tji_plan *plan = p->plans[0];
        /* one storage per output buffer, one header per output */
        if (got.storages != REPS * plan->n_external_buffers || got.headers > REPS * c.m->n_out)
            fail_msg("%s: %d replays made %lld storages and %lld tensor headers; their outputs "
                     "need %d and at most %d", c.m->name, REPS, got.storages, got.headers,
                     REPS * plan->n_external_buffers, REPS * c.m->n_out);
        assert_int_equal(got.live_bytes, 0);
        tj_program_free(p);
        /* training: forward and backward make their outputs and the gradient
         * seeds (ones for each output), and nothing else */
        p = compile(c.g, NULL, false, true);
        replays_allocate(p, c.in, c.m->n_out, 2, true);
        got = replays_allocate(p, c.in, c.m->n_out, REPS, true);
        int expected = REPS * (p->plans[0]->n_external_buffers +
                               p->backward->plans[0]->n_external_buffers + c.m->n_out);
        if (got.storages != expected)
            fail_msg("%s: %d training steps made %lld storages; outputs, gradients and seeds "
                     "need %d", c.m->name, REPS, got.storages, expected);
        tj_program_free(p);
        model_close(&c);
    }
}

/* Sound plans on every model (forward and backward), and the checker finds
 * two buffers made to share bytes while both are live. */
static void memory_plans_are_sound(void **state) {
    (void)state;
    for (int i = 0; i < tjx_num_models(); i++) {
        model_case c;
        model_open(&c, i);
        tj_program *p = compile(c.g, NULL, false, true);
        tji_plan *plans[2] = {p->plans[0], p->backward->plans[0]};
        for (int k = 0; k < 2; k++) {
            tji_plan *P = plans[k];
            assert_non_null(P);
            if (tji_plan_verify(P)) fail_msg("%s: %s", c.m->name, tj_last_error());
            assert_true(P->arena_bytes[0] >= P->peak_live_bytes);
            /* two arena buffers live at once, moved onto the same bytes */
            int a = -1, b = -1;
            for (int x = 0; x < P->n_buffers && b < 0; x++) {
                const tji_buffer *X = &P->buffers[x];
                if (X->external || X->bytes <= 0) continue;
                for (int y = x + 1; y < P->n_buffers && b < 0; y++) {
                    const tji_buffer *Y = &P->buffers[y];
                    if (!Y->external && Y->bytes > 0 && X->first <= Y->last && Y->first <= X->last &&
                        P->buffer_arena[x] == P->buffer_arena[y]) {
                        a = x;
                        b = y;
                    }
                }
            }
            if (b < 0) continue;
            int64_t kept = P->buffers[b].offset;
            P->buffers[b].offset = P->buffers[a].offset;
            if (P->buffers[b].offset + P->buffers[b].bytes <= P->arena_bytes[P->buffer_arena[b]]) {
                assert_int_equal(tji_plan_verify(P), TJ_ERR_INTERNAL);
                assert_non_null(strstr(tj_last_error(), "share bytes"));
            }
            P->buffers[b].offset = kept;
            assert_int_equal(tji_plan_verify(P), TJ_OK);
        }
        tj_program_free(p);
        model_close(&c);
    }
}

/* ---- threads ------------------------------------------------------------------- */

typedef struct replayer {
    tj_program *p;
    tj_tensor *const *in;
    tj_tensor *expected;
    int reps, n_out;
    int mismatches;
} replayer;

static void *replay_many(void *arg) {
    replayer *r = arg;
    for (int k = 0; k < r->reps; k++) {
        tj_tensor *out[8] = {0};
        if (tj_run(r->p, r->in, out)) {
            fprintf(stderr, "replay failed: %s\n", tj_last_error());
            r->mismatches++;
            continue;
        }
        tt_ref a = tt_ref_of(out[0]), b = tt_ref_of(r->expected);
        /* BLAS may split its sums differently on a thread of its own (no
         * OpenMP team there), so results agree to rounding, not bit for bit */
        bool same = a.numel == b.numel;
        for (int64_t e = 0; same && e < a.numel; e++)
            same = fabs(a.v[e] - b.v[e]) <= 1e-5 * (1.0 + fabs(b.v[e]));
        if (!same) {
            double worst = 0;
            for (int64_t e = 0; e < a.numel && a.numel == b.numel; e++)
                if (fabs(a.v[e] - b.v[e]) > worst) worst = fabs(a.v[e] - b.v[e]);
            fprintf(stderr, "replay %d differs by up to %g\n", k, worst);
        }
        r->mismatches += !same;
        tt_ref_free(&a);
        tt_ref_free(&b);
        for (int o = 0; o < r->n_out; o++) tj_release(out[o]);
    }
    return NULL;
}

static void four_threads_replay_one_program(void **state) {
    (void)state;
    const char *models[] = {"mlp", "lstm_cell", "cnn", "transformer"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        model_case c;
        int idx = -1;
        for (int k = 0; k < tjx_num_models(); k++)
            if (!strcmp(tjx_model_at(k)->name, models[i])) idx = k;
        if (idx < 0) continue;
        model_open(&c, idx);
        tj_program *p = compile(c.g, NULL, false, false);
        tj_tensor *expected[8];
        assert_int_equal(tj_run(p, c.in, expected), TJ_OK);
        replayer r[4];
        pthread_t th[4];
        for (int t = 0; t < 4; t++) {
            r[t] = (replayer){p, c.in, expected[0], 20, c.m->n_out, 0};
            assert_int_equal(pthread_create(&th[t], NULL, replay_many, &r[t]), 0);
        }
        for (int t = 0; t < 4; t++) {
            pthread_join(th[t], NULL);
            if (r[t].mismatches) fail_msg("%s: thread %d: %d of %d replays differ", models[i], t,
                                          r[t].mismatches, r[t].reps);
        }
        for (int o = 0; o < c.m->n_out; o++) tj_release(expected[o]);
        tj_program_free(p);
        model_close(&c);
    }
}

/* ---- signatures ----------------------------------------------------------------- */

static tj_status affine(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    tj_scope_begin();
    tj_tensor *y = tj_tanh(tj_add(tj_matmul(in[0], in[1]), in[2], 1.0));
    out[0] = tj_keep(tj_sum(tj_mul(y, y), NULL, 0, false));
    out[1] = tj_keep(tj_relu(y));
    tj_scope_end();
    return out[0] && out[1] ? TJ_OK : tj_last_status();
}

static void new_signatures_get_plans_of_their_own(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(3);
    int64_t xs[2] = {4, 6}, ws[2] = {6, 5}, bs[1] = {5};
    tj_tensor *in[3] = {tt_random(gen, xs, 2, TJ_F32, -1, 1), tt_random(gen, ws, 2, TJ_F32, -1, 1),
                        tt_random(gen, bs, 1, TJ_F32, -1, 1)};
    tj_graph *g = tj_trace(affine, NULL, in, 3, 2, NULL);
    assert_non_null(g);
    tj_compile_options po = {.allow_size_change = true}, dyn = {.allow_size_change = true,
                                                                 .dynamic_replay = true};
    tj_program *p = tj_compile(g, &po), *d = tj_compile(g, &dyn);
    assert_non_null(p);
    assert_non_null(d);
    assert_int_equal(atomic_load(&p->n_plans), 1); /* the traced signature, at compile time */
    int64_t rows[3] = {4, 9, 1};
    for (int k = 0; k < 3; k++) {
        int64_t s[2] = {rows[k], 6};
        tj_tensor *x = tt_random(gen, s, 2, TJ_F32, -1, 1);
        tj_tensor *args[3] = {x, in[1], in[2]};
        compare_forward("new sizes", p, d, args, 2);
        /* the same sizes, transposed in memory */
        tj_tensor *w = tt_noncontiguous(gen, in[1]);
        args[1] = w;
        compare_forward("strided weight", p, d, args, 2);
        tj_release(w);
        tj_release(x);
    }
    assert_true(atomic_load(&p->n_plans) >= 3);
    tj_program_free(p);
    tj_program_free(d);
    tj_graph_free(g);
    for (int i = 0; i < 3; i++) tj_release(in[i]);
    tj_generator_free(gen);
}

static tj_status xent(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    out[0] = tj_cross_entropy_loss(in[0], in[1], NULL, "mean", -100, 0.0);
    return out[0] ? TJ_OK : tj_last_status();
}

/* A kernel built from other ops (cross_entropy calls log_softmax and
 * nll_loss through the public API) runs nested under a planned replay: its
 * inner results go neither to the caller's scope nor to a tracer. */
static void composite_kernels_run_nested(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(5);
    int64_t ls[2] = {4, 3}, ts[1] = {4};
    tj_tensor *logits = tt_random(gen, ls, 2, TJ_F32, -1, 1);
    tj_tensor *target = tt_random(gen, ts, 1, TJ_I64, 0, 2);
    tj_tensor *in[2] = {logits, target};
    tj_graph *g = tj_trace(xent, NULL, in, 2, 1, NULL);
    assert_non_null(g);
    tj_program *p = compile(g, NULL, false, false), *d = compile(g, NULL, true, false);
    assert_planned(p, "cross_entropy");
    tj_scope_begin(); /* takes the outputs of tj_run, and nothing else */
    tj_tensor *a, *b;
    assert_int_equal(tj_run(p, in, &a), TJ_OK);
    assert_int_equal(tj_run(d, in, &b), TJ_OK);
    tt_assert_identical(a, b, "cross_entropy", 0);
    tj_scope_end(); /* would release the kernel's inner results a second time */
    tj_program_free(p);
    tj_program_free(d);
    tj_graph_free(g);
    tj_release(logits);
    tj_release(target);
    tj_generator_free(gen);
}

/* dynamic_replay keeps the register interpreter, and says so */
static void dynamic_replay_has_no_plan(void **state) {
    (void)state;
    model_case c;
    model_open(&c, 0);
    tj_program *p = compile(c.g, NULL, true, false);
    tj_plan_stats st;
    assert_int_equal(tj_program_plan_stats(p, &st), TJ_OK);
    assert_false(st.planned);
    assert_non_null(strstr(st.plan_error, "dynamic_replay"));
    char *text = tj_program_plan_to_string(p);
    assert_non_null(strstr(text, "no plan"));
    free(text);
    tj_program_free(p);
    model_close(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(planned_equals_dynamic_on_every_model),
        cmocka_unit_test(planned_backward_equals_dynamic),
        cmocka_unit_test(steady_state_replay_allocates_only_outputs),
        cmocka_unit_test(memory_plans_are_sound),
        cmocka_unit_test(four_threads_replay_one_program),
        cmocka_unit_test(new_signatures_get_plans_of_their_own),
        cmocka_unit_test(composite_kernels_run_nested),
        cmocka_unit_test(dynamic_replay_has_no_plan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
