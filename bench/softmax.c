/* bench/softmax.c — softmax over [4096, 1024] f32 against the memory
 * bandwidth limit (a plain copy of the same size), with 1 and 2 threads.
 *
 * Bytes count one read of the input and one write of the output (8 bytes per
 * element), for the copy too. Each figure is the median of REPS timed runs
 * after WARMUP untimed ones; the fastest run is shown beside it, which says
 * more when other work shares the machine. The softmax rows call tj_softmax as users do, so
 * they include allocating the result. Besides the row case (dim -1) the
 * table shows log_softmax and softmax over dim 0, which takes the strided
 * column path. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tjit/tjit.h"

#include "bench_util.h"

enum { ROWS = 4096, COLS = 1024, N = ROWS * COLS, WARMUP = 3, REPS = 21 };

typedef enum { B_COPY, B_SOFTMAX, B_LOG_SOFTMAX, B_SOFTMAX_DIM0 } bench_kind;

typedef struct ctx {
    tj_tensor *x;
    float *src, *dst;
    int threads;
} ctx;

/* One run; its time in seconds, or a negative value on error. */
static double run_once(ctx *c, bench_kind kind) {
    double t0 = bench_now();
    tj_tensor *r = NULL;
    switch (kind) {
    case B_COPY:
#pragma omp parallel num_threads(c->threads)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        size_t lo = (size_t)N * (size_t)t / (size_t)nt;
        size_t hi = (size_t)N * (size_t)(t + 1) / (size_t)nt;
        memcpy(c->dst + lo, c->src + lo, (hi - lo) * sizeof(float));
    }
        break;
    case B_SOFTMAX: r = tj_softmax(c->x, -1); break;
    case B_LOG_SOFTMAX: r = tj_log_softmax(c->x, -1); break;
    case B_SOFTMAX_DIM0: r = tj_softmax(c->x, 0); break;
    }
    double t = bench_now() - t0;
    if (kind != B_COPY) {
        if (!r) {
            fprintf(stderr, "bench_softmax: %s\n", tj_last_error());
            return -1;
        }
        tj_release(r);
    }
    return t;
}

static int measure(ctx *c, bench_kind kind, double *ms, double *best_ms) {
    double times[REPS];
    for (int i = 0; i < WARMUP; i++)
        if (run_once(c, kind) < 0) return -1;
    for (int i = 0; i < REPS; i++)
        if ((times[i] = run_once(c, kind)) < 0) return -1;
    qsort(times, REPS, sizeof *times, bench_cmp_double);
    *ms = 1e3 * times[REPS / 2];
    *best_ms = 1e3 * times[0];
    return 0;
}

int main(void) {
    tj_generator *gen = tj_generator_new(1);
    int64_t sizes[2] = {ROWS, COLS};
    ctx c = {.x = tj_randn(sizes, 2, TJ_F32, gen)};
    c.src = malloc(sizeof(float) * N);
    c.dst = malloc(sizeof(float) * N);
    if (!c.x || !c.src || !c.dst) {
        fprintf(stderr, "bench_softmax: setup failed: %s\n", tj_last_error());
        return 1;
    }
    memcpy(c.src, tj_data(c.x), sizeof(float) * N);
    memset(c.dst, 0, sizeof(float) * N); /* touch every page before timing */

    static const struct { bench_kind kind; const char *name; } rows[] = {
        {B_COPY, "copy (memcpy)"},
        {B_SOFTMAX, "softmax dim -1"},
        {B_LOG_SOFTMAX, "log_softmax dim -1"},
        {B_SOFTMAX_DIM0, "softmax dim 0"},
    };
    enum { NROWS = sizeof rows / sizeof rows[0] };
    printf("f32 [%d, %d], median of %d runs after %d warm-up runs; GB/s = (read + write) / time\n",
           ROWS, COLS, REPS, WARMUP);
    printf("%-20s %7s %9s %8s %13s %9s %10s\n", "kernel", "threads", "ms", "GB/s", "vs copy GB/s",
           "best ms", "best GB/s");
    for (int threads = 1; threads <= 2; threads++) {
        tj_set_num_threads(threads);
        c.threads = threads;
        double copy_gbs = 0;
        for (int k = 0; k < NROWS; k++) {
            double ms, best;
            if (measure(&c, rows[k].kind, &ms, &best)) return 1;
            double gbs = 8.0 * N / (ms * 1e-3) / 1e9, best_gbs = 8.0 * N / (best * 1e-3) / 1e9;
            if (rows[k].kind == B_COPY) copy_gbs = gbs;
            printf("%-20s %7d %9.2f %8.2f %12.0f%% %9.2f %10.2f\n", rows[k].name, threads, ms, gbs,
                   100 * gbs / copy_gbs, best, best_gbs);
        }
    }
    tj_release(c.x);
    tj_generator_free(gen);
    free(c.src);
    free(c.dst);
    return 0;
}
