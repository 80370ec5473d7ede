/* test_cuda_pointwise.c — the pointwise family on CUDA against the CPU:
 * every row of core/ops_pointwise.def (tensor, .Scalar and in-place forms,
 * and the copies), table-driven over the op table so that a new row is tested
 * without a change here. Each case runs on the CPU and on cuda:0 with the same
 * inputs: every dtype (refusals must match), broadcasting, 0-dim, size-0 and
 * size-1 dims, inputs that are views on the device (transposed, stepped,
 * expanded, misaligned), in-place writes through views and into overlapping
 * memory, mixed dtypes, special float values (sign of zero included),
 * integer wrapping, conversions, and shapes big enough for many blocks and
 * both index widths. */
#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#ifdef TJIT_HAVE_CUDA
#include "backends/cuda/pointwise.h"
#endif
#include "core/core.h"
#include "tests/support/cuda_cases.h"

static const tj_dtype all_dtypes[] = {TJ_F32, TJ_F64, TJ_I64, TJ_BOOL};

/* ---- the ops ------------------------------------------------------------------------- */

/* The row whose expression op evaluates (through .Scalar and in-place forms). */
static const tj_op_info *base_of(const tj_op_info *op) {
    const tj_op_info *form = op->inplace_of >= 0 ? tjc_op(op->inplace_of) : op;
    return form->scalar_base >= 0 ? tjc_op(form->scalar_base) : form;
}
static bool is_scalar_form(const tj_op_info *op) {
    const tj_op_info *form = op->inplace_of >= 0 ? tjc_op(op->inplace_of) : op;
    return form->scalar_base >= 0;
}
static bool is_pointwise_row(const tj_op_info *op) {
    return op->kind == TJ_KIND_POINTWISE && op->pw_expr;
}

/* The compute dtypes a row's rule has kernels for (core.h's tjc_pw_rule). */
static bool rule_takes(const tj_op_info *base, tj_dtype d) {
    switch (base->pw_rule) {
    case TJC_PW_ARITH:
    case TJC_PW_ARITH_FS: return d != TJ_BOOL;
    case TJC_PW_ARITH_B: return true;
    case TJC_PW_FLOAT: return d == TJ_F32 || d == TJ_F64;
    case TJC_PW_LOGICAL: return d == TJ_BOOL;
    default: return true;
    }
}

/* An attribute set by argument name. */
typedef struct setting {
    const char *arg;
    tj_attr val;
} setting;

#define F(v) {.f = (v)}
#define MAX_VARIANTS 4
static const struct {
    const char *op;
    int n;
    setting set[MAX_VARIANTS][2];
} variant_table[] = {
    {"aten::add", 3, {{{"alpha", F(1)}}, {{"alpha", F(2)}}, {{"alpha", F(-0.5)}}}},
    {"aten::sub", 2, {{{"alpha", F(1)}}, {{"alpha", F(-3)}}}},
    {"aten::gelu", 2, {{{"approximate", {.s = "none"}}}, {{"approximate", {.s = "tanh"}}}}},
    {"aten::clamp",
     4,
     {{{"min", F(-0.5)}, {"max", F(1.5)}},
      {{"min", F(TJ_NONE)}, {"max", F(0.25)}},
      {{"min", F(-1)}, {"max", F(TJ_NONE)}},
      {{"min", F(1)}, {"max", F(-1)}}}},
    {"aten::lerp.Scalar", 2, {{{"weight", F(0.25)}}, {{"weight", F(0.75)}}}},
    {"aten::addcmul", 2, {{{"value", F(1)}}, {{"value", F(-2)}}}},
};

/* Number of attribute variants of op (at least one). */
static int n_variants(const tj_op_info *op) {
    const char *name = base_of(op)->name;
    for (size_t k = 0; k < sizeof variant_table / sizeof variant_table[0]; k++)
        if (!strcmp(variant_table[k].op, name)) return variant_table[k].n;
    return 1;
}

/* attrs of op: the schema's defaults, a .Scalar form's operand, variant v's
 * settings; returns their count. */
static int make_attrs(const tj_op_info *op, int v, double operand, tj_dtype dtype,
                      tj_attr *attrs) {
    const tj_schema *s = &op->schema;
    const char *name = base_of(op)->name;
    const setting *set = NULL;
    for (size_t k = 0; k < sizeof variant_table / sizeof variant_table[0]; k++)
        if (!strcmp(variant_table[k].op, name)) set = variant_table[k].set[v];
    for (int k = 0; k < s->n_attrs; k++) {
        const tj_arg *arg = &s->args[s->attr_pos[k]];
        attrs[k] = arg->has_default ? arg->def : (tj_attr){.f = operand};
        if (arg->type == TJ_ARG_DTYPE) attrs[k].dtype = dtype;
        for (int j = 0; set && j < 2 && set[j].arg; j++)
            if (!strcmp(set[j].arg, arg->name)) attrs[k] = set[j].val;
    }
    return s->n_attrs;
}

/* Operands tried for .Scalar forms, and for them on special values. */
static const double scalar_operands[] = {1.5, -2, 0, 3};
static const double special_operands[] = {-0.0, INFINITY, -INFINITY, NAN};
#define N_OPERANDS 4

/* The math library functions the rows' expressions call. */
static const char *const library_calls[] = {"tjm_exp", "tjm_expm1", "tjm_log",     "tjm_log1p",
                                            "tjm_tanh", "tjm_erf", "tjm_gelu_erf", "tjm_gelu_tanh",
                                            "tjm_sin",  "tjm_cos", "tjm_pow",      "tjm_sigmoid",
                                            "tjm_silu"};

/* Whether op's expression calls one of library_calls (as an identifier);
 * the copies have none. */
static bool calls_math_library(const tj_op_info *op) {
    const char *e = base_of(op)->pw_expr;
    for (const char *c = e ? e : ""; *c;) {
        if (!(*c == '_' || isalpha((unsigned char)*c))) {
            c++;
            continue;
        }
        size_t n = 0;
        while (c[n] == '_' || isalnum((unsigned char)c[n])) n++;
        for (size_t k = 0; k < sizeof library_calls / sizeof library_calls[0]; k++)
            if (strlen(library_calls[k]) == n && !strncmp(c, library_calls[k], n)) return true;
        c += n;
    }
    return false;
}

/* The tolerance of op's results, as both rtol and atol. NVRTC compiles
 * without FMA contraction (--fmad=false), so + - * /, sqrt, rounding,
 * comparisons and conversions give the CPU's bits: exact, signed zeros
 * included. A row that calls the math library is within the documented bound
 * of its result's dtype on a GPU: CUDA's expf, tanhf, ... are up to 2 ulp from
 * the correctly rounded result, and f32 results composed from them (sigmoid,
 * gelu) carry that error relative to their terms. On the host harness the
 * same sources call the host's libm, which the CPU's f64 kernels call too but
 * not its f32 ones (core/pw_math.h has its own expf, tanhf, powf), so there
 * the bound holds as well. A new row calling another library function must
 * join library_calls; until it does, its GPU check is exact and says so. */
static double tol_for(const tj_op_info *op) {
    return calls_math_library(op) ? TT_CUDA_DTYPE_BOUND : 0;
}

/* ---- inputs -------------------------------------------------------------------------- */

static tj_tensor *random_input(tj_generator *g, const int64_t *sizes, int nd, tj_dtype d) {
    return tt_random(g, sizes, nd, d, -3, 3);
}

typedef struct shape_case {
    const char *name;
    int nd[3];
    int64_t sizes[3][4];
} shape_case;

/* Input 0 has the broadcast shape wherever in-place forms can run. */
static const shape_case shapes[] = {
    {"same sizes", {2, 2, 2}, {{3, 5}, {3, 5}, {3, 5}}},
    {"broadcast into self", {3, 2, 1}, {{4, 5, 3}, {5, 1}, {3}}},
    {"broadcast both ways", {3, 3, 2}, {{4, 1, 3}, {1, 5, 1}, {5, 3}}},
    {"0-dim", {0, 0, 0}, {{0}}},
    {"0-dim operands", {1, 0, 0}, {{6}, {0}, {0}}},
    {"size 0", {2, 1, 2}, {{0, 3}, {3}, {1, 3}}},
    {"size-1 dims", {3, 2, 3}, {{1, 7, 1}, {7, 1}, {1, 1, 1}}},
};

/* The dtype of input i when the test's dtype is d: a where's condition is bool. */
static tj_dtype input_dtype(const tj_op_info *op, int i, tj_dtype d) {
    return base_of(op)->pw_rule == TJC_PW_SELECT && i == 0 ? TJ_BOOL : d;
}

/* Runs every variant (and .Scalar operand from operands) of op on inputs
 * in: through tt_cuda_check_op, or strictly (exact integers, signed zeros)
 * and on views when strict. */
static void check_variants(const tj_op_info *op, tj_tensor *const *in, int n_in, tj_dtype d,
                           const double *operands, bool strict, tt_cuda_view_fn view, void *ctx) {
    int n_ops = is_scalar_form(op) ? N_OPERANDS : 1;
    for (int v = 0; v < n_variants(op); v++)
        for (int k = 0; k < n_ops; k++) {
            tj_attr attrs[8];
            int na = make_attrs(op, v, operands[k], d, attrs);
            if (strict)
                tt_cuda_check_views(op->name, in, n_in, view, ctx, attrs, na, tol_for(op),
                                    tol_for(op));
            else
                tt_cuda_check_op(op->name, in, n_in, attrs, na, tol_for(op), tol_for(op));
        }
}

/* Every pointwise row, form, dtype, shape case and attribute variant. */
static void test_rows_by_dtype(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(11);
    for (int id = 0; id < tj_op_count(); id++) {
        const tj_op_info *op = tjc_op(id);
        if (!is_pointwise_row(op)) continue;
        int n_in = op->schema.n_tensor_args;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int di = 0; di < 4; di++) {
                tj_dtype d = all_dtypes[di];
                tt_context("%s, %s, %s", op->name, shapes[s].name, tj_dtype_name(d));
                tj_tensor *in[3];
                for (int i = 0; i < n_in; i++)
                    in[i] = random_input(g, shapes[s].sizes[i], shapes[s].nd[i],
                                         input_dtype(op, i, d));
                check_variants(op, in, n_in, d, scalar_operands, false, NULL, NULL);
            }
    }
    tt_context(NULL);
    tj_generator_free(g);
}

/* ---- views on the device ---------------------------------------------------------------- */

typedef enum { V_PLAIN, V_TRANSPOSED, V_STEPPED, V_EXPANDED, V_OFFSET } view_kind;
static const char *const view_names[] = {"plain", "transposed", "stepped", "expanded",
                                         "misaligned"};

typedef struct view_spec {
    view_kind kind[3];
    int nd[3];
    int64_t sizes[3][4];
} view_spec;

/* The base that input i's view is made from. */
static tj_tensor *base_for(tj_generator *g, const view_spec *s, int i, tj_dtype d) {
    int nd = s->nd[i];
    int64_t sz[5];
    memcpy(sz, s->sizes[i], sizeof(int64_t) * (size_t)nd);
    switch (s->kind[i]) {
    case V_TRANSPOSED:
        if (nd >= 2) {
            int64_t t = sz[0];
            sz[0] = sz[nd - 1];
            sz[nd - 1] = t;
        }
        break;
    case V_STEPPED:
        if (nd >= 1) sz[nd - 1] = 2 * sz[nd - 1] + 1;
        break;
    case V_EXPANDED:
        if (nd >= 1) sz[0] = 1;
        break;
    case V_OFFSET: {
        int64_t n = tjc_numel(sz, nd) + 1;
        return random_input(g, &n, 1, d);
    }
    default: break;
    }
    return random_input(g, sz, nd, d);
}

static tj_tensor *make_view(tj_tensor *b, int i, void *ctx) {
    const view_spec *s = ctx;
    int nd = s->nd[i];
    switch (s->kind[i]) {
    case V_TRANSPOSED: return nd >= 2 ? tj_transpose(b, 0, nd - 1) : b;
    case V_STEPPED: return nd >= 1 ? tj_slice(b, nd - 1, 1, INT64_MAX, 2) : b;
    case V_EXPANDED: return nd >= 1 ? tj_expand(b, s->sizes[i], nd) : b;
    case V_OFFSET: {
        tj_tensor *tail = tj_slice(b, 0, 1, INT64_MAX, 1);
        return tail ? tj_reshape(tail, s->sizes[i], nd) : NULL;
    }
    default: return b;
    }
}

/* Every pointwise row on inputs that are views on the device: each input in
 * turn transposed, stepped, expanded or misaligned while the others stay
 * plain, and all of them at once. Self stays unexpanded for in-place forms
 * (writing into an expanded tensor is refused on both devices; the dtype
 * tests check that). */
static void test_rows_on_views(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(12);
    static const tj_dtype dtypes[] = {TJ_F32, TJ_I64, TJ_BOOL};
    for (int id = 0; id < tj_op_count(); id++) {
        const tj_op_info *op = tjc_op(id);
        if (!is_pointwise_row(op)) continue;
        int n_in = op->schema.n_tensor_args;
        for (int di = 0; di < 3; di++) {
            tj_dtype d = dtypes[di];
            if (!rule_takes(base_of(op), d) && base_of(op)->pw_rule != TJC_PW_LOGICAL)
                continue; /* refusals: test_rows_by_dtype */
            for (int kind = V_TRANSPOSED; kind <= V_OFFSET + 1; kind++)
                for (int which = 0; which < n_in; which++) {
                    view_spec s = {.nd = {3, 3, 3}};
                    for (int i = 0; i < n_in; i++) {
                        int64_t sizes[4] = {5, 4, 6};
                        memcpy(s.sizes[i], sizes, sizeof sizes);
                        bool all = kind == V_OFFSET + 1;
                        view_kind k = all ? (view_kind)(V_TRANSPOSED + (i + which) % 4)
                                          : i == which ? (view_kind)kind : V_PLAIN;
                        if (k == V_EXPANDED && i == 0 && op->inplace_of >= 0) k = V_STEPPED;
                        s.kind[i] = k;
                    }
                    tt_context("%s, %s, input %d %s", op->name, tj_dtype_name(d), which,
                               kind > V_OFFSET ? "all views" : view_names[kind]);
                    tj_tensor *base[3];
                    for (int i = 0; i < n_in; i++) base[i] = base_for(g, &s, i, input_dtype(op, i, d));
                    check_variants(op, base, n_in, d, scalar_operands, true, make_view, &s);
                    if (kind > V_OFFSET) break; /* one "all" case per dtype */
                }
        }
    }
    tt_context(NULL);
    tj_generator_free(g);
}

/* ---- in place: aliasing and narrowing -------------------------------------------------- */

static tj_tensor *view_alias(tj_tensor *b, int i, void *ctx) {
    int mode = *(const int *)ctx;
    (void)i;
    switch (mode) {
    case 0: return b;                                  /* x op x */
    case 1: return i == 0 ? b : tj_transpose(b, 0, 1); /* x op x^T */
    case 2: return tj_slice(b, 0, i == 0 ? 1 : 0, i == 0 ? INT64_MAX : 5, 1); /* shifted rows */
    default: return i == 0 ? tj_select(b, 0, 0) : tj_select(b, 1, 0); /* a row and a column */
    }
}

/* In-place forms whose other operands overlap self (the same tensor, its
 * transpose, shifted rows, a row against a column): the CPU reads such an
 * operand before writing, and so must the device. Run by hand, since every
 * input must be a view of one tensor on each device. */
static void test_inplace_aliasing(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(13);
    static const char *const ops[] = {"aten::add_", "aten::mul_", "aten::sub_", "aten::pow_",
                                      "aten::div_", "aten::lerp_.Scalar", "aten::addcmul_"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        const tj_op_info *op = tj_op_find(ops[k]);
        assert_non_null(op);
        int n_in = op->schema.n_tensor_args;
        for (int mode = 0; mode < 4; mode++) {
            tt_context("%s, aliasing mode %d", ops[k], mode);
            tj_tensor *x = tt_random(g, (int64_t[]){6, 6}, 2, TJ_F64, 0.5, 2);
            tj_attr attrs[4];
            int na = make_attrs(op, 0, 0, TJ_F64, attrs);
            tj_tensor *cpu_x = tj_clone(x), *dev_x = tj_to_device(x, TT_CUDA0);
            assert_non_null(cpu_x);
            assert_non_null(dev_x);
            tj_tensor *ci[3], *di[3], *co[1], *dout[1];
            for (int i = 0; i < n_in; i++) {
                ci[i] = view_alias(cpu_x, i, &mode);
                di[i] = view_alias(dev_x, i, &mode);
                assert_non_null(ci[i]);
                assert_non_null(di[i]);
            }
            int nc = tj_invoke(tj_op_id(op), ci, n_in, attrs, na, co, 1);
            int nd = tj_invoke(tj_op_id(op), di, n_in, attrs, na, dout, 1);
            assert_int_equal(nc, nd);
            if (nc == 1) tt_cuda_assert_same(ops[k], co[0], dout[0], 1e-12, 1e-14);
            tt_cuda_assert_same(ops[k], cpu_x, dev_x, 1e-12, 1e-14);
            tt_cuda_count_case();
        }
    }
    tt_context(NULL);
    tj_generator_free(g);
}

/* ---- mixed dtypes ---------------------------------------------------------------------- */

/* Binary and ternary rows on every pair of dtypes, with a 0-dim operand of
 * another dtype, and in place into a narrower float dtype (f32 self, f64
 * other: computed in f64, stored as f32). */
static void test_mixed_dtypes(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(14);
    for (int id = 0; id < tj_op_count(); id++) {
        const tj_op_info *op = tjc_op(id);
        if (!is_pointwise_row(op) || op->schema.n_tensor_args < 2) continue;
        int n_in = op->schema.n_tensor_args;
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                for (int zero_dim = 0; zero_dim < 2; zero_dim++) {
                    tj_dtype da = all_dtypes[a], db = all_dtypes[b];
                    if (da == db && !zero_dim) continue; /* test_rows_by_dtype */
                    tt_context("%s, %s and %s%s", op->name, tj_dtype_name(da), tj_dtype_name(db),
                               zero_dim ? " (0-dim)" : "");
                    tj_tensor *in[3];
                    for (int i = 0; i < n_in; i++) {
                        tj_dtype d = input_dtype(op, i, i == 0 ? da : db);
                        bool scalar = zero_dim && i > 0;
                        in[i] = random_input(g, (int64_t[]){3, 4}, scalar ? 0 : 2, d);
                    }
                    check_variants(op, in, n_in, da, scalar_operands, false, NULL, NULL);
                }
    }
    tt_context(NULL);
    tj_generator_free(g);
}

/* ---- special values -------------------------------------------------------------------- */

static const double specials[] = {0.0,    -0.0,   INFINITY, -INFINITY, NAN,  1e-40, -1e-40,
                                  1e-310, 1.5,    -2.5,     0.5,       -0.5, 1,     -1,
                                  3,      88.5,   -104,     1e30,      -1e30, 2.5};
enum { N_SPECIALS = sizeof specials / sizeof specials[0] };

/* A tensor of the specials along dim `at` of an nd-dim shape (others 1). */
static tj_tensor *specials_along(int at, int nd, tj_dtype d) {
    int64_t sizes[3] = {1, 1, 1};
    sizes[at] = N_SPECIALS;
    tj_tensor *t = tj_from_array(specials, &sizes[at], 1, TJ_F64);
    assert_non_null(t);
    t = tj_to_dtype(t, d);
    return tj_reshape(t, sizes, nd);
}

/* Every float-taking row and form on inf, -inf, NaN, signed zeros,
 * denormals and values near overflow, each operand against every other
 * (broadcast into an outer product). */
static void test_special_values(void **state) {
    (void)state;
    for (int id = 0; id < tj_op_count(); id++) {
        const tj_op_info *op = tjc_op(id);
        if (!is_pointwise_row(op) || base_of(op)->pw_rule == TJC_PW_LOGICAL) continue;
        int n_in = op->schema.n_tensor_args;
        for (int di = 0; di < 2; di++) {
            tj_dtype d = all_dtypes[di];
            tt_context("%s, %s specials", op->name, tj_dtype_name(d));
            tj_tensor *in[3];
            for (int i = 0; i < n_in; i++) {
                bool cond = base_of(op)->pw_rule == TJC_PW_SELECT && i == 0;
                in[i] = specials_along(i, n_in, cond ? TJ_BOOL : d);
            }
            if (op->inplace_of >= 0 && n_in > 1) { /* self must have the full shape */
                int64_t full[3] = {N_SPECIALS, N_SPECIALS, N_SPECIALS};
                in[0] = tj_contiguous(tj_expand(in[0], full, n_in));
            }
            check_variants(op, in, n_in, d, special_operands, true, NULL, NULL);
        }
    }
    tt_context(NULL);
}

/* ---- integers ---------------------------------------------------------------------------- */

/* i64 rows at the edges: INT64_MIN/MAX and large values wrap in +, -, *,
 * negation and abs exactly as on the CPU; integer pow by squaring with wrap
 * and negative exponents; sign, relu, comparisons and where; alpha and value
 * parameters far outside int32. Compared exactly, all 64 bits. */
static void test_integer_edges(void **state) {
    (void)state;
    static const int64_t vals[] = {INT64_MAX, INT64_MIN, -1, 0, 1, 2, 3, -7,
                                   INT64_C(4611686018427387904), INT64_C(3037000500),
                                   INT64_C(-3037000500), INT64_C(123456789012)};
    enum { N = sizeof vals / sizeof vals[0] };
    static const int64_t exps[] = {0, 1, 2, 3, 5, 31, 40, 63, 64, -1, -2, 7};
    _Static_assert(sizeof exps == sizeof vals, "one exponent per value");
    for (int id = 0; id < tj_op_count(); id++) {
        const tj_op_info *op = tjc_op(id);
        if (!is_pointwise_row(op) || !rule_takes(base_of(op), TJ_I64) || is_scalar_form(op))
            continue;
        int n_in = op->schema.n_tensor_args;
        bool is_pow = !strcmp(base_of(op)->name, "aten::pow");
        tt_context("%s, i64 edges", op->name);
        tj_tensor *in[3];
        for (int i = 0; i < n_in; i++) {
            int64_t sizes[3] = {1, 1, 1};
            sizes[i] = N;
            bool cond = base_of(op)->pw_rule == TJC_PW_SELECT && i == 0;
            tj_tensor *t = tj_from_array(is_pow && i == 1 ? exps : vals, &sizes[i], 1, TJ_I64);
            if (cond) t = tj_to_dtype(t, TJ_BOOL);
            in[i] = tj_reshape(t, sizes, n_in);
        }
        if (op->inplace_of >= 0 && n_in > 1)
            in[0] = tj_contiguous(tj_expand(in[0], (int64_t[]){N, N, N}, n_in));
        for (int v = 0; v < n_variants(op); v++) {
            tj_attr attrs[8];
            int na = make_attrs(op, v, 0, TJ_I64, attrs);
            tt_cuda_check_views(op->name, in, n_in, NULL, NULL, attrs, na, 0, 0);
        }
        if (!strcmp(base_of(op)->name, "aten::add")) { /* alpha beyond int32, and saturating */
            static const double alphas[] = {1e12, -9.21e18, 1e19, -1e300};
            for (int k = 0; k < 4; k++) {
                tj_attr attrs[1] = {{.f = alphas[k]}};
                tt_cuda_check_views(op->name, in, n_in, NULL, NULL, attrs, 1, 0, 0);
            }
        }
    }
    tt_context(NULL);
}

/* ---- copies and conversions ------------------------------------------------------------- */

/* Values at the edges of every conversion: rounding to f32, ties, NaN and
 * infinities into i64 (saturating, NaN to 0) and bool (NaN is true), i64
 * values that round through double on their way to f32. */
static tj_tensor *conversion_edges(tj_dtype d) {
    static const double f[] = {0,     -0.0,  1,    -1,    0.5,   -0.5,  1.5,    2.5,
                               NAN,   INFINITY, -INFINITY, 1e19, -1e19, 9.2233720368547758e18,
                               -9.2233720368547758e18, 16777217, 1e-40, 3.4e38, 1e300, -7.75};
    static const int64_t i[] = {INT64_MAX, INT64_MIN, INT64_C(9007199254740993),
                                INT64_C(16777217), INT64_C(1152921573326323713), -1, 0, 1, 2,
                                -3, INT64_C(-9007199254740993), 7, 0, 1, -1, 5,
                                INT64_C(4611686018427387904), -2, 3, 4};
    _Static_assert(sizeof f / sizeof f[0] == sizeof i / sizeof i[0], "one shape for both");
    int64_t n = sizeof f / sizeof f[0];
    tj_tensor *t = d == TJ_I64 ? tj_from_array(i, &n, 1, TJ_I64) : tj_from_array(f, &n, 1, TJ_F64);
    assert_non_null(t);
    return tj_reshape(tj_to_dtype(t, d), (int64_t[]){4, 5}, 2);
}

static tj_tensor *view_stepped_or_t(tj_tensor *b, int i, void *ctx) {
    (void)i;
    return *(const int *)ctx ? tj_transpose(b, 0, 1) : b;
}

/* clone, to.dtype between every pair of dtypes and zeros_like, on plain and
 * transposed inputs, 0-dim and size-0 ones. */
static void test_conversions(void **state) {
    (void)state;
    for (int s = 0; s < 4; s++) {
        tj_tensor *src = conversion_edges(all_dtypes[s]);
        tj_tensor *zero_dim = tj_select(tj_select(src, 0, 1), 0, 2);
        tj_tensor *empty = tj_slice(src, 0, 0, 0, 1);
        tj_tensor *cases[] = {src, zero_dim, empty};
        for (int k = 0; k < 3; k++)
            for (int transposed = 0; transposed < (k == 0 ? 2 : 1); transposed++) {
                tt_context("from %s, case %d%s", tj_dtype_name(all_dtypes[s]), k,
                           transposed ? ", transposed" : "");
                for (int t = 0; t < 4; t++) {
                    tj_attr a = {.dtype = all_dtypes[t]};
                    tt_cuda_check_views("aten::to.dtype", &cases[k], 1, view_stepped_or_t,
                                        &transposed, &a, 1, 0, 0);
                }
                tt_cuda_check_views("aten::clone", &cases[k], 1, view_stepped_or_t, &transposed,
                                    NULL, 0, 0, 0);
                tt_cuda_check_views("aten::zeros_like", &cases[k], 1, view_stepped_or_t,
                                    &transposed, NULL, 0, 0, 0);
            }
    }
    tt_context(NULL);
}

typedef struct copy_case {
    const char *name;
    int nd_self, nd_src;
    int64_t self[3], src[3];
    view_kind self_view, src_view;
} copy_case;

static tj_tensor *copy_view(tj_tensor *b, int i, void *ctx) {
    const copy_case *c = ctx;
    view_spec s = {.kind = {c->self_view, c->src_view}, .nd = {c->nd_self, c->nd_src}};
    memcpy(s.sizes[0], c->self, sizeof c->self);
    memcpy(s.sizes[1], c->src, sizeof c->src);
    return make_view(b, i, &s);
}

/* copy_ with every pair of dtypes, src broadcast (a row, a column, 0-dim),
 * self and src as views, and the refusals (src that does not broadcast, an
 * expanded self). */
static void test_copy_(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(15);
    static const copy_case cases[] = {
        {"same sizes", 2, 2, {4, 3}, {4, 3}, V_PLAIN, V_PLAIN},
        {"row", 2, 1, {4, 3}, {3}, V_PLAIN, V_PLAIN},
        {"column", 2, 2, {4, 3}, {4, 1}, V_PLAIN, V_PLAIN},
        {"0-dim src", 2, 0, {4, 3}, {0}, V_PLAIN, V_PLAIN},
        {"into a transposed self", 2, 2, {4, 3}, {4, 3}, V_TRANSPOSED, V_PLAIN},
        {"stepped into stepped", 2, 2, {4, 3}, {4, 3}, V_STEPPED, V_STEPPED},
        {"misaligned both", 2, 2, {5, 7}, {5, 7}, V_OFFSET, V_OFFSET},
        {"expanded src", 2, 2, {4, 3}, {4, 3}, V_PLAIN, V_EXPANDED},
        {"size 0", 2, 1, {0, 3}, {3}, V_PLAIN, V_PLAIN},
        {"src does not broadcast", 2, 1, {4, 3}, {4}, V_PLAIN, V_PLAIN},
        {"expanded self", 2, 2, {4, 3}, {4, 3}, V_EXPANDED, V_PLAIN},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++) {
                const copy_case *c = &cases[k];
                tt_context("copy_ %s, %s from %s", c->name, tj_dtype_name(all_dtypes[a]),
                           tj_dtype_name(all_dtypes[b]));
                view_spec s = {.kind = {c->self_view, c->src_view}, .nd = {c->nd_self, c->nd_src}};
                memcpy(s.sizes[0], c->self, sizeof c->self);
                memcpy(s.sizes[1], c->src, sizeof c->src);
                tj_tensor *in[2] = {base_for(g, &s, 0, all_dtypes[a]),
                                    base_for(g, &s, 1, all_dtypes[b])};
                tt_cuda_check_views("aten::copy_", in, 2, copy_view, (void *)c, NULL, 0, 0, 0);
            }
    tt_context(NULL);
    tj_generator_free(g);
}

/* copy_ between overlapping views of one tensor (shifted rows, a transpose)
 * reads all of src first; and copy_ across devices runs where self lives. */
static void test_copy_overlap_and_devices(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(16);
    tj_tensor *x = tt_random(g, (int64_t[]){6, 6}, 2, TJ_F32, -1, 1);
    for (int mode = 1; mode < 3; mode++) { /* x from x^T; rows 1..5 from rows 0..4 */
        tt_context("copy_ overlapping, mode %d", mode);
        tj_tensor *cx = tj_clone(x), *dx = tj_to_device(x, TT_CUDA0);
        tj_tensor *cs = view_alias(cx, 0, &mode), *co = view_alias(cx, 1, &mode);
        tj_tensor *ds = view_alias(dx, 0, &mode), *dof = view_alias(dx, 1, &mode);
        assert_non_null(tj_copy_(cs, co));
        assert_non_null(tj_copy_(ds, dof));
        tt_cuda_assert_same("copy_ overlapping", cx, dx, 0, 0);
        tt_cuda_count_case();
    }
    tt_context("copy_ across devices");
    tj_tensor *dev_self = tj_zeros_on((int64_t[]){4, 6}, 2, TJ_F64, TT_CUDA0);
    tj_tensor *cpu_src = tj_slice(x, 0, 1, 5, 1);
    assert_non_null(tj_copy_(dev_self, cpu_src));
    tt_cuda_assert_same("copy_ cpu into cuda", tj_to_dtype(cpu_src, TJ_F64), dev_self, 0, 0);
    tj_tensor *cpu_self = tj_zeros((int64_t[]){4, 6}, 2, TJ_I64);
    tj_tensor *dev_src = tj_to_device(tj_mul_scalar(cpu_src, 10), TT_CUDA0);
    assert_non_null(tj_copy_(cpu_self, dev_src));
    tt_cuda_assert_same("copy_ cuda into cpu",
                        cpu_self, tj_to_device(tj_to_dtype(tj_mul_scalar(cpu_src, 10), TJ_I64),
                                               TT_CUDA0), 0, 0);
    tt_cuda_count_case();
    tt_cuda_count_case();
    tt_context(NULL);
    tj_generator_free(g);
}

/* ---- refusals ------------------------------------------------------------------------------ */

/* Bad calls fail on both devices with the same message, naming the op. */
static void test_refusals(void **state) {
    (void)state;
    tj_tensor *b = tj_ones((int64_t[]){3}, 1, TJ_BOOL), *f = tj_ones((int64_t[]){3}, 1, TJ_F32);
    tj_tensor *i = tj_ones((int64_t[]){3}, 1, TJ_I64), *f4 = tj_ones((int64_t[]){4}, 1, TJ_F32);
    tj_tensor *col = tj_ones((int64_t[]){3, 1}, 2, TJ_F32);
    tj_tensor *wide = tj_ones((int64_t[]){3, 4}, 2, TJ_F32);
    static const struct {
        const char *op, *needle;
        int in[3], n_in;
        tj_attr attr;
        int n_attr;
    } cases[] = {
        {"aten::neg", "arithmetic on bool tensors", {0}, 1, {.f = 0}, 0},
        {"aten::where.self", "must be bool", {1, 1, 1}, 3, {.f = 0}, 0},
        {"aten::add_", "cannot be stored", {2, 1}, 2, {.f = 1}, 1},
        {"aten::add", "takes an integer alpha", {2, 2}, 2, {.f = 0.5}, 1},
        {"aten::add", "cannot broadcast", {1, 3}, 2, {.f = 1}, 1},
        {"aten::mul_", "does not match the broadcast", {4, 5}, 2, {.f = 0}, 0},
        {"aten::copy_", "cannot be broadcast", {1, 3}, 2, {.f = 0}, 0},
    };
    tj_tensor *pool[] = {b, f, i, f4, col, wide};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tt_context("%s refusing", cases[k].op);
        tj_tensor *in[3];
        for (int j = 0; j < cases[k].n_in; j++) in[j] = pool[cases[k].in[j]];
        assert_int_equal(tt_cuda_check_views(cases[k].op, in, cases[k].n_in, NULL, NULL,
                                             &cases[k].attr, cases[k].n_attr, 0, 0),
                         -1);
        tt_assert_error(cases[k].needle);
        tt_assert_error(cases[k].op);
    }
    tt_context("mixed devices");
    tj_tensor *dev = tj_to_device(f, TT_CUDA0);
    assert_null(tj_add(f, dev, 1));
    tt_assert_error("aten::add: expected all tensors on one device, got cpu and cuda:0");
    tt_context(NULL);
}

/* ---- large shapes ---------------------------------------------------------------------------- */

static tj_tensor *view_large(tj_tensor *b, int i, void *ctx) {
    return make_view(b, i, ctx);
}

/* Shapes that take many blocks and grid-stride iterations: the vectorised
 * kernel with a ragged tail, misaligned contiguous data, broadcast and
 * transposed operands on the strided kernel, a big conversion. */
static void test_large_shapes(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(17);
    tt_context("exp over 100003 f32");
    tj_tensor *x = tt_random(g, (int64_t[]){100003}, 1, TJ_F32, -5, 5);
    tt_cuda_check_op("aten::exp", &x, 1, NULL, 0, TT_CUDA_DTYPE_BOUND, TT_CUDA_DTYPE_BOUND);
    tt_context("add f64 [317, 411] + [411]");
    tj_tensor *ab[2] = {tt_random(g, (int64_t[]){317, 411}, 2, TJ_F64, -1, 1),
                        tt_random(g, (int64_t[]){411}, 1, TJ_F64, -1, 1)};
    tj_attr alpha = {.f = 2};
    tt_cuda_check_op("aten::add", ab, 2, &alpha, 1, 0, 0);
    tt_context("where over [300, 400] with a column condition and a 0-dim other");
    tj_tensor *w[3] = {tt_random(g, (int64_t[]){300, 1}, 2, TJ_BOOL, 0, 1),
                       tt_random(g, (int64_t[]){300, 400}, 2, TJ_F32, -1, 1),
                       tj_scalar_tensor(7, TJ_F32)};
    tt_cuda_check_op("aten::where.self", w, 3, NULL, 0, 0, 0);
    tt_context("logical_and over 100000 bools");
    tj_tensor *bb[2] = {tt_random(g, (int64_t[]){100000}, 1, TJ_BOOL, 0, 1),
                        tt_random(g, (int64_t[]){100000}, 1, TJ_BOOL, 0, 1)};
    tt_cuda_check_op("aten::logical_and", bb, 2, NULL, 0, 0, 0);

    static const struct {
        const char *op;
        tj_dtype d;
        view_kind k0, k1;
        int64_t sizes[2];
    } views[] = {
        {"aten::mul", TJ_I64, V_TRANSPOSED, V_STEPPED, {411, 317}},
        {"aten::sin", TJ_F32, V_OFFSET, V_PLAIN, {1001, 101}},
        {"aten::sub_", TJ_F32, V_TRANSPOSED, V_EXPANDED, {250, 450}},
        {"aten::gt", TJ_F64, V_STEPPED, V_TRANSPOSED, {333, 300}},
    };
    for (size_t k = 0; k < sizeof views / sizeof views[0]; k++) {
        const tj_op_info *op = tj_op_find(views[k].op);
        int n_in = op->schema.n_tensor_args;
        view_spec s = {.kind = {views[k].k0, views[k].k1}, .nd = {2, 2}};
        for (int i = 0; i < 2; i++) memcpy(s.sizes[i], views[k].sizes, sizeof views[k].sizes);
        tt_context("%s on large views", views[k].op);
        tj_tensor *in[2];
        for (int i = 0; i < n_in; i++) in[i] = base_for(g, &s, i, views[k].d);
        tj_attr attrs[4];
        int na = make_attrs(op, 0, 0, views[k].d, attrs);
        tt_cuda_check_views(views[k].op, in, n_in, view_large, &s, attrs, na,
                            tol_for(op), tol_for(op));
    }
    tt_context("to.dtype f32 -> i64 over a stepped [200, 700]");
    view_spec s = {.kind = {V_STEPPED}, .nd = {2}, .sizes = {{200, 700}}};
    tj_tensor *c = base_for(g, &s, 0, TJ_F32);
    tj_attr to_i64 = {.dtype = TJ_I64};
    tt_cuda_check_views("aten::to.dtype", &c, 1, view_large, &s, &to_i64, 1, 0, 0);
    tt_context(NULL);
    tj_generator_free(g);
}

#ifdef TJIT_HAVE_CUDA
/* The 64-bit index kernels on strided, broadcast and transposed operands
 * (launches pick them by themselves only past 2^31 elements or offsets). */
static void test_wide_index(void **state) {
    (void)state;
    tj_generator *g = tj_generator_new(18);
    tjcu_pw_set_wide_index(true);
    view_spec s = {.kind = {V_TRANSPOSED, V_STEPPED, V_EXPANDED}, .nd = {3, 3, 3}};
    for (int i = 0; i < 3; i++) memcpy(s.sizes[i], (int64_t[]){7, 5, 9}, 3 * sizeof(int64_t));
    static const char *const ops[] = {"aten::addcmul", "aten::where.self", "aten::to.dtype",
                                      "aten::maximum", "aten::neg_"};
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        const tj_op_info *op = tj_op_find(ops[k]);
        int n_in = op->schema.n_tensor_args;
        tt_context("%s with 64-bit indexing", ops[k]);
        tj_tensor *in[3];
        for (int i = 0; i < n_in; i++) in[i] = base_for(g, &s, i, input_dtype(op, i, TJ_F64));
        tj_attr attrs[4];
        int na = make_attrs(op, 0, 0, TJ_I64, attrs);
        tt_cuda_check_views(ops[k], in, n_in, make_view, &s, attrs, na, tol_for(op), tol_for(op));
    }
    tjcu_pw_set_wide_index(false);
    tt_context(NULL);
    tj_generator_free(g);
}

typedef struct source_tally {
    int n;
    bool ok;
} source_tally;

static bool tally(void *ctx, const char *name, const char *source) {
    source_tally *t = ctx;
    t->n++;
    static const char *const needed[] = {"#include \"tjcu_builtins.h\"", "namespace tjm",
                                         "TJCU_EXPORT(tjpw_contig)", "TJCU_EXPORT(tjpw_vec)",
                                         "TJCU_EXPORT(tjpw_strided32)",
                                         "TJCU_EXPORT(tjpw_strided64)"};
    for (size_t k = 0; k < sizeof needed / sizeof needed[0]; k++)
        if (!strstr(source, needed[k])) {
            print_error("source %s lacks %s\n", name, needed[k]);
            t->ok = false;
        }
    size_t len = strlen(name);
    if (len < 4 || strcmp(name + len - 3, ".cu") || strchr(name, ':') || strchr(name, '.') != name + len - 3) {
        print_error("source name %s is no plain file name\n", name);
        t->ok = false;
    }
    return true;
}

/* One source per row and compute dtype its rule takes, and one per
 * conversion, each carrying its row's expression and all four kernels. */
static void test_sources(void **state) {
    (void)state;
    int expected = TJ_NUM_DTYPES * TJ_NUM_DTYPES;
    for (int id = 0; id < tj_op_count(); id++) {
        const tj_op_info *op = tjc_op(id);
        if (!is_pointwise_row(op) || op->inplace_of >= 0 || op->scalar_base >= 0) continue;
        for (int d = 0; d < TJ_NUM_DTYPES; d++) {
            if (!rule_takes(op, (tj_dtype)d)) continue;
            expected++;
            const char *src = tjcu_pw_source(op, (tj_dtype)d);
            assert_non_null(src);
            assert_non_null(strstr(src, op->pw_expr));
            assert_ptr_equal(src, tjcu_pw_source(op, (tj_dtype)d)); /* made once */
        }
    }
    source_tally t = {0, true};
    assert_true(tjcu_pointwise_sources(tally, &t));
    assert_int_equal(t.n, expected);
    assert_true(t.ok);
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(test_rows_by_dtype),
        TT_SCOPED_TEST(test_rows_on_views),
        TT_SCOPED_TEST(test_inplace_aliasing),
        TT_SCOPED_TEST(test_mixed_dtypes),
        TT_SCOPED_TEST(test_special_values),
        TT_SCOPED_TEST(test_integer_edges),
        TT_SCOPED_TEST(test_conversions),
        TT_SCOPED_TEST(test_copy_),
        TT_SCOPED_TEST(test_copy_overlap_and_devices),
        TT_SCOPED_TEST(test_refusals),
        TT_SCOPED_TEST(test_large_shapes),
#ifdef TJIT_HAVE_CUDA
        TT_SCOPED_TEST(test_wide_index),
        TT_SCOPED_TEST(test_sources),
#endif
    };
    return TT_CUDA_RUN(tests);
}
