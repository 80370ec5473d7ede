/* test_cuda_fusion.c — the `cuda` fuser backend (backends/cuda/fusion.h).
 *
 * - The differential tester: random pointwise graphs (the fuser's own,
 *   tests/support/fuser_cases.h: broadcasting, chunks, 0-dim, mixed dtypes)
 *   traced on CUDA inputs, contiguous and strided, fused into CUDA kernels:
 *   equal to the same graph unfused on the device, and to the CPU's unfused
 *   replay within the documented bounds. On the harness fused equals unfused
 *   bit for bit (the same expressions and library calls, no contraction, no
 *   compile-time evaluation); on a GPU within the bounds, since NVRTC
 *   evaluates a math function whose operand it proves constant (tanhf of a
 *   bool that is always true) at compile time, an ulp away from the device's
 *   own instruction sequence. 500 graphs on the host harness, 2000 on a GPU
 *   (TJIT_FUSE_GRAPHS sets another count).
 * - The example models: their fusion groups (the LSTM cell's forward and
 *   backward groups among them, each one kernel) on the device against the
 *   CPU.
 * - Every module of fused kernels the tests made compiles with NVRTC to PTX
 *   for sm_80 and sm_90 and ptxas accepts it.
 * - The disk cache: a second process compiles nothing.
 * - A kernel that does not compile: the group runs op by op, the reason is
 *   kept and names the source line.
 */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/cuda/driver.h"
#include "backends/cuda/fusion.h"
#include "backends/cuda/harness.h"
#include "backends/cuda/nvrtc.h"
#include "examples/models/models.h"
#include "tests/support/cuda_cases.h"
#include "tests/support/cuda_ptx.h"
#include "tests/support/fuser_cases.h"
#include "tests/support/runtime_testing.h"
#include "tjit/runtime.h"

extern char **environ;

static const tj_device CUDA0 = {TJ_CUDA, 0};

static bool on_gpu(void) {
    const tjcu_driver *d = tjcu_current_driver();
    return d && !strcmp(d->name, "cuda");
}

static int count_groups(const tj_graph *g) {
    int n = 0;
    for (tj_node *x = tj_block_first(tj_graph_block((tj_graph *)g)); x; x = tj_node_next(x))
        n += tj_node_kind_of(x) == TJ_NODE_FUSION_GROUP;
    return n;
}

/* Whether group x reads batch_norm coefficients of split_batch_norm (CPU
 * only), directly or through their reshape. */
static bool reads_split_batch_norm(tj_node *x) {
    for (int i = 0; i < tj_node_num_inputs(x); i++) {
        tj_node *d = tj_value_node(tj_node_input(x, i));
        if (tj_node_kind_of(d) == TJ_NODE_OP && !strcmp(tj_node_name(d), "aten::reshape"))
            d = tj_value_node(tj_node_input(d, 0));
        if (tj_node_kind_of(d) == TJ_NODE_OP && !strcmp(tj_node_name(d), "tjit::batch_norm_stats"))
            return true;
    }
    return false;
}

/* The groups g would have on a CUDA device: epilogue groups (a matrix
 * product with its pointwise users, CPU only) are there a group of their
 * epilogue when it holds more than one node, else no group; so are the
 * groups of a split batch_norm's multiply-add (CPU only: on the GPU the
 * batch_norm stays one op) and its users. */
static int count_groups_off_cpu(const tj_graph *g) {
    int n = 0;
    for (tj_node *x = tj_block_first(tj_graph_block((tj_graph *)g)); x; x = tj_node_next(x)) {
        if (tj_node_kind_of(x) != TJ_NODE_FUSION_GROUP) continue;
        const tj_graph *sub = tj_node_subgraph(x);
        int nodes = tj_block_num_nodes(tj_graph_block((tj_graph *)sub));
        if (reads_split_batch_norm(x)) n += nodes > 3; /* beside the multiply-add */
        else n += !tjf_anchor_node(sub) || nodes > 2;
    }
    return n;
}

/* ---- comparing ------------------------------------------------------------------ */

static void assert_close_on_host(tj_tensor *dev, tt_ref *want, double rtol, double atol) {
    tj_tensor *h = tj_to_device(dev, TJ_DEVICE_CPU);
    assert_non_null(h);
    tt_assert_close_ref(h, want, rtol, atol);
    tj_release(h);
}

static void assert_identical(tj_tensor *want, tj_tensor *got, const char *what, int seed) {
    tj_tensor *h = tj_to_device(got, TJ_DEVICE_CPU), *w = tj_to_device(want, TJ_DEVICE_CPU);
    tt_assert_identical(w, h, what, seed);
    tj_release(h);
    tj_release(w);
}

/* Within the bounds of chains of f32/f64 ops whose math functions are
 * another library's (2 ulp each, compounded over a chain of up to a dozen
 * ops; an f64 result computed through an f32 value carries that value's
 * error, so it gets f32's bounds): NaN matches NaN, infinities match
 * exactly, integers and bools exactly. A comparison or rounding of two values that differ in their last
 * bits may flip: such elements must agree with the device's unfused result
 * (checked bit for bit elsewhere), so they are counted, and a case may hold
 * a few. */
static int count_far_report(tj_tensor *cpu, tj_tensor *dev, bool f32_inside, bool report) {
    tj_tensor *h = tj_to_device(dev, TJ_DEVICE_CPU);
    tt_ref a = tt_ref_of(cpu), b = tt_ref_of(h);
    assert_int_equal(tj_tensor_dtype(cpu), tj_tensor_dtype(h));
    assert_int_equal(a.numel, b.numel);
    bool f = tj_dtype_is_float(tj_tensor_dtype(cpu));
    double rtol = tj_tensor_dtype(cpu) == TJ_F32 || f32_inside ? 1e-4 : 1e-10, atol = rtol;
    int far = 0;
    for (int64_t i = 0; i < a.numel; i++) {
        double x = a.v[i], y = b.v[i];
        if (x == y || (isnan(x) && isnan(y))) continue;
        if (f && isfinite(x) && isfinite(y) && fabs(x - y) <= atol + rtol * fmax(fabs(x), fabs(y)))
            continue;
        if (report && far < 8) printf("  element %lld: CPU %.17g, cuda:0 %.17g\n", (long long)i, x, y);
        far++;
    }
    tt_ref_free(&a);
    tt_ref_free(&b);
    tj_release(h);
    return far;
}

static int count_far(tj_tensor *cpu, tj_tensor *dev, bool f32_inside) {
    return count_far_report(cpu, dev, f32_inside, false);
}

/* Whether a value of the graph is f32: an f64 result computed from an f32
 * one (f64 - sin(bool), whose sin is f32) carries the f32 op's error. */
static bool has_f32_value(const tj_graph *g) {
    for (tj_node *x = tj_block_first(tj_graph_block((tj_graph *)g)); x; x = tj_node_next(x))
        for (int i = 0; i < tj_node_num_outputs(x); i++) {
            const tj_type *t = tj_value_type(tj_node_output(x, i));
            if (t->kind == TJ_TYPE_TENSOR && t->dtype == TJ_F32) return true;
        }
    for (int i = 0; i < tj_graph_num_inputs(g); i++) {
        const tj_type *t = tj_value_type(tj_graph_input(g, i));
        if (t->kind == TJ_TYPE_TENSOR && t->dtype == TJ_F32) return true;
    }
    return false;
}

/* A failing case prints its graph and the elements past the bounds, so the
 * failure can be read without reproducing it. */
static void report_case(const tj_program *p, bool f32_inside, tj_tensor *const want[2],
                        tj_tensor *const got[2]) {
    char *text = tj_graph_to_string(tj_program_graph(p), 0);
    printf("%s", text ? text : "(graph not printable)\n");
    free(text);
    for (int k = 0; k < 2; k++) {
        printf(" output %d:\n", k);
        count_far_report(want[k], got[k], f32_inside, true);
    }
}

/* ---- the differential tester ------------------------------------------------------ */

typedef struct dcase {
    tt_fuser_case fc;
    tj_tensor *dev_in[2][6];   /* contiguous, strided */
    tj_program *fused[2], *unfused[2];
    tj_program *cpu;
    int groups;
    bool f32_inside;
} dcase;

static tj_program *compile_on(tj_graph *g, const char *passes) {
    tj_compile_options o = {.passes = passes};
    tj_program *p = tj_compile(g, &o);
    if (!p) fail_msg("compile: %s", tj_last_error());
    return p;
}

/* Traces and compiles case seed; its kernels are written now and compiled
 * later, all cases' together, at the first launch. */
static void prepare_case(dcase *c, int seed, tj_generator *gen) {
    tt_fuser_opts o = {.int_inputs = true};
    tt_fuser_case_setup(seed, gen, &o, &c->fc);
    tj_graph *g = tj_trace(c->fc.model, &c->fc.recipe, c->fc.in, c->fc.n_in, 2, NULL);
    if (!g) fail_msg("case %d: trace on the CPU: %s", seed, tj_last_error());
    c->f32_inside = has_f32_value(g);
    c->cpu = compile_on(g, "");
    tj_graph_free(g);
    for (int layout = 0; layout < 2; layout++) {
        for (int i = 0; i < c->fc.n_in; i++) {
            tj_tensor *d = tj_to_device(c->fc.in[i], CUDA0);
            assert_non_null(d);
            c->dev_in[layout][i] = layout ? tt_cuda_strided_copy(d) : d;
            if (layout) tj_release(d);
        }
        /* traced on the layout: the program is planned (its kernels written) for it now */
        tj_graph *dg = tj_trace(c->fc.model, &c->fc.recipe, c->dev_in[layout], c->fc.n_in, 2, NULL);
        if (!dg) fail_msg("case %d: trace on cuda:0: %s", seed, tj_last_error());
        c->fused[layout] = compile_on(dg, "fuse");
        c->unfused[layout] = compile_on(dg, "");
        if (!layout) c->groups = count_groups(tj_program_graph(c->fused[0]));
        tj_graph_free(dg);
    }
}

/* Runs case seed fused and unfused on the device, both layouts. Returns
 * whether it held; a failing case prints its graph and its elements past
 * the bounds (the first few failures), and the tester goes on, so one run
 * on a GPU shows every failure. */
static bool run_case(dcase *c, int seed, int *far_cases, int *reported) {
    tj_tensor *want[2];
    if (tj_run(c->cpu, c->fc.in, want)) fail_msg("case %d: cpu: %s", seed, tj_last_error());
    bool held = true;
    for (int layout = 0; layout < 2; layout++) {
        tj_tensor *f[2], *u[2];
        if (tj_run(c->fused[layout], c->dev_in[layout], f))
            fail_msg("case %d: fused on cuda:0: %s", seed, tj_last_error());
        if (tj_run(c->unfused[layout], c->dev_in[layout], u))
            fail_msg("case %d: unfused on cuda:0: %s", seed, tj_last_error());
        int off_unfused = 0, off_cpu = 0;
        tj_tensor *uh[2] = {NULL, NULL};
        for (int k = 0; k < 2; k++) {
            assert_int_equal(tj_tensor_device(f[k]).type, TJ_CUDA);
            if (on_gpu()) { /* see the file comment */
                uh[k] = tj_to_device(u[k], TJ_DEVICE_CPU);
                off_unfused += count_far(uh[k], f[k], c->f32_inside);
            } else {
                assert_identical(u[k], f[k], layout ? "cuda fused vs unfused, strided inputs"
                                                    : "cuda fused vs unfused", seed);
            }
            off_cpu += count_far(want[k], f[k], c->f32_inside);
        }
        /* at most a flipped element or two each way (see count_far) */
        if (off_unfused > 2 || off_cpu > 2) {
            held = false;
            if ((*reported)++ < 6) {
                printf("case %d (%s inputs): %d elements of fused and unfused differ beyond the "
                       "bounds, %d of fused and the CPU's\n",
                       seed, layout ? "strided" : "contiguous", off_unfused, off_cpu);
                if (on_gpu()) {
                    printf(" fused against unfused on cuda:0\n");
                    report_case(c->fused[layout], c->f32_inside, uh, f);
                }
                printf(" fused on cuda:0 against the CPU\n");
                report_case(c->fused[layout], c->f32_inside, want, f);
            }
        }
        *far_cases += off_cpu > 0;
        for (int k = 0; k < 2; k++) {
            tj_release(uh[k]);
            tj_release(f[k]);
            tj_release(u[k]);
        }
    }
    for (int k = 0; k < 2; k++) tj_release(want[k]);
    return held;
}

static void free_case(dcase *c) {
    for (int layout = 0; layout < 2; layout++) {
        tj_program_free(c->fused[layout]);
        tj_program_free(c->unfused[layout]);
        for (int i = 0; i < c->fc.n_in; i++) tj_release(c->dev_in[layout][i]);
    }
    tj_program_free(c->cpu);
    tt_fuser_case_free(&c->fc);
}

static void random_graphs(void **state) {
    (void)state;
    const char *env = getenv("TJIT_FUSE_GRAPHS");
    int n = env ? atoi(env) : on_gpu() ? 2000 : 500;
    tj_generator *gen = tj_generator_new(2024);
    dcase *cases = calloc((size_t)n, sizeof *cases);
    assert_non_null(cases);
    tjcu_fuse_stats before, after;
    tjcu_fuse_get_stats(&before);
    int groups = 0, fused_cases = 0, far_cases = 0;
    for (int i = 0; i < n; i++) {
        prepare_case(&cases[i], i, gen);
        groups += cases[i].groups;
        fused_cases += cases[i].groups > 0;
    }
    int failed = 0, reported = 0;
    for (int i = 0; i < n; i++) failed += !run_case(&cases[i], i, &far_cases, &reported);
    tjcu_fuse_get_stats(&after);
    for (int i = 0; i < n; i++) free_case(&cases[i]);
    free(cases);
    tj_generator_free(gen);
    printf("cuda fuser: %d random graphs run (%d with fusion groups, %d groups), contiguous and "
           "strided; %ld kernels written, compiled in %ld modules; %d runs with an element past "
           "the bounds of the CPU's result (a flipped comparison or rounding)\n",
           n, fused_cases, groups, after.kernels - before.kernels, after.modules - before.modules,
           far_cases);
    if (failed) fail_msg("%d of %d random graphs differ beyond the bounds (the first printed above)", failed, n);
    assert_true(fused_cases > n / 2);
    assert_int_equal(after.failed, before.failed);
    for (int i = 0; i < n; i++) tt_cuda_count_case();
}

/* ---- the example models ---------------------------------------------------------------- */

static void move_params(const tjx_model *m, void *params, tj_device dev) {
    tj_tensor *ps[64];
    int n = m->parameters(params, ps, 64);
    if (m->buffers) n += m->buffers(params, ps + n, 64 - n);
    for (int i = 0; i < n; i++) assert_int_equal(tj_move_to_device(ps[i], dev), TJ_OK);
}

/* Runs prog's fusion groups and counts them: every one through the cuda
 * backend (no fallback). */
static void check_model(const char *name, bool training) {
    const tjx_model *m = tjx_find_model(name);
    assert_non_null(m);
    tt_context("model %s%s", name, training ? " (forward and backward)" : "");
    tj_generator *g = tj_generator_new(3);
    void *cpu_params = m->create(g);
    tj_generator_set_state(g, 3, 0);
    void *dev_params = m->create(g);
    tj_tensor *in[8], *dev_in[8];
    assert_int_equal(m->make_inputs(cpu_params, g, in), TJ_OK);
    move_params(m, dev_params, CUDA0);
    for (int i = 0; i < m->n_in; i++) assert_non_null(dev_in[i] = tj_to_device(in[i], CUDA0));
    tj_graph *gc = tj_trace(m->forward, cpu_params, in, m->n_in, m->n_out, NULL);
    tj_graph *gd = tj_trace(m->forward, dev_params, dev_in, m->n_in, m->n_out, NULL);
    assert_non_null(gc);
    assert_non_null(gd);
    tj_compile_options o = {.grad_parameters = training};
    tj_program *pc = tj_compile(gc, &o), *pd = tj_compile(gd, &o);
    if (!pc || !pd) fail_msg("compile: %s", tj_last_error());
    /* the same groups as on the CPU */
    assert_int_equal(count_groups(tj_program_graph(pd)), count_groups_off_cpu(tj_program_graph(pc)));
    if (training)
        assert_int_equal(count_groups(tj_program_backward_graph(pd)),
                         count_groups_off_cpu(tj_program_backward_graph(pc)));
    if (!strcmp(name, "lstm_cell")) { /* one kernel for the cell's pointwise work, each way */
        assert_int_equal(count_groups(tj_program_graph(pd)), 1);
        if (training) assert_int_equal(count_groups(tj_program_backward_graph(pd)), 1);
    }
    tjcu_fuse_stats before, after;
    tjcu_fuse_get_stats(&before);
    tj_tensor *oc[8], *od[8];
    for (int rep = 0; rep < 2; rep++) {
        if (tj_run(pc, in, oc) || tj_run(pd, dev_in, od)) fail_msg("run: %s", tj_last_error());
        for (int k = 0; k < m->n_out; k++) {
            tt_ref r = tt_ref_of(oc[k]);
            assert_close_on_host(od[k], &r, 2e-4, 2e-5);
            tt_ref_free(&r);
            tj_release(oc[k]);
            tj_release(od[k]);
        }
        if (!training) continue;
        if (tj_backward(pc, NULL, NULL) || tj_backward(pd, NULL, NULL))
            fail_msg("backward: %s", tj_last_error());
    }
    if (training) {
        tj_tensor *ps[64];
        int np = m->parameters(cpu_params, ps, 64);
        for (int i = 0; i < np; i++) {
            const char *pname = tj_tensor_name(ps[i]);
            tj_tensor *a = tj_program_grad(pc, pname), *b = tj_program_grad(pd, pname);
            assert_non_null(a);
            assert_non_null(b);
            assert_int_equal(tj_tensor_device(b).type, TJ_CUDA);
            tt_ref r = tt_ref_of(a);
            /* a weight's gradient sums over the batch, in another order on each side:
             * an element that cancels to near 0 keeps an error of the tensor's scale */
            double big = 0;
            for (int64_t e = 0; e < r.numel; e++) big = fmax(big, fabs(r.v[e]));
            assert_close_on_host(b, &r, 1e-3, fmax(1e-5, 1e-5 * big));
            tt_ref_free(&r);
            tj_release(a);
            tj_release(b);
        }
    }
    tjcu_fuse_get_stats(&after);
    assert_int_equal(after.failed, before.failed);
    tj_program_free(pc);
    tj_program_free(pd);
    tj_graph_free(gc);
    tj_graph_free(gd);
    for (int i = 0; i < m->n_in; i++) {
        tj_release(in[i]);
        tj_release(dev_in[i]);
    }
    m->destroy(cpu_params);
    m->destroy(dev_params);
    tj_generator_free(g);
    tt_cuda_count_case();
    tt_context(NULL);
}

static void models_forward(void **state) {
    (void)state;
    const char *names[] = {"mlp", "lstm_cell", "lstm", "cnn", "transformer"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) check_model(names[i], false);
}

static void models_training(void **state) {
    (void)state;
    check_model("lstm_cell", true);
    check_model("mlp", true);
}

/* ---- NVRTC and ptxas on every module made above ------------------------------------------ */

typedef struct walk {
    tt_cuda_sources list;
    int kernels;
} walk;

static bool collect(void *ctx, const char *key, const char *source) {
    walk *w = ctx;
    tt_cuda_sources_add(&w->list, key, source);
    for (const char *p = source; (p = strstr(p, "_i32(")); p++) w->kernels++;
    return true;
}

/* The harness's check that what it ran is what a GPU compiles; on a GPU the
 * kernels were compiled for the device and ran there. */
static void nvrtc_and_ptxas_accept_every_module(void **state) {
    (void)state;
    if (on_gpu()) {
        printf("NVRTC and ptxas: checked on the harness; here the kernels ran compiled for the GPU\n");
        return;
    }
    walk w = {0};
    tjcu_fuse_for_each_module(collect, &w);
    assert_true(w.list.n > 0);
    /* NVRTC to PTX for sm_80, then ptxas for sm_80 and sm_90 (any output fails) */
    static const char *const archs[] = {"sm_80", "sm_90"};
    int modules = tt_cuda_nvrtc_ptxas_all(&w.list, archs, 2);
    printf("NVRTC %s: %d modules of fused kernels (%d kernels) compiled for sm_80 and sm_90, ptxas "
           "accepted all\n", tjcu_nvrtc_version(), modules, w.kernels);
}

/* ---- a kernel that does not compile ------------------------------------------------------ */

static tj_status chain(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    out[0] = tj_add(tj_mul(in[0], in[1]), tj_tanh(in[0]), 1.0);
    return out[0] ? TJ_OK : tj_last_status();
}

/* What a run printed on stderr. */
static char *captured_stderr(tj_program *p, tj_tensor *const *in, tj_tensor **out) {
    char *dir = tt_mkdtemp(), *path = tt_path(dir, "stderr.txt");
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    setenv("TJIT_DUMP", "fusion-report", 1);
    tj_status st = tj_run(p, in, out);
    unsetenv("TJIT_DUMP");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_int_equal(st, TJ_OK);
    off_t n = lseek(fd, 0, SEEK_END);
    char *text = calloc(1, (size_t)n + 1);
    assert_int_equal(pread(fd, text, (size_t)n, 0), (ssize_t)n);
    close(fd);
    free(path);
    tt_rmtree(dir);
    return text;
}

static void compile_errors_fall_back(void **state) {
    (void)state;
    /* the next kernels written call a function the device vocabulary does not have */
    tjcu_fuse_set_fault("this_is_not_a_function");
    int64_t sizes[2] = {3, 5};
    tj_generator *gen = tj_generator_new(9);
    tj_tensor *x = tt_random(gen, sizes, 2, TJ_F32, -1, 1), *y = tt_random(gen, sizes, 2, TJ_F32, -1, 1);
    tj_tensor *dx = tj_to_device(x, CUDA0), *dy = tj_to_device(y, CUDA0);
    tj_tensor *cpu_in[2] = {x, y}, *dev_in[2] = {dx, dy};
    tj_graph *gc = tj_trace(chain, NULL, cpu_in, 2, 1, NULL), *gd = tj_trace(chain, NULL, dev_in, 2, 1, NULL);
    assert_non_null(gc);
    assert_non_null(gd);
    tj_program *pc = compile_on(gc, ""), *pd = compile_on(gd, "fuse");
    tjcu_fuse_set_fault(NULL);
    assert_int_equal(count_groups(tj_program_graph(pd)), 1);
    tj_tensor *a, *b, *b2;
    assert_int_equal(tj_run(pc, cpu_in, &a), TJ_OK);
    char *said = captured_stderr(pd, dev_in, &b); /* op by op: the same values */
    tt_ref r = tt_ref_of(a);
    assert_close_on_host(b, &r, 1e-5, 1e-6);
    if (!strstr(said, "runs op by op") || !strstr(said, "this_is_not_a_function") || !strstr(said, "line "))
        fail_msg("the fallback is not reported with the offending source line: '%s'", said);
    free(said);
    assert_int_equal(tj_run(pd, dev_in, &b2), TJ_OK); /* and again, without compiling again */
    assert_close_on_host(b2, &r, 1e-5, 1e-6);
    tt_ref_free(&r);
    tjcu_fuse_stats s;
    tjcu_fuse_get_stats(&s);
    assert_true(s.failed >= 1);
    tj_release(a), tj_release(b), tj_release(b2);
    tj_program_free(pc);
    tj_program_free(pd);
    tj_graph_free(gc);
    tj_graph_free(gd);
    tj_release(x), tj_release(y), tj_release(dx), tj_release(dy);
    tj_generator_free(gen);
}

/* ---- the disk cache ------------------------------------------------------------------------- */

/* In a child process: the LSTM cell on cuda:0 with TJIT_CACHE_DIR set; it
 * prints how many modules its compiler built and how many came from disk. */
static int child_main(void) {
    const tjx_model *m = tjx_find_model("lstm_cell");
    tj_generator *g = tj_generator_new(1);
    void *params = m->create(g);
    tj_tensor *in[8], *dev_in[8], *out[8];
    if (!tj_cuda_is_available() || m->make_inputs(params, g, in)) return 2;
    move_params(m, params, CUDA0);
    for (int i = 0; i < m->n_in; i++) dev_in[i] = tj_to_device(in[i], CUDA0);
    tj_graph *gd = tj_trace(m->forward, params, dev_in, m->n_in, m->n_out, NULL);
    tj_program *p = gd ? tj_compile(gd, NULL) : NULL;
    if (!p || tj_run(p, dev_in, out)) {
        fprintf(stderr, "child: %s\n", tj_last_error());
        return 3;
    }
    long built, cached;
    if (on_gpu()) {
        tjcu_nvrtc_cache_stats(&built, &cached);
    } else {
        tjh_stats s = tjh_get_stats();
        built = s.compiles;
        cached = s.disk_hits;
    }
    printf("built %ld cached %ld\n", built, cached);
    for (int k = 0; k < m->n_out; k++) tj_release(out[k]);
    for (int i = 0; i < m->n_in; i++) {
        tj_release(in[i]);
        tj_release(dev_in[i]);
    }
    tj_program_free(p);
    tj_graph_free(gd);
    m->destroy(params);
    tj_generator_free(g);
    return 0;
}

static void run_child(const char *self, const char *dir, long *built, long *cached) {
    char *argv[] = {(char *)self, "--cache-child", NULL};
    setenv("TJIT_CACHE_DIR", dir, 1);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    pid_t pid;
    assert_int_equal(posix_spawn(&pid, self, &fa, NULL, argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    char out[256] = "";
    ssize_t got = read(fds[0], out, sizeof out - 1);
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    out[got > 0 ? got : 0] = '\0';
    if (!WIFEXITED(status) || WEXITSTATUS(status) || sscanf(out, "built %ld cached %ld", built, cached) != 2)
        fail_msg("the cache child failed (status %d): %s", status, out);
}

static void second_process_compiles_nothing(void **state) {
    (void)state;
    char *dir = tt_mkdtemp();
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    assert_true(n > 0);
    self[n] = '\0';
    const char *old = getenv("TJIT_CACHE_DIR");
    char *saved = old ? strdup(old) : NULL;
    long built1, cached1, built2, cached2;
    run_child(self, dir, &built1, &cached1);
    run_child(self, dir, &built2, &cached2);
    if (saved) setenv("TJIT_CACHE_DIR", saved, 1);
    else unsetenv("TJIT_CACHE_DIR");
    free(saved);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir); /* the cache nests deeper than tt_rmtree goes */
    free(dir);
    assert_int_equal(system(cmd), 0);
    printf("disk cache: the first process built %ld modules, the second built %ld and read %ld\n", built1,
           built2, cached2);
    assert_true(built1 > 0);
    assert_int_equal(built2, 0);
    assert_true(cached2 >= built1);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--cache-child")) return child_main();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(second_process_compiles_nothing),
        cmocka_unit_test(models_forward),
        cmocka_unit_test(models_training),
        cmocka_unit_test(random_graphs),
        cmocka_unit_test(compile_errors_fall_back),
        cmocka_unit_test(nvrtc_and_ptxas_accept_every_module),
    };
    return TT_CUDA_RUN(tests);
}
