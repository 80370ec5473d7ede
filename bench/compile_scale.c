/* compile_scale.c — how compile time grows with graph size: traced graphs of
 * n = 1k, 10k, 100k and 200k nodes (bench/scale_models.h: a chain of relu,
 * and a wide graph over 1,000 inputs whose nodes read values from all over
 * the graph, and a graph the passes rewrite node by node: peephole, CSE and
 * DCE remove most of it and one cat reads thousands of values), each
 * traced, compiled (the default pipeline) and replayed once.
 * Rows with gradients compile the backward graph too (autodiff and the
 * passes on it) and replay forward and backward; rows with the LLVM backend
 * (when built in) compile every fusion group to machine code.
 *
 *   bench_compile_scale [--sizes N,N,...] [--max N] [--only TEXT]
 *
 * --max N leaves out the sizes above N (the wide graph with LLVM stops at
 * 10k nodes: LLVM compiles each of its distinct groups); --only runs the
 * rows whose name contains TEXT. Each figure is the median of three runs
 * after one unmeasured run.
 * Target: time per 1k nodes flat within 2x from 1k to 200k,
 * and 200k nodes compiled and replayed in under 5 s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "scale_models.h"

typedef struct row_times {
    double trace, compile, replay;
} row_times;

typedef enum { CHAIN, WIDE, REWRITES } model_kind;

typedef struct variant {
    const char *name;
    model_kind model;
    bool grad;
    const char *backend;
    int64_t max_nodes; /* larger sizes are left out */
} variant;

static void die(const char *what) {
    fprintf(stderr, "compile_scale: %s: %s\n", what, tj_last_error());
    exit(1);
}

/* One trace, compile and first replay (forward and, with gradients, backward). */
static row_times measure(const variant *v, int64_t n, tj_tensor **in, int n_in) {
    scale_model m = {n};
    tj_model_fn fn = v->model == WIDE ? scale_wide_fn : v->model == REWRITES ? scale_rewrites_fn
                                                                             : scale_chain_fn;
    row_times t;
    double t0 = bench_now();
    tj_graph *g = tj_trace(fn, &m, in, n_in, 1, NULL);
    if (!g) die("trace");
    double t1 = bench_now();
    bool *grad = NULL;
    if (v->grad) {
        grad = malloc(sizeof(bool) * (size_t)n_in);
        for (int i = 0; i < n_in; i++) grad[i] = true;
    }
    tj_compile_options o = {.backend = v->backend, .requires_grad = grad};
    tj_program *p = tj_compile(g, &o);
    if (!p) die("compile");
    double t2 = bench_now();
    tj_tensor *out = NULL;
    if (tj_run(p, in, &out) != TJ_OK) die("run");
    if (v->grad) {
        tj_tensor **gi = calloc((size_t)n_in, sizeof *gi);
        if (tj_backward(p, NULL, gi) != TJ_OK) die("backward");
        for (int i = 0; i < n_in; i++) tj_release(gi[i]);
        free(gi);
    }
    double t3 = bench_now();
    t = (row_times){t1 - t0, t2 - t1, t3 - t2};
    tj_release(out);
    tj_program_free(p);
    tj_graph_free(g);
    free(grad);
    return t;
}

static double median3(double a, double b, double c) {
    double v[3] = {a, b, c};
    return bench_median(v, 3);
}

static void run_variant(const variant *v, const int64_t *sizes, int n_sizes, tj_tensor **wide_in,
                        tj_tensor *rewrites_in) {
    int n_in = v->model == WIDE ? SCALE_WIDE_INPUTS : 1;
    tj_tensor **in = v->model == REWRITES ? &rewrites_in : wide_in;
    for (int s = 0; s < n_sizes; s++) {
        int64_t n = sizes[s];
        if (n > v->max_nodes) continue;
        /* one run unmeasured, then the median of three, at every size: one run of a
         * large graph varies by 10-20% here, and the first of a size pays for
         * memory the process had not touched yet (a small graph's first run
         * after a large one does not), which would skew the ratios between sizes */
        (void)measure(v, n, in, n_in);
        row_times t = measure(v, n, in, n_in), b = measure(v, n, in, n_in), c = measure(v, n, in, n_in);
        t = (row_times){median3(t.trace, b.trace, c.trace), median3(t.compile, b.compile, c.compile),
                        median3(t.replay, b.replay, c.replay)};
        double total = t.compile + t.replay;
        printf("| %s | %lldk | %.3f | %.3f | %.3f | %.3f | %.2f |\n", v->name, (long long)(n / 1000),
               t.trace, t.compile, t.replay, total, 1e3 * total / ((double)n / 1000));
        fflush(stdout);
    }
}

static int parse_sizes(const char *s, int64_t *sizes, int cap) {
    int n = 0;
    while (*s && n < cap) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v <= 0) break;
        sizes[n++] = v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv) {
    int64_t sizes[16] = {1000, 10000, 100000, 200000};
    int n_sizes = 4;
    int64_t max = INT64_MAX;
    const char *only = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--sizes")) n_sizes = parse_sizes(argv[i + 1], sizes, 16);
        else if (!strcmp(argv[i], "--max")) max = strtoll(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
    }
    const variant variants[] = {
        {"relu chain", CHAIN, false, "portable", max},
        {"wide (1,000 inputs)", WIDE, false, "portable", max},
        {"rewrites", REWRITES, false, "portable", max},
        {"relu chain, grad", CHAIN, true, "portable", max},
        {"wide, grad", WIDE, true, "portable", max},
        {"rewrites, grad", REWRITES, true, "portable", max},
#ifdef TJIT_HAVE_LLVM
        {"relu chain, llvm", CHAIN, false, "llvm", max},
        /* LLVM compiles each distinct group (~160 ms for 64 nodes with tanh): 10k nodes take ~25 s */
        {"wide, llvm", WIDE, false, "llvm", max < 10000 ? max : 10000},
#endif
    };
    tj_generator *gen = tj_generator_new(7);
    tj_tensor *in[SCALE_WIDE_INPUTS];
    if (!scale_wide_inputs(in, gen)) die("inputs");
    int64_t x_sizes[2] = {2, 4};
    tj_tensor *x = tj_randn(x_sizes, 2, TJ_F64, gen);
    if (!x) die("inputs");
    printf("compile_scale: %d threads; seconds (medians of 3 runs after a warm-up run)\n",
           tj_get_num_threads());
    bench_print_isa();
    printf("\n| graph | nodes | trace s | compile s | first replay s | compile + replay s "
           "| ms per 1k nodes |\n|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
        if (!only || strstr(variants[i].name, only)) run_variant(&variants[i], sizes, n_sizes, in, x);
    for (int i = 0; i < SCALE_WIDE_INPUTS; i++) tj_release(in[i]);
    tj_release(x);
    tj_generator_free(gen);
    return 0;
}
