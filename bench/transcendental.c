/* bench/transcendental.c — the eager CPU kernels of sin, cos, log1p and
 * expm1 (f32 and f64) and pow (f32 and f64) over 1e7 elements, with 1 and 2
 * threads: the median of REPS timed runs after WARMUP untimed ones, in ms
 * and in ns per element (each call allocates its result, as users call it).
 * Prints the ISA the CPU kernels ran on (TJIT_ISA=avx2|baseline lowers it).
 * Inputs: sin and cos over [-100, 100], log1p over [-0.9, 100], expm1 over
 * [-20, 20], pow with bases in (0, 10] and exponents in [-20, 20]. */
#include <stdio.h>
#include <stdlib.h>

#include "tjit/tjit.h"

#include "bench_util.h"

enum { N = 10000000, WARMUP = 2, REPS = 11 };

typedef enum { SIN, COS, LOG1P, EXPM1, POW, NUM_FNS } fn;
static const char *const names[NUM_FNS] = {"sin", "cos", "log1p", "expm1", "pow"};

/* n values of dtype t uniform over [lo, hi] */
static tj_tensor *uniform(tj_generator *gen, tj_dtype t, double lo, double hi) {
    int64_t n = N;
    tj_tensor *u = tj_rand(&n, 1, TJ_F64, gen);
    if (!u) return NULL;
    double *p = tj_data(u);
    for (int64_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * p[i];
    tj_tensor *r = tj_to_dtype(u, t);
    tj_release(u);
    return r;
}

static tj_tensor *run(fn f, tj_tensor *a, tj_tensor *b) {
    switch (f) {
    case SIN: return tj_sin(a);
    case COS: return tj_cos(a);
    case LOG1P: return tj_log1p(a);
    case EXPM1: return tj_expm1(a);
    default: return tj_pow(a, b);
    }
}

static double median_ms(fn f, tj_tensor *a, tj_tensor *b) {
    double times[REPS];
    for (int r = -WARMUP; r < REPS; r++) {
        double t0 = bench_now();
        tj_tensor *y = run(f, a, b);
        double t = bench_now() - t0;
        if (!y) {
            fprintf(stderr, "bench_transcendental: %s: %s\n", names[f], tj_last_error());
            exit(1);
        }
        tj_release(y);
        if (r >= 0) times[r] = t;
    }
    return 1e3 * bench_median(times, REPS);
}

int main(void) {
    bench_print_isa();
    printf("%d elements, median of %d runs after %d warm-up runs\n", N, REPS, WARMUP);
    printf("%-6s %-5s %7s %10s %10s\n", "op", "dtype", "threads", "ms", "ns/elem");
    tj_generator *gen = tj_generator_new(1);
    static const double range[NUM_FNS][2] = {{-100, 100}, {-100, 100}, {-0.9, 100}, {-20, 20}, {1e-6, 10}};
    for (int dt = 0; dt < 2; dt++) {
        tj_dtype t = dt ? TJ_F64 : TJ_F32;
        for (int f = 0; f < NUM_FNS; f++) {
            tj_tensor *a = uniform(gen, t, range[f][0], range[f][1]);
            tj_tensor *b = f == POW ? uniform(gen, t, -20, 20) : NULL;
            if (!a || (f == POW && !b)) {
                fprintf(stderr, "bench_transcendental: setup failed: %s\n", tj_last_error());
                return 1;
            }
            for (int threads = 1; threads <= 2; threads++) {
                tj_set_num_threads(threads);
                double ms = median_ms((fn)f, a, b);
                printf("%-6s %-5s %7d %10.2f %10.2f\n", names[f], tj_dtype_name(t), threads, ms, ms * 1e6 / N);
            }
            tj_release(a);
            tj_release(b);
        }
    }
    tj_generator_free(gen);
    return 0;
}
