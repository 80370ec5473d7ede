/* fusion.c — what fusion buys: the pointwise chain
 * y = tanh(x*a + b) * sigmoid(x) + 1 over 1e6 and 1e7 f32 elements, replayed
 * unfused and fused (the portable runner), in GB/s beside a plain copy of the
 * same size; and the LSTM cell forward eager, replayed, and replayed fused.
 * Medians of repetitions after warm-up, all measured in this run with the
 * same thread count. Bytes counted for the chain: x, a, b read and y written
 * once (16 bytes an element); for the copy: 8 bytes an element. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples/models/models.h"
#include "bench_util.h"

static tj_program *compile(tj_model_fn fn, void *ctx, tj_tensor **in, int n_in, int n_out,
                           const char *passes) {
    tj_graph *g = tj_trace(fn, ctx, in, n_in, n_out, NULL);
    tj_compile_options o = {.passes = passes};
    tj_program *p = g ? tj_compile(g, &o) : NULL;
    tj_graph_free(g);
    if (!p) {
        fprintf(stderr, "fusion bench: %s\n", tj_last_error());
        exit(1);
    }
    return p;
}

/* Median seconds of one run: a program, or the eager model when p is NULL. */
static double time_runs(tj_program *p, tj_model_fn fn, void *ctx, tj_tensor **in, int n_in,
                        int n_out, int reps) {
    double *t = malloc(sizeof(double) * (size_t)reps);
    tj_tensor *out[4];
    for (int r = -2; r < reps; r++) {
        double t0 = bench_now();
        tj_status st = p ? tj_run(p, in, out) : fn(ctx, in, n_in, out, n_out);
        double dt = bench_now() - t0;
        if (st) {
            fprintf(stderr, "fusion bench: %s\n", tj_last_error());
            exit(1);
        }
        for (int i = 0; i < n_out; i++) tj_release(out[i]);
        if (r >= 0) t[r] = dt;
    }
    double m = bench_median(t, reps);
    free(t);
    return m;
}

int main(void) {
    tj_generator *gen = tj_generator_new(2);
    printf("fusion: %d threads, medians\n\n", tj_get_num_threads());
    printf("| chain tanh(x*a+b)*sigmoid(x)+1 | copy GB/s | unfused ms | unfused GB/s | fused ms "
           "| fused GB/s | fused/copy | fused speed-up |\n|---|---|---|---|---|---|---|---|\n");
    const int64_t sizes[2] = {1000000, 10000000};
    for (int s = 0; s < 2; s++) {
        int64_t n = sizes[s];
        int reps = n > 2000000 ? 15 : 40;
        tj_tensor *in[3] = {tj_randn(&n, 1, TJ_F32, gen), tj_randn(&n, 1, TJ_F32, gen),
                            tj_randn(&n, 1, TJ_F32, gen)};
        tj_program *plain = compile(bench_pointwise_chain, NULL, in, 3, 1, "dce,cse");
        tj_program *fused = compile(bench_pointwise_chain, NULL, in, 3, 1, NULL);
        double tc = bench_copy_time(n, reps, tj_get_num_threads(), NULL);
        double tu = time_runs(plain, bench_pointwise_chain, NULL, in, 3, 1, reps);
        double tf = time_runs(fused, bench_pointwise_chain, NULL, in, 3, 1, reps);
        double gb = 16.0 * (double)n / 1e9;
        printf("| %.0e elements | %.1f | %.2f | %.1f | %.2f | %.1f | %.0f%% | %.2fx |\n", (double)n,
               8.0 * (double)n / 1e9 / tc, tu * 1e3, gb / tu, tf * 1e3, gb / tf, 100 * (gb / tf) / (8.0 * (double)n / 1e9 / tc),
               tu / tf);
        tj_program_free(plain);
        tj_program_free(fused);
        for (int i = 0; i < 3; i++) tj_release(in[i]);
    }

    printf("\n| LSTM cell forward | eager ms | replay ms | fused replay ms | fused vs eager |\n"
           "|---|---|---|---|---|\n");
    const tjx_lstm_sizes cells[3] = {{1, 64, 64, 1, 1}, {64, 512, 512, 1, 1}, {512, 256, 256, 1, 1}};
    for (int c = 0; c < 3; c++) {
        void *params = tjx_lstm_cell_create_sized(gen, cells[c]);
        tj_tensor *in[3];
        if (!params || tjx_lstm_cell.make_inputs(params, gen, in) != TJ_OK) return 1;
        int reps = cells[c].batch == 1 ? 2000 : 30;
        tj_program *plain = compile(tjx_lstm_cell.forward, params, in, 3, 2, "dce,cse");
        tj_program *fused = compile(tjx_lstm_cell.forward, params, in, 3, 2, NULL);
        double te = time_runs(NULL, tjx_lstm_cell.forward, params, in, 3, 2, reps);
        double tu = time_runs(plain, NULL, NULL, in, 3, 2, reps);
        double tf = time_runs(fused, NULL, NULL, in, 3, 2, reps);
        printf("| B=%lld H=%lld | %.3f | %.3f | %.3f | %.2fx |\n", (long long)cells[c].batch,
               (long long)cells[c].hidden, te * 1e3, tu * 1e3, tf * 1e3, te / tf);
        tj_program_free(plain);
        tj_program_free(fused);
        for (int i = 0; i < 3; i++) tj_release(in[i]);
        tjx_lstm_cell.destroy(params);
    }
    tj_generator_free(gen);
    return 0;
}
