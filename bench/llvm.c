/* llvm.c — the LLVM backend against the portable fused-loop runner and the
 * unfused replay: the pointwise chain y = tanh(x*a + b) * sigmoid(x) + 1 on
 * 1e7 f32 elements with 1 and 2 threads, in GB/s beside a plain copy
 * (x, a, b read and y written: 16 bytes an element; the copy: 8); and the
 * LSTM cell forward, forward+backward through the derived backward graph,
 * and its pointwise part alone (the fused group), at (B=64, H=512) and
 * (B=1, H=64). Medians of repetitions after
 * warm-up (which also compiles every kernel), runs of the variants
 * interleaved so that load from other processes falls on all alike. The
 * load average is printed first: on a shared machine, rerun when it is low.
 * Usage: bench_llvm [threads...] (default: 1 2). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples/models/models.h"
#include "bench_util.h"
#ifdef TJIT_HAVE_LLVM
#include "backends/llvm/tjl.h"

enum { VARIANTS = 3 }; /* unfused, portable, llvm */
static const char *const passes_of[VARIANTS] = {"dce,cse", NULL, NULL};
static const char *const backend_of[VARIANTS] = {"portable", "portable", "llvm"};

static void die(void) {
    fprintf(stderr, "bench_llvm: %s\n", tj_last_error());
    exit(1);
}

/* The cell's pointwise part alone, what its fusion group computes: gates
 * from x and from h [B, 4H] and c [B, H] -> h', c'. */
static tj_status cell_pointwise(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx;
    (void)n_in;
    (void)n_out;
    tj_scope_begin();
    tj_tensor *g[4];
    tj_chunk(tj_add(in[0], in[1], 1.0), 4, 1, g, 4);
    tj_tensor *c = tj_add(tj_mul(tj_sigmoid(g[1]), in[2]), tj_mul(tj_sigmoid(g[0]), tj_tanh(g[2])), 1.0);
    out[0] = tj_keep(tj_mul(tj_sigmoid(g[3]), tj_tanh(c)));
    out[1] = tj_keep(c);
    tj_scope_end();
    return out[1] ? TJ_OK : tj_last_status();
}

static tj_program *compile(tj_model_fn fn, void *ctx, tj_tensor **in, int n_in, int n_out, int variant,
                           bool grad) {
    tj_graph *g = tj_trace(fn, ctx, in, n_in, n_out, NULL);
    tj_compile_options o = {.passes = passes_of[variant], .backend = backend_of[variant],
                            .grad_parameters = grad};
    tj_program *p = g ? tj_compile(g, &o) : NULL;
    tj_graph_free(g);
    if (!p) die();
    return p;
}

/* One run of p (and its backward when grad); seconds. */
static double run_once(tj_program *p, tj_tensor **in, int n_out, bool grad) {
    tj_tensor *out[4];
    double t0 = bench_now();
    if (tj_run(p, in, out) != TJ_OK) die();
    if (grad && tj_backward(p, NULL, NULL) != TJ_OK) die();
    double dt = bench_now() - t0;
    for (int i = 0; i < n_out; i++) tj_release(out[i]);
    if (grad) tj_program_zero_grad(p);
    return dt;
}

/* Medians (and fastest runs) of the three variants' runs, interleaved. */
static void time_variants(tj_program **p, tj_tensor **in, int n_out, bool grad, int reps, double *ms,
                          double *best) {
    double *t[VARIANTS];
    for (int v = 0; v < VARIANTS; v++) t[v] = malloc(sizeof(double) * (size_t)reps);
    for (int r = -3; r < reps; r++)
        for (int v = 0; v < VARIANTS; v++) {
            double dt = run_once(p[v], in, n_out, grad);
            if (r >= 0) t[v][r] = dt;
        }
    for (int v = 0; v < VARIANTS; v++) {
        ms[v] = 1e3 * bench_median(t[v], reps);
        best[v] = 1e3 * t[v][0]; /* sorted by bench_median() */
        free(t[v]);
    }
}

static void bench_chain(tj_generator *gen, int threads) {
    int64_t n = 10000000;
    int reps = 40;
    tj_tensor *in[3] = {tj_randn(&n, 1, TJ_F32, gen), tj_randn(&n, 1, TJ_F32, gen), tj_randn(&n, 1, TJ_F32, gen)};
    tj_program *p[VARIANTS];
    for (int v = 0; v < VARIANTS; v++) p[v] = compile(bench_pointwise_chain, NULL, in, 3, 1, v, false);
    double ms[VARIANTS], best[VARIANTS], copy_best;
    double copy = bench_copy_time(n, reps, threads, &copy_best);
    time_variants(p, in, 1, false, reps, ms, best);
    double gb = 16.0 * (double)n / 1e9, copy_gbs = 8.0 * (double)n / 1e9 / copy;
    double copy_best_gbs = 8.0 * (double)n / 1e9 / copy_best;
    printf("| %d | %.1f / %.1f | %.2f (%.1f) | %.2f (%.1f) | %.2f (%.1f) / %.2f (%.1f) | %.0f%% / %.0f%% | %.2fx |\n",
           threads, copy_gbs, copy_best_gbs, ms[0], gb / ms[0] * 1e3, ms[1], gb / ms[1] * 1e3, ms[2],
           gb / ms[2] * 1e3, best[2], gb / best[2] * 1e3, 100.0 * (gb / ms[2] * 1e3) / copy_gbs,
           100.0 * (gb / best[2] * 1e3) / copy_best_gbs, ms[1] / ms[2]);
    for (int v = 0; v < VARIANTS; v++) tj_program_free(p[v]);
    for (int i = 0; i < 3; i++) tj_release(in[i]);
}

/* what: 0 forward, 1 forward+backward, 2 the pointwise part alone */
static void bench_lstm(tj_generator *gen, int64_t batch, int64_t hidden, int threads, int what) {
    static const char *const names[3] = {"forward", "fwd+bwd", "pointwise part"};
    void *params = tjx_lstm_cell_create_sized(gen, (tjx_lstm_sizes){batch, hidden, hidden, 1, 1});
    tj_tensor *in[3];
    if (!params || tjx_lstm_cell.make_inputs(params, gen, in) != TJ_OK) die();
    int64_t gsz[2] = {batch, 4 * hidden};
    tj_tensor *pw[3] = {tj_randn(gsz, 2, TJ_F32, gen), tj_randn(gsz, 2, TJ_F32, gen), tj_retain(in[2])};
    int reps = batch == 1 ? 400 : 40;
    tj_program *p[VARIANTS];
    for (int v = 0; v < VARIANTS; v++)
        p[v] = what == 1   ? compile(bench_lstm_cell_loss, params, in, 3, 1, v, true)
               : what == 0 ? compile(tjx_lstm_cell.forward, params, in, 3, 2, v, false)
                           : compile(cell_pointwise, NULL, pw, 3, 2, v, false);
    double ms[VARIANTS], best[VARIANTS];
    time_variants(p, what == 2 ? pw : in, what == 1 ? 1 : 2, what == 1, reps, ms, best);
    printf("| %s B=%lld H=%lld | %d | %.3f | %.3f | %.3f | %.2fx | %.2fx |\n", names[what], (long long)batch,
           (long long)hidden, threads, ms[0], ms[1], ms[2], ms[0] / ms[2], ms[1] / ms[2]);
    for (int v = 0; v < VARIANTS; v++) tj_program_free(p[v]);
    for (int i = 0; i < 3; i++) {
        tj_release(in[i]);
        tj_release(pw[i]);
    }
    tjx_lstm_cell.destroy(params);
}

#endif

int main(int argc, char **argv) {
#ifndef TJIT_HAVE_LLVM
    (void)argc;
    (void)argv;
    printf("bench_llvm: built without LLVM (TJIT_LLVM=OFF); nothing to compare\n");
    return 0;
#else
    int threads[8] = {1, 2}, n_threads = 2;
    if (argc > 1) {
        n_threads = 0;
        for (int i = 1; i < argc && n_threads < 8; i++) threads[n_threads++] = atoi(argv[i]);
    }
    double load[3] = {0};
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1;
        fclose(f);
    }
    printf("bench_llvm: load average %.2f %.2f %.2f, medians in ms\n\n", load[0], load[1], load[2]);
    tj_generator *gen = tj_generator_new(2);
    printf("| chain tanh(x*a+b)*sigmoid(x)+1, 1e7 f32: threads | copy GB/s, median / best | unfused ms (GB/s) "
           "| portable ms (GB/s) | llvm ms (GB/s), median / best | llvm/copy, median / best "
           "| llvm vs portable |\n|---|---|---|---|---|---|---|\n");
    for (int t = 0; t < n_threads; t++) {
        tj_set_num_threads(threads[t]);
        bench_chain(gen, threads[t]);
    }
    printf("\n| LSTM cell | threads | unfused ms | portable ms | llvm ms | llvm vs unfused | llvm vs portable "
           "|\n|---|---|---|---|---|---|---|\n");
    for (int what = 0; what < 3; what++)
        for (int t = 0; t < n_threads; t++) {
            tj_set_num_threads(threads[t]);
            bench_lstm(gen, 64, 512, threads[t], what);
            bench_lstm(gen, 1, 64, threads[t], what);
        }
    tjl_stats s = tjl_get_stats();
    printf("\nLLVM kernels: %lld compiled (%.1f ms each on average), %lld shared, %lld fell back\n",
           (long long)s.compiled, s.compiled ? s.compile_ms / (double)(s.compiled + s.memory_hits) : 0.0,
           (long long)s.memory_hits, (long long)s.fallbacks);
    tj_generator_free(gen);
    return 0;
#endif
}
