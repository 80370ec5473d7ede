/* graph_fuzz.c — running the whole-table graph fuzzer's cases (graph_fuzz.h):
 * inputs, the trace, eager execution, every pipeline, the fuser and its
 * backends, planned and dynamic replay, strided inputs, gradients. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/gradcheck.h"
#include "tests/support/graph_fuzz.h"

enum { MAX_IN = 5, N_OUT = 3 };

typedef struct fuzz_case {
    int seed;
    tt_gf_model m;
    tj_tensor *in[MAX_IN];
    int n_in;
    tj_graph *g;
} fuzz_case;

static int pick(uint64_t *s, int n) { return (int)(tt_splitmix64(s) % (uint64_t)n); }

/* The graph's text on stderr once, so that a failing seed can be read. */
static void show_graph(const fuzz_case *fc) {
    char *text = fc->g ? tj_graph_to_string(fc->g, 0) : NULL;
    fprintf(stderr, "graph fuzz case %d (%s%s):\n%s\n", fc->seed, tj_dtype_name(fc->m.dt),
            fc->m.smooth ? ", smooth" : "", text ? text : "(no graph)");
    free(text);
}

/* The model run eagerly (no tracing) on in: new references in out. */
static void run_eager(fuzz_case *fc, tj_tensor *const *in, tj_tensor **out) {
    tj_generator_set_state(fc->m.gen, (uint64_t)fc->seed, 0);
    tj_scope_begin();
    tj_status st = tt_gf_model_fn(&fc->m, in, fc->n_in, out, N_OUT);
    for (int o = 0; st == TJ_OK && o < N_OUT; o++) tj_retain(out[o]);
    tj_scope_end();
    if (st != TJ_OK) fail_msg("case %d: eager: %s", fc->seed, tj_last_error());
}

static bool same_shape(tj_tensor *a, tj_tensor *b) {
    return tj_tensor_dtype(a) == tj_tensor_dtype(b) && tj_ndim(a) == tj_ndim(b) &&
           !memcmp(tj_sizes(a), tj_sizes(b), sizeof(int64_t) * (size_t)tj_ndim(a));
}

/* got against the eager want: bit for bit (NaN equal to NaN) when tol is 0,
 * else within tol relative to the value or to 1 (the "llvm" backend). */
static void compare(fuzz_case *fc, tj_tensor *got, tj_tensor *want, double tol, const char *what, int o) {
    if (!same_shape(got, want)) {
        show_graph(fc);
        tj_type tg = tj_type_of_tensor(got), tw = tj_type_of_tensor(want);
        char *ga = tj_type_to_string(&tg, 0), *wa = tj_type_to_string(&tw, 0);
        fprintf(stderr, "case %d, %s, output %d: replay gives %s, eager %s\n", fc->seed, what, o, ga, wa);
        free(ga);
        free(wa);
        fail_msg("case %d, %s, output %d: dtype or sizes differ from eager", fc->seed, what, o);
    }
    tt_ref a = tt_ref_of(got), b = tt_ref_of(want);
    for (int64_t i = 0; i < a.numel; i++) {
        double x = a.v[i], y = b.v[i];
        bool ok = x == y || (isnan(x) && isnan(y));
        if (!ok && tol > 0 && isfinite(x) && isfinite(y))
            ok = fabs(x - y) <= tol * (1 + fabs(y));
        if (!ok && tol > 0) ok = isnan(x) || isnan(y) || fabs(y) > 1e30; /* past overflow, either way */
        if (!ok) {
            show_graph(fc);
            fail_msg("case %d, %s, output %d, element %lld: replay %.17g, eager %.17g", fc->seed, what, o,
                     (long long)i, x, y);
        }
    }
    tt_ref_free(&a);
    tt_ref_free(&b);
}

/* Compiles fc's graph with opts, runs it twice on in (the second replay
 * catches state left behind by the first) and compares with want. */
static void check_program(fuzz_case *fc, const tj_compile_options *opts, tj_tensor *const *in,
                          tj_tensor *const *want, double tol, const char *what) {
    tj_program *p = tj_compile(fc->g, opts);
    if (!p) {
        show_graph(fc);
        fail_msg("case %d, %s: compile: %s", fc->seed, what, tj_last_error());
    }
    for (int rep = 0; rep < 2; rep++) {
        tj_tensor *out[N_OUT];
        tj_generator_set_state(fc->m.gen, (uint64_t)fc->seed, 0);
        if (tj_run(p, in, out) != TJ_OK) {
            show_graph(fc);
            fail_msg("case %d, %s: replay %d: %s", fc->seed, what, rep, tj_last_error());
        }
        for (int o = 0; o < N_OUT; o++) {
            compare(fc, out[o], want[o], tol, what, o);
            tj_release(out[o]);
        }
    }
    tj_program_free(p);
}

static void make_inputs(fuzz_case *fc, uint64_t *s, tj_generator *gen) {
    bool smooth = fc->m.smooth;
    fc->n_in = 2 + pick(s, 3); /* 1 to 3 inputs, then the bank */
    for (int i = 0; i < fc->n_in - 1; i++) {
        int nd = pick(s, smooth ? 4 : 5);
        int64_t sz[4];
        for (int d = 0; d < nd; d++) sz[d] = 1 + pick(s, smooth ? 3 : 4);
        if (!smooth && nd && pick(s, 40) == 0) sz[pick(s, nd)] = 0; /* an empty tensor */
        fc->in[i] = tt_random(gen, sz, nd, fc->m.dt, -2, 2);
    }
    int64_t bank = smooth ? 64 : 1024;
    fc->in[fc->n_in - 1] = tt_random(gen, &bank, 1, fc->m.dt, -1, 1);
}

static void count_nodes(tj_graph *g, tt_gf_counts *c) {
    for (tj_node *n = tj_block_first(tj_graph_block(g)); n; n = tj_node_next(n)) {
        const tj_op_info *op = tj_node_op(n);
        c->nodes++;
        if (op && tj_op_id(op) < TT_GF_MAX_OPS) c->op_hits[tj_op_id(op)]++;
    }
}

/* Whether central differences can be trusted on these outputs: finite, and
 * small enough that rounding (eps |loss| / h) stays far below the tolerance. */
static bool moderate(tj_tensor *const *t) {
    bool ok = true;
    for (int o = 0; o < N_OUT; o++) {
        tt_ref r = tt_ref_of(t[o]);
        for (int64_t i = 0; i < r.numel; i++) ok = ok && fabs(r.v[i]) <= 1e3;
        tt_ref_free(&r);
    }
    return ok;
}

void tt_gf_run_case(int seed, tt_gf_counts *c) {
    fuzz_case fc = {.seed = seed};
    uint64_t s = (uint64_t)seed * 0x2545F4914F6CDD1Dull + 7;
    fc.m.seed = (uint64_t)seed;
    fc.m.smooth = pick(&s, 4) == 0;
    fc.m.dt = fc.m.smooth || pick(&s, 3) == 0 ? TJ_F64 : TJ_F32;
    fc.m.gen = tj_generator_new((uint64_t)seed);
    fc.m.n_out = N_OUT;
    fc.m.verbose = getenv("TJIT_FUZZ_VERBOSE") != NULL;
    tj_generator *gen = tj_generator_new((uint64_t)seed + 1);
    make_inputs(&fc, &s, gen);

    tj_generator_set_state(fc.m.gen, (uint64_t)seed, 0);
    uint64_t trail = 0;
    fc.m.calls = c->op_calls;
    fc.m.trail = &trail;
    fc.g = tj_trace(tt_gf_model_fn, &fc.m, fc.in, fc.n_in, N_OUT, NULL);
    fc.m.calls = NULL;
    fc.m.trail = NULL;
    if (!fc.g) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", tj_last_error());
        fc.m.verbose = true; /* again, telling each call's fate */
        tj_graph_free(tj_trace(tt_gf_model_fn, &fc.m, fc.in, fc.n_in, N_OUT, NULL));
        fail_msg("case %d: trace: %s", seed, msg);
    }
    if (tj_graph_verify(fc.g) != TJ_OK) {
        show_graph(&fc);
        fail_msg("case %d: the traced graph does not verify: %s", seed, tj_last_error());
    }
    if (getenv("TJIT_FUZZ_SHOW")) show_graph(&fc);
    count_nodes(fc.g, c);
    c->graphs++;
    tj_tensor *want[N_OUT];
    run_eager(&fc, fc.in, want);

    /* every pipeline: the default, none, each pass alone; then op by op. The
     * portable runner gives eager's bits, so these compare bit for bit; the
     * LLVM backends below, the default where built, within their bounds */
    char what[96];
    for (int k = -2; k < tj_num_passes(); k++) {
        tj_compile_options o = {.passes = k == -2 ? NULL : k == -1 ? "" : tj_pass_name(k),
                                .backend = "portable"};
        snprintf(what, sizeof what, "passes \"%s\"", o.passes ? o.passes : tj_default_pipeline());
        check_program(&fc, &o, fc.in, want, 0, what);
    }
    check_program(&fc, &(tj_compile_options){.dynamic_replay = true, .backend = "portable"}, fc.in, want,
                  0, "dynamic replay");
    check_program(&fc, &(tj_compile_options){.passes = "", .dynamic_replay = true, .backend = "portable"},
                  fc.in, want, 0, "dynamic replay, no passes");
#ifdef TJIT_HAVE_LLVM
    /* the LLVM backends on a quarter of the cases (their compile is the slow part) */
    if (seed % 4 == 0) {
        bool libm = seed % 8 == 0;
        tj_compile_options o = {.backend = libm ? "llvm-libm" : "llvm"};
        check_program(&fc, &o, fc.in, want, libm ? 0 : fc.m.dt == TJ_F32 ? 1e-3 : 1e-9, o.backend);
        c->llvm_cases++;
    }
#endif
    /* strided inputs (the same values): replay must equal eager on them,
     * when eager makes the same calls (it may not: a view of a strided
     * tensor is refused); matmul and conv kernels may sum in another order
     * for another layout, so the contiguous results are no reference */
    tj_tensor *strided[MAX_IN], *want2[N_OUT];
    for (int i = 0; i < fc.n_in; i++) strided[i] = tt_noncontiguous(gen, fc.in[i]);
    uint64_t trail2 = 0;
    fc.m.trail = &trail2;
    run_eager(&fc, strided, want2);
    fc.m.trail = NULL;
    if (trail2 == trail) {
        check_program(&fc, &(tj_compile_options){.backend = "portable"}, strided, want2, 0, "strided inputs");
        c->strided++;
    }
    for (int o = 0; o < N_OUT; o++) tj_release(want2[o]);
    for (int i = 0; i < fc.n_in; i++) tj_release(strided[i]);

    if (fc.m.smooth && moderate(want)) {
        bool wrt[MAX_IN];
        for (int i = 0; i < fc.n_in; i++) wrt[i] = true;
        snprintf(what, sizeof what, "graph fuzz case %d", seed);
        tt_gradcheck_graph(fc.g, fc.in, wrt, 1e-5, 1e-4, what);
        c->gradchecked++;
    }
    for (int o = 0; o < N_OUT; o++) {
        tj_release(want[o]);
    }
    for (int i = 0; i < fc.n_in; i++) tj_release(fc.in[i]);
    tj_graph_free(fc.g);
    tj_generator_free(fc.m.gen);
    tj_generator_free(gen);
}
