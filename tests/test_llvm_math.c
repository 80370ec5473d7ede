/* test_llvm_math.c — accuracy of the transcendentals in the LLVM backend's
 * generated code (backend "llvm"), in the style of test_math.c: each
 * function runs as a real kernel (a one-op fusion group, vectorised) over
 *   f32: every 193rd float (about 22 million values across every exponent,
 *        denormals, infinities and NaN included),
 *   f64: 3 million doubles, a third uniform over all bit patterns and the
 *        rest over the ranges where the functions change,
 *   pow: 4 million (base, exponent) pairs and a table of special cases;
 * and is checked twice: bit for bit against the C version in core/pw_math.h
 * that the code mirrors, and in ulps against libm (f32: double libm rounded
 * to f32; f64: long double libm). The bounds asserted here are the ones
 * docs/codegen.md states. Skipped when built without LLVM. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cpu/isa.h"
#include "core/pw_math.h"
#include "tests/support/fuser_cases.h"
#ifdef TJIT_HAVE_LLVM
#include "backends/llvm/tjl.h"

/* ---- running the kernels ------------------------------------------------------- */

static tj_tensor *tensor_of(const void *data, int64_t n, tj_dtype dt) {
    tj_tensor *t = tj_empty(&n, 1, dt);
    memcpy(tj_data(t), data, (size_t)n * tj_dtype_size(dt));
    return t;
}

/* op (by name, default attributes) over x (and y), as an LLVM kernel. */
static tj_tensor *run_kernel(const char *name, const void *x, const void *y, int64_t n, tj_dtype dt) {
    const tj_op_info *op = tj_op_find(name);
    assert_non_null(op);
    tj_tensor *in[2] = {tensor_of(x, n, dt), y ? tensor_of(y, n, dt) : NULL};
    tj_attr attrs[4];
    for (int k = 0; k < op->schema.n_attrs; k++) attrs[k] = op->schema.args[op->schema.attr_pos[k]].def;
    tj_tensor *out;
    if (tt_run_op_kernel(tjl_backend(), op, attrs, in, y ? 2 : 1, &out) != TJ_OK)
        fail_msg("%s: %s", name, tj_last_error());
    tj_release(in[0]);
    tj_release(in[1]);
    return out;
}

/* ---- f32 ------------------------------------------------------------------------ */

/* Distance in representable floats; both finite. */
static int64_t ulps_f(float a, float b) {
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia, ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return oa > ob ? oa - ob : ob - oa;
}

static bool same_f(float a, float b) {
    return (a != a && b != b) || !memcmp(&a, &b, 4);
}

static float *float_sweep(int64_t *n) {
    int64_t cap = (int64_t)((1ull << 32) / 193 + 1), k = 0;
    float *x = malloc(sizeof(float) * (size_t)cap);
    for (uint64_t u = 0; u < (1ull << 32); u += 193) {
        uint32_t b = (uint32_t)u;
        memcpy(&x[k++], &b, 4);
    }
    *n = k;
    return x;
}

static float sigmoid_c(float x) { return 1.0f / (1.0f + tjm_expf(-x)); }
static double sigmoid_ref(double x) { return 1.0 / (1.0 + exp(-x)); }

/* The kernel of name over every 193rd float: bits of mirror, and ulps from
 * ref within bound where ref's result is finite and x in [lo, hi]. */
static void sweep_f32(const char *name, float (*mirror)(float), double (*ref)(double), double lo, double hi,
                      int64_t bound) {
    int64_t n;
    float *x = float_sweep(&n);
    tj_tensor *out = run_kernel(name, x, NULL, n, TJ_F32);
    const float *got = tj_data(out);
    int64_t worst = 0, checked = 0;
    float at = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!same_f(got[i], mirror(x[i])))
            fail_msg("%s(%a): kernel %a, C version %a", name, (double)x[i], (double)got[i], (double)mirror(x[i]));
        if (!(x[i] >= lo && x[i] <= hi)) continue;
        float want = (float)ref((double)x[i]);
        if (!isfinite(want) || !isfinite(got[i])) {
            if (!(got[i] == want)) fail_msg("%s(%a): got %a, want %a", name, (double)x[i], (double)got[i], (double)want);
            continue;
        }
        int64_t d = ulps_f(got[i], want);
        if (d > worst) {
            worst = d;
            at = x[i];
        }
        checked++;
    }
    print_message("f32 %-8s max error %lld ulp (at %a) over %lld values\n", name + 6, (long long)worst,
                  (double)at, (long long)checked);
    assert_true(checked > 1000000);
    assert_true(worst <= bound);
    tj_release(out);
    free(x);
}

/* the special values every function must get exactly right, whatever the bound */
static void specials_f32(const char *name, double (*ref)(double)) {
    const float x[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, 1e-40f, -1e-40f,
                       1.17549435e-38f, 3.4e38f, -3.4e38f, 1e30f, -1e30f, 88.7f, -103.9f, 1.0f, -1.0f};
    int n = sizeof x / sizeof x[0];
    tj_tensor *out = run_kernel(name, x, NULL, n, TJ_F32);
    const float *got = tj_data(out);
    for (int i = 0; i < n; i++) {
        float want = (float)ref((double)x[i]);
        bool exact = !isfinite(want) || want == 0 || x[i] == 0 || !isfinite(x[i]) || fabsf(want) == 1.0f;
        if (exact ? !same_f(got[i], want) : ulps_f(got[i], want) > 2)
            fail_msg("%s(%a): got %a, want %a", name, (double)x[i], (double)got[i], (double)want);
    }
    tj_release(out);
}

static void f32_exp_log_tanh_sigmoid(void **state) {
    (void)state;
    sweep_f32("aten::exp", tjm_expf, exp, -1e30, 88.7, 1);
    sweep_f32("aten::log", tjm_logf, log, 0x1p-149, 3.5e38, 1);
    sweep_f32("aten::tanh", tjm_tanhf, tanh, -1e38, 1e38, 2);
    /* below -87 the true result is denormal and e^-x overflows f32 */
    sweep_f32("aten::sigmoid", sigmoid_c, sigmoid_ref, -87.0, 1e38, 2);
    specials_f32("aten::exp", exp);
    specials_f32("aten::log", log);
    specials_f32("aten::tanh", tanh);
}

static void f32_erf(void **state) {
    (void)state;
    sweep_f32("aten::erf", tjm_erff, erf, -1e38, 1e38, 2);
    specials_f32("aten::erf", erf);
}

static void f32_pow(void **state) {
    (void)state;
    enum { PAIRS = 4000000 };
    float *a = malloc(sizeof(float) * PAIRS), *b = malloc(sizeof(float) * PAIRS);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < PAIRS; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        uint32_t u = (uint32_t)s, v = (uint32_t)(s >> 32);
        memcpy(&a[i], &u, 4);
        memcpy(&b[i], &v, 4);
        switch (i % 4) { /* bases and exponents where results stay finite, and integers */
        case 0: a[i] = (float)((double)(u >> 8) / 16777216.0 * 8); b[i] = (float)((double)(v >> 8) / 16777216.0 * 60 - 30); break;
        case 1: b[i] = (float)((int)(v % 61) - 30); break;
        case 2: a[i] = -a[i]; b[i] = (float)((int)(v % 21) - 10); break;
        default: break; /* any bits at all */
        }
    }
    tj_tensor *out = run_kernel("aten::pow", a, b, PAIRS, TJ_F32);
    const float *got = tj_data(out);
    int64_t worst = 0;
    for (int i = 0; i < PAIRS; i++) {
        if (!same_f(got[i], tjm_powf(a[i], b[i])))
            fail_msg("pow(%a, %a): kernel %a, C version %a", (double)a[i], (double)b[i], (double)got[i],
                     (double)tjm_powf(a[i], b[i]));
        float want = powf(a[i], b[i]);
        if (!isfinite(want) || !isfinite(got[i]) || want == 0 || got[i] == 0) {
            if (!same_f(got[i], want))
                fail_msg("pow(%a, %a): got %a, want %a", (double)a[i], (double)b[i], (double)got[i], (double)want);
            continue;
        }
        if (signbit(got[i]) != signbit(want)) fail_msg("pow(%a, %a): sign", (double)a[i], (double)b[i]);
        int64_t d = ulps_f(got[i], want);
        if (d > worst) worst = d;
    }
    print_message("f32 pow      max error %lld ulp over %d pairs\n", (long long)worst, PAIRS);
    assert_true(worst <= 1);
    tj_release(out);
    /* C99's special cases, all pairs of these */
    const float sp[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, 2.0f, -2.0f, 0.5f, -0.5f,
                        3.0f, -3.0f, 1e-45f, 16777216.0f, 16777217.0f, 1e30f, -1e30f};
    enum { K = sizeof sp / sizeof sp[0] };
    float x[K * K], y[K * K];
    for (int i = 0; i < K; i++)
        for (int j = 0; j < K; j++) {
            x[i * K + j] = sp[i];
            y[i * K + j] = sp[j];
        }
    out = run_kernel("aten::pow", x, y, K * K, TJ_F32);
    got = tj_data(out);
    for (int i = 0; i < K * K; i++)
        if (!same_f(got[i], powf(x[i], y[i])))
            fail_msg("pow(%a, %a): got %a, want %a", (double)x[i], (double)y[i], (double)got[i],
                     (double)powf(x[i], y[i]));
    tj_release(out);
    free(a);
    free(b);
}

static void f32_sin_cos_log1p_expm1(void **state) {
    (void)state;
    sweep_f32("aten::sin", tjm_sinf, sin, -3.5e38, 3.5e38, 2);
    sweep_f32("aten::cos", tjm_cosf, cos, -3.5e38, 3.5e38, 2);
    sweep_f32("aten::log1p", tjm_log1pf, log1p, -1.0, 3.5e38, 2);
    sweep_f32("aten::expm1", tjm_expm1f, expm1, -1e30, 88.7, 2);
    specials_f32("aten::sin", sin);
    specials_f32("aten::cos", cos);
    specials_f32("aten::log1p", log1p);
    specials_f32("aten::expm1", expm1);
}

/* ---- f64 --------------------------------------------------------------------------- */

static bool same_d(double a, double b) { return (a != a && b != b) || !memcmp(&a, &b, 8); }

/* Error of got in ulps of the long double reference (fractional). */
static double ulps_d(double got, long double want) {
    double w = (double)want;
    if (got == w) return 0;
    int e;
    frexp(w, &e);
    double u = ldexp(1.0, e - 53);
    if (u < 0x1p-1074) u = 0x1p-1074;
    return (double)(fabsl((long double)got - want) / u);
}

static long double sigmoidl_ref(long double x) { return 1.0L / (1.0L + expl(-x)); }
static double sigmoid_d(double x) { return 1.0 / (1.0 + tjm_expd(-x)); }

static void sweep_f64(const char *name, double (*mirror)(double), long double (*ref)(long double), double lo,
                      double hi, double bound) {
    enum { M = 3000000 };
    double *x = malloc(sizeof(double) * M);
    uint64_t s = 0x2545F4914F6CDD1Dull;
    for (int i = 0; i < M; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        if (i % 3 == 0) memcpy(&x[i], &s, 8); /* any bits: every exponent, denormals, NaN */
        else if (i % 3 == 1) x[i] = lo + (hi - lo) * ((double)(s >> 11) / 9007199254740992.0);
        else x[i] = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 8; /* near 0: the small paths */
    }
    tj_tensor *out = run_kernel(name, x, NULL, M, TJ_F64);
    const double *got = tj_data(out);
    double worst = 0, at = 0;
    int64_t checked = 0;
    for (int i = 0; i < M; i++) {
        if (!same_d(got[i], mirror(x[i])))
            fail_msg("%s(%a): kernel %a, C version %a", name, x[i], got[i], mirror(x[i]));
        if (!(x[i] >= lo && x[i] <= hi)) continue;
        long double want = ref((long double)x[i]);
        if (!isfinite((double)want) || !isfinite(got[i])) {
            if (!(got[i] == (double)want)) fail_msg("%s(%a): got %a, want %a", name, x[i], got[i], (double)want);
            continue;
        }
        double d = ulps_d(got[i], want);
        if (d > worst) {
            worst = d;
            at = x[i];
        }
        checked++;
    }
    print_message("f64 %-8s max error %.2f ulp (at %a) over %lld values\n", name + 6, worst, at,
                  (long long)checked);
    assert_true(checked > M / 2);
    assert_true(worst <= bound);
    tj_release(out);
    free(x);
}

static void specials_f64(const char *name, double (*ref)(double)) {
    const double x[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 5e-324, -5e-324, 1e-310, 2.2250738585072014e-308,
                        1.7e308, -1.7e308, 1e300, -1e300, 709.7, -745.1, 1.0, -1.0, 6.0, -6.0, 40.0};
    int n = sizeof x / sizeof x[0];
    tj_tensor *out = run_kernel(name, x, NULL, n, TJ_F64);
    const double *got = tj_data(out);
    for (int i = 0; i < n; i++) {
        double want = ref(x[i]);
        bool exact = !isfinite(want) || want == 0 || x[i] == 0 || !isfinite(x[i]) || fabs(want) == 1.0;
        if (exact ? !same_d(got[i], want) : ulps_d(got[i], want) > 4)
            fail_msg("%s(%a): got %a, want %a", name, x[i], got[i], want);
    }
    tj_release(out);
}

static void f64_exp_log_tanh_sigmoid_erf(void **state) {
    (void)state;
    sweep_f64("aten::exp", tjm_expd, expl, -745.0, 709.7, 2);
    sweep_f64("aten::log", tjm_logd, logl, 0, 1.7e308, 1);
    sweep_f64("aten::tanh", tjm_tanhd, tanhl, -40, 40, 2);
    sweep_f64("aten::sigmoid", sigmoid_d, sigmoidl_ref, -700, 700, 3);
    sweep_f64("aten::erf", tjm_erfd, erfl, -7, 7, 3);
    specials_f64("aten::exp", exp);
    specials_f64("aten::log", log);
    specials_f64("aten::tanh", tanh);
    specials_f64("aten::erf", erf);
}
static void f64_sin_cos_log1p_expm1(void **state) {
    (void)state;
    sweep_f64("aten::sin", tjm_sind, sinl, -1e300, 1e300, 2);
    sweep_f64("aten::cos", tjm_cosd, cosl, -1e300, 1e300, 2);
    sweep_f64("aten::log1p", tjm_log1pd, log1pl, -1.0, 1.7e308, 2);
    sweep_f64("aten::expm1", tjm_expm1d, expm1l, -800, 709.7, 2);
    specials_f64("aten::sin", sin);
    specials_f64("aten::cos", cos);
    specials_f64("aten::log1p", log1p);
    specials_f64("aten::expm1", expm1);
}

static void f64_pow(void **state) {
    (void)state;
    enum { PAIRS = 2000000 };
    double *a = malloc(sizeof(double) * PAIRS), *b = malloc(sizeof(double) * PAIRS);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < PAIRS; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        uint64_t u = s, v = s * 0x2545F4914F6CDD1Dull;
        memcpy(&a[i], &u, 8);
        memcpy(&b[i], &v, 8);
        double fu = (double)(u >> 11) / 9007199254740992.0, fv = (double)(v >> 11) / 9007199254740992.0;
        switch (i % 5) { /* bases and exponents where results stay finite, and integers */
        case 0: a[i] = fu * 8; b[i] = fv * 600 - 300; break;
        case 1: b[i] = (double)((int)(v % 61) - 30); break;
        case 2: a[i] = -fu * 10; b[i] = (double)((int)(v % 21) - 10); break;
        case 3: a[i] = 1 + (fu - 0.5) * 1e-9; b[i] = (fv - 0.5) * 1e12; break;
        default: break; /* any bits at all */
        }
    }
    tj_tensor *out = run_kernel("aten::pow", a, b, PAIRS, TJ_F64);
    const double *got = tj_data(out);
    double worst = 0;
    for (int i = 0; i < PAIRS; i++) {
        if (!same_d(got[i], tjm_powd(a[i], b[i])))
            fail_msg("pow(%a, %a): kernel %a, C version %a", a[i], b[i], got[i], tjm_powd(a[i], b[i]));
        long double want = powl((long double)a[i], (long double)b[i]);
        double wd = (double)want;
        if (!isfinite(wd) || !isfinite(got[i])) {
            if (!same_d(got[i], wd)) fail_msg("pow(%a, %a): got %a, want %a", a[i], b[i], got[i], wd);
            continue;
        }
        double d = ulps_d(got[i], want);
        if (d > worst) worst = d;
    }
    print_message("f64 pow      max error %.2f ulp over %d pairs\n", worst, PAIRS);
    assert_true(worst <= 2);
    tj_release(out);
    const double sp[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 2.0, -2.0, 0.5, -0.5,
                         3.0, -3.0, 5e-324, 9007199254740992.0, 9007199254740993.0, 1e300, -1e300};
    enum { K = sizeof sp / sizeof sp[0] };
    double x[K * K], y[K * K];
    for (int i = 0; i < K; i++)
        for (int j = 0; j < K; j++) {
            x[i * K + j] = sp[i];
            y[i * K + j] = sp[j];
        }
    out = run_kernel("aten::pow", x, y, K * K, TJ_F64);
    got = tj_data(out);
    for (int i = 0; i < K * K; i++) {
        double want = pow(x[i], y[i]);
        bool exact = !isfinite(want) || want == 0 || fabs(want) == 1.0;
        if (exact ? !same_d(got[i], want) : ulps_d(got[i], want) > 2)
            fail_msg("pow(%a, %a): got %a, want %a", x[i], y[i], got[i], want);
    }
    tj_release(out);
    free(a);
    free(b);
}

/* ---- out-of-line functions -------------------------------------------------------
 * A kernel calling the functions more than a few times calls them out of
 * line, through vector versions (backends/llvm/math.c): the same operations
 * lane by lane, so the same bits as inline and as the C versions. */

enum { CHAIN_ROUNDS = 3 }; /* tanh, exp, log, sigmoid: 12 calls, values kept finite */

static tj_status chain_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    tj_scope_begin();
    tj_tensor *y = in[0];
    for (int r = 0; r < CHAIN_ROUNDS; r++) y = tj_sigmoid(tj_log(tj_exp(tj_tanh(y))));
    out[0] = tj_keep(y);
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

static float chain_f(float x) {
    for (int r = 0; r < CHAIN_ROUNDS; r++) x = sigmoid_c(tjm_logf(tjm_expf(tjm_tanhf(x))));
    return x;
}

static double chain_d(double x) {
    for (int r = 0; r < CHAIN_ROUNDS; r++) x = sigmoid_d(tjm_logd(tjm_expd(tjm_tanhd(x))));
    return x;
}

/* Whether some line of ir calls fn (a vector version's name) on a vector. */
static bool calls_vector_version(const char *ir, const char *fn) {
    for (const char *at = strstr(ir, fn); at; at = strstr(at + 1, fn)) {
        const char *line = at;
        while (line > ir && line[-1] != '\n') line--;
        if (strncmp(line, "define", 6) && strstr(line, "call <") && strstr(line, "call <") < at) return true;
    }
    return false;
}

/* model over x as one LLVM kernel, its optimised IR in *ir_text. */
static tj_tensor *run_model(tj_status (*model)(void *, tj_tensor *const *, int, tj_tensor **, int), tj_tensor *x,
                            char **ir_text) {
    tj_graph *g = tj_trace(model, NULL, &x, 1, 1, NULL);
    assert_non_null(g);
    tj_program *p = tj_compile(g, &(tj_compile_options){.backend = "llvm"});
    assert_non_null(p);
    tj_tensor *out = NULL;
    if (tj_run(p, &x, &out) != TJ_OK) fail_msg("%s", tj_last_error());
    const tj_node *grp = NULL;
    for (tj_node *n = tj_block_first(tj_graph_block((tj_graph *)tj_program_graph(p))); n; n = tj_node_next(n))
        if (tj_node_kind_of(n) == TJ_NODE_FUSION_GROUP) grp = n;
    assert_non_null(grp);
    tjf_spec spec;
    tjf_spec_of(&x, 1, &spec);
    *ir_text = tjl_kernel_text(tj_node_subgraph(grp), &spec, false, TJL_TEXT_IR_OPT);
    assert_non_null(*ir_text);
    tj_program_free(p);
    tj_graph_free(g);
    return out;
}

/* Every vector version of fn that ir defines is called by a vector loop (the
 * main loop's width and the epilogue's; those no loop called are removed
 * before code generation), and there is at least one. */
static void assert_variants_called(const char *ir, const char *fn) {
    int defined = 0;
    char name[64];
    for (const char *at = strstr(ir, "define internal <"); at; at = strstr(at + 1, "define internal <")) {
        const char *f = strchr(at, '@');
        size_t len = strlen(fn);
        if (!f || strncmp(f + 1, fn, len) || strncmp(f + 1 + len, ".v", 2)) continue;
        size_t n = strcspn(f, "(");
        snprintf(name, sizeof name, "%.*s", (int)n, f);
        if (!calls_vector_version(ir, name)) fail_msg("%s is defined but no loop calls it", name);
        defined++;
    }
    if (!defined) fail_msg("no vector version of %s", fn);
}

static void outlined_functions_keep_their_bits(void **state) {
    (void)state;
    int64_t n = 0;
    float *all = float_sweep(&n);
    int64_t m = n / 8 + 7; /* not a whole number of vectors: the scalar loop runs too */
    float *xf = malloc(sizeof(float) * (size_t)m);
    double *xd = malloc(sizeof(double) * (size_t)m);
    for (int64_t i = 0; i < m; i++) xd[i] = xf[i] = all[(i * 8) % n];
    char *text;
    tj_tensor *x = tensor_of(xf, m, TJ_F32), *out = run_model(chain_model, x, &text);
    assert_non_null(strstr(text, "vector.body"));
    assert_true(calls_vector_version(text, "@tjl.tanhf.v"));
    assert_variants_called(text, "tjl.tanhf");
    free(text);
    const float *gf = tj_data(out);
    for (int64_t i = 0; i < m; i++)
        if (!same_f(gf[i], chain_f(xf[i])))
            fail_msg("f32 chain(%a): kernel %a, C version %a", (double)xf[i], (double)gf[i], (double)chain_f(xf[i]));
    tj_release(x);
    tj_release(out);
    x = tensor_of(xd, m, TJ_F64);
    out = run_model(chain_model, x, &text);
    assert_true(calls_vector_version(text, "@tjl.tanhd.v"));
    assert_variants_called(text, "tjl.tanhd");
    free(text);
    const double *gd = tj_data(out);
    for (int64_t i = 0; i < m; i++)
        if (!same_d(gd[i], chain_d(xd[i])))
            fail_msg("f64 chain(%a): kernel %a, C version %a", xd[i], gd[i], chain_d(xd[i]));
    tj_release(x);
    tj_release(out);
    free(all);
    free(xf);
    free(xd);
}
/* sin and cos, even alone, are called through their vector versions (a
 * lane past the reduction's range takes the rare branch inside them): the
 * loop vectorises, and huge lanes among ordinary ones keep libm's bits. */
static tj_status sin_cos_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    out[0] = tj_mul(tj_sin(in[0]), tj_cos(in[0]));
    return out[0] ? TJ_OK : tj_last_status();
}

static void sin_cos_call_vector_versions(void **state) {
    (void)state;
    enum { M = 100003 };
    float *xf = malloc(sizeof(float) * M);
    double *xd = malloc(sizeof(double) * M);
    for (int i = 0; i < M; i++) {
        double v = (i % 101 == 7) ? 1e22 * (1 + i * 1e-6) : (i % 103 == 5) ? 3e38 : (i - M / 2) * 0.013;
        xd[i] = v;
        xf[i] = (float)v;
    }
    for (int dt = 0; dt < 2; dt++) {
        char *text;
        tj_tensor *x = dt ? tensor_of(xd, M, TJ_F64) : tensor_of(xf, M, TJ_F32);
        tj_tensor *out = run_model(sin_cos_model, x, &text);
        assert_non_null(strstr(text, "vector.body"));
        assert_true(calls_vector_version(text, dt ? "@tjl.sind.v" : "@tjl.sinf.v"));
        assert_true(calls_vector_version(text, dt ? "@tjl.cosd.v" : "@tjl.cosf.v"));
        free(text);
        for (int i = 0; i < M; i++) {
            if (dt ? !same_d(((double *)tj_data(out))[i], tjm_sind(xd[i]) * tjm_cosd(xd[i]))
                   : !same_f(((float *)tj_data(out))[i], tjm_sinf(xf[i]) * tjm_cosf(xf[i])))
                fail_msg("%s sin * cos(%a): not the C version's bits", dt ? "f64" : "f32", xd[i]);
        }
        tj_release(x);
        tj_release(out);
    }
    free(xf);
    free(xd);
}
/* The kernels use the vector registers of the level the CPU kernels run at
 * (TJIT_ISA lowers both; ctest runs this file under avx2 and baseline too). */
static void kernels_keep_to_the_isa(void **state) {
    (void)state;
    tj_status st;
    tj_graph *sub = tj_graph_parse("graph(%x : Float(4096, strides=[1], device=cpu)):\n"
                                   "  %y : Float(4096, strides=[1], device=cpu) = aten::tanh(%x)\n"
                                   "  return (%y)\n", &st);
    assert_non_null(sub);
    int64_t n = 4096;
    tj_tensor *x = tj_zeros(&n, 1, TJ_F32);
    tjf_spec spec;
    tjf_spec_of(&x, 1, &spec);
    char *as = tjl_kernel_text(sub, &spec, false, TJL_TEXT_ASM);
    assert_non_null(as);
    tjcpu_isa_level isa = tjcpu_isa();
    bool zmm = strstr(as, "%zmm") != NULL, ymm = strstr(as, "%ymm") != NULL;
    if (isa < TJCPU_ISA_AVX512) assert_false(zmm);
    if (isa < TJCPU_ISA_AVX2) assert_false(ymm);
    if (isa == TJCPU_ISA_AVX512) assert_true(zmm);
    if (isa == TJCPU_ISA_AVX2) assert_true(ymm);
    free(as);
    tj_release(x);
    tj_graph_free(sub);
}
#else
static void llvm_skipped(void **state) {
    (void)state;
    skip(); /* built without LLVM */
}
#endif

int main(void) {
#ifdef TJIT_HAVE_LLVM
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f32_exp_log_tanh_sigmoid),
        cmocka_unit_test(f32_erf),
        cmocka_unit_test(f32_pow),
        cmocka_unit_test(f32_sin_cos_log1p_expm1),
        cmocka_unit_test(f64_exp_log_tanh_sigmoid_erf),
        cmocka_unit_test(f64_sin_cos_log1p_expm1),
        cmocka_unit_test(f64_pow),
        cmocka_unit_test(outlined_functions_keep_their_bits),
        cmocka_unit_test(sin_cos_call_vector_versions),
        cmocka_unit_test(kernels_keep_to_the_isa),
    };
#else
    const struct CMUnitTest tests[] = {cmocka_unit_test(llvm_skipped)};
#endif
    return cmocka_run_group_tests(tests, NULL, NULL);
}
