/* test_cuda_rowfusion.c — fusion groups holding a row op (softmax,
 * log_softmax, layer_norm over the last dim; fuser/fuser.h) in the `cuda`
 * fuser backend (backends/cuda/fuse_rows.c).
 *
 * Each case is a group written in IR text with its prologue and epilogue:
 * the group's kernel runs through tjf_group on cuda:0 and must compile (no
 * op-by-op fallback, no failed kernel), and its outputs must match the same
 * nodes run op by op on cuda:0 and on the CPU (f32 within 1e-5 relative,
 * f64 within 1e-12). Rows of 1, 7, 33, 256, 1000 and 5000 elements (a warp a
 * row, a block a row with the row in registers, and one recomputing its
 * prologue), broadcast [N] and [B, 1] inputs, a chunk, a strided input, f64.
 * On the host harness, NVRTC and ptxas must also accept every module made.
 *
 * Then the fuser's own row groups: random row-group models (tests/support/
 * row_cases.c) traced on cuda:0, fused by tj_pass_fuse and run against the
 * CPU's unfused replay within the bounds (60 on the harness, 300 on a GPU;
 * TJIT_ROW_CASES sets another count). Reductions' groups (sum, mean, amax,
 * amin, logsumexp over the last dim) have no CUDA row kernel: the backend
 * refuses them and they run op by op on the device, which these compare too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/driver.h"
#include "backends/cuda/fusion.h"
#include "fuser/fuser.h"
#include "tests/support/cuda_cases.h"
#include "tests/support/cuda_ptx.h"
#include "tests/support/row_cases.h"
#include "tests/support/testing.h"
#include "tjit/runtime.h"

static const tj_device CUDA0 = {TJ_CUDA, 0};

/* tmpl with $X the [B, N] type, $W [N], $C [B, 1], $H [B, 2N] on dev, in dt. */
static char *expand(const char *tmpl, const char *dt, const char *dev, int64_t B, int64_t N) {
    size_t cap = strlen(tmpl) * 2 + 4096, len = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    for (const char *p = tmpl; *p; p++) {
        assert_true(len + 128 < cap);
        if (*p != '$') {
            s[len++] = *p;
            continue;
        }
        p++;
        int64_t a = B, b = N;
        int nd = 2;
        if (*p == 'W') nd = 1, a = N;
        else if (*p == 'C') b = 1;
        else if (*p == 'H') b = 2 * N;
        if (nd == 1) len += (size_t)snprintf(s + len, cap - len, "%s(%lld, device=%s)", dt, (long long)a, dev);
        else len += (size_t)snprintf(s + len, cap - len, "%s(%lld, %lld, device=%s)", dt, (long long)a, (long long)b, dev);
    }
    s[len] = 0;
    return s;
}

typedef struct rcase {
    const char *what;
    const char *params;  /* the graph's parameters */
    const char *body;    /* the group's nodes */
    const char *outputs; /* "%a, %b" */
    int n_outputs;
    const char kinds[8]; /* per input: X, W, C or H (its sizes) */
    int strided;         /* an input given as a strided view, or -1 */
} rcase;

static const rcase cases[] = {
    {"softmax after a scale, times another input",
     "%x : $X, %m : $X",
     "  %s : $X = aten::mul[other=0.125](%x)\n"
     "  %p : $X = aten::softmax[dim=-1](%s)\n"
     "  %y : $X = aten::mul(%p, %m)\n",
     "%y", 1, "XX", -1},
    {"log_softmax of a strided input, relu after",
     "%x : $X",
     "  %p : $X = aten::log_softmax[dim=1](%x)\n"
     "  %y : $X = aten::relu(%p)\n"
     "  %z : $X = aten::exp(%p)\n",
     "%y, %z", 2, "X", 0},
    {"layer_norm after a residual add, the sum an output too",
     "%a : $X, %b : $X, %w : $W, %bias : $W",
     "  %h : $X = aten::add[alpha=1.](%a, %b)\n"
     "  %n : $X = aten::layer_norm[normalized_shape=[$N], eps=1e-05](%h, %w, %bias)\n"
     "  %y : $X = aten::relu(%n)\n",
     "%y, %h", 2, "XXWW", -1},
    {"softmax with an [N] bias and a [B, 1] scale",
     "%x : $X, %bias : $W, %c : $C",
     "  %s : $X = aten::mul(%x, %c)\n"
     "  %t : $X = aten::add[alpha=1.](%s, %bias)\n"
     "  %y : $X = aten::softmax[dim=-1](%t)\n",
     "%y", 1, "XWC", -1},
    {"layer_norm of a chunk, a strided weight",
     "%hh : $H, %w : $W, %bias : $W",
     "  %c0 : $X, %c1 : $X = prim::ConstantChunk[chunks=2, dim=1](%hh)\n"
     "  %g : $X = aten::mul(%c0, %c1)\n"
     "  %n : $X = aten::layer_norm[normalized_shape=[$N], eps=0.001](%g, %w, %bias)\n"
     "  %y : $X = aten::add[alpha=1.](%n, %c1)\n",
     "%y", 1, "HWW", 1},
};

/* The template with $N (the row length) spelled out; the rest by expand. */
static char *with_len(const char *tmpl, int64_t N) {
    size_t cap = strlen(tmpl) + 64, len = 0;
    char *s = malloc(cap);
    assert_non_null(s);
    for (const char *p = tmpl; *p; p++) {
        if (p[0] == '$' && p[1] == 'N') {
            len += (size_t)snprintf(s + len, cap - len, "%lld", (long long)N);
            p++;
        } else {
            s[len++] = *p;
        }
    }
    s[len] = 0;
    return s;
}

static void run_case(const rcase *c, tj_dtype dtype, int64_t B, int64_t N, tj_generator *gen) {
    const char *dt = dtype == TJ_F32 ? "Float" : "Double";
    char flat_t[4096], group_t[8192];
    char *body = with_len(c->body, N);
    snprintf(flat_t, sizeof flat_t, "graph(%s):\n%s  return (%s)\n", c->params, body, c->outputs);
    char outdecl[512] = "";
    const char *names[4] = {"%o0", "%o1", "%o2", "%o3"};
    for (int o = 0; o < c->n_outputs; o++)
        snprintf(outdecl + strlen(outdecl), sizeof outdecl - strlen(outdecl), "%s%s : $X", o ? ", " : "", names[o]);
    char args[256] = "";
    for (const char *p = c->params; *p;) { /* the parameters' names */
        const char *e = strchr(p, ' ');
        snprintf(args + strlen(args), sizeof args - strlen(args), "%s%.*s", args[0] ? ", " : "", (int)(e - p), p);
        p = strchr(p, ',');
        if (!p) break;
        p += 2;
    }
    char rets[64] = "";
    for (int o = 0; o < c->n_outputs; o++)
        snprintf(rets + strlen(rets), sizeof rets - strlen(rets), "%s%s", o ? ", " : "", names[o]);
    snprintf(group_t, sizeof group_t,
             "graph(%s):\n  %s = prim::FusionGroup_0(%s)\n  return (%s)\nwith prim::FusionGroup_0 = graph(%s):\n%s"
             "  return (%s)\n",
             c->params, outdecl, args, rets, c->params, body, c->outputs);
    free(body);
    char *gd_text = expand(group_t, dt, "cuda:0", B, N), *fd_text = expand(flat_t, dt, "cuda:0", B, N);
    char *fc_text = expand(flat_t, dt, "cpu", B, N);
    tj_graph *gd = tj_graph_parse(gd_text, NULL), *fd = tj_graph_parse(fd_text, NULL),
             *fc = tj_graph_parse(fc_text, NULL);
    if (!gd || !fd || !fc) fail_msg("%s: %s\n%s", c->what, tj_last_error(), gd_text);

    int n_in = (int)strlen(c->kinds);
    tj_tensor *cpu_in[8], *dev_in[8];
    for (int i = 0; i < n_in; i++) {
        int64_t sizes[2] = {B, c->kinds[i] == 'C' ? 1 : c->kinds[i] == 'H' ? 2 * N : N};
        bool vec = c->kinds[i] == 'W';
        if (vec) sizes[0] = N;
        cpu_in[i] = tt_random(gen, sizes, vec ? 1 : 2, dtype, -3, 3);
        tj_tensor *d = tj_to_device(cpu_in[i], CUDA0);
        dev_in[i] = i == c->strided ? tt_cuda_strided_copy(d) : d;
        if (i == c->strided) tj_release(d);
    }

    /* fused: the group's kernel, which must compile */
    tjcu_fuse_stats before, after;
    tjcu_fuse_get_stats(&before);
    tj_node *node = tj_block_first(tj_graph_block(gd));
    assert_int_equal(tj_node_kind_of(node), TJ_NODE_FUSION_GROUP);
    assert_non_null(tjf_row_node(tj_node_subgraph(node)));
    tjf_group *grp = tjf_group_new(node, tjcu_fuse_backend());
    assert_non_null(grp);
    tj_tensor *fused[4] = {0}, *dev[4] = {0}, *cpu[4] = {0};
    if (tjf_group_run(grp, dev_in, fused) != TJ_OK) fail_msg("%s: %s", c->what, tj_last_error());
    tjcu_fuse_get_stats(&after);
    if (tjf_group_fallback_reason(grp))
        fail_msg("%s (%s, N=%lld): fell back: %s", c->what, dt, (long long)N, tjf_group_fallback_reason(grp));
    assert_int_equal(tjf_group_num_kernels(grp), 1);
    assert_int_equal(after.failed, before.failed);
    assert_true(after.kernels > before.kernels);

    /* op by op, on the device and the CPU */
    tj_compile_options o = {.passes = ""};
    tj_program *pd = tj_compile(fd, &o), *pc = tj_compile(fc, &o);
    assert_non_null(pd);
    assert_non_null(pc);
    assert_int_equal(tj_run(pd, dev_in, dev), TJ_OK);
    assert_int_equal(tj_run(pc, cpu_in, cpu), TJ_OK);
    double rtol = dtype == TJ_F32 ? 1e-5 : 1e-12, atol = dtype == TJ_F32 ? 1e-6 : 1e-13;
    for (int k = 0; k < c->n_outputs; k++) {
        tj_tensor *h = tj_to_device(fused[k], TJ_DEVICE_CPU);
        tt_ref want_cpu = tt_ref_of(cpu[k]);
        tj_tensor *hd = tj_to_device(dev[k], TJ_DEVICE_CPU);
        tt_ref want_dev = tt_ref_of(hd);
        printf("  %s, %s [%lld, %lld], output %d\n", c->what, dt, (long long)B, (long long)N, k);
        tt_assert_close_ref(h, &want_dev, rtol, atol);
        tt_assert_close_ref(h, &want_cpu, rtol, atol);
        tt_ref_free(&want_cpu);
        tt_ref_free(&want_dev);
        tj_release(h);
        tj_release(hd);
    }
    for (int k = 0; k < c->n_outputs; k++) tj_release(fused[k]), tj_release(dev[k]), tj_release(cpu[k]);
    for (int i = 0; i < n_in; i++) tj_release(cpu_in[i]), tj_release(dev_in[i]);
    tj_program_free(pd);
    tj_program_free(pc);
    tjf_group_free(grp);
    tj_graph_free(gd);
    tj_graph_free(fd);
    tj_graph_free(fc);
    free(gd_text);
    free(fd_text);
    free(fc_text);
}

static const int64_t lengths[] = {1, 7, 33, 256, 1000, 5000};

static void every_case(tj_dtype dtype) {
    tj_generator *gen = tj_generator_new(dtype == TJ_F32 ? 5 : 6);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
            int64_t N = lengths[l], B = N >= 1000 ? 3 : 5;
            run_case(&cases[c], dtype, B, N, gen);
        }
    tj_generator_free(gen);
}

static void rows_f32(void **state) {
    (void)state;
    every_case(TJ_F32);
}

static void rows_f64(void **state) {
    (void)state;
    every_case(TJ_F64);
}

/* A constant row normalises to exactly 0 before the affine part: y = b. */
static void constant_row_layer_norm(void **state) {
    (void)state;
    const char *t = "graph(%x : Float(2, 37, device=cuda:0), %w : Float(37, device=cuda:0), "
                    "%b : Float(37, device=cuda:0)):\n"
                    "  %o : Float(2, 37, device=cuda:0) = prim::FusionGroup_0(%x, %w, %b)\n"
                    "  return (%o)\n"
                    "with prim::FusionGroup_0 = graph(%x : Float(2, 37, device=cuda:0), "
                    "%w : Float(37, device=cuda:0), %b : Float(37, device=cuda:0)):\n"
                    "  %s : Float(2, 37, device=cuda:0) = aten::mul[other=3.](%x)\n"
                    "  %n : Float(2, 37, device=cuda:0) = aten::layer_norm[normalized_shape=[37], eps=1e-05](%s, %w, %b)\n"
                    "  return (%n)\n";
    tj_graph *g = tj_graph_parse(t, NULL);
    assert_non_null(g);
    int64_t xs[2] = {2, 37}, ws[1] = {37};
    tj_tensor *x = tj_full(xs, 2, 0.1, TJ_F32), *w = tj_full(ws, 1, 2.0, TJ_F32);
    tj_generator *gen = tj_generator_new(3);
    tj_tensor *b = tt_random(gen, ws, 1, TJ_F32, -1, 1);
    tj_tensor *in[3] = {tj_to_device(x, CUDA0), tj_to_device(w, CUDA0), tj_to_device(b, CUDA0)}, *out = NULL;
    tjf_group *grp = tjf_group_new(tj_block_first(tj_graph_block(g)), tjcu_fuse_backend());
    assert_non_null(grp);
    assert_int_equal(tjf_group_run(grp, in, &out), TJ_OK);
    assert_null(tjf_group_fallback_reason(grp));
    tj_tensor *h = tj_to_device(out, TJ_DEVICE_CPU);
    tt_ref rb = tt_ref_of(b), ro = tt_ref_of(h);
    for (int64_t i = 0; i < ro.numel; i++)
        if (ro.v[i] != rb.v[i % 37]) fail_msg("element %lld: %.9g, not b = %.9g", (long long)i, ro.v[i], rb.v[i % 37]);
    tt_ref_free(&rb);
    tt_ref_free(&ro);
    tj_release(h), tj_release(out), tj_release(x), tj_release(w), tj_release(b);
    for (int i = 0; i < 3; i++) tj_release(in[i]);
    tjf_group_free(grp);
    tj_graph_free(g);
    tj_generator_free(gen);
}

/* A reduction's row group (RMSNorm here) has no CUDA kernel: the backend
 * refuses it, saying why, and the group runs op by op through the device's
 * kernels, equal to the CPU's fused result within the bounds. */
static void reduction_groups_run_op_by_op(void **state) {
    (void)state;
    const char *t = "graph(%x : Float(3, 40, device=cuda:0), %w : Float(40, device=cuda:0)):\n"
                    "  %o : Float(3, 40, device=cuda:0) = prim::FusionGroup_0(%x, %w)\n"
                    "  return (%o)\n"
                    "with prim::FusionGroup_0 = graph(%x : Float(3, 40, device=cuda:0), "
                    "%w : Float(40, device=cuda:0)):\n"
                    "  %1 : Float(3, 40, device=cuda:0) = aten::mul(%x, %x)\n"
                    "  %2 : Float(3, 1, device=cuda:0) = aten::mean.dim[dim=[-1], keepdim=True](%1)\n"
                    "  %3 : Float(3, 1, device=cuda:0) = aten::add.Scalar[other=1e-05, alpha=1.](%2)\n"
                    "  %4 : Float(3, 1, device=cuda:0) = aten::rsqrt(%3)\n"
                    "  %5 : Float(3, 40, device=cuda:0) = aten::mul(%x, %4)\n"
                    "  %6 : Float(3, 40, device=cuda:0) = aten::mul(%5, %w)\n"
                    "  return (%6)\n";
    tj_graph *g = tj_graph_parse(t, NULL);
    assert_non_null(g);
    int64_t xs[2] = {3, 40}, ws[1] = {40};
    tj_generator *gen = tj_generator_new(4);
    tj_tensor *x = tt_random(gen, xs, 2, TJ_F32, -2, 2), *w = tt_random(gen, ws, 1, TJ_F32, 0.5, 1.5);
    tj_tensor *in[2] = {tj_to_device(x, CUDA0), tj_to_device(w, CUDA0)}, *cpu_in[2] = {x, w};
    tj_node *node = tj_block_first(tj_graph_block(g));
    tjf_group *grp = tjf_group_new(node, tjcu_fuse_backend());
    tjf_group *ref = tjf_group_new(node, tjf_portable_backend());
    assert_non_null(grp);
    assert_non_null(ref);
    tj_tensor *out = NULL, *want = NULL;
    assert_int_equal(tjf_group_run(grp, in, &out), TJ_OK);
    assert_non_null(tjf_group_fallback_reason(grp));
    assert_non_null(strstr(tjf_group_fallback_reason(grp), "no row kernel for a reduction (aten::mean.dim)"));
    assert_int_equal(tjf_group_num_kernels(grp), 1); /* the refusal, kept: not asked again */
    assert_int_equal(tjf_group_run(ref, cpu_in, &want), TJ_OK);
    tj_tensor *h = tj_to_device(out, TJ_DEVICE_CPU);
    assert_int_equal(tt_row_far(want, h), 0);
    tj_release(h), tj_release(out), tj_release(want), tj_release(x), tj_release(w);
    for (int i = 0; i < 2; i++) tj_release(in[i]);
    tjf_group_free(grp);
    tjf_group_free(ref);
    tj_graph_free(g);
    tj_generator_free(gen);
}

/* What the harness ran is what a GPU compiles: NVRTC makes PTX of every
 * module of fused kernels for sm_90 and ptxas accepts it (on a GPU the
 * kernels were compiled for the device and ran there). */
static bool nvrtc_accepts(void *ctx, const char *key, const char *source) {
    int *n = ctx;
    char why[1200];
    if (!tt_cuda_nvrtc_ptxas(key, source, (const char *const[]){"sm_90"}, 1, why, sizeof why)) fail_msg("%s", why);
    (*n)++;
    return true;
}

static void nvrtc_and_ptxas_accept_the_row_kernels(void **state) {
    (void)state;
    const tjcu_driver *d = tjcu_current_driver();
    if (d && !strcmp(d->name, "cuda")) return;
    int n = 0;
    tjcu_fuse_for_each_module(nvrtc_accepts, &n);
    assert_true(n > 0);
    printf("NVRTC and ptxas accepted %d modules of row kernels for sm_90\n", n);
}

static bool on_gpu(void) {
    const tjcu_driver *d = tjcu_current_driver();
    return d && !strcmp(d->name, "cuda");
}

/* One random row-group model: its inputs on the device, its programs. */
typedef struct row_model {
    tt_row_case c;
    tj_tensor *dev[5];
    tj_graph *gc, *gd;
    tj_program *pc, *pd;
} row_model;

/* The row groups tj_pass_fuse forms, traced on cuda:0, against the CPU. All
 * models are compiled first and run after, so that their kernels compile in
 * a few batches at the first launch, not a module each. */
static void fused_row_models(void **state) {
    (void)state;
    const char *env = getenv("TJIT_ROW_CASES");
    int n = env ? atoi(env) : on_gpu() ? 300 : 60, groups = 0;
    tj_generator *gen = tj_generator_new(91);
    row_model *ms = calloc((size_t)n, sizeof *ms);
    assert_non_null(ms);
    tjcu_fuse_stats before, after;
    tjcu_fuse_get_stats(&before);
    for (int seed = 0; seed < n; seed++) {
        row_model *m = &ms[seed];
        tt_row_case_setup(seed, gen, &m->c);
        for (int i = 0; i < m->c.n_in; i++) assert_non_null(m->dev[i] = tj_to_device(m->c.in[i], CUDA0));
        m->gc = tj_trace(m->c.model, &m->c.recipe, m->c.in, m->c.n_in, 2, NULL);
        m->gd = tj_trace(m->c.model, &m->c.recipe, m->dev, m->c.n_in, 2, NULL);
        if (!m->gc || !m->gd) fail_msg("row case %d: trace: %s", seed, tj_last_error());
        tj_compile_options plain = {.passes = ""}, fused = {.passes = "fuse"};
        m->pc = tj_compile(m->gc, &plain);
        m->pd = tj_compile(m->gd, &fused);
        if (!m->pc || !m->pd) fail_msg("row case %d: compile: %s", seed, tj_last_error());
        for (tj_node *x = tj_block_first(tj_graph_block((tj_graph *)tj_program_graph(m->pd))); x;
             x = tj_node_next(x))
            groups += tj_node_kind_of(x) == TJ_NODE_FUSION_GROUP && tjf_row_node(tj_node_subgraph(x));
    }
    for (int seed = 0; seed < n; seed++) {
        row_model *m = &ms[seed];
        tj_tensor *want[2], *got[2];
        if (tj_run(m->pc, m->c.in, want) || tj_run(m->pd, m->dev, got))
            fail_msg("row case %d: run: %s", seed, tj_last_error());
        for (int k = 0; k < 2; k++) {
            tj_tensor *h = tj_to_device(got[k], TJ_DEVICE_CPU);
            int far = tt_row_far(want[k], h);
            if (far) {
                char *text = tj_graph_to_string(tj_program_graph(m->pd), 0);
                fail_msg("row case %d, output %d: %d elements past the bounds of the CPU's\n%s", seed,
                         k, far, text);
            }
            tj_release(h);
            tj_release(want[k]);
            tj_release(got[k]);
        }
        tt_cuda_count_case();
    }
    tjcu_fuse_get_stats(&after);
    for (int seed = 0; seed < n; seed++) {
        row_model *m = &ms[seed];
        tj_program_free(m->pc);
        tj_program_free(m->pd);
        tj_graph_free(m->gc);
        tj_graph_free(m->gd);
        for (int i = 0; i < m->c.n_in; i++) tj_release(m->dev[i]);
        tt_row_case_free(&m->c);
    }
    free(ms);
    assert_int_equal(after.failed, before.failed);
    assert_true(groups > n / 2);
    printf("cuda row groups: %d random models fused by the fuser (%d row groups, kernels compiled in "
           "%ld modules), equal to the CPU within the bounds\n", n, groups, after.modules - before.modules);
    tj_generator_free(gen);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fused_row_models),
        cmocka_unit_test(constant_row_layer_norm),
        cmocka_unit_test(reduction_groups_run_op_by_op),
        cmocka_unit_test(rows_f32),
        cmocka_unit_test(rows_f64),
        cmocka_unit_test(nvrtc_and_ptxas_accept_the_row_kernels),
    };
    return TT_CUDA_RUN(tests);
}
