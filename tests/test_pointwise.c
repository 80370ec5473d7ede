/* test_pointwise.c — the pointwise family, table-driven over ops.def: every
 * pointwise row with a scalar expression is called through tj_invoke for each
 * input dtype, shape case and attribute variant, and compared with a naive
 * double-precision loop over the reference functions below.
 *
 * The reference table is written from the math, independently of the
 * expressions in ops.def, and says per op which dtypes are accepted and what
 * the result dtype is. An op in the table without a reference entry fails the
 * test, so adding an op means adding its reference. In-place forms are tested
 * in test_inplace.c; mixed dtypes, special values and error messages in
 * test_pointwise_types.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/testing.h"

/* ---- the reference table ------------------------------------------------------ */

/* x: the operands a, b, c; attr: the base op's attributes in schema order. */
typedef double (*ref_fn)(const double *x, const tj_attr *attr);

typedef enum {
    R_SAME,  /* arithmetic: the input dtype; bool rejected unless bool_ok */
    R_FLOAT, /* floating: integer and bool inputs give f32 */
    R_FLOAT_ONLY, /* floating inputs only, as in PyTorch: integer and bool refused */
    R_BOOL   /* comparisons and logic: bool */
} res_kind;

/* Where an operand's random values come from. */
typedef struct domain {
    double lo, hi;   /* floats: uniform in [lo, hi) */
    int64_t ilo, ihi; /* i64: integers in [ilo, ihi] */
    double quantum;  /* floats rounded to multiples of this (comparisons want ties) */
    bool condition;  /* always a bool tensor whatever the tested dtype (where) */
} domain;

typedef struct override {
    const char *arg; /* attribute name; NULL ends the list */
    tj_attr val;
} override;

typedef struct variant {
    override set[3];
    bool int_rejects; /* a non-integral float argument, refused for integer compute */
} variant;

typedef struct ref_entry {
    const char *name;
    int arity;
    ref_fn fn;
    res_kind res;
    bool bool_ok;      /* R_SAME that takes bool too (where, add, mul, maximum, ...) */
    bool no_bool;      /* refuses bool operands even where a Scalar promotes them (sub) */
    bool promoting_bounds; /* its Scalar attributes promote as operands do (clamp) */
    domain dom[3];
    variant var[4];
    int n_var;         /* 0: one variant with every default */
    tj_scalar scalars[3]; /* operands for the *.Scalar form */
    int n_scalars;
} ref_entry;

#define A (x[0])
#define B (x[1])
#define C (x[2])
#define UNUSED (void)attr
static double r_neg(const double *x, const tj_attr *attr) { UNUSED; return 0.0 - A; }
static double r_abs(const double *x, const tj_attr *attr) { UNUSED; return A < 0 ? -A : A; }
static double r_exp(const double *x, const tj_attr *attr) { UNUSED; return exp(A); }
static double r_log(const double *x, const tj_attr *attr) { UNUSED; return log(A); }
static double r_log1p(const double *x, const tj_attr *attr) { UNUSED; return log1p(A); }
static double r_expm1(const double *x, const tj_attr *attr) { UNUSED; return expm1(A); }
static double r_sqrt(const double *x, const tj_attr *attr) { UNUSED; return sqrt(A); }
static double r_rsqrt(const double *x, const tj_attr *attr) { UNUSED; return pow(A, -0.5); }
static double r_sin(const double *x, const tj_attr *attr) { UNUSED; return sin(A); }
static double r_cos(const double *x, const tj_attr *attr) { UNUSED; return cos(A); }
static double r_tanh(const double *x, const tj_attr *attr) { UNUSED; return tanh(A); }
/* the logistic function through tanh, an identity rather than the usual form */
static double sigmoid(double v) { return 0.5 + 0.5 * tanh(0.5 * v); }
static double r_sigmoid(const double *x, const tj_attr *attr) { UNUSED; return sigmoid(A); }
static double r_relu(const double *x, const tj_attr *attr) { UNUSED; return A > 0 ? A : 0; }
static double r_gelu(const double *x, const tj_attr *attr) {
    if (strcmp(attr[0].s, "tanh") == 0) {
        double k = sqrt(2.0 / 3.14159265358979323846);
        return 0.5 * A * (1 + tanh(k * (A + 0.044715 * A * A * A)));
    }
    return A * 0.5 * erfc(-A / sqrt(2.0)); /* x times the normal CDF */
}
static double r_silu(const double *x, const tj_attr *attr) { UNUSED; return A * sigmoid(A); }
static double r_erf(const double *x, const tj_attr *attr) { UNUSED; return erf(A); }
static double r_reciprocal(const double *x, const tj_attr *attr) { UNUSED; return 1 / A; }
static double r_sign(const double *x, const tj_attr *attr) { UNUSED; return A > 0 ? 1 : A < 0 ? -1 : 0; }
static double r_floor(const double *x, const tj_attr *attr) { UNUSED; return floor(A); }
static double r_ceil(const double *x, const tj_attr *attr) { UNUSED; return ceil(A); }
static double r_round(const double *x, const tj_attr *attr) { /* ties to even */
    UNUSED;
    double f = floor(A), d = A - f;
    if (d > 0.5) return f + 1;
    if (d < 0.5) return f;
    return fmod(f, 2) == 0 ? f : f + 1;
}
static double r_logical_not(const double *x, const tj_attr *attr) { UNUSED; return A == 0; }
static double r_add(const double *x, const tj_attr *attr) { return A + attr[0].f * B; }
static double r_sub(const double *x, const tj_attr *attr) { return A - attr[0].f * B; }
static double r_mul(const double *x, const tj_attr *attr) { UNUSED; return A * B; }
static double r_div(const double *x, const tj_attr *attr) { UNUSED; return A / B; }
static double r_pow(const double *x, const tj_attr *attr) { UNUSED; return pow(A, B); }
static double r_maximum(const double *x, const tj_attr *attr) {
    UNUSED;
    return isnan(A) || isnan(B) ? NAN : A > B ? A : B;
}
static double r_minimum(const double *x, const tj_attr *attr) {
    UNUSED;
    return isnan(A) || isnan(B) ? NAN : A < B ? A : B;
}
static double r_eq(const double *x, const tj_attr *attr) { UNUSED; return A == B; }
static double r_ne(const double *x, const tj_attr *attr) { UNUSED; return A != B; }
static double r_lt(const double *x, const tj_attr *attr) { UNUSED; return A < B; }
static double r_le(const double *x, const tj_attr *attr) { UNUSED; return A <= B; }
static double r_gt(const double *x, const tj_attr *attr) { UNUSED; return A > B; }
static double r_ge(const double *x, const tj_attr *attr) { UNUSED; return A >= B; }
static double r_and(const double *x, const tj_attr *attr) { UNUSED; return A != 0 && B != 0; }
static double r_or(const double *x, const tj_attr *attr) { UNUSED; return A != 0 || B != 0; }
static double r_where(const double *x, const tj_attr *attr) { UNUSED; return A != 0 ? B : C; }
static double r_clamp(const double *x, const tj_attr *attr) {
    double v = A;
    if (!isnan(attr[0].f) && v < attr[0].f) v = attr[0].f;
    if (!isnan(attr[1].f) && v > attr[1].f) v = attr[1].f; /* max wins when min > max */
    return v;
}
static double r_lerp(const double *x, const tj_attr *attr) { return A + attr[0].f * (B - A); }
static double r_lerp_t(const double *x, const tj_attr *attr) { UNUSED; return A + C * (B - A); }
static double r_addcmul(const double *x, const tj_attr *attr) { return A + attr[0].f * B * C; }
static double r_zeros_like(const double *x, const tj_attr *attr) {
    UNUSED;
    (void)A;
    return 0;
}
#undef A
#undef B
#undef C
#undef UNUSED

#define D_ANY {-3, 3, -4, 4, 0, false}
#define D_POS {0.1, 5, 1, 6, 0, false}
#define D_TIES {-2, 2, -2, 2, 0.5, false}
#define D_COND {0, 0, 0, 0, 0, true}
#define F(v) {.f = (v)}
/* Scalars: an integer one and a float one, as C's 2 and 2. */
#define SI(v) {(double)(v), (v), TJ_SCALAR_INT}
#define SF(v) {(v), 0, TJ_SCALAR_FLOAT}
#define AI(v) {.scalar = SI(v)}
#define AF(v) {.scalar = SF(v)}
#define S(v) {.s = (v)}

static const ref_entry refs[] = {
    {"aten::neg", 1, r_neg, R_SAME, .dom = {D_ANY}},
    {"aten::abs", 1, r_abs, R_SAME, .dom = {D_ANY}},
    {"aten::exp", 1, r_exp, R_FLOAT, .dom = {D_ANY}},
    {"aten::log", 1, r_log, R_FLOAT, .dom = {D_POS}},
    {"aten::log1p", 1, r_log1p, R_FLOAT, .dom = {{-0.9, 5, 0, 6, 0, false}}},
    {"aten::expm1", 1, r_expm1, R_FLOAT, .dom = {D_ANY}},
    {"aten::sqrt", 1, r_sqrt, R_FLOAT, .dom = {{0, 5, 0, 6, 0, false}}},
    {"aten::rsqrt", 1, r_rsqrt, R_FLOAT, .dom = {D_POS}},
    {"aten::sin", 1, r_sin, R_FLOAT, .dom = {{-5, 5, -5, 5, 0, false}}},
    {"aten::cos", 1, r_cos, R_FLOAT, .dom = {{-5, 5, -5, 5, 0, false}}},
    {"aten::tanh", 1, r_tanh, R_FLOAT, .dom = {D_ANY}},
    {"aten::sigmoid", 1, r_sigmoid, R_FLOAT, .dom = {{-8, 8, -8, 8, 0, false}}},
    {"aten::relu", 1, r_relu, R_SAME, .dom = {D_ANY}},
    {"aten::gelu", 1, r_gelu, R_FLOAT_ONLY, .dom = {D_ANY}, .n_var = 2,
     .var = {{.set = {{"approximate", S("none")}}}, {.set = {{"approximate", S("tanh")}}}}},
    {"aten::silu", 1, r_silu, R_FLOAT_ONLY, .dom = {D_ANY}},
    {"aten::erf", 1, r_erf, R_FLOAT, .dom = {D_ANY}},
    {"aten::reciprocal", 1, r_reciprocal, R_FLOAT, .dom = {{0.25, 4, 1, 5, 0, false}}},
    {"aten::sign", 1, r_sign, R_SAME, .bool_ok = true, .dom = {D_TIES}},
    {"aten::zeros_like", 1, r_zeros_like, R_SAME, .bool_ok = true, .dom = {D_ANY}},
    {"aten::floor", 1, r_floor, R_SAME, .dom = {D_ANY}},
    {"aten::ceil", 1, r_ceil, R_SAME, .dom = {D_ANY}},
    {"aten::round", 1, r_round, R_SAME, .dom = {D_ANY}},
    {"aten::logical_not", 1, r_logical_not, R_BOOL, .dom = {D_TIES}},
    {"aten::add", 2, r_add, R_SAME, .bool_ok = true, .dom = {D_ANY, D_ANY},
     .n_var = 4,
     .var = {{.set = {{NULL}}}, {.set = {{"alpha", AF(0.5)}}, .int_rejects = true}, {.set = {{"alpha", AI(-2)}}},
             {.set = {{"alpha", AF(2.)}}, .int_rejects = true}},
     .scalars = {SF(1.5), SI(-2), SF(2.)}, .n_scalars = 3},
    {"aten::sub", 2, r_sub, R_SAME, .no_bool = true, .dom = {D_ANY, D_ANY}, .n_var = 2,
     .var = {{.set = {{NULL}}}, {.set = {{"alpha", AF(0.5)}}, .int_rejects = true}}, .scalars = {SF(1.5), SI(3)}, .n_scalars = 2},
    {"aten::mul", 2, r_mul, R_SAME, .bool_ok = true, .dom = {D_ANY, D_ANY}, .scalars = {SF(-0.75), SI(2)},
     .n_scalars = 2},
    {"aten::div", 2, r_div, R_FLOAT, .dom = {D_ANY, {0.5, 3, 1, 4, 0, false}},
     .scalars = {SF(2.5), SF(-0.5), SI(2)}, .n_scalars = 3},
    {"aten::pow", 2, r_pow, R_SAME, .dom = {{0.5, 3, -3, 3, 0, false}, {-2, 2, 0, 4, 0, false}},
     .scalars = {SI(2), SF(0.5), SI(-1)}, .n_scalars = 3},
    {"aten::maximum", 2, r_maximum, R_SAME, .bool_ok = true, .dom = {D_TIES, D_TIES}, .scalars = {SF(0.5), SI(1)},
     .n_scalars = 2},
    {"aten::minimum", 2, r_minimum, R_SAME, .bool_ok = true, .dom = {D_TIES, D_TIES}, .scalars = {SF(0.5), SI(1)},
     .n_scalars = 2},
    {"aten::eq", 2, r_eq, R_BOOL, .dom = {D_TIES, D_TIES}, .scalars = {SF(0.5), SI(1)}, .n_scalars = 2},
    {"aten::ne", 2, r_ne, R_BOOL, .dom = {D_TIES, D_TIES}, .scalars = {SF(0.5), SI(1)}, .n_scalars = 2},
    {"aten::lt", 2, r_lt, R_BOOL, .dom = {D_TIES, D_TIES}, .scalars = {SF(0.5), SI(1)}, .n_scalars = 2},
    {"aten::le", 2, r_le, R_BOOL, .dom = {D_TIES, D_TIES}, .scalars = {SF(0.5), SI(1)}, .n_scalars = 2},
    {"aten::gt", 2, r_gt, R_BOOL, .dom = {D_TIES, D_TIES}, .scalars = {SF(0.5), SI(1)}, .n_scalars = 2},
    {"aten::ge", 2, r_ge, R_BOOL, .dom = {D_TIES, D_TIES}, .scalars = {SF(0.5), SI(1)}, .n_scalars = 2},
    {"aten::logical_and", 2, r_and, R_BOOL, .dom = {D_TIES, D_TIES}, .scalars = {SI(0), SI(2)},
     .n_scalars = 2},
    {"aten::logical_or", 2, r_or, R_BOOL, .dom = {D_TIES, D_TIES}, .scalars = {SI(0), SI(2)},
     .n_scalars = 2},
    {"aten::where.self", 3, r_where, R_SAME, .bool_ok = true, .dom = {D_COND, D_ANY, D_ANY}},
    {"aten::clamp", 1, r_clamp, R_SAME, .promoting_bounds = true, .dom = {D_ANY}, .n_var = 4,
     .var = {{.set = {{"min", AF(-0.5)}, {"max", AF(1.5)}}},
             {.set = {{"min", AF(TJ_NONE)}, {"max", AF(0.25)}}},
             {.set = {{"min", AI(-1)}, {"max", AF(TJ_NONE)}}},
             {.set = {{"min", AI(1)}, {"max", AI(-1)}}}}},
    {"aten::lerp.Scalar", 2, r_lerp, R_FLOAT_ONLY, .dom = {D_ANY, D_ANY}, .n_var = 2,
     .var = {{.set = {{"weight", AF(0.25)}}}, {.set = {{"weight", AF(0.75)}}}}},
    {"aten::lerp.Tensor", 3, r_lerp_t, R_FLOAT_ONLY, .dom = {D_ANY, D_ANY, {0, 1, 0, 1, 0, false}}},
    {"aten::addcmul", 3, r_addcmul, R_SAME, .dom = {D_ANY, D_ANY, D_ANY}, .n_var = 3,
     .var = {{.set = {{NULL}}}, {.set = {{"value", AF(0.5)}}}, {.set = {{"value", AF(-2.5)}}}}},
};
enum { N_REFS = sizeof refs / sizeof refs[0] };

static const ref_entry *ref_find(const char *name) {
    for (int i = 0; i < N_REFS; i++)
        if (strcmp(refs[i].name, name) == 0) return &refs[i];
    return NULL;
}

/* The ops this file covers: out-of-place pointwise rows with an expression. */
static bool is_tested_pointwise(const tj_op_info *op) {
    return op->kind == TJ_KIND_POINTWISE && op->pw_expr && op->inplace_of < 0;
}

/* The reference of op (a *.Scalar form uses its base's), or NULL. */
static const ref_entry *ref_of(const tj_op_info *op) {
    const tj_op_info *base = op->scalar_base >= 0 ? tjc_op(op->scalar_base) : op;
    return ref_find(base->name);
}

/* d with a Scalar operand, written out again here: the Scalar wins only
 * when its category (bool < integer < float) is higher, as i64 or f32. */
static tj_dtype with_scalar(tj_dtype d, const tj_scalar *v) {
    int cat_d = d == TJ_BOOL ? 0 : d == TJ_I64 ? 1 : 2;
    int cat_v = v->kind == TJ_SCALAR_BOOL ? 0 : v->kind == TJ_SCALAR_INT ? 1 : 2;
    return cat_v <= cat_d ? d : cat_v == 2 ? TJ_F32 : TJ_I64;
}

/* The result dtype for inputs of dtype d and these attributes; false when
 * the op must refuse d. */
static bool expected_dtype(const ref_entry *r, const tj_op_info *op, const tj_attr *attrs,
                           tj_dtype d, tj_dtype *out) {
    bool is_float = d == TJ_F32 || d == TJ_F64;
    tj_dtype p = d;
    if (op->scalar_base >= 0) p = with_scalar(p, &attrs[0].scalar);
    if (r->promoting_bounds)
        for (int k = 0; k < 2; k++)
            if (!tj_is_none(attrs[k].f)) p = with_scalar(p, &attrs[k].scalar);
    if (r->no_bool && d == TJ_BOOL) return false;
    switch (r->res) {
    case R_BOOL: *out = TJ_BOOL; return true;
    case R_FLOAT: *out = p == TJ_F32 || p == TJ_F64 ? p : TJ_F32; return true;
    case R_FLOAT_ONLY: *out = d; return is_float;
    case R_SAME:
        *out = p;
        return p != TJ_BOOL || r->bool_ok;
    }
    return false;
}

/* ---- inputs ------------------------------------------------------------------------ */

typedef enum { L_CONTIG, L_STRIDED, L_TRANSPOSED, L_EXPANDED } layout;

typedef struct shape_in {
    int ndim;
    int64_t sizes[4];
    layout lay;
} shape_in;

typedef struct shape_case {
    const char *name;
    shape_in in[3]; /* an op of arity k uses the first k */
    bool large;     /* above the threading grain: run less often (see below) */
} shape_case;

#define SH(nd, lay, ...) {nd, {__VA_ARGS__}, lay}
#define CT L_CONTIG
static const shape_case cases[] = {
    {"same", {SH(2, CT, 3, 4), SH(2, CT, 3, 4), SH(2, CT, 3, 4)}, false},
    {"broadcast", {SH(3, CT, 3, 1, 4), SH(2, CT, 5, 4), SH(1, CT, 4)}, false},
    {"0-dim with n-dim", {SH(0, CT, 0), SH(2, CT, 2, 3), SH(0, CT, 0)}, false},
    {"all 0-dim", {SH(0, CT, 0), SH(0, CT, 0), SH(0, CT, 0)}, false},
    {"size 0", {SH(2, CT, 0, 3), SH(1, CT, 3), SH(2, CT, 1, 3)}, false},
    {"size 0 broadcast", {SH(1, CT, 1), SH(3, CT, 2, 0, 3), SH(2, CT, 0, 1)}, false},
    {"size 1", {SH(3, CT, 1, 5, 1), SH(3, CT, 3, 1, 4), SH(1, CT, 1)}, false},
    {"strided", {SH(2, L_STRIDED, 4, 6), SH(2, L_STRIDED, 4, 6), SH(2, L_STRIDED, 4, 6)}, false},
    {"transposed", {SH(2, L_TRANSPOSED, 5, 3), SH(2, CT, 5, 3), SH(2, L_TRANSPOSED, 5, 3)}, false},
    {"mixed layouts", {SH(2, L_TRANSPOSED, 6, 5), SH(1, L_STRIDED, 5), SH(2, CT, 6, 1)}, false},
    {"expanded", {SH(2, L_EXPANDED, 4, 5), SH(2, L_TRANSPOSED, 4, 5), SH(2, CT, 4, 5)}, false},
    /* above the threading grain, split mid-row */
    {"large broadcast", {SH(3, CT, 3, 101, 127), SH(2, CT, 101, 1), SH(1, L_STRIDED, 127)}, true},
    {"large contiguous", {SH(1, CT, 40000), SH(1, CT, 40000), SH(1, CT, 40000)}, true},
};
#undef SH
#undef CT
enum { N_CASES = sizeof cases / sizeof cases[0] };

static double draw_value(const domain *dom, tj_dtype dtype, double u) {
    switch (dtype) {
    case TJ_BOOL: return u < 0.5;
    case TJ_I64: return floor((double)dom->ilo + (double)(dom->ihi - dom->ilo + 1) * u);
    default: {
        double v = dom->lo + (dom->hi - dom->lo) * u;
        return dom->quantum > 0 ? dom->quantum * nearbyint(v / dom->quantum) : v;
    }
    }
}

/* A contiguous tensor of dtype with values drawn from dom. */
static tj_tensor *make_values(tj_generator *g, const int64_t *sizes, int ndim, tj_dtype dtype,
                              const domain *dom) {
    tj_tensor *u = tj_rand(sizes, ndim, TJ_F64, g);
    tj_tensor *t = tj_empty(sizes, ndim, dtype);
    assert_non_null(u);
    assert_non_null(t);
    const double *src = tj_data(u);
    char *dst = tj_data(t);
    for (int64_t i = 0; i < tj_numel(t); i++) {
        double v = draw_value(dom, dtype, src[i]);
        switch (dtype) {
        case TJ_F32: ((float *)dst)[i] = (float)v; break;
        case TJ_F64: ((double *)dst)[i] = v; break;
        case TJ_I64: ((int64_t *)dst)[i] = (int64_t)v; break;
        case TJ_BOOL: ((bool *)dst)[i] = v != 0; break;
        default: break;
        }
    }
    return t;
}

/* A view made here rather than through view ops, so this file tests the
 * pointwise family alone; tracked so the case's scope releases it. */
static tj_tensor *view_of(tj_tensor *base, const int64_t *sizes, const int64_t *strides, int ndim) {
    tj_tensor *v = tjc_make_view(base, sizes, strides, ndim, tj_storage_offset(base));
    assert_non_null(v);
    tjc_scope_track(v);
    return v;
}

/* An input of the given shape and layout; call inside a scope. */
static tj_tensor *make_input(tj_generator *g, const shape_in *s, tj_dtype dtype,
                             const domain *dom) {
    int nd = s->ndim;
    int64_t phys[TJ_MAX_DIMS], strides[TJ_MAX_DIMS];
    memcpy(phys, s->sizes, sizeof(int64_t) * (size_t)nd);
    switch (s->lay) {
    case L_CONTIG: return make_values(g, phys, nd, dtype, dom);
    case L_STRIDED: return tt_noncontiguous(g, make_values(g, phys, nd, dtype, dom));
    case L_TRANSPOSED: { /* the last two dims stored the other way round */
        phys[nd - 2] = s->sizes[nd - 1];
        phys[nd - 1] = s->sizes[nd - 2];
        tj_tensor *base = make_values(g, phys, nd, dtype, dom);
        memcpy(strides, tj_strides(base), sizeof(int64_t) * (size_t)nd);
        int64_t tmp = strides[nd - 1];
        strides[nd - 1] = strides[nd - 2];
        strides[nd - 2] = tmp;
        return view_of(base, s->sizes, strides, nd);
    }
    case L_EXPANDED: { /* dim 0 repeated with stride 0 */
        phys[0] = 1;
        tj_tensor *base = make_values(g, phys, nd, dtype, dom);
        memcpy(strides, tj_strides(base), sizeof(int64_t) * (size_t)nd);
        strides[0] = 0;
        return view_of(base, s->sizes, strides, nd);
    }
    }
    return NULL;
}

static void broadcast_sizes(tj_tensor *const *in, int n, int64_t *out, int *nd) {
    *nd = 0;
    for (int k = 0; k < n; k++)
        if (tj_ndim(in[k]) > *nd) *nd = tj_ndim(in[k]);
    for (int d = 0; d < *nd; d++) out[d] = 1;
    for (int k = 0; k < n; k++) {
        int off = *nd - tj_ndim(in[k]);
        for (int d = 0; d < tj_ndim(in[k]); d++)
            if (tj_sizes(in[k])[d] != 1) out[off + d] = tj_sizes(in[k])[d];
    }
}

/* ---- calling and checking ----------------------------------------------------------- */

/* Fills attrs from the schema's defaults, then the overrides; the operand of
 * a *.Scalar form is its first attribute. */
static void build_attrs(const tj_op_info *op, const variant *v, tj_scalar scalar, tj_attr *attrs) {
    const tj_schema *s = tj_op_schema(op);
    bool scalar_form = op->scalar_base >= 0;
    for (int k = 0; k < s->n_attrs; k++) {
        const tj_arg *arg = &s->args[s->attr_pos[k]];
        bool set = false;
        if (scalar_form && k == 0) {
            attrs[k].scalar = scalar;
            set = true;
        }
        for (int j = 0; v && j < 3 && v->set[j].arg; j++)
            if (strcmp(v->set[j].arg, arg->name) == 0) {
                attrs[k] = v->set[j].val;
                set = true;
            }
        if (!set) {
            if (!arg->has_default)
                fail_msg("%s: no value for argument '%s' in the test's variants", op->name,
                         arg->name);
            attrs[k] = arg->def;
        }
    }
}

typedef struct run_spec {
    const tj_op_info *op;
    const ref_entry *ref;
    const variant *var;
    tj_scalar scalar;
    tj_dtype dtype;
    const shape_case *shape;
} run_spec;

static void describe(const run_spec *r, char *buf, size_t n) {
    int at = snprintf(buf, n, "%s, dtype %s, case '%s'", r->op->name, tj_dtype_name(r->dtype),
                      r->shape->name);
    const tj_schema *s = tj_op_schema(r->op);
    for (int j = 0; r->var && j < 3 && r->var->set[j].arg; j++)
        for (int k = 0; k < s->n_args && at > 0 && (size_t)at < n; k++) {
            const tj_arg *arg = &s->args[k];
            const tj_attr *a = &r->var->set[j].val;
            if (strcmp(arg->name, r->var->set[j].arg) != 0) continue;
            at += arg->type == TJ_ARG_STR
                      ? snprintf(buf + at, n - (size_t)at, ", %s='%s'", arg->name, a->s)
                      : snprintf(buf + at, n - (size_t)at, ", %s=%g%s", arg->name, a->f,
                                 arg->type == TJ_ARG_SCALAR && a->scalar.kind == TJ_SCALAR_FLOAT ? " (float)" : "");
        }
    if (r->op->scalar_base >= 0 && at > 0 && (size_t)at < n)
        snprintf(buf + at, n - (size_t)at, ", scalar operand %g (%s)", r->scalar.f,
                 r->scalar.kind == TJ_SCALAR_FLOAT ? "float" : "integer");
}

static void run_one(tj_generator *g, const run_spec *r) {
    const tj_op_info *op = r->op;
    bool scalar_form = op->scalar_base >= 0;
    int n_in = tj_op_schema(op)->n_tensor_args;
    char what[200];
    describe(r, what, sizeof what);
    tt_context("%s", what);

    tj_scope_begin();
    tj_tensor *in[3] = {NULL};
    for (int k = 0; k < n_in; k++) {
        const domain *dom = &r->ref->dom[k];
        in[k] = make_input(g, &r->shape->in[k], dom->condition ? TJ_BOOL : r->dtype, dom);
    }
    tj_attr attrs[TJ_MAX_ARGS];
    build_attrs(op, r->var, r->scalar, attrs);
    tj_tensor *out = NULL;
    tj_clear_error();
    int n = tj_invoke(op->id, in, n_in, attrs, tj_op_schema(op)->n_attrs, &out, 1);

    tj_dtype want = TJ_F32;
    bool accepted = expected_dtype(r->ref, op, attrs, r->dtype, &want);
    /* integers take no negative integer power (PyTorch) */
    bool negative_power = scalar_form && tjc_op(op->scalar_base)->id == TJ_OP_pow &&
                          want == TJ_I64 && r->scalar.kind == TJ_SCALAR_INT && r->scalar.i < 0;
    if (!accepted || negative_power || (r->var && r->var->int_rejects && (want == TJ_I64 || want == TJ_BOOL))) {
        if (n != -1 || out) fail_msg("%s: expected an error, got a result", what);
        tj_status st_want = accepted ? TJ_ERR_ARG : TJ_ERR_DTYPE;
        if (tj_last_status() != st_want)
            fail_msg("%s: status %s, expected %s (%s)", what, tj_status_name(tj_last_status()),
                     tj_status_name(st_want), tj_last_error());
        tt_assert_error(op->name);
        tj_clear_error();
        tt_context(NULL);
        tj_scope_end();
        return;
    }
    if (n != 1 || !out) fail_msg("%s: failed: %s", what, tj_last_error());
    if (tj_tensor_dtype(out) != want)
        fail_msg("%s: result dtype %s, expected %s", what, tj_dtype_name(tj_tensor_dtype(out)),
                 tj_dtype_name(want));
    assert_true(tj_is_contiguous(out));

    /* the naive loop: every output index, every operand at its broadcast index */
    int64_t sizes[TJ_MAX_DIMS];
    int nd;
    broadcast_sizes(in, n_in, sizes, &nd);
    tt_ref ref = tt_ref_new(sizes, nd), ins[3];
    for (int k = 0; k < n_in; k++) ins[k] = tt_ref_of(in[k]);
    /* an integer computation takes float Scalars truncated (addcmul's value) */
    const tj_schema *sch = tj_op_schema(op);
    for (int k = 0; want == TJ_I64 && k < sch->n_attrs; k++)
        if (sch->args[sch->attr_pos[k]].type == TJ_ARG_SCALAR && !tj_is_none(attrs[k].f))
            attrs[k].f = trunc(attrs[k].f);
    const tj_attr *base_attrs = scalar_form ? attrs + 1 : attrs;
    int64_t idx[TJ_MAX_DIMS] = {0};
    for (int64_t i = 0; i < ref.numel; i++) {
        double x[3] = {0, r->scalar.f, 0};
        for (int k = 0; k < n_in; k++) x[k] = tt_ref_bcast(&ins[k], idx, nd);
        ref.v[i] = r->ref->fn(x, base_attrs);
        if (want == TJ_BOOL && r->ref->res == R_SAME) ref.v[i] = ref.v[i] != 0; /* C's bool of it */
        tt_next_index(idx, sizes, nd);
    }
    tt_assert_close_ref(out, &ref, tt_rtol(want), tt_atol(want));
    tt_ref_free(&ref);
    for (int k = 0; k < n_in; k++) tt_ref_free(&ins[k]);
    tt_context(NULL);
    tj_scope_end();
}

static const tj_dtype dtypes[] = {TJ_F32, TJ_F64, TJ_I64, TJ_BOOL};

/* One cmocka test per op: every dtype, shape case, variant and scalar operand. */
static void op_matches_reference(void **state) {
    const tj_op_info *op = *state;
    const ref_entry *ref = ref_of(op);
    if (!ref) fail_msg("%s: no reference entry", op->name);
    tj_generator *g = tj_generator_new((uint64_t)op->id + 1);
    bool scalar_form = op->scalar_base >= 0;
    int n_scalars = scalar_form ? ref->n_scalars : 1;
    int n_var = ref->n_var ? ref->n_var : 1;
    for (int s = 0; s < n_scalars; s++)
        for (int v = 0; v < n_var; v++)
            for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
                for (int c = 0; c < N_CASES; c++) {
                    /* the threaded paths are the same for every dtype and
                     * variant; once per op keeps the file fast on a busy
                     * machine, where each parallel region may wait a time slice */
                    if (cases[c].large && (s > 0 || v > 0 || (dtypes[d] != TJ_F32 &&
                                                              dtypes[d] != TJ_I64)))
                        continue;
                    run_spec r = {op, ref, ref->n_var ? &ref->var[v] : NULL,
                                  scalar_form ? ref->scalars[s] : tj_scalar_int(0), dtypes[d], &cases[c]};
                    run_one(g, &r);
                }
    tj_generator_free(g);
}

static void every_pointwise_op_has_a_reference(void **state) {
    (void)state;
    int missing = 0, tested = 0;
    for (int i = 0; i < tj_op_count(); i++) {
        const tj_op_info *op = tjc_op(i);
        if (!is_tested_pointwise(op)) continue;
        tested++;
        const ref_entry *ref = ref_of(op);
        int arity = op->scalar_base >= 0 ? tjc_op(op->scalar_base)->pw_arity : op->pw_arity;
        if (!ref) {
            fprintf(stderr, "pointwise op %s has no reference entry in %s\n", op->name, __FILE__);
            missing++;
        } else if (ref->arity != arity) {
            fprintf(stderr, "%s: reference arity %d, table arity %d\n", op->name, ref->arity,
                    arity);
            missing++;
        } else if (op->scalar_base >= 0 && ref->n_scalars == 0) {
            fprintf(stderr, "%s: the reference of %s lists no scalar operands\n", op->name,
                    ref->name);
            missing++;
        }
    }
    assert_int_equal(missing, 0);
    assert_true(tested >= 50);
    /* and no reference is left over from an op that was removed or renamed */
    for (int i = 0; i < N_REFS; i++) {
        const tj_op_info *op = tj_op_find(refs[i].name);
        if (!op || !is_tested_pointwise(op)) fail_msg("reference %s has no op", refs[i].name);
    }
}

int main(void) {
    struct CMUnitTest tests[TJ_OP__COUNT + 1];
    size_t n = 0;
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(every_pointwise_op_has_a_reference);
    for (int i = 0; i < tj_op_count(); i++) {
        const tj_op_info *op = tjc_op(i);
        if (!is_tested_pointwise(op) || !ref_of(op)) continue;
        tests[n++] = (struct CMUnitTest){op->name, op_matches_reference, NULL, NULL, (void *)op};
    }
    return _cmocka_run_group_tests("pointwise", tests, n, NULL, NULL);
}
