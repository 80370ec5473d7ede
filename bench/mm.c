/* mm.c — benchmark: tj_mm on f32 square matrices against calling OpenBLAS's
 * cblas_sgemm directly on the same data, at 512 and 2048 and 1 and 2 threads
 * (tjit's and OpenBLAS's thread counts both set). Prints a table of medians
 * over repetitions after warm-up, and the ratio of the best times too, which a
 * busy machine disturbs less; tj_mm's time includes allocating its output.
 * Usage: bench_mm [reps-scale], e.g. 0.3 for a quicker, noisier run. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tjit/tjit.h"

#include "bench_util.h"

int main(int argc, char **argv) {
    double scale = argc > 1 ? atof(argv[1]) : 1.0;
    if (scale <= 0) scale = 1.0;
    const int sizes[] = {512, 2048}, threads[] = {1, 2};
    tj_generator *gen = tj_generator_new(1);
    printf("tj_mm f32 vs cblas_sgemm (medians; GFLOP/s = 2n^3 / time; ratio = sgemm time / "
           "tj_mm time)\n");
    printf("%6s %7s %10s %10s %11s %11s %8s %10s\n", "n", "threads", "sgemm ms", "tj_mm ms",
           "sgemm GF/s", "tj_mm GF/s", "ratio", "best ratio");
    for (int si = 0; si < 2; si++) {
        int n = sizes[si];
        int64_t shape[2] = {n, n};
        tj_tensor *a = tj_rand(shape, 2, TJ_F32, gen), *b = tj_rand(shape, 2, TJ_F32, gen);
        float *c = aligned_alloc(64, sizeof(float) * (size_t)n * (size_t)n);
        if (!a || !b || !c) {
            fprintf(stderr, "bench_mm: %s\n", tj_last_error());
            return 1;
        }
        const float *ap = tj_data(a), *bp = tj_data(b);
        int reps = (int)((n <= 512 ? 40 : 15) * scale);
        if (reps < 3) reps = 3;
        double *td = malloc(sizeof(double) * (size_t)reps), *tt = malloc(sizeof(double) * (size_t)reps);
        for (int ti = 0; ti < 2; ti++) {
            tj_set_num_threads(threads[ti]);
            openblas_set_num_threads(threads[ti]);
            /* both in every repetition, in a random order, so that neither load
             * drift nor the scheduler's time slices favour one of them */
            unsigned rng = 12345u;
            for (int r = -2; r < reps; r++) {
                rng = rng * 1103515245u + 12345u;
                double t_direct = 0, t_tj = 0;
                for (int k = 0; k < 2; k++) {
                    bool direct = (k == 0) == ((rng >> 16) & 1);
                    double t0 = bench_now();
                    if (direct) {
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, ap, n,
                                    bp, n, 0.0f, c, n);
                        t_direct = bench_now() - t0;
                    } else {
                        tj_tensor *out = tj_mm(a, b);
                        t_tj = bench_now() - t0;
                        if (!out) {
                            fprintf(stderr, "bench_mm: %s\n", tj_last_error());
                            return 1;
                        }
                        tj_release(out);
                    }
                }
                if (r >= 0) td[r] = t_direct, tt[r] = t_tj;
            }
            double flop = 2.0 * n * n * (double)n;
            double md = bench_median(td, reps), mt = bench_median(tt, reps), bd = td[0], bt = tt[0];
            printf("%6d %7d %10.3f %10.3f %11.1f %11.1f %7.1f%% %9.1f%%\n", n, threads[ti],
                   md * 1e3, mt * 1e3, flop / md * 1e-9, flop / mt * 1e-9, 100.0 * md / mt,
                   100.0 * bd / bt);
            fflush(stdout);
        }
        free(td);
        free(tt);
        free(c);
        tj_release(a);
        tj_release(b);
    }
    tj_generator_free(gen);
    return 0;
}
