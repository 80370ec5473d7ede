/* bench_util.h — the timing vocabulary the stand-alone benchmarks share: a
 * monotonic clock, the median of a sample, and the parallel memcpy that
 * pointwise figures are set beside. Header-only because each bench/ source is a
 * program of its own; bench_suite has its own harness in bench/suite/. */
#ifndef TJIT_BENCH_UTIL_H
#define TJIT_BENCH_UTIL_H

#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v; returns its median (v[0] is then the best time). */
static inline double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The median time of copying n floats with `threads` threads, each copying its
 * own slice, after two warm-up runs; the fastest through *best when given. */
static inline double bench_copy_time(int64_t n, int reps, int threads, double *best) {
    float *src = aligned_alloc(64, (size_t)n * 4), *dst = aligned_alloc(64, (size_t)n * 4);
    memset(src, 1, (size_t)n * 4);
    memset(dst, 0, (size_t)n * 4);
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int r = -2; r < reps; r++) {
        double t0 = bench_now();
#pragma omp parallel num_threads(threads)
        {
            int k = omp_get_thread_num(), nt = omp_get_num_threads();
            int64_t lo = n * k / nt, hi = n * (k + 1) / nt;
            memcpy(dst + lo, src + lo, (size_t)(hi - lo) * 4);
        }
        if (r >= 0) t[r] = bench_now() - t0;
    }
    double m = bench_median(t, reps);
    if (best) *best = t[0];
    free(t);
    free(src);
    free(dst);
    return m;
}

#endif
