/* ops.c — one IR emitter per pointwise row of core/ops_pointwise.def, in a
 * table keyed by op id, plus the dtype conversions and constants they need.
 * Each emitter writes the row's C expression for one element, with the
 * semantics the CPU backend's generated loops give it (pointwise.c and
 * copy.c compiled as ISO C: no FMA contraction, integers wrapping), so that
 * a kernel computes the same bits as the portable runner; where the "llvm"
 * backend takes a vectorised function instead of libm, math.c says so. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

typedef LLVMValueRef V;

LLVMValueRef tjl_fail(tjl_ir *ir, const char *fmt, ...) {
    if (!ir->why[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ir->why, sizeof ir->why, fmt, ap);
        va_end(ap);
    }
    return NULL;
}

LLVMTypeRef tjl_type(const tjl_ir *ir, tj_dtype t) {
    switch (t) {
    case TJ_F32: return ir->f32;
    case TJ_F64: return ir->f64;
    case TJ_I64: return ir->i64;
    default: return ir->i1;
    }
}

LLVMTypeRef tjl_mem_type(const tjl_ir *ir, tj_dtype t) { return t == TJ_BOOL ? ir->i8 : tjl_type(ir, t); }

static bool is_float(tj_dtype t) { return t == TJ_F32 || t == TJ_F64; }

/* copy.c's to_i64 and pointwise.c's cvt_i64: NaN is 0, the ends saturate */
static int64_t saturate(double v, double limit) {
    if (v != v) return 0;
    if (v >= limit) return INT64_MAX;
    if (v <= -limit) return INT64_MIN;
    return (int64_t)v;
}

static V constant(tjl_ir *ir, tj_dtype t, double v, double i64_limit) {
    switch (t) {
    case TJ_F32: return LLVMConstReal(ir->f32, (double)(float)v);
    case TJ_F64: return LLVMConstReal(ir->f64, v);
    case TJ_I64: return LLVMConstInt(ir->i64, (unsigned long long)saturate(v, i64_limit), 1);
    default: return LLVMConstInt(ir->i1, v != 0, 0);
    }
}

LLVMValueRef tjl_const(tjl_ir *ir, tj_dtype t, double v) { return constant(ir, t, v, 9.2233720368547758e18); }
LLVMValueRef tjl_param(tjl_ir *ir, tj_dtype t, double v) { return constant(ir, t, v, 9.2e18); }

LLVMValueRef tjl_convert(tjl_ir *ir, LLVMValueRef v, tj_dtype to, tj_dtype from) {
    LLVMBuilderRef b = ir->b;
    if (to == from) return v;
    switch (to) {
    case TJ_F32: /* through double, as copy.c converts: (float)(double)x */
        if (from == TJ_I64) v = LLVMBuildSIToFP(b, v, ir->f64, "");
        if (from == TJ_BOOL) return LLVMBuildUIToFP(b, v, ir->f32, "");
        return LLVMBuildFPTrunc(b, v, ir->f32, "");
    case TJ_F64:
        if (from == TJ_F32) return LLVMBuildFPExt(b, v, ir->f64, "");
        if (from == TJ_I64) return LLVMBuildSIToFP(b, v, ir->f64, "");
        return LLVMBuildUIToFP(b, v, ir->f64, "");
    case TJ_I64: {
        if (from == TJ_BOOL) return LLVMBuildZExt(b, v, ir->i64, "");
        if (from == TJ_F32) v = LLVMBuildFPExt(b, v, ir->f64, "");
        /* saturating, NaN to 0: copy.c's to_i64 exactly */
        LLVMTypeRef types[2] = {ir->i64, ir->f64};
        unsigned id = LLVMLookupIntrinsicID("llvm.fptosi.sat", 15);
        LLVMValueRef fn = LLVMGetIntrinsicDeclaration(ir->mod, id, types, 2);
        return LLVMBuildCall2(b, LLVMIntrinsicGetType(ir->ctx, id, types, 2), fn, &v, 1, "");
    }
    default: /* bool: x != 0, NaN included */
        if (is_float(from)) return LLVMBuildFCmp(b, LLVMRealUNE, v, LLVMConstReal(LLVMTypeOf(v), 0.0), "");
        return LLVMBuildICmp(b, LLVMIntNE, v, LLVMConstInt(ir->i64, 0, 0), "");
    }
}

/* ---- shorthands over the compute dtype ----------------------------------------- */

#define A (a->x[0])
#define B (a->x[1])
#define C (a->x[2])
#define P0 (a->p[0])
#define P1 (a->p[1])
#define BLD (ir->b)

static V one(tjl_ir *ir, tj_dtype t) { return tjl_const(ir, t, 1); }
static V zero(tjl_ir *ir, tj_dtype t) { return tjl_const(ir, t, 0); }
static V add(tjl_ir *ir, tj_dtype t, V x, V y) {
    return is_float(t) ? LLVMBuildFAdd(BLD, x, y, "") : LLVMBuildAdd(BLD, x, y, "");
}
static V sub(tjl_ir *ir, tj_dtype t, V x, V y) {
    return is_float(t) ? LLVMBuildFSub(BLD, x, y, "") : LLVMBuildSub(BLD, x, y, "");
}
static V mul(tjl_ir *ir, tj_dtype t, V x, V y) {
    return is_float(t) ? LLVMBuildFMul(BLD, x, y, "") : LLVMBuildMul(BLD, x, y, "");
}
static V fdiv(tjl_ir *ir, V x, V y) { return LLVMBuildFDiv(BLD, x, y, ""); }
static V sel(tjl_ir *ir, V c, V x, V y) { return LLVMBuildSelect(BLD, c, x, y, ""); }

typedef enum cmp_kind { EQ, NE, LT, LE, GT, GE } cmp_kind;
/* C's comparison operators: ordered for floats except != (true on NaN),
 * signed for i64, unsigned for bool (false < true) */
static V compare(tjl_ir *ir, tj_dtype t, cmp_kind k, V x, V y) {
    static const LLVMRealPredicate fp[] = {LLVMRealOEQ, LLVMRealUNE, LLVMRealOLT,
                                           LLVMRealOLE, LLVMRealOGT, LLVMRealOGE};
    static const LLVMIntPredicate sp[] = {LLVMIntEQ, LLVMIntNE, LLVMIntSLT, LLVMIntSLE, LLVMIntSGT, LLVMIntSGE};
    static const LLVMIntPredicate up[] = {LLVMIntEQ, LLVMIntNE, LLVMIntULT, LLVMIntULE, LLVMIntUGT, LLVMIntUGE};
    if (is_float(t)) return LLVMBuildFCmp(BLD, fp[k], x, y, "");
    return LLVMBuildICmp(BLD, t == TJ_I64 ? sp[k] : up[k], x, y, "");
}
static V is_nan(tjl_ir *ir, V x) { return LLVMBuildFCmp(BLD, LLVMRealUNE, x, x, ""); }

/* An emitter given a dtype its row has no loop for (the plan checks first). */
#define REQUIRE(cond, what)                                                                   \
    do {                                                                                      \
        if (!(cond)) return tjl_fail(ir, "%s: no code for dtype %s", what, tj_dtype_name(t)); \
    } while (0)

/* A transcendental: the module's inline version where the portable runner
 * computes the same one (mirrored), or where the "llvm" backend prefers it to
 * libm; libm's otherwise. */
typedef struct mathfn {
    int inl;          /* a tjl_fn, or -1 for none */
    const char *libm; /* the C library's name */
    bool mirrored;    /* the portable runner uses the inline version too */
} mathfn;

static V call_math(tjl_ir *ir, mathfn m, V x, V y) {
    bool use_inline = m.inl >= 0 && (m.mirrored || !ir->libm);
    return use_inline ? tjl_math(ir, (tjl_fn)m.inl, x, y) : tjl_libm(ir, m.libm, x, y);
}

static V exp_t(tjl_ir *ir, tj_dtype t, V x) {
    return call_math(ir, t == TJ_F32 ? (mathfn){TJL_EXPF, "expf", true} : (mathfn){TJL_EXPD, "exp", false}, x, NULL);
}
static V log_t(tjl_ir *ir, tj_dtype t, V x) {
    return call_math(ir, t == TJ_F32 ? (mathfn){TJL_LOGF, "logf", true} : (mathfn){TJL_LOGD, "log", false}, x, NULL);
}
static V tanh_t(tjl_ir *ir, tj_dtype t, V x) {
    return call_math(ir, t == TJ_F32 ? (mathfn){TJL_TANHF, "tanhf", true} : (mathfn){TJL_TANHD, "tanh", false}, x, NULL);
}
static V erf_t(tjl_ir *ir, tj_dtype t, V x) {
    return call_math(ir, t == TJ_F32 ? (mathfn){TJL_ERFF, "erff", true} : (mathfn){TJL_ERFD, "erf", false}, x, NULL);
}
static V sin_t(tjl_ir *ir, tj_dtype t, V x) {
    return call_math(ir, t == TJ_F32 ? (mathfn){TJL_SINF, "sinf", true} : (mathfn){TJL_SIND, "sin", true}, x, NULL);
}
static V cos_t(tjl_ir *ir, tj_dtype t, V x) {
    return call_math(ir, t == TJ_F32 ? (mathfn){TJL_COSF, "cosf", true} : (mathfn){TJL_COSD, "cos", true}, x, NULL);
}
static V log1p_t(tjl_ir *ir, tj_dtype t, V x) {
    return call_math(ir, t == TJ_F32 ? (mathfn){TJL_LOG1PF, "log1pf", true} : (mathfn){TJL_LOG1PD, "log1p", true},
                     x, NULL);
}
static V expm1_t(tjl_ir *ir, tj_dtype t, V x) {
    return call_math(ir, t == TJ_F32 ? (mathfn){TJL_EXPM1F, "expm1f", true} : (mathfn){TJL_EXPM1D, "expm1", true},
                     x, NULL);
}

/* ---- the emitters ------------------------------------------------------------------ */

#define EMIT(name) static V e_##name(tjl_ir *ir, tj_dtype t, const tjl_args *a)
#define FLOAT_ONLY(what) REQUIRE(is_float(t), what)

EMIT(neg) {
    REQUIRE(t != TJ_BOOL, "neg");
    return is_float(t) ? LLVMBuildFNeg(BLD, A, "") : LLVMBuildNeg(BLD, A, "");
}
EMIT(abs) {
    if (is_float(t)) return tjl_intrinsic(ir, "llvm.fabs", A, NULL);
    if (t == TJ_BOOL) return A;
    return sel(ir, compare(ir, t, LT, A, zero(ir, t)), LLVMBuildNeg(BLD, A, ""), A);
}
EMIT(exp) { FLOAT_ONLY("exp"); return exp_t(ir, t, A); }
EMIT(log) { FLOAT_ONLY("log"); return log_t(ir, t, A); }
EMIT(log1p) { FLOAT_ONLY("log1p"); return log1p_t(ir, t, A); }
EMIT(expm1) { FLOAT_ONLY("expm1"); return expm1_t(ir, t, A); }
EMIT(sqrt) { FLOAT_ONLY("sqrt"); return tjl_intrinsic(ir, "llvm.sqrt", A, NULL); }
EMIT(rsqrt) { FLOAT_ONLY("rsqrt"); return fdiv(ir, one(ir, t), tjl_intrinsic(ir, "llvm.sqrt", A, NULL)); }
EMIT(sin) { FLOAT_ONLY("sin"); return sin_t(ir, t, A); }
EMIT(cos) { FLOAT_ONLY("cos"); return cos_t(ir, t, A); }
EMIT(tanh) { FLOAT_ONLY("tanh"); return tanh_t(ir, t, A); }
EMIT(sigmoid) {
    FLOAT_ONLY("sigmoid");
    if (t == TJ_F32) return tjl_math(ir, TJL_SIGMOIDF, A, NULL);
    return fdiv(ir, one(ir, t), add(ir, t, one(ir, t), exp_t(ir, t, LLVMBuildFNeg(BLD, A, ""))));
}
EMIT(silu) {
    FLOAT_ONLY("silu");
    if (t == TJ_F32) return tjl_math(ir, TJL_SILUF, A, NULL);
    return fdiv(ir, A, add(ir, t, one(ir, t), exp_t(ir, t, LLVMBuildFNeg(BLD, A, ""))));
}
EMIT(relu) {
    REQUIRE(t != TJ_BOOL, "relu");
    return sel(ir, compare(ir, t, LT, A, zero(ir, t)), zero(ir, t), A);
}
/* pw_math.h's tjm_gelu_tanh / tjm_gelu_erf; p0 picks (approximate='tanh' is 1) */
EMIT(gelu) {
    FLOAT_ONLY("gelu");
    V half_x = mul(ir, t, tjl_const(ir, t, t == TJ_F32 ? 0.5f : 0.5), A);
    V inner;
    if (a->raw[0] != 0) {
        V x3 = mul(ir, t, mul(ir, t, mul(ir, t, tjl_const(ir, t, t == TJ_F32 ? 0.044715f : 0.044715), A), A), A);
        V k = tjl_const(ir, t, t == TJ_F32 ? (double)0.79788456080286536f : 0.79788456080286536);
        inner = tanh_t(ir, t, mul(ir, t, k, add(ir, t, A, x3)));
    } else {
        V k = tjl_const(ir, t, t == TJ_F32 ? (double)0.70710678118654752f : 0.70710678118654752);
        inner = erf_t(ir, t, mul(ir, t, A, k));
    }
    return mul(ir, t, half_x, add(ir, t, one(ir, t), inner));
}
EMIT(erf) { FLOAT_ONLY("erf"); return erf_t(ir, t, A); }
EMIT(reciprocal) { FLOAT_ONLY("reciprocal"); return fdiv(ir, one(ir, t), A); }
EMIT(sign) {
    if (t == TJ_BOOL) return A;
    LLVMTypeRef it = t == TJ_I64 ? ir->i64 : ir->i32; /* C's int for floats, then converted */
    V pos = LLVMBuildZExt(BLD, compare(ir, t, GT, A, zero(ir, t)), it, "");
    V negv = LLVMBuildZExt(BLD, compare(ir, t, LT, A, zero(ir, t)), it, "");
    V s = LLVMBuildSub(BLD, pos, negv, "");
    return is_float(t) ? LLVMBuildSIToFP(BLD, s, tjl_type(ir, t), "") : s;
}
EMIT(floor) { return is_float(t) ? tjl_intrinsic(ir, "llvm.floor", A, NULL) : A; }
EMIT(ceil) { return is_float(t) ? tjl_intrinsic(ir, "llvm.ceil", A, NULL) : A; }
EMIT(round) { return is_float(t) ? tjl_intrinsic(ir, "llvm.nearbyint", A, NULL) : A; }
EMIT(logical_not) {
    REQUIRE(t == TJ_BOOL, "logical_not");
    return LLVMBuildNot(BLD, A, "");
}
/* over bools (PyTorch's add and mul of bool tensors): a or (alpha and b), a and b */
EMIT(add) {
    if (t == TJ_BOOL) return LLVMBuildOr(BLD, A, LLVMBuildAnd(BLD, P0, B, ""), "");
    return add(ir, t, A, mul(ir, t, P0, B));
}
EMIT(sub) { REQUIRE(t != TJ_BOOL, "sub"); return sub(ir, t, A, mul(ir, t, P0, B)); }
EMIT(mul) { return t == TJ_BOOL ? LLVMBuildAnd(BLD, A, B, "") : mul(ir, t, A, B); }
EMIT(div) { FLOAT_ONLY("div"); return fdiv(ir, A, B); }
EMIT(pow) {
    if (t == TJ_F32) return call_math(ir, (mathfn){TJL_POWF, "powf", false}, A, B);
    if (t == TJ_F64) return call_math(ir, (mathfn){TJL_POWD, "pow", true}, A, B);
    REQUIRE(t == TJ_I64, "pow");
    return tjl_libm(ir, "tjl_ipow", A, B); /* jit.c defines it: pw_math.h's tjm_ipow */
}
EMIT(maximum) {
    if (t == TJ_BOOL) return LLVMBuildOr(BLD, A, B, "");
    V c = compare(ir, t, GT, A, B);
    if (is_float(t)) c = LLVMBuildOr(BLD, c, is_nan(ir, A), "");
    return sel(ir, c, A, B);
}
EMIT(minimum) {
    if (t == TJ_BOOL) return LLVMBuildAnd(BLD, A, B, "");
    V c = compare(ir, t, LT, A, B);
    if (is_float(t)) c = LLVMBuildOr(BLD, c, is_nan(ir, A), "");
    return sel(ir, c, A, B);
}
EMIT(eq) { return compare(ir, t, EQ, A, B); }
EMIT(ne) { return compare(ir, t, NE, A, B); }
EMIT(lt) { return compare(ir, t, LT, A, B); }
EMIT(le) { return compare(ir, t, LE, A, B); }
EMIT(gt) { return compare(ir, t, GT, A, B); }
EMIT(ge) { return compare(ir, t, GE, A, B); }
EMIT(logical_and) { REQUIRE(t == TJ_BOOL, "logical_and"); return LLVMBuildAnd(BLD, A, B, ""); }
EMIT(logical_or) { REQUIRE(t == TJ_BOOL, "logical_or"); return LLVMBuildOr(BLD, A, B, ""); }
EMIT(where) { return sel(ir, t == TJ_BOOL ? A : compare(ir, t, NE, A, zero(ir, t)), B, C); }
EMIT(zeros_like) {
    (void)A;
    return zero(ir, t);
}
EMIT(clamp) {
    REQUIRE(t != TJ_BOOL, "clamp");
    V lo = sel(ir, compare(ir, t, LT, A, P0), P0, A);
    return sel(ir, compare(ir, t, GT, lo, P1), P1, lo);
}
/* pw_math.h's tjm_lerp: exact at weight 0 and 1 */
static V lerp(tjl_ir *ir, tj_dtype t, V x, V y, V w) {
    V d = sub(ir, t, y, x);
    V near = compare(ir, t, LT, tjl_intrinsic(ir, "llvm.fabs", w, NULL), tjl_const(ir, t, 0.5));
    V lo = add(ir, t, x, mul(ir, t, w, d));
    V hi = sub(ir, t, y, mul(ir, t, d, sub(ir, t, one(ir, t), w)));
    return sel(ir, near, lo, hi);
}
EMIT(lerp) { FLOAT_ONLY("lerp"); return lerp(ir, t, A, B, P0); }
EMIT(lerp_tensor) { FLOAT_ONLY("lerp"); return lerp(ir, t, A, B, C); }
EMIT(addcmul) {
    REQUIRE(t != TJ_BOOL, "addcmul");
    return add(ir, t, A, mul(ir, t, mul(ir, t, P0, B), C));
}

static const tjl_emit_fn emitters[TJ_OP__COUNT] = {
#define E(id) [TJ_OP_##id] = e_##id,
    E(neg) E(abs) E(exp) E(log) E(log1p) E(expm1) E(sqrt) E(rsqrt) E(sin) E(cos) E(tanh)
    E(sigmoid) E(relu) E(gelu) E(silu) E(erf) E(reciprocal) E(sign) E(floor) E(ceil) E(round)
    E(logical_not) E(add) E(sub) E(mul) E(div) E(pow) E(maximum) E(minimum) E(eq) E(ne) E(lt)
    E(le) E(gt) E(ge) E(logical_and) E(logical_or) E(where) E(clamp) E(lerp) E(lerp_tensor)
    E(addcmul) E(zeros_like)
#undef E
};

tjl_emit_fn tjl_emitter(const tj_op_info *op) {
    if (!op) return NULL;
    const tj_op_info *form = op->inplace_of >= 0 ? tjc_op(op->inplace_of) : op;
    int id = form->scalar_base >= 0 ? form->scalar_base : form->id;
    return id >= 0 && id < TJ_OP__COUNT ? emitters[id] : NULL;
}

bool tjl_has_emitter(const tj_op_info *op) { return tjl_emitter(op) != NULL; }
