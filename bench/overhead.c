/* overhead.c — per-op overhead, eager and replayed: a chain of 100 adds on
 * 1-element tensors (where an op's own work is a few nanoseconds, so the time
 * per op is tjit's overhead), and the LSTM cell at B=1, H=64, forward and
 * forward+backward. Replay runs through the static plan (interpreter/plan.h)
 * and, beside it, through the register interpreter op by op (the replay
 * before plans, kept as dynamic_replay). Medians of many repetitions after
 * warm-up, measured in the same run. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_util.h"
#include "examples/models/models.h"

enum { CHAIN = 100 };

/* y = x + b + b + ... (100 adds) */
static tj_status chain(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    tj_scope_begin();
    tj_tensor *x = in[0];
    for (int i = 0; i < CHAIN; i++) x = tj_add(x, in[1], 1.0);
    out[0] = tj_keep(x);
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

typedef enum mode {
    EAGER,         /* the model function itself */
    DYNAMIC,       /* no passes, op by op through the register interpreter */
    PLANNED,       /* no passes, the static plan */
    FUSED,         /* default pipeline, portable fusion backend, planned */
    FUSED_LLVM,    /* default pipeline, LLVM, planned */
    PROFILED,      /* no passes, recording every instruction */
    TRAIN_DYNAMIC, /* forward + backward, LLVM, op by op */
    TRAIN_PLANNED, /* forward + backward, LLVM, planned */
    MODES
} mode;

static const char *const mode_names[MODES] = {
    "eager", "replay, op by op (dynamic_replay)", "replay, planned", "fused replay (portable)",
    "fused replay (LLVM)", "profiled replay", "forward+backward (LLVM), op by op",
    "forward+backward (LLVM), planned"};

static tj_program *compile_for(const tj_graph *g, mode m) {
    tj_compile_options o = {.passes = m == DYNAMIC || m == PLANNED || m == PROFILED ? "" : NULL,
                            .backend = m == FUSED_LLVM || m >= TRAIN_DYNAMIC ? "llvm" : "portable",
                            .dynamic_replay = m == DYNAMIC || m == TRAIN_DYNAMIC,
                            .grad_parameters = m >= TRAIN_DYNAMIC};
    tj_program *p = tj_compile(g, &o);
    if (p && m == PROFILED && tj_program_profile(p, true) != TJ_OK) {
        tj_program_free(p);
        return NULL;
    }
    return p;
}

/* Seconds per run for each mode (< 0: not available, e.g. LLVM not built). */
static void measure(tj_model_fn fn, void *ctx, tj_tensor **in, int n_in, int n_out, int reps,
                    bool train, double *secs) {
    tj_graph *g = tj_trace(fn, ctx, in, n_in, n_out, NULL);
    if (!g) {
        fprintf(stderr, "overhead: %s\n", tj_last_error());
        exit(1);
    }
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int m = 0; m < MODES; m++) {
        secs[m] = -1;
        if ((m >= TRAIN_DYNAMIC) != train && m != EAGER) continue;
        if (m == EAGER && train) continue;
        tj_program *p = m == EAGER ? NULL : compile_for(g, (mode)m);
        if (m != EAGER && !p) {
            tj_clear_error(); /* e.g. no LLVM in this build */
            continue;
        }
        tj_tensor *out[4];
        for (int r = -reps / 10; r < reps; r++) {
            double t0 = bench_now();
            tj_status st = m == EAGER ? fn(ctx, in, n_in, out, n_out) : tj_run(p, in, out);
            if (!st && m >= TRAIN_DYNAMIC) st = tj_backward(p, NULL, NULL);
            double dt = bench_now() - t0;
            if (st) {
                fprintf(stderr, "overhead: %s: %s\n", mode_names[m], tj_last_error());
                exit(1);
            }
            for (int i = 0; i < n_out; i++) tj_release(out[i]);
            if (r >= 0) t[r] = dt;
        }
        secs[m] = bench_median(t, reps);
        tj_program_free(p);
    }
    free(t);
    tj_graph_free(g);
}

static void row(const char *workload, int ops, const double *secs, mode m) {
    if (secs[m] < 0) return;
    printf("| %s | %s | %.2f | %.0f |\n", workload, mode_names[m], secs[m] * 1e6, secs[m] * 1e9 / ops);
}

int main(void) {
    tj_generator *gen = tj_generator_new(1);
    int64_t one = 1;
    tj_tensor *chain_in[2] = {tj_randn(&one, 1, TJ_F32, gen), tj_randn(&one, 1, TJ_F32, gen)};
    double c[MODES];
    measure(chain, NULL, chain_in, 2, 1, 4000, false, c);

    void *cell = tjx_lstm_cell_create_sized(gen, (tjx_lstm_sizes){1, 64, 64, 1, 1});
    tj_tensor *cell_in[3];
    if (!cell || tjx_lstm_cell.make_inputs(cell, gen, cell_in) != TJ_OK) {
        fprintf(stderr, "overhead: %s\n", tj_last_error());
        return 1;
    }
    tj_graph *g = tj_trace(tjx_lstm_cell.forward, cell, cell_in, 3, 2, NULL);
    int cell_ops = g ? tj_block_num_nodes(tj_graph_block(g)) : 1;
    tj_graph_free(g);
    double l[MODES], lt[MODES];
    measure(tjx_lstm_cell.forward, cell, cell_in, 3, 2, 5000, false, l);
    measure(tjx_lstm_cell.forward, cell, cell_in, 3, 2, 3000, true, lt);

    printf("per-op overhead (medians; %d threads; %s)\n\n", tj_get_num_threads(), bench_isa());
    printf("| workload | how | us/run | ns/op |\n|---|---|---|---|\n");
    char label[64];
    snprintf(label, sizeof label, "chain of %d adds, 1 element", CHAIN);
    for (int m = EAGER; m <= PROFILED; m++) row(label, CHAIN, c, (mode)m);
    snprintf(label, sizeof label, "LSTM cell B=1 H=64 (%d ops)", cell_ops);
    for (int m = EAGER; m < MODES; m++) row(label, cell_ops, m >= TRAIN_DYNAMIC ? lt : l, (mode)m);
    printf("\nTargets: planned replay of the chain <= 50 ns/op; the LSTM cell's fused forward\n"
           "<= 3 us and its forward+backward <= 15 us.\n"
           "The chain's ops are 1-element adds, whose arithmetic is a few ns: its ns/op is\n"
           "tjit's overhead per op. Planned replay binds the inputs and runs prepared kernel\n"
           "calls; op by op, replay re-checks arguments, runs each shape rule and allocates each\n"
           "result. Profiled replay records every instruction (tj_program_profile) and runs op\n"
           "by op.\n");
    for (int i = 0; i < 2; i++) tj_release(chain_in[i]);
    for (int i = 0; i < 3; i++) tj_release(cell_in[i]);
    tjx_lstm_cell.destroy(cell);
    tj_generator_free(gen);
    return 0;
}
