/* overhead.c — per-op overhead, eager and replayed: a chain of 100 adds on
 * 1-element tensors (where an op's own work is a few nanoseconds, so the time
 * per op is tjit's overhead), and the LSTM cell at B=1, H=64; and what
 * tj_program_profile costs a replay while it records. Medians of many
 * repetitions after warm-up, measured in the same run. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "examples/models/models.h"
#include "bench_util.h"

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

typedef struct timing {
    double eager, replay, fused, profiled; /* seconds per run */
} timing;

enum { MODES = 4 };

/* eager; replay with no passes (every node an interpreter instruction: the
 * per-op overhead); replay with the default pipeline (fused); the unfused
 * replay again, with profiling on */
static timing measure(tj_model_fn fn, void *ctx, tj_tensor **in, int n_in, int n_out, int reps) {
    tj_graph *g = tj_trace(fn, ctx, in, n_in, n_out, NULL);
    tj_compile_options plain = {.passes = ""};
    tj_program *ps[MODES - 1] = {g ? tj_compile(g, &plain) : NULL, g ? tj_compile(g, NULL) : NULL,
                                 g ? tj_compile(g, &plain) : NULL};
    if (!ps[0] || !ps[1] || !ps[2] || tj_program_profile(ps[2], true) != TJ_OK) {
        fprintf(stderr, "overhead: %s\n", tj_last_error());
        exit(1);
    }
    double *t[MODES];
    for (int m = 0; m < MODES; m++) t[m] = malloc(sizeof(double) * (size_t)reps);
    tj_tensor *out[4];
    for (int mode = 0; mode < MODES; mode++)
        for (int r = -reps / 10; r < reps; r++) {
            double t0 = bench_now();
            tj_status st = mode ? tj_run(ps[mode - 1], in, out) : fn(ctx, in, n_in, out, n_out);
            double dt = bench_now() - t0;
            if (st) {
                fprintf(stderr, "overhead: %s\n", tj_last_error());
                exit(1);
            }
            for (int i = 0; i < n_out; i++) tj_release(out[i]);
            if (r >= 0) t[mode][r] = dt;
        }
    timing res;
    for (int m = 0; m < MODES; m++) qsort(t[m], (size_t)reps, sizeof(double), bench_cmp_double);
    res.eager = t[0][reps / 2];
    res.replay = t[1][reps / 2];
    res.fused = t[2][reps / 2];
    res.profiled = t[3][reps / 2];
    for (int m = 0; m < MODES; m++) free(t[m]);
    for (int m = 0; m < MODES - 1; m++) tj_program_free(ps[m]);
    tj_graph_free(g);
    return res;
}

int main(void) {
    tj_generator *gen = tj_generator_new(1);
    int64_t one = 1;
    tj_tensor *chain_in[2] = {tj_randn(&one, 1, TJ_F32, gen), tj_randn(&one, 1, TJ_F32, gen)};
    timing c = measure(chain, NULL, chain_in, 2, 1, 2000);

    void *cell = tjx_lstm_cell_create_sized(gen, (tjx_lstm_sizes){1, 64, 64, 1, 1});
    tj_tensor *cell_in[3];
    if (!cell || tjx_lstm_cell.make_inputs(cell, gen, cell_in) != TJ_OK) {
        fprintf(stderr, "overhead: %s\n", tj_last_error());
        return 1;
    }
    tj_graph *g = tj_trace(tjx_lstm_cell.forward, cell, cell_in, 3, 2, NULL);
    int cell_ops = g ? tj_block_num_nodes(tj_graph_block(g)) : 1;
    tj_graph_free(g);
    timing l = measure(tjx_lstm_cell.forward, cell, cell_in, 3, 2, 5000);

    printf("per-op overhead (medians; %d threads)\n\n", tj_get_num_threads());
    printf("| workload | ops | eager us/run | replay us/run | fused replay us/run | eager ns/op | "
           "replay ns/op | replay/eager | profiled replay us/run |\n"
           "|---|---|---|---|---|---|---|---|---|\n");
    printf("| chain of %d adds, 1 element | %d | %.2f | %.2f | %.2f | %.0f | %.0f | %.2f | %.2f |\n",
           CHAIN, CHAIN, c.eager * 1e6, c.replay * 1e6, c.fused * 1e6, c.eager * 1e9 / CHAIN,
           c.replay * 1e9 / CHAIN, c.replay / c.eager, c.profiled * 1e6);
    printf("| LSTM cell B=1 H=64 | %d | %.2f | %.2f | %.2f | %.0f | %.0f | %.2f | %.2f |\n", cell_ops,
           l.eager * 1e6, l.replay * 1e6, l.fused * 1e6, l.eager * 1e9 / cell_ops,
           l.replay * 1e9 / cell_ops, l.replay / l.eager, l.profiled * 1e6);
    printf("\nReplay runs with no passes, one interpreter instruction per traced op. On\n"
           "1-element tensors an add's arithmetic is a few ns, so the chain's replay ns/op is\n"
           "tjit's overhead per op (dispatch, shape rule, output allocation, bookkeeping).\n"
           "Fused replay runs the default pipeline (the adds become fusion groups).\n"
           "Profiled replay is the unfused replay recording every instruction (tj_program_profile).\n");
    for (int i = 0; i < 2; i++) tj_release(chain_in[i]);
    for (int i = 0; i < 3; i++) tj_release(cell_in[i]);
    tjx_lstm_cell.destroy(cell);
    tj_generator_free(gen);
    return 0;
}
