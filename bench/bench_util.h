/* bench_util.h — what the benchmarks share: a monotonic clock, the median of
 * a sample, the parallel memcpy that pointwise figures are set beside, and the
 * model functions of the workloads that are not example models. Header-only
 * because each bench/ source is a program of its own; bench_suite's timing
 * lives in its harness, bench/suite/. */
#ifndef TJIT_BENCH_UTIL_H
#define TJIT_BENCH_UTIL_H

#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples/models/models.h"

/* The widest vector ISA of this CPU ("AVX-512", "AVX2", "baseline"); the CPU
 * kernels' path may be a lower one (TJIT_ISA), which bench_print_isa prints. */
static inline const char *bench_isa(void) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "AVX-512";
    if (__builtin_cpu_supports("avx2")) return "AVX2";
    return "baseline x86-64";
}

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

/* Prints the CPU's widest ISA and tj_build_info's "ISA:", "CPU kernels:" and
 * "compiled for:" lines (the path chosen at run time), so that a table names
 * the instruction set its figures were measured with. */
static inline void bench_print_isa(void) {
    printf("CPU: %s\n", bench_isa());
    const char *info = tj_build_info();
    static const char *const keys[] = {"\nISA:", "\nCPU kernels:", "\ncompiled for:"};
    for (int k = 0; k < 3; k++) {
        const char *line = strstr(info, keys[k]);
        if (line) printf("%.*s\n", (int)strcspn(line + 1, "\n"), line + 1);
    }
}

/* y = tanh(x*a + b) * sigmoid(x) + 1, the pointwise chain */
static inline tj_status bench_pointwise_chain(void *ctx, tj_tensor *const *in, int n_in,
                                              tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    tj_scope_begin();
    tj_tensor *x = in[0], *a = in[1], *b = in[2];
    tj_tensor *t = tj_tanh(tj_add(tj_mul(x, a), b, 1.0));
    out[0] = tj_keep(tj_add_scalar(tj_mul(t, tj_sigmoid(x)), 1.0, 1.0));
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

/* softmax(x * 0.125) over the last dim: attention's scores (a row group) */
static inline tj_status bench_scaled_softmax(void *ctx, tj_tensor *const *in, int n_in,
                                             tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    tj_scope_begin();
    out[0] = tj_keep(tj_softmax(tj_mul_scalar(in[0], 0.125), -1));
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

/* layer_norm(x + y, w, b) over the last dim: a residual block's end (a row group) */
static inline tj_status bench_residual_layer_norm(void *ctx, tj_tensor *const *in, int n_in,
                                                  tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    int64_t n = tj_sizes(in[0])[tj_ndim(in[0]) - 1];
    tj_scope_begin();
    out[0] = tj_keep(tj_layer_norm(tj_add(in[0], in[1], 1.0), &n, 1, in[2], in[3], 1e-5));
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

/* sum(h') + sum(c') of the LSTM cell (ctx: its parameters), a scalar to
 * differentiate. The model's outputs belong to the innermost open scope at
 * the call: this one. */
static inline tj_status bench_lstm_cell_loss(void *ctx, tj_tensor *const *in, int n_in,
                                             tj_tensor **out, int n_out) {
    (void)n_in, (void)n_out;
    tj_tensor *hc[2];
    tj_scope_begin();
    tj_status st = tjx_lstm_cell.forward(ctx, in, 3, hc, 2);
    tj_tensor *l = st ? NULL : tj_add(tj_sum(hc[0], NULL, 0, false), tj_sum(hc[1], NULL, 0, false), 1.0);
    out[0] = tj_keep(l);
    tj_scope_end();
    return l ? TJ_OK : (st ? st : tj_last_status());
}

#endif
