/* test_ddp.c — DistributedDataParallel under mpirun (-np 2 and -np 3):
 * the MLP, the LSTM and the transformer block trained 20 SGD steps with each
 * rank on its shard of a global batch give the losses of one replica trained
 * on the whole batch (each rank trains that reference itself), and every
 * rank's parameters are bit-identical after every step; small buckets start
 * while backward still runs; no_sync accumulation, gradients as bucket views,
 * unused parameters, and models that differ across ranks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/storage.h"
#include "examples/models/models.h"
#include "tests/support/testing.h"
#include "tjit/distributed.h"

static int RANK, WORLD;
static int CHECKS; /* comparisons made on this rank, for the count line */

/* ---- helpers ------------------------------------------------------------------------- */

/* Every rank's copy of t (contiguous) equals rank 0's, bit for bit. */
static void assert_same_on_every_rank(tj_tensor *t, const char *what) {
    tj_scope_begin();
    int64_t n = tj_numel(t), all = n * WORLD;
    tj_tensor *gathered = tj_empty(&all, 1, tj_tensor_dtype(t));
    assert_int_equal(tj_dist_all_gather(gathered, t, NULL, NULL), TJ_OK);
    size_t bytes = (size_t)n * tj_dtype_size(tj_tensor_dtype(t));
    const char *base = tj_data(gathered);
    for (int r = 1; r < WORLD; r++)
        if (memcmp(base, base + (size_t)r * bytes, bytes) != 0)
            fail_msg("%s: rank %d's values differ from rank 0's", what, r);
    CHECKS++;
    tj_scope_end();
}

static void assert_params_identical(const tjx_task *t, int step) {
    tj_tensor *ps[32];
    int n = t->model->parameters(t->params, ps, 32);
    for (int i = 0; i < n; i++) {
        char what[96];
        snprintf(what, sizeof what, "step %d, parameter %s", step, tj_tensor_name(ps[i]));
        assert_same_on_every_rank(ps[i], what);
    }
}

/* The mean of every rank's value. */
static double mean_over_ranks(double v) {
    int64_t one = 1;
    tj_scope_begin();
    tj_tensor *t = tj_from_array(&v, &one, 1, TJ_F64);
    assert_int_equal(tj_dist_all_reduce(t, TJ_REDUCE_AVG, NULL, NULL), TJ_OK);
    double m = ((double *)tj_data(t))[0];
    tj_scope_end();
    return m;
}

/* This rank's share of t along dim (a new reference, contiguous). */
static tj_tensor *shard(tj_tensor *t, int dim) {
    if (tj_ndim(t) == 0) return tj_retain(t);
    int64_t n = tj_size(t, dim) / WORLD;
    tj_scope_begin();
    tj_tensor *s = tj_retain(tj_contiguous(tj_narrow(t, dim, RANK * n, n)));
    tj_scope_end();
    return s;
}

static void assert_rel_close(double got, double want, double rel, const char *what) {
    if (!(fabs(got - want) <= rel * fabs(want) + 1e-12))
        fail_msg("%s: %.9g, expected %.9g (relative difference %.3g)", what, got, want,
                 fabs(got - want) / fabs(want));
    CHECKS++;
}

/* A model with its global batch: inputs[0] the model's input, inputs[1] the target. */
typedef struct workload {
    const tjx_model *model;
    const char *loss;
    int batch_dim;
    double lr;
    tj_tensor *inputs[2];
} workload;

static workload make_workload(const char *name) {
    tj_generator *gen = tj_generator_new(77);
    workload w = {0};
    tj_scope_begin();
    if (!strcmp(name, "mlp")) {
        int64_t xs[2] = {12, 784}, b = 12;
        w = (workload){&tjx_mlp, "nll", 0, 0.1, {NULL, NULL}};
        w.inputs[0] = tj_randn(xs, 2, TJ_F32, gen);
        w.inputs[1] = tj_to_dtype(tj_floor(tj_mul_scalar(tj_rand(&b, 1, TJ_F64, gen), 10.0)), TJ_I64);
    } else if (!strcmp(name, "lstm")) { /* [steps, batch, features] */
        int64_t xs[3] = {8, 12, 32}, ys[3] = {8, 12, 64};
        w = (workload){&tjx_lstm, "mse", 1, 0.5, {NULL, NULL}};
        w.inputs[0] = tj_randn(xs, 3, TJ_F32, gen);
        w.inputs[1] = tj_mul_scalar(tj_tanh(tj_randn(ys, 3, TJ_F32, gen)), 0.5);
    } else { /* the transformer block on a shorter sequence */
        int64_t xs[3] = {6, 16, 256};
        w = (workload){&tjx_transformer, "square", 0, 0.01, {NULL, NULL}};
        w.inputs[0] = tj_randn(xs, 3, TJ_F32, gen);
        w.inputs[1] = tj_zeros(NULL, 0, TJ_F32);
    }
    tj_retain(w.inputs[0]);
    tj_retain(w.inputs[1]);
    tj_scope_end();
    tj_generator_free(gen);
    assert_non_null(w.inputs[0]);
    assert_non_null(w.inputs[1]);
    return w;
}

static void free_workload(workload *w) {
    tj_release(w->inputs[0]);
    tj_release(w->inputs[1]);
}

/* A replica: parameters from seed, a program compiled on inputs. */
typedef struct replica {
    tjx_task task;
    tj_program *program;
} replica;

static replica make_replica(const tjx_model *m, const char *loss, uint64_t seed, tj_tensor *const *inputs) {
    tj_generator *gen = tj_generator_new(seed);
    replica r = {{m, m->create(gen), loss}, NULL};
    tj_generator_free(gen);
    assert_non_null(r.task.params);
    r.program = tjx_compile_training(&r.task, inputs, NULL);
    if (!r.program) fail_msg("%s: %s", m->name, tj_last_error());
    return r;
}

static void free_replica(replica *r) {
    tj_program_free(r->program);
    r->task.model->destroy(r->task.params);
}

/* One data-parallel step: forward and backward on this rank's inputs, SGD;
 * the mean of the ranks' losses. */
static double ddp_step(replica *r, tj_tensor *const *inputs, double lr) {
    tj_tensor *l = NULL;
    double loss = 0;
    if (tj_run(r->program, inputs, &l) || tj_backward(r->program, NULL, NULL) || tj_item(l, &loss))
        fail_msg("rank %d: %s", RANK, tj_last_error());
    tj_release(l);
    tjx_sgd(&r->task, r->program, lr);
    return mean_over_ranks(loss);
}

/* ---- equivalence with one process on the whole batch ----------------------------------- */

static void trains_like_one_process(const char *name) {
    workload w = make_workload(name);
    tj_tensor *mine[2] = {shard(w.inputs[0], w.batch_dim), shard(w.inputs[1], w.batch_dim)};
    replica ref = make_replica(w.model, w.loss, 5, w.inputs);
    /* other ranks start elsewhere: the wrap broadcasts rank 0's values */
    replica par = make_replica(w.model, w.loss, 5 + (uint64_t)RANK, mine);
    tj_ddp *ddp = tj_ddp_wrap(par.program, NULL, NULL);
    if (!ddp) fail_msg("%s: %s", name, tj_last_error());
    assert_params_identical(&par.task, -1);
    double first = 0, last = 0;
    for (int step = 0; step < 20; step++) {
        double want;
        if (tjx_train_step(&ref.task, ref.program, w.inputs, w.lr, &want))
            fail_msg("%s reference: %s", name, tj_last_error());
        double got = ddp_step(&par, mine, w.lr);
        char what[64];
        snprintf(what, sizeof what, "%s step %d loss", name, step);
        assert_rel_close(got, want, 1e-5, what);
        assert_params_identical(&par.task, step);
        if (!step) first = got;
        last = got;
    }
    tj_ddp_stats st;
    assert_int_equal(tj_ddp_get_stats(ddp, &st), TJ_OK);
    assert_int_equal(st.steps, 20);
    tj_tensor *ps[32];
    assert_int_equal(st.parameters, w.model->parameters(par.task.params, ps, 32));
    if (WORLD > 1) assert_true(st.bytes_reduced > 0);
    else assert_int_equal(st.bytes_reduced, 0); /* a world of one sends nothing */
    if (RANK == 0)
        print_message("%s on %d ranks: loss %.5f -> %.5f, %d buckets, all-reduce %.3f ms/step\n", name,
                      WORLD, first, last, st.buckets, 1e3 * st.comm_s / 20);
    tj_ddp_free(ddp);
    free_replica(&ref);
    free_replica(&par);
    tj_release(mine[0]);
    tj_release(mine[1]);
    free_workload(&w);
}

static void mlp_trains_like_one_process(void **state) {
    (void)state;
    trains_like_one_process("mlp");
}

static void lstm_trains_like_one_process(void **state) {
    (void)state;
    trains_like_one_process("lstm");
}

static void transformer_trains_like_one_process(void **state) {
    (void)state;
    trains_like_one_process("transformer");
}

/* ---- buckets, overlap, options ------------------------------------------------------------ */

/* With buckets smaller than a layer, the last layers' all-reduces start
 * while the first layers' gradients are still being computed. */
static void small_buckets_start_during_backward(void **state) {
    (void)state;
    if (WORLD == 1) skip(); /* a world of one makes no buckets */
    workload w = make_workload("mlp");
    tj_tensor *mine[2] = {shard(w.inputs[0], 0), shard(w.inputs[1], 0)};
    replica r = make_replica(&tjx_mlp, "nll", 5, mine);
    tj_ddp_options o = {.bucket_bytes = 64 * 1024};
    tj_scope_begin(); /* what the wrapper keeps is its own, not the scope's */
    tj_ddp *ddp = tj_ddp_wrap(r.program, NULL, &o);
    tj_scope_end();
    assert_non_null(ddp);
    for (int step = 0; step < 3; step++) ddp_step(&r, mine, 0.1);
    tj_ddp_stats st;
    assert_int_equal(tj_ddp_get_stats(ddp, &st), TJ_OK);
    /* fc1.weight (800 KB) and fc2.weight (256 KB) have one each; the small
     * ones share the rest. The first pass packs them in reverse graph-input
     * order; later ones in the order backward finishes them. */
    assert_true(st.buckets >= 4);
    assert_int_equal(st.parameters, 6);
    assert_int_equal(st.steps, 3);
    assert_true(st.buckets_started_early >= 1);
    assert_true(st.comm_s > 0);
    assert_true(st.exposed_s >= 0);
    CHECKS++;
    if (RANK == 0)
        print_message("mlp, 64 KB buckets: %d buckets, %lld of %d started during backward, "
                      "all-reduce %.3f ms, exposed %.3f ms (3 steps)\n", st.buckets,
                      (long long)st.buckets_started_early, 3 * st.buckets, 1e3 * st.comm_s,
                      1e3 * st.exposed_s);
    tj_ddp_free(ddp);
    free_replica(&r);
    tj_release(mine[0]);
    tj_release(mine[1]);
    free_workload(&w);
}

/* Gradient accumulation: no_sync on one micro-batch, then a synced backward
 * on a second, gives the sum of the two micro-batches' average gradients:
 * twice what one synced backward on both at once (a mean loss) gives. */
static void no_sync_accumulates_like_one_step(void **state) {
    (void)state;
    workload w = make_workload("mlp"); /* 12 rows: micro-batches of 12 / (2 world) */
    int64_t m = 12 / (2 * WORLD);
    tj_tensor *both[2], *micro[2][2];
    tj_scope_begin();
    for (int k = 0; k < 2; k++) {
        both[k] = tj_retain(tj_contiguous(tj_narrow(w.inputs[k], 0, RANK * 2 * m, 2 * m)));
        for (int h = 0; h < 2; h++)
            micro[h][k] = tj_retain(tj_contiguous(tj_narrow(both[k], 0, h * m, m)));
    }
    tj_scope_end();
    replica acc = make_replica(&tjx_mlp, "nll", 5, micro[0]);
    replica one = make_replica(&tjx_mlp, "nll", 5, both);
    tj_ddp *da = tj_ddp_wrap(acc.program, NULL, NULL), *d1 = tj_ddp_wrap(one.program, NULL, NULL);
    assert_non_null(da);
    assert_non_null(d1);
    tj_tensor *l = NULL;
    assert_int_equal(tj_ddp_set_no_sync(da, true), TJ_OK);
    assert_int_equal(tj_run(acc.program, micro[0], &l), TJ_OK);
    tj_release(l);
    assert_int_equal(tj_backward(acc.program, NULL, NULL), TJ_OK);
    tj_ddp_stats st;
    assert_int_equal(tj_ddp_get_stats(da, &st), TJ_OK);
    assert_int_equal(st.steps, 0); /* nothing communicated */
    assert_int_equal(tj_ddp_set_no_sync(da, false), TJ_OK);
    assert_int_equal(tj_run(acc.program, micro[1], &l), TJ_OK);
    tj_release(l);
    assert_int_equal(tj_backward(acc.program, NULL, NULL), TJ_OK);
    assert_int_equal(tj_run(one.program, both, &l), TJ_OK);
    tj_release(l);
    assert_int_equal(tj_backward(one.program, NULL, NULL), TJ_OK);
    assert_int_equal(tj_ddp_get_stats(da, &st), TJ_OK);
    assert_int_equal(st.steps, 1);
    tj_tensor *ps[8];
    int n = tjx_mlp.parameters(acc.task.params, ps, 8);
    for (int i = 0; i < n; i++) {
        tj_scope_begin();
        const char *name = tj_tensor_name(ps[i]);
        tj_tensor *ga = tj_program_grad(acc.program, name), *g1 = tj_program_grad(one.program, name);
        assert_non_null(ga);
        assert_non_null(g1);
        tt_ref want = tt_ref_of(tj_mul_scalar(g1, 2.0));
        tt_assert_close_ref(ga, &want, 1e-4, 1e-6);
        tt_ref_free(&want);
        assert_same_on_every_rank(ga, name);
        tj_scope_end();
    }
    tj_ddp_free(da);
    tj_ddp_free(d1);
    free_replica(&acc);
    free_replica(&one);
    for (int k = 0; k < 2; k++) {
        tj_release(both[k]);
        tj_release(micro[0][k]);
        tj_release(micro[1][k]);
    }
    free_workload(&w);
}

/* Gradients as views into the buckets: the same values, without copies; the
 * gradients of one bucket share its storage. */
static void gradient_as_bucket_view_gives_the_same_values(void **state) {
    (void)state;
    workload w = make_workload("mlp");
    tj_tensor *mine[2] = {shard(w.inputs[0], 0), shard(w.inputs[1], 0)};
    replica copied = make_replica(&tjx_mlp, "nll", 5, mine), viewed = make_replica(&tjx_mlp, "nll", 5, mine);
    tj_ddp_options o = {.gradient_as_bucket_view = true};
    tj_ddp *dc = tj_ddp_wrap(copied.program, NULL, NULL), *dv = tj_ddp_wrap(viewed.program, NULL, &o);
    assert_non_null(dc);
    assert_non_null(dv);
    for (int step = 0; step < 3; step++) {
        double lc = ddp_step(&copied, mine, 0.1), lv = ddp_step(&viewed, mine, 0.1);
        assert_true(lc == lv);
        CHECKS++;
    }
    tj_tensor *l = NULL;
    assert_int_equal(tj_run(viewed.program, mine, &l), TJ_OK);
    tj_release(l);
    assert_int_equal(tj_backward(viewed.program, NULL, NULL), TJ_OK);
    tj_scope_begin();
    /* fc3.weight and fc3.bias: one bucket of 25 MB holds every parameter */
    tj_tensor *gw = tj_program_grad(viewed.program, "fc3.weight");
    tj_tensor *gb = tj_program_grad(viewed.program, "fc3.bias");
    assert_non_null(gw);
    assert_non_null(gb);
    assert_true(tj_shares_storage(gw, gb));
    tj_scope_end();
    tj_tensor *pc[8], *pv[8];
    int n = tjx_mlp.parameters(copied.task.params, pc, 8);
    tjx_mlp.parameters(viewed.task.params, pv, 8);
    for (int i = 0; i < n; i++) {
        size_t bytes = (size_t)tj_numel(pc[i]) * tj_dtype_size(tj_tensor_dtype(pc[i]));
        assert_memory_equal(tj_data(pc[i]), tj_data(pv[i]), bytes);
    }
    tj_ddp_free(dc);
    tj_ddp_free(dv);
    free_replica(&copied);
    free_replica(&viewed);
    tj_release(mine[0]);
    tj_release(mine[1]);
    free_workload(&w);
}

/* The gradients handed to the program are written again at later steps only
 * when nobody holds them: a training loop's steady state reuses them, a
 * gradient the caller kept keeps its values. */
static void held_gradients_are_not_overwritten(void **state) {
    (void)state;
    if (WORLD == 1) skip(); /* a world of one hands the backward pass's own gradients over */
    workload w = make_workload("mlp");
    tj_tensor *mine[2] = {shard(w.inputs[0], 0), shard(w.inputs[1], 0)};
    replica r = make_replica(&tjx_mlp, "nll", 5, mine);
    tj_ddp *ddp = tj_ddp_wrap(r.program, NULL, NULL);
    assert_non_null(ddp);
    tj_tensor *l = NULL;
    /* two steps for the packing to settle, then the loop's steady state */
    ddp_step(&r, mine, 0.1);
    ddp_step(&r, mine, 0.1);
    assert_int_equal(tj_run(r.program, mine, &l), TJ_OK);
    tj_release(l);
    assert_int_equal(tj_backward(r.program, NULL, NULL), TJ_OK);
    tj_tensor *held = tj_keep(tj_program_grad(r.program, "fc1.weight"));
    assert_non_null(held);
    size_t bytes = (size_t)tj_numel(held) * sizeof(float);
    float *before = malloc(bytes);
    memcpy(before, tj_data(held), bytes);
    tjx_sgd(&r.task, r.program, 0.1); /* clears the program's gradients; `held` stays */
    assert_int_equal(tj_run(r.program, mine, &l), TJ_OK);
    tj_release(l);
    assert_int_equal(tj_backward(r.program, NULL, NULL), TJ_OK);
    tj_tensor *next = tj_keep(tj_program_grad(r.program, "fc1.weight"));
    assert_non_null(next);
    assert_ptr_not_equal(next, held);
    assert_memory_equal(tj_data(held), before, bytes);
    assert_memory_not_equal(tj_data(next), before, bytes); /* the weights moved: a new gradient */
    CHECKS += 3;
    tj_release(held);
    tj_release(next);
    /* nobody holds them now: a step makes one storage fewer than a step
     * after which the caller kept fc1.weight's gradient (which is not written
     * again, so a new one is made) */
    tjx_sgd(&r.task, r.program, 0.1);
    long long made[2];
    for (int k = 0; k < 2; k++) {
        assert_int_equal(tj_run(r.program, mine, &l), TJ_OK);
        tj_release(l);
        tjc_alloc_counts c0, c1;
        tjc_alloc_counts_get(&c0);
        assert_int_equal(tj_backward(r.program, NULL, NULL), TJ_OK);
        tjc_alloc_counts_get(&c1);
        made[k] = c1.storages - c0.storages;
        held = k == 0 ? tj_keep(tj_program_grad(r.program, "fc1.weight")) : NULL;
        tjx_sgd(&r.task, r.program, 0.1);
        if (k == 0) {
            assert_int_equal(tj_run(r.program, mine, &l), TJ_OK);
            tj_release(l);
            tjc_alloc_counts_get(&c0);
            assert_int_equal(tj_backward(r.program, NULL, NULL), TJ_OK);
            tjc_alloc_counts_get(&c1);
            tj_release(held);
            assert_int_equal(c1.storages - c0.storages, made[0] + 1);
            tjx_sgd(&r.task, r.program, 0.1);
        }
    }
    assert_int_equal(made[0], made[1]);
    CHECKS++;
    free(before);
    tj_ddp_free(ddp);
    free_replica(&r);
    tj_release(mine[0]);
    tj_release(mine[1]);
    free_workload(&w);
}

/* ---- unused parameters, mismatched models -------------------------------------------------- */

typedef struct two_weights {
    tj_tensor *used, *unused;
} two_weights;

/* The loss reads `unused` in a computation whose result it drops. */
static tj_status unused_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in, (void)n_out;
    two_weights *w = ctx;
    tj_scope_begin();
    tj_tensor *y = tj_matmul(in[0], w->used);
    tj_tensor *dropped = tj_mul(w->unused, w->unused);
    (void)dropped;
    out[0] = tj_keep(tj_mean(tj_mul(y, y), NULL, 0, false));
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

static void unused_parameters_found_or_refused(void **state) {
    (void)state;
    int64_t s[2] = {4, 3};
    tj_generator *gen = tj_generator_new(3 + (uint64_t)RANK);
    two_weights w = {tj_randn(s, 2, TJ_F32, gen), tj_randn(s, 2, TJ_F32, gen)};
    tj_tensor_set_name(w.used, "used");
    tj_tensor_set_name(w.unused, "unused");
    int64_t xs[2] = {2, 4};
    tj_tensor *x = tj_randn(xs, 2, TJ_F32, gen);
    tj_graph *g = tj_trace(unused_model, &w, &x, 1, 1, NULL);
    assert_non_null(g);
    tj_compile_options co = {.grad_parameters = true};
    tj_program *p = tj_compile(g, &co);
    assert_non_null(p);
    assert_null(tj_ddp_wrap(p, NULL, NULL));
    tt_assert_error("'unused' receives no gradient");
    tj_ddp_options o = {.find_unused_parameters = true};
    tj_ddp *ddp = tj_ddp_wrap(p, NULL, &o);
    if (!ddp) fail_msg("%s", tj_last_error());
    tj_ddp_stats st;
    assert_int_equal(tj_ddp_get_stats(ddp, &st), TJ_OK);
    assert_int_equal(st.parameters, 1);
    assert_int_equal(st.buckets, 1);
    assert_same_on_every_rank(w.used, "used after the wrap");
    tj_tensor *l = NULL;
    assert_int_equal(tj_run(p, &x, &l), TJ_OK);
    tj_release(l);
    assert_int_equal(tj_backward(p, NULL, NULL), TJ_OK);
    tj_scope_begin();
    tj_tensor *gu = tj_program_grad(p, "used");
    assert_non_null(gu);
    assert_same_on_every_rank(gu, "the average gradient of used");
    tj_scope_end();
    tj_ddp_free(ddp);
    tj_program_free(p);
    tj_graph_free(g);
    tj_release(x);
    tj_release(w.used);
    tj_release(w.unused);
    tj_generator_free(gen);
}

/* The last rank wraps the LSTM while the others wrap the MLP: every rank
 * refuses, naming rank 0's count and the last rank's. */
static void different_models_refused_naming_both(void **state) {
    (void)state;
    if (WORLD < 2) skip();
    workload w = make_workload(RANK == WORLD - 1 ? "lstm" : "mlp");
    replica r = make_replica(w.model, w.loss, 5, w.inputs);
    assert_null(tj_ddp_wrap(r.program, NULL, NULL));
    char want[160];
    snprintf(want, sizeof want, "tj_ddp_wrap: rank 0 has 6 parameters (269,322 elements), rank %d has 8 "
             "(", WORLD - 1);
    tt_assert_error(want);
    CHECKS++;
    /* the program still trains alone: no hook was left behind */
    double loss;
    assert_int_equal(tjx_train_step(&r.task, r.program, w.inputs, w.lr, &loss), TJ_OK);
    free_replica(&r);
    free_workload(&w);
}

static void bad_arguments(void **state) {
    (void)state;
    tj_ddp_stats st;
    assert_int_not_equal(tj_ddp_get_stats(NULL, &st), TJ_OK);
    assert_int_not_equal(tj_ddp_set_no_sync(NULL, true), TJ_OK);
    /* every rank passes a bad argument alike: the comparison still runs, and refuses */
    tj_ddp_options bad = {.bucket_bytes = -1};
    workload w = make_workload("mlp");
    replica r = make_replica(w.model, w.loss, 5, w.inputs);
    assert_null(tj_ddp_wrap(r.program, NULL, &bad));
    tt_assert_error("bucket_bytes is -1");
    CHECKS++;
    if (WORLD < 2) {
        free_replica(&r);
        free_workload(&w);
        return;
    }
    /* a program without gradients, on one rank only: the others learn of it */
    tj_program *plain = NULL;
    if (RANK == 1) {
        tj_graph *g = tj_trace(tjx_loss_fn, &r.task, w.inputs, 2, 1, NULL);
        plain = tj_compile(g, NULL);
        tj_graph_free(g);
    }
    assert_null(tj_ddp_wrap(RANK == 1 ? plain : r.program, NULL, NULL));
    tt_assert_error(RANK == 1 ? "compiled without gradients" : "rank 1 could not wrap its program");
    CHECKS++;
    tj_program_free(plain);
    free_replica(&r);
    free_workload(&w);
}

int main(void) {
    setenv("OMP_NUM_THREADS", "1", 0);
    if (tj_dist_init("mpi", NULL) != TJ_OK) {
        fprintf(stderr, "test_ddp: %s\n", tj_last_error());
        return 1;
    }
    RANK = tj_dist_rank();
    WORLD = tj_dist_world_size();
    if (RANK != 0 && !freopen("/dev/null", "w", stdout)) return 1; /* one report; failures go to stderr */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mlp_trains_like_one_process),
        cmocka_unit_test(lstm_trains_like_one_process),
        cmocka_unit_test(transformer_trains_like_one_process),
        cmocka_unit_test(small_buckets_start_during_backward),
        cmocka_unit_test(no_sync_accumulates_like_one_step),
        cmocka_unit_test(gradient_as_bucket_view_gives_the_same_values),
        cmocka_unit_test(held_gradients_are_not_overwritten),
        cmocka_unit_test(unused_parameters_found_or_refused),
        cmocka_unit_test(different_models_refused_naming_both),
        cmocka_unit_test(bad_arguments),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (RANK == 0)
        printf("test_ddp: %d ranks, %d checks on rank 0, %d tests failed\n", WORLD, CHECKS, failed);
    tj_dist_finalize();
    return failed ? 1 : 0;
}
