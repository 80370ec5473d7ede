/* bench/pointwise.c — f32 add and tanh over 1e7 elements against the memory
 * bandwidth limit (a plain copy of the same size), with 1 and 2 threads.
 *
 * Bytes count reads plus writes: add reads a and b and writes c (12 bytes per
 * element), tanh and copy read one array and write one (8 bytes per element).
 * Each figure is the median of REPS timed runs after WARMUP untimed ones.
 * "add" is tj_add as users call it, so it includes allocating the result;
 * "add_" is the in-place tj_add_ (a += b, also 12 bytes per element), the
 * loop alone. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tjit/tjit.h"

#include "bench_util.h"

enum { N = 10000000, WARMUP = 3, REPS = 21 };

typedef enum { B_COPY, B_ADD, B_ADD_INPLACE, B_TANH } bench_kind;

typedef struct ctx {
    tj_tensor *a, *b, *acc;
    float *src, *dst;
    int threads;
} ctx;

/* One run of kind; returns its time in seconds, or a negative value on error. */
static double run_once(ctx *c, bench_kind kind) {
    double t0 = bench_now();
    tj_tensor *r = NULL;
    switch (kind) {
    case B_COPY:
#pragma omp parallel num_threads(c->threads)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        size_t lo = (size_t)N * (size_t)t / (size_t)nt, hi = (size_t)N * (size_t)(t + 1) / (size_t)nt;
        memcpy(c->dst + lo, c->src + lo, (hi - lo) * sizeof(float));
    }
        break;
    case B_ADD: r = tj_add(c->a, c->b, 1.0); break;
    case B_ADD_INPLACE: r = tj_add_(c->acc, c->b, 1.0); break;
    case B_TANH: r = tj_tanh(c->a); break;
    }
    double t = bench_now() - t0;
    if (kind != B_COPY) {
        if (!r) {
            fprintf(stderr, "bench_pointwise: %s\n", tj_last_error());
            return -1;
        }
        tj_release(r);
    }
    return t;
}

/* Runs the kinds in turns, so that load from other processes on the machine
 * falls on all of them alike; ms[k] is the median time of kind k. */
static int measure(ctx *c, const bench_kind *kinds, int n, double *ms) {
    enum { MAX_KINDS = 8 };
    double times[MAX_KINDS][REPS];
    for (int r = -WARMUP; r < REPS; r++)
        for (int k = 0; k < n; k++) {
            double t = run_once(c, kinds[k]);
            if (t < 0) return -1;
            if (r >= 0) times[k][r] = t;
        }
    for (int k = 0; k < n; k++) ms[k] = 1e3 * bench_median(times[k], REPS);
    return 0;
}

int main(void) {
    tj_generator *gen = tj_generator_new(1);
    int64_t n = N;
    ctx c = {.a = tj_rand(&n, 1, TJ_F32, gen), .b = tj_rand(&n, 1, TJ_F32, gen),
             .acc = tj_zeros(&n, 1, TJ_F32)};
    c.src = malloc(sizeof(float) * N);
    c.dst = malloc(sizeof(float) * N);
    if (!c.a || !c.b || !c.acc || !c.src || !c.dst) {
        fprintf(stderr, "bench_pointwise: setup failed: %s\n", tj_last_error());
        return 1;
    }
    memcpy(c.src, tj_data(c.a), sizeof(float) * N);
    memset(c.dst, 0, sizeof(float) * N); /* touch every page before timing */

    static const struct { bench_kind kind; const char *name; double bytes; } rows[] = {
        {B_COPY, "copy (memcpy)", 8}, {B_ADD, "add  c = a + b", 12},
        {B_ADD_INPLACE, "add_ a += b", 12}, {B_TANH, "tanh c = tanh(a)", 8},
    };
    enum { NROWS = sizeof rows / sizeof rows[0] };
    bench_kind kinds[NROWS];
    for (int k = 0; k < NROWS; k++) kinds[k] = rows[k].kind;
    printf("f32, %d elements, median of %d runs after %d warm-up runs\n", N, REPS, WARMUP);
    printf("bytes counted: reads + writes (add 12/element, tanh and copy 8/element)\n");
    printf("%-18s %7s %10s %8s %13s\n", "kernel", "threads", "ms", "GB/s", "of copy GB/s");
    int status = 0;
    for (int threads = 1; threads <= 2; threads++) {
        tj_set_num_threads(threads);
        c.threads = threads;
        double ms[NROWS], copy_gbs = 0;
        if (measure(&c, kinds, NROWS, ms)) return 1;
        for (int k = 0; k < NROWS; k++) {
            double gbs = rows[k].bytes * N / (ms[k] * 1e-3) / 1e9;
            if (rows[k].kind == B_COPY) copy_gbs = gbs;
            printf("%-18s %7d %10.2f %8.2f %12.0f%%\n", rows[k].name, threads, ms[k], gbs,
                   100 * gbs / copy_gbs);
            if (rows[k].kind == B_ADD && gbs < 0.7 * copy_gbs) status = 2;
        }
    }
    printf("target: add reaches at least 70%% of copy bandwidth: %s\n",
           status ? "NOT MET" : "met");
    tj_release(c.a);
    tj_release(c.b);
    tj_release(c.acc);
    tj_generator_free(gen);
    free(c.src);
    free(c.dst);
    return 0;
}
