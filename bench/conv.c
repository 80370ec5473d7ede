/* conv.c — benchmark: conv2d f32 on input [8, 64, 56, 56] with 64 3x3 filters
 * and padding 1, at 1 and 2 threads, in GFLOP/s (2 * N * Cout * Ho * Wo * Cin *
 * 9 flops) beside cblas_sgemm running the same GEMMs directly (8 products of
 * [64 x 576] @ [576 x 3136], what im2col + GEMM reduces the conv to), and the
 * two backward ops for reference. Medians over repetitions after warm-up, and
 * the best time's rate, which a busy machine disturbs less.
 * Usage: bench_conv [reps-scale]. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tjit/tjit.h"

#include "bench_util.h"

enum { N = 8, C = 64, H = 56, W = 56, O = 64, K = 3 };

typedef enum { RUN_SGEMM, RUN_CONV, RUN_BWD_INPUT, RUN_BWD_WEIGHT, N_RUNS } run_kind;

typedef struct ctx {
    tj_tensor *x, *w, *gy;
    float *ga, *gb, *gc; /* the GEMM operands for the direct sgemm run */
} ctx;

static int run(run_kind k, const ctx *c) {
    int64_t one[2] = {1, 1}, pad[2] = {1, 1}, xs[4] = {N, C, H, W}, ws[4] = {O, C, K, K};
    tj_tensor *out = NULL;
    switch (k) {
    case RUN_SGEMM:
        for (int n = 0; n < N; n++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, O, H * W, C * K * K, 1.0f, c->ga,
                        C * K * K, c->gb, H * W, 0.0f, c->gc + (size_t)n * O * H * W, H * W);
        return 0;
    case RUN_CONV: out = tj_conv2d(c->x, c->w, NULL, one, 2, pad, 2, one, 2, 1); break;
    case RUN_BWD_INPUT:
        out = tj_conv2d_backward_input(c->gy, c->w, xs, 4, one, 2, pad, 2, one, 2, 1);
        break;
    case RUN_BWD_WEIGHT:
        out = tj_conv2d_backward_weight(c->gy, c->x, ws, 4, one, 2, pad, 2, one, 2, 1);
        break;
    default: break;
    }
    if (!out) {
        fprintf(stderr, "bench_conv: %s\n", tj_last_error());
        return 1;
    }
    tj_release(out);
    return 0;
}

int main(int argc, char **argv) {
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    if (scale <= 0) scale = 1.0;
    int reps = (int)(10 * scale);
    if (reps < 3) reps = 3;
    tj_generator *gen = tj_generator_new(2);
    int64_t xs[4] = {N, C, H, W}, ws[4] = {O, C, K, K}, ys[4] = {N, O, H, W};
    ctx c = {tj_rand(xs, 4, TJ_F32, gen), tj_rand(ws, 4, TJ_F32, gen), tj_rand(ys, 4, TJ_F32, gen),
             calloc((size_t)O * C * K * K, sizeof(float)),
             calloc((size_t)C * K * K * H * W, sizeof(float)),
             calloc((size_t)N * O * H * W, sizeof(float))};
    if (!c.x || !c.w || !c.gy || !c.ga || !c.gb || !c.gc) {
        fprintf(stderr, "bench_conv: out of memory\n");
        return 1;
    }
    const char *names[N_RUNS] = {"sgemm, same GEMMs", "conv2d", "conv2d_backward_input",
                                 "conv2d_backward_weight"};
    double flop = 2.0 * N * O * H * W * (double)C * K * K;
    printf("conv2d f32, input [8, 64, 56, 56], weight [64, 64, 3, 3], padding 1 (%.2f GFLOP per call)\n",
           flop * 1e-9);
    printf("%-24s %7s %10s %10s %10s\n", "", "threads", "ms", "GFLOP/s", "best GF/s");
    double *t[N_RUNS];
    for (int k = 0; k < N_RUNS; k++) t[k] = malloc(sizeof(double) * (size_t)reps);
    const int threads[] = {1, 2};
    for (int ti = 0; ti < 2; ti++) {
        tj_set_num_threads(threads[ti]);
        openblas_set_num_threads(threads[ti]);
        /* every row in every repetition, starting at a random one, so that
         * neither load drift nor the scheduler's time slices favour a row */
        unsigned rng = 12345u;
        for (int r = -2; r < reps; r++) {
            rng = rng * 1103515245u + 12345u;
            for (int j = 0; j < N_RUNS; j++) {
                int k = (int)((j + (rng >> 16)) % N_RUNS);
                double t0 = bench_now();
                if (run((run_kind)k, &c)) return 1;
                if (r >= 0) t[k][r] = bench_now() - t0;
            }
        }
        for (int k = 0; k < N_RUNS; k++) {
            double m = bench_median(t[k], reps);
            printf("%-24s %7d %10.2f %10.1f %10.1f\n", names[k], threads[ti], m * 1e3,
                   flop / m * 1e-9, flop / t[k][0] * 1e-9);
        }
        fflush(stdout);
    }
    for (int k = 0; k < N_RUNS; k++) free(t[k]);
    free(c.ga);
    free(c.gb);
    free(c.gc);
    tj_release(c.x);
    tj_release(c.w);
    tj_release(c.gy);
    tj_generator_free(gen);
    return 0;
}
