/* test_llvm_rows.c — the LLVM backend's row kernels (backends/llvm/rowgen.c):
 * fusion groups holding softmax, log_softmax or layer_norm over the last
 * dim, with prologues and epilogues, read from IR text and compiled by
 * "llvm" (and "llvm-libm"), against the same subgraph run op by op:
 *   - softmax after a scale, log_softmax, layer_norm after a residual add;
 *   - epilogues (relu, a product with another input), a prologue value that
 *     is also an output, broadcast inputs ([N] bias, [B, 1] scale), a chunk
 *     input, strided inputs, f32 and f64, rows of 1 to 20000 elements (in
 *     and past the scratch buffer);
 *   - a constant row normalised to exactly 0 (the output is b, bit for bit);
 *   - rows split across threads give the same bits as one thread;
 *   - reductions over the last dim: RMSNorm (x * rsqrt(mean(x * x) + eps)
 *     * w, a full-size epilogue reading the mean broadcast), logsumexp(a + b)
 *     and sum(x * y) (outputs of the reduced sizes, keepdim either way),
 *     amax and amin of a difference, with NaN and infinite rows;
 *   - the kernel is LLVM's (no fallback), row kernels are cached apart, and
 *     their passes vectorise (a reduction's too).
 * Built without LLVM, every test is skipped. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/fuser_cases.h"
#include "tests/support/runtime_testing.h"
#ifdef TJIT_HAVE_LLVM
#include "backends/llvm/tjl.h"
#endif

#ifndef TJIT_HAVE_LLVM
static void skipped_without_llvm(void **state) {
    (void)state;
    skip();
}
#else

static const int64_t lengths[] = {1, 7, 33, 256, 1000, 20000};
enum { N_LENGTHS = sizeof lengths / sizeof lengths[0] };

/* Rows per case: fewer for long rows, to keep the test quick. */
static int64_t rows_for(int64_t len) { return len >= 10000 ? 3 : len >= 1000 ? 6 : 13; }

/* The group's text: one graph whose only node is the group, a subgraph of
 * `body` (lines of IR over inputs %i0.. and ending in a return). The types
 * `T` and the sizes are filled in by the caller. */
static tj_graph *parse(const char *text) {
    tj_status st;
    tj_graph *g = tj_graph_parse(text, &st);
    if (!g) fail_msg("parse: %s\n%s", tj_last_error(), text);
    return g;
}

static tj_node *the_group(tj_graph *g) {
    for (tj_node *n = tj_block_first(tj_graph_block(g)); n; n = tj_node_next(n))
        if (tj_node_kind_of(n) == TJ_NODE_FUSION_GROUP) return n;
    fail_msg("no fusion group");
    return NULL;
}

typedef struct row_case {
    const char *what;
    const tjf_backend *backend;
    double rtol, atol;
    bool same_bits_as; /* outputs[0] must equal want[0] bit for bit */
} row_case;

/* Runs g's group with the backend on inputs, and its subgraph op by op;
 * compares every output within the tolerances; checks the kernel is
 * LLVM's. Returns the fused outputs in got (new references) when not NULL. */
static void check(tj_graph *g, tj_tensor *const *in, const row_case *c, tj_tensor **got_out) {
    tj_node *grp = the_group(g);
    const tj_graph *sub = tj_node_subgraph(grp);
    int n_out = tj_node_num_outputs(grp);
    tjf_group *run = tjf_group_new(grp, c->backend);
    assert_non_null(run);
    tj_tensor *got[8], *want[8];
    if (tjf_group_run(run, in, got) != TJ_OK) fail_msg("%s: group run: %s", c->what, tj_last_error());
    if (tjf_group_fallback_reason(run))
        fail_msg("%s: ran op by op: %s", c->what, tjf_group_fallback_reason(run));
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
    const tjf_kernel *k;
    assert_int_equal(tjf_group_prepare(run, in, &ndim, sizes, &k), TJ_OK);
    if (tjl_kernel_fallback(k)) fail_msg("%s: portable runner: %s", c->what, tjl_kernel_fallback(k));
    assert_non_null(tjl_kernel_symbol(k));
    tj_program *ref = tt_compile_with((tj_graph *)sub, false, NULL, NULL);
    tj_scope_begin(); /* the op-by-op results belong to it */
    if (tj_run(ref, in, want) != TJ_OK) fail_msg("%s: op by op: %s", c->what, tj_last_error());
    for (int i = 0; i < n_out; i++) {
        tt_ref w = tt_ref_of(want[i]), gg = tt_ref_of(got[i]);
        assert_int_equal(tj_tensor_dtype(got[i]), tj_tensor_dtype(want[i]));
        assert_int_equal(w.numel, gg.numel);
        for (int64_t e = 0; e < w.numel; e++) {
            double G = gg.v[e], W = w.v[e];
            if (G == W || (isnan(G) && isnan(W))) continue;
            if (fabs(G - W) <= c->rtol * fabs(W) + c->atol) continue;
            fail_msg("%s: output %d, element %lld: fused %.17g, op by op %.17g", c->what, i, (long long)e, G, W);
        }
        tt_ref_free(&w);
        tt_ref_free(&gg);
        if (got_out) got_out[i] = got[i];
        else tj_release(got[i]);
    }
    tj_scope_end();
    tj_program_free(ref);
    tjf_group_free(run);
}

static row_case f32_case(const char *what) { return (row_case){what, tjl_backend(), 1e-5, 1e-6, false}; }
static row_case f64_case(const char *what) { return (row_case){what, tjl_backend(), 1e-12, 1e-14, false}; }

static const char *type_name(tj_dtype t) { return t == TJ_F32 ? "Float" : "Double"; }

/* ---- softmax and log_softmax ---------------------------------------------------- */

/* softmax(x * 0.125) or log_softmax(x * 0.125) over [B, L]. */
static void scaled(const char *op, tj_dtype dt, const tjf_backend *backend) {
    tj_generator *gen = tj_generator_new(3);
    const char *T = type_name(dt);
    for (int li = 0; li < N_LENGTHS; li++) {
        int64_t L = lengths[li], B = rows_for(L), sz[2] = {B, L};
        char text[2048], what[96];
        snprintf(text, sizeof text,
                 "graph(%%x : %s(%lld, %lld)):\n"
                 "  %%1 : %s(%lld, %lld) = prim::FusionGroup_0(%%x)\n"
                 "  return (%%1)\n"
                 "with prim::FusionGroup_0 = graph(%%a : %s(%lld, %lld)):\n"
                 "  %%1 : %s(%lld, %lld) = aten::mul.Scalar[other=0.125](%%a)\n"
                 "  %%2 : %s(%lld, %lld) = %s[dim=-1](%%1)\n"
                 "  return (%%2)\n",
                 T, (long long)B, (long long)L, T, (long long)B, (long long)L, T, (long long)B,
                 (long long)L, T, (long long)B, (long long)L, T, (long long)B, (long long)L, op);
        snprintf(what, sizeof what, "%s(x * 0.125) %s [%lld, %lld]", op, T, (long long)B, (long long)L);
        tj_graph *g = parse(text);
        tj_scope_begin();
        tj_tensor *x = tt_random(gen, sz, 2, dt, -40, 40);
        row_case c = dt == TJ_F32 ? f32_case(what) : f64_case(what);
        c.backend = backend;
        check(g, &x, &c, NULL);
        tj_scope_end();
        tj_graph_free(g);
    }
    tj_generator_free(gen);
}

static void softmax_after_a_scale(void **state) {
    (void)state;
    scaled("aten::softmax", TJ_F32, tjl_backend());
    scaled("aten::softmax", TJ_F64, tjl_backend());
    scaled("aten::softmax", TJ_F32, tjl_libm_backend());
}

static void log_softmax_after_a_scale(void **state) {
    (void)state;
    scaled("aten::log_softmax", TJ_F32, tjl_backend());
    scaled("aten::log_softmax", TJ_F64, tjl_backend());
    scaled("aten::log_softmax", TJ_F64, tjl_libm_backend());
}

/* Epilogues, broadcasts and a second output:
 *   s = (x + bias[L]) * scale[B, 1];  y = softmax(s);  z = relu(y - 0.01) * u;
 * outputs z and s (a prologue value). */
static void epilogue_and_broadcasts(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(4);
    for (int dti = 0; dti < 2; dti++) {
        tj_dtype dt = dti ? TJ_F64 : TJ_F32;
        const char *T = type_name(dt);
        for (int li = 0; li < N_LENGTHS; li++) {
            long long L = lengths[li], B = rows_for(L);
            char text[4096], what[96];
            snprintf(text, sizeof text,
                     "graph(%%x : %s(%lld, %lld), %%bias : %s(%lld), %%scale : %s(%lld, 1), %%u : %s(%lld, %lld)):\n"
                     "  %%1 : %s(%lld, %lld), %%2 : %s(%lld, %lld) = prim::FusionGroup_0(%%x, %%bias, %%scale, %%u)\n"
                     "  return (%%1, %%2)\n"
                     "with prim::FusionGroup_0 = graph(%%a : %s(%lld, %lld), %%b : %s(%lld), %%c : %s(%lld, 1), "
                     "%%d : %s(%lld, %lld)):\n"
                     "  %%1 : %s(%lld, %lld) = aten::add[alpha=1.](%%a, %%b)\n"
                     "  %%2 : %s(%lld, %lld) = aten::mul(%%1, %%c)\n"
                     "  %%3 : %s(%lld, %lld) = aten::softmax[dim=1](%%2)\n"
                     "  %%4 : %s(%lld, %lld) = aten::sub.Scalar[other=0.01, alpha=1.](%%3)\n"
                     "  %%5 : %s(%lld, %lld) = aten::relu(%%4)\n"
                     "  %%6 : %s(%lld, %lld) = aten::mul(%%5, %%d)\n"
                     "  return (%%6, %%2)\n",
                     T, B, L, T, L, T, B, T, B, L, T, B, L, T, B, L, T, B, L, T, L, T, B, T, B, L, T, B, L, T, B,
                     L, T, B, L, T, B, L, T, B, L, T, B, L);
            snprintf(what, sizeof what, "epilogue, broadcasts %s [%lld, %lld]", T, B, L);
            tj_graph *g = parse(text);
            tj_scope_begin();
            int64_t xs[2] = {B, L}, bs[1] = {L}, ss[2] = {B, 1};
            tj_tensor *in[4] = {tt_random(gen, xs, 2, dt, -5, 5), tt_random(gen, bs, 1, dt, -1, 1),
                                tt_random(gen, ss, 2, dt, 0.5, 3), tt_random(gen, xs, 2, dt, -2, 2)};
            row_case c = dt == TJ_F32 ? f32_case(what) : f64_case(what);
            check(g, in, &c, NULL);
            tj_scope_end();
            tj_graph_free(g);
        }
    }
    tj_generator_free(gen);
}

/* log_softmax of an input read directly, then exp (its epilogue). */
static void log_softmax_of_an_input(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(5);
    for (int dti = 0; dti < 2; dti++) {
        tj_dtype dt = dti ? TJ_F64 : TJ_F32;
        const char *T = type_name(dt);
        for (int li = 0; li < N_LENGTHS; li++) {
            long long L = lengths[li], B = rows_for(L);
            char text[2048], what[96];
            snprintf(text, sizeof text,
                     "graph(%%x : %s(%lld, %lld)):\n"
                     "  %%1 : %s(%lld, %lld), %%2 : %s(%lld, %lld) = prim::FusionGroup_0(%%x)\n"
                     "  return (%%1, %%2)\n"
                     "with prim::FusionGroup_0 = graph(%%a : %s(%lld, %lld)):\n"
                     "  %%1 : %s(%lld, %lld) = aten::log_softmax[dim=1](%%a)\n"
                     "  %%2 : %s(%lld, %lld) = aten::exp(%%1)\n"
                     "  return (%%1, %%2)\n",
                     T, B, L, T, B, L, T, B, L, T, B, L, T, B, L, T, B, L);
            snprintf(what, sizeof what, "log_softmax(x), exp %s [%lld, %lld]", T, B, L);
            tj_graph *g = parse(text);
            tj_scope_begin();
            int64_t xs[2] = {B, L};
            tj_tensor *x = tt_random(gen, xs, 2, dt, -30, 30);
            row_case c = dt == TJ_F32 ? f32_case(what) : f64_case(what);
            check(g, &x, &c, NULL);
            tj_scope_end();
            tj_graph_free(g);
        }
    }
    tj_generator_free(gen);
}

/* ---- layer_norm ----------------------------------------------------------------- */

/* h = a + r; y = layer_norm(h, w, b); outputs y and h; a strided when asked. */
static void layer_norm_case(tj_dtype dt, int64_t B, int64_t L, bool strided, const tjf_backend *backend,
                            double offset) {
    tj_generator *gen = tj_generator_new((uint64_t)L);
    const char *T = type_name(dt);
    long long b_ = B, l_ = L;
    char text[2048], what[128];
    snprintf(text, sizeof text,
             "graph(%%x : %s(%lld, %lld), %%r : %s(%lld, %lld), %%w : %s(%lld), %%b : %s(%lld)):\n"
             "  %%1 : %s(%lld, %lld), %%2 : %s(%lld, %lld) = prim::FusionGroup_0(%%x, %%r, %%w, %%b)\n"
             "  return (%%1, %%2)\n"
             "with prim::FusionGroup_0 = graph(%%a : %s(%lld, %lld), %%c : %s(%lld, %lld), %%d : %s(%lld), "
             "%%e : %s(%lld)):\n"
             "  %%1 : %s(%lld, %lld) = aten::add[alpha=1.](%%a, %%c)\n"
             "  %%2 : %s(%lld, %lld) = aten::layer_norm[normalized_shape=[%lld], eps=1e-05](%%1, %%d, %%e)\n"
             "  return (%%2, %%1)\n",
             T, b_, l_, T, b_, l_, T, l_, T, l_, T, b_, l_, T, b_, l_, T, b_, l_, T, b_, l_, T, l_, T, l_, T, b_,
             l_, T, b_, l_, l_);
    snprintf(what, sizeof what, "layer_norm(x + r, w, b)%s %s [%lld, %lld]", strided ? " strided" : "", T, b_, l_);
    tj_graph *g = parse(text);
    tj_scope_begin();
    int64_t xs[2] = {B, L}, ws[1] = {L};
    tj_tensor *x = tt_random(gen, xs, 2, dt, offset - 3, offset + 3);
    tj_tensor *in[4] = {strided ? tt_noncontiguous(gen, x) : x, tt_random(gen, xs, 2, dt, -1, 1),
                        tt_random(gen, ws, 1, dt, 0.5, 1.5), tt_random(gen, ws, 1, dt, -1, 1)};
    if (strided) assert_false(tj_is_contiguous(in[0]));
    row_case c = dt == TJ_F32 ? f32_case(what) : f64_case(what);
    c.backend = backend;
    c.atol = dt == TJ_F32 ? 1e-5 : 1e-12; /* normalised values near 0 */
    check(g, in, &c, NULL);
    tj_scope_end();
    tj_graph_free(g);
    tj_generator_free(gen);
}

static void layer_norm_after_a_residual(void **state) {
    (void)state;
    for (int li = 0; li < N_LENGTHS; li++) {
        int64_t L = lengths[li], B = rows_for(L);
        layer_norm_case(TJ_F32, B, L, false, tjl_backend(), 0);
        layer_norm_case(TJ_F64, B, L, false, tjl_backend(), 0);
        layer_norm_case(TJ_F32, B, L, true, tjl_backend(), 100); /* far from 0 */
        layer_norm_case(TJ_F64, B, L, true, tjl_libm_backend(), 1000);
    }
}

/* A constant row normalises to exactly 0, so the output is b, bit for bit. */
static void constant_rows_give_b(void **state) {
    (void)state;
    for (int dti = 0; dti < 2; dti++) {
        tj_dtype dt = dti ? TJ_F64 : TJ_F32;
        const char *T = type_name(dt);
        for (int li = 0; li < N_LENGTHS; li++) {
            long long L = lengths[li], B = 2;
            char text[2048];
            snprintf(text, sizeof text,
                     "graph(%%x : %s(%lld, %lld), %%w : %s(%lld), %%b : %s(%lld)):\n"
                     "  %%1 : %s(%lld, %lld) = prim::FusionGroup_0(%%x, %%w, %%b)\n"
                     "  return (%%1)\n"
                     "with prim::FusionGroup_0 = graph(%%a : %s(%lld, %lld), %%d : %s(%lld), %%e : %s(%lld)):\n"
                     "  %%1 : %s(%lld, %lld) = aten::mul.Scalar[other=0.1](%%a)\n"
                     "  %%2 : %s(%lld, %lld) = aten::layer_norm[normalized_shape=[%lld], eps=1e-05](%%1, %%d, %%e)\n"
                     "  return (%%2)\n",
                     T, B, L, T, L, T, L, T, B, L, T, B, L, T, L, T, L, T, B, L, T, B, L, L);
            tj_graph *g = parse(text);
            tj_generator *gen = tj_generator_new(7);
            tj_scope_begin();
            int64_t xs[2] = {B, L}, ws[1] = {L};
            tj_tensor *in[3] = {tj_full(xs, 2, 0.7, dt), tt_random(gen, ws, 1, dt, 0.5, 1.5),
                                tt_random(gen, ws, 1, dt, -1, 1)};
            tjf_group *run = tjf_group_new(the_group(g), tjl_backend());
            tj_tensor *y;
            assert_int_equal(tjf_group_run(run, in, &y), TJ_OK);
            assert_null(tjf_group_fallback_reason(run));
            tt_ref got = tt_ref_of(y), b = tt_ref_of(in[2]);
            for (int64_t e = 0; e < got.numel; e++)
                if (got.v[e] != b.v[e % L])
                    fail_msg("%s, row of %lld: element %lld: %.17g, b %.17g", T, L, (long long)e, got.v[e],
                             b.v[e % L]);
            tt_ref_free(&got);
            tt_ref_free(&b);
            tj_release(y);
            tjf_group_free(run);
            tj_scope_end();
            tj_generator_free(gen);
            tj_graph_free(g);
        }
    }
}

/* ---- chunks and strides -------------------------------------------------------- */

/* softmax(p * q) with p, q the halves of one input; then a strided input. */
static void chunk_and_strided_inputs(void **state) {
    (void)state;
    tj_generator *gen = tj_generator_new(8);
    for (int li = 0; li < N_LENGTHS; li++) {
        long long L = lengths[li], B = rows_for(L);
        char text[2048], what[96];
        snprintf(text, sizeof text,
                 "graph(%%x : Float(%lld, %lld), %%v : Float(%lld, %lld)):\n"
                 "  %%1 : Float(%lld, %lld) = prim::FusionGroup_0(%%x, %%v)\n"
                 "  return (%%1)\n"
                 "with prim::FusionGroup_0 = graph(%%a : Float(%lld, %lld), %%b : Float(%lld, %lld)):\n"
                 "  %%1 : Float(%lld, %lld), %%2 : Float(%lld, %lld) = prim::ConstantChunk[chunks=2, dim=1](%%a)\n"
                 "  %%3 : Float(%lld, %lld) = aten::mul(%%1, %%2)\n"
                 "  %%4 : Float(%lld, %lld) = aten::add[alpha=1.](%%3, %%b)\n"
                 "  %%5 : Float(%lld, %lld) = aten::softmax[dim=-1](%%4)\n"
                 "  return (%%5)\n",
                 B, 2 * L, B, L, B, L, B, 2 * L, B, L, B, L, B, L, B, L, B, L, B, L);
        tj_graph *g = parse(text);
        for (int strided = 0; strided < 2; strided++) {
            snprintf(what, sizeof what, "softmax(chunk * chunk + v%s) [%lld, %lld]", strided ? " strided" : "", B, L);
            tj_scope_begin();
            int64_t xs[2] = {B, 2 * L}, vs[2] = {B, L};
            tj_tensor *v = tt_random(gen, vs, 2, TJ_F32, -2, 2);
            tj_tensor *in[2] = {tt_random(gen, xs, 2, TJ_F32, -2, 2), strided ? tt_noncontiguous(gen, v) : v};
            row_case c = f32_case(what);
            check(g, in, &c, NULL);
            tj_scope_end();
        }
        tj_graph_free(g);
    }
    tj_generator_free(gen);
}

/* ---- threads, caching, code ----------------------------------------------------- */

/* op(x * 0.125) over [512, 256] f32, op a row op's name. */
static tj_graph *row_graph(const char *op) {
    char text[1024];
    snprintf(text, sizeof text,
             "graph(%%x : Float(512, 256)):\n"
             "  %%1 : Float(512, 256) = prim::FusionGroup_0(%%x)\n"
             "  return (%%1)\n"
             "with prim::FusionGroup_0 = graph(%%a : Float(512, 256)):\n"
             "  %%1 : Float(512, 256) = aten::mul.Scalar[other=0.125](%%a)\n"
             "  %%2 : Float(512, 256) = %s[dim=-1](%%1)\n"
             "  return (%%2)\n",
             op);
    return parse(text);
}

static void rows_split_across_threads(void **state) {
    (void)state;
    tj_graph *g = row_graph("aten::softmax");
    tj_generator *gen = tj_generator_new(9);
    int64_t xs[2] = {512, 256};
    tj_tensor *x = tt_random(gen, xs, 2, TJ_F32, -20, 20);
    tj_tensor *got[2][1];
    for (int threads = 1; threads <= 2; threads++) {
        tj_set_num_threads(threads);
        row_case c = f32_case(threads == 1 ? "one thread" : "two threads");
        check(g, &x, &c, got[threads - 1]);
    }
    tj_set_num_threads(0);
    tt_assert_identical(got[0][0], got[1][0], "threads", 0);
    tj_release(got[0][0]);
    tj_release(got[1][0]);
    tj_release(x);
    tj_generator_free(gen);
    tj_graph_free(g);
}

/* ---- reductions ------------------------------------------------------------------ */

/* The group of `body` (lines over %a : T(B, L), %b : T(B, L), %w : T(L),
 * ending with the group's output %o of sizes `osz`). */
static tj_graph *reduction_graph(tj_dtype dt, int64_t B, int64_t L, const char *osz, const char *body) {
    const char *T = type_name(dt);
    char text[4096], lines[2048];
    /* the body names types as T(B, L), T(B, 1), T(B) and T(L): filled in here */
    char full[64], red1[64], red0[64], row[64];
    snprintf(full, sizeof full, "%s(%lld, %lld)", T, (long long)B, (long long)L);
    snprintf(red1, sizeof red1, "%s(%lld, 1)", T, (long long)B);
    snprintf(red0, sizeof red0, "%s(%lld)", T, (long long)B);
    snprintf(row, sizeof row, "%s(%lld)", T, (long long)L);
    size_t at = 0;
    for (const char *p = body; *p && at + 64 < sizeof lines;) {
        const char *sub = !strncmp(p, "FULL", 4) ? full : !strncmp(p, "RED1", 4) ? red1
                          : !strncmp(p, "RED0", 4) ? red0 : !strncmp(p, "ROW_", 4) ? row : NULL;
        if (sub) {
            at += (size_t)snprintf(lines + at, sizeof lines - at, "%s", sub);
            p += 4;
        } else {
            lines[at++] = *p++;
        }
    }
    lines[at] = 0;
    const char *o = !strcmp(osz, "FULL") ? full : !strcmp(osz, "RED1") ? red1 : red0;
    snprintf(text, sizeof text,
             "graph(%%x : %s, %%y : %s, %%v : %s):\n"
             "  %%1 : %s = prim::FusionGroup_0(%%x, %%y, %%v)\n"
             "  return (%%1)\n"
             "with prim::FusionGroup_0 = graph(%%a : %s, %%b : %s, %%w : %s):\n%s",
             full, full, row, o, full, full, row, lines);
    return parse(text);
}

static const char *const reductions[][3] = {
    {"rmsnorm", "FULL",
     "  %1 : FULL = aten::mul(%a, %a)\n"
     "  %2 : RED1 = aten::mean.dim[dim=[-1], keepdim=True](%1)\n"
     "  %3 : RED1 = aten::add.Scalar[other=1e-05, alpha=1.](%2)\n"
     "  %4 : RED1 = aten::rsqrt(%3)\n"
     "  %5 : FULL = aten::mul(%a, %4)\n"
     "  %6 : FULL = aten::mul(%5, %w)\n"
     "  return (%6)\n"},
    {"logsumexp(a + b)", "RED0",
     "  %1 : FULL = aten::add[alpha=1.](%a, %b)\n"
     "  %2 : RED0 = aten::logsumexp[dim=[-1], keepdim=False](%1)\n"
     "  return (%2)\n"},
    {"log(sum(a * b))", "RED1",
     "  %1 : FULL = aten::mul(%a, %b)\n"
     "  %2 : RED1 = aten::sum.dim_IntList[dim=[1], keepdim=True](%1)\n"
     "  %3 : RED1 = aten::log(%2)\n"
     "  return (%3)\n"},
    {"a - amax(a)", "FULL",
     "  %1 : RED1 = aten::amax[dim=[-1], keepdim=True](%a)\n"
     "  %2 : FULL = aten::sub[alpha=1.](%a, %1)\n"
     "  %3 : FULL = aten::exp(%2)\n"
     "  return (%3)\n"},
    {"amin(a * 2) * 0.5", "RED0",
     "  %1 : FULL = aten::mul.Scalar[other=2.](%a)\n"
     "  %2 : RED0 = aten::amin[dim=[-1], keepdim=False](%1)\n"
     "  %3 : RED0 = aten::mul.Scalar[other=0.5](%2)\n"
     "  return (%3)\n"},
};
enum { N_REDUCTIONS = sizeof reductions / sizeof reductions[0] };

/* Rows of NaN, of -inf, one +inf, constant: where amax, amin and
 * logsumexp have their rules. */
static void special_values(tj_tensor *x, int64_t B, int64_t L) {
    bool f32 = tj_tensor_dtype(x) == TJ_F32;
    for (int64_t r = 0; r < B && r < 4; r++)
        for (int64_t j = 0; j < L; j++) {
            double v = r == 0 ? (j == L / 2 ? NAN : 1) : r == 1 ? -INFINITY : r == 2 ? (j == 1 ? INFINITY : 0) : 2.5;
            if (f32) ((float *)tj_data(x))[r * L + j] = (float)v;
            else ((double *)tj_data(x))[r * L + j] = v;
        }
}

static void reductions_fuse(void **state) {
    (void)state;
    static const int64_t lens[] = {2, 7, 33, 256, 1000, 20000};
    tj_generator *gen = tj_generator_new(9);
    for (int dti = 0; dti < 2; dti++) {
        tj_dtype dt = dti ? TJ_F64 : TJ_F32;
        for (int k = 0; k < N_REDUCTIONS; k++)
            for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
                int64_t L = lens[li], B = rows_for(L), sz[2] = {B, L};
                tj_graph *g = reduction_graph(dt, B, L, reductions[k][1], reductions[k][2]);
                char what[128];
                snprintf(what, sizeof what, "%s %s [%lld, %lld]", reductions[k][0], type_name(dt),
                         (long long)B, (long long)L);
                /* owned here: tt_fuser_restride releases inside, which a scope would repeat */
                tj_tensor *in[3] = {tt_random(gen, sz, 2, dt, 0.1, 2), tt_random(gen, sz, 2, dt, 0.1, 2),
                                    tt_random(gen, &L, 1, dt, 0.5, 1.5)};
                special_values(in[0], B, L);
                row_case c = dt == TJ_F32 ? f32_case(what) : f64_case(what);
                if (L >= 1000) c.rtol *= 10; /* sums in their own order */
                check(g, in, &c, NULL);
                tj_tensor *strided = tt_fuser_restride(gen, in[0], 1);
                tj_tensor *in2[3] = {strided, in[1], in[2]};
                check(g, in2, &c, NULL);
                tj_release(strided);
                for (int i = 0; i < 3; i++) tj_release(in[i]);
                tj_graph_free(g);
            }
    }
    tj_generator_free(gen);
}

/* Each reduction pass and the full-size epilogue pass vectorise. */
static void reduction_passes_vectorise(void **state) {
    (void)state;
    for (int k = 0; k < N_REDUCTIONS; k++) {
        /* rows long enough that no pass's vector loop is unrolled whole (AVX-512's
         * 16 lanes x 4 would take a 1024-long row in 16 steps, and O3 unrolls those) */
        tj_graph *g = reduction_graph(TJ_F32, 8, 16384, reductions[k][1], reductions[k][2]);
        tjf_spec spec;
        tjf_spec_of_types(the_group(g), &spec);
        char *ir = tjl_kernel_text(tj_node_subgraph(the_group(g)), &spec, false, TJL_TEXT_IR_OPT);
        assert_non_null(ir);
        int loops = k == 0 ? 2 : k == 1 ? 2 : k == 3 ? 2 : 1, bodies = 0; /* passes over the row */
        for (const char *p = ir; (p = strstr(p, "vector.body")); p++) bodies++;
        if (bodies < loops * 2) { /* cmocka's message would cut the IR short */
            fprintf(stderr, "%s\n", ir);
            fail_msg("%s: %d vector loop mentions, want %d loops, in the IR above", reductions[k][0], bodies, loops);
        }
        const char *reduce = k == 3 ? "@llvm.vector.reduce.fmaximum" : k == 4 ? "@llvm.vector.reduce.fminimum"
                                                                              : "@llvm.vector.reduce.fadd";
        if (!strstr(ir, reduce)) fail_msg("%s: no %s in\n%s", reductions[k][0], reduce, ir);
        free(ir);
        tj_graph_free(g);
    }
}

static void row_kernels_are_cached_apart(void **state) {
    (void)state;
    tj_graph *g1 = row_graph("aten::softmax"), *g2 = row_graph("aten::log_softmax");
    tjf_spec spec;
    tjf_spec_of_types(the_group(g1), &spec);
    tjl_stats s0 = tjl_get_stats();
    tjf_kernel *a = tjl_backend()->compile(tj_node_subgraph(the_group(g1)), &spec);
    tjf_kernel *a2 = tjl_backend()->compile(tj_node_subgraph(the_group(g1)), &spec);
    tjf_kernel *b = tjl_backend()->compile(tj_node_subgraph(the_group(g2)), &spec);
    assert_non_null(a);
    assert_non_null(a2);
    assert_non_null(b);
    assert_non_null(tjl_kernel_symbol(a));
    assert_string_equal(tjl_kernel_symbol(a), tjl_kernel_symbol(a2)); /* shared */
    assert_string_not_equal(tjl_kernel_symbol(a), tjl_kernel_symbol(b));
    tjl_stats s1 = tjl_get_stats();
    assert_int_equal(s1.fallbacks, s0.fallbacks);
    assert_true(s1.memory_hits >= s0.memory_hits + 1);
    /* the IR says its range counts rows */
    char *ir = tjl_kernel_text(tj_node_subgraph(the_group(g1)), &spec, false, TJL_TEXT_IR_OPT);
    assert_non_null(ir);
    assert_non_null(strstr(ir, "\"tjit-range\"=\"rows\""));
    free(ir);
    tjl_backend()->release(a);
    tjl_backend()->release(a2);
    tjl_backend()->release(b);
    tj_graph_free(g1);
    tj_graph_free(g2);
}

static void row_passes_vectorise(void **state) {
    (void)state;
    tj_graph *g = row_graph("aten::softmax");
    tjf_spec spec;
    tjf_spec_of_types(the_group(g), &spec);
    char *ir = tjl_kernel_text(tj_node_subgraph(the_group(g)), &spec, false, TJL_TEXT_IR_OPT);
    assert_non_null(ir);
    /* the maximum, the sum of exponentials and the output pass */
    int bodies = 0;
    for (const char *p = ir; (p = strstr(p, "vector.body")); p++) bodies++;
    if (bodies < 3 * 2) /* each loop's label and its back edge */
        fail_msg("%d vector loop mentions in\n%s", bodies, ir);
    assert_non_null(strstr(ir, "@llvm.vector.reduce.fmaximum"));
    assert_non_null(strstr(ir, "@llvm.vector.reduce.fadd"));
    free(ir);
    tj_graph_free(g);
}
#endif

int main(void) {
#ifdef TJIT_HAVE_LLVM
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(softmax_after_a_scale),
        cmocka_unit_test(log_softmax_after_a_scale),
        cmocka_unit_test(epilogue_and_broadcasts),
        cmocka_unit_test(log_softmax_of_an_input),
        cmocka_unit_test(layer_norm_after_a_residual),
        cmocka_unit_test(constant_rows_give_b),
        cmocka_unit_test(chunk_and_strided_inputs),
        cmocka_unit_test(rows_split_across_threads),
        cmocka_unit_test(row_kernels_are_cached_apart),
        cmocka_unit_test(row_passes_vectorise),
        cmocka_unit_test(reductions_fuse),
        cmocka_unit_test(reduction_passes_vectorise),
    };
#else
    const struct CMUnitTest tests[] = {cmocka_unit_test(skipped_without_llvm)};
#endif
    return cmocka_run_group_tests(tests, NULL, NULL);
}
