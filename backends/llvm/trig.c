/* trig.c — core/pw_trig.h's sin, cos, expm1, log1p (f32 and f64) and pow as
 * IR, emitted operation for operation in the C versions' order with no
 * fast-math flags, tjm_fma_exact as llvm.fma (its results are exact, so any
 * exact method gives them): the same bits as the C versions on every lane (tests/test_llvm_math.c). sin and cos end in a rare branch: a lane
 * beyond the reduction's range calls libm (the scalar function) or, in a
 * vector version, has its lanes redone by the scalar function. math.c's
 * table makes these module functions. */
#include <math.h>

#include "mathir.h"

#define ROUND_MAGIC 6755399441055744.0
#define LN2_HI 0.6931471805599453
#define LN2_LO 2.3190468138462996e-17

/* tjm_pow2_dd: 2^n from the bits of n + 1.5 * 2^52 (f is a double one) */
static V pow2_dd(fb *f, V n) {
    V u = bits(f, add(f, n, K(f, ROUND_MAGIC)));
    return from_bits(f, ishl(f, iadd(f, u, KI(f, 1023)), KI(f, 52)));
}
static V round_int(fb *f, V x) { return sub(f, add(f, x, K(f, ROUND_MAGIC)), K(f, ROUND_MAGIC)); }
static V fabs1(fb *f, V x) { return intrinsic1(f, "llvm.fabs", x); }

/* ---- sin, cos ------------------------------------------------------------------ */

static V trig_reduce(fb *f, V x, V *lo, V *q) {
    V fn = round_int(f, mul(f, x, K(f, 0.6366197723675814)));
    *q = iand(f, bits(f, add(f, fn, K(f, ROUND_MAGIC))), KI(f, 3));
    V r1 = fma3(f, neg(f, fn), K(f, 1.5707963267948966), x);
    V w = mul(f, fn, K(f, 6.123233995736766e-17));
    V we = fma3(f, fn, K(f, 6.123233995736766e-17), neg(f, w));
    V r2 = sub(f, r1, w), bb = sub(f, r2, r1);
    V e2 = add(f, sub(f, r1, sub(f, r2, bb)), sub(f, neg(f, w), bb));
    V l = sub(f, sub(f, e2, we), mul(f, fn, K(f, -1.4973849048591698e-33)));
    V r = add(f, r2, l);
    *lo = sub(f, l, sub(f, r, r2));
    return r;
}

static V sin_poly(fb *f, V r, V lo) {
    static const double c[] = {1.0 / 355687428096000.0, -(1.0 / 1307674368000.0), 1.0 / 6227020800.0,
                               -(1.0 / 39916800.0),     1.0 / 362880.0,           -(1.0 / 5040.0),
                               1.0 / 120.0,             -(1.0 / 6.0)};
    V z = mul(f, r, r);
    V s = horner(f, z, c, 8);
    return add(f, r, add(f, mul(f, mul(f, r, z), s), lo));
}
static V cos_poly(fb *f, V r, V lo) {
    static const double c[] = {-(1.0 / 6402373705728000.0), 1.0 / 20922789888000.0, -(1.0 / 87178291200.0),
                               1.0 / 479001600.0,            -(1.0 / 3628800.0),     1.0 / 40320.0,
                               -(1.0 / 720.0),               1.0 / 24.0};
    V z = mul(f, r, r), hz = mul(f, K(f, 0.5), z);
    V c8 = horner(f, z, c, 8);
    V w = sub(f, K(f, 1.0), hz);
    V corr = sub(f, mul(f, mul(f, z, z), c8), mul(f, r, lo));
    return add(f, w, add(f, sub(f, sub(f, K(f, 1.0), w), hz), corr));
}
/* tjm_sincos_fast over doubles */
static V sincos_fast(fb *f, V x, bool odd) {
    V lo, q;
    V r = trig_reduce(f, x, &lo, &q);
    q = iadd(f, q, KI(f, odd));
    V s = sin_poly(f, r, lo), c = cos_poly(f, r, lo);
    V v = sel(f, ine(f, iand(f, q, KI(f, 1)), KI(f, 0)), c, s);
    V flip = ishl(f, iand(f, q, KI(f, 2)), KI(f, 62));
    v = from_bits(f, ixor(f, bits(f, v), flip));
    v = sel(f, eq(f, fabs1(f, x), K(f, INFINITY)), K(f, NAN), v);
    if (!odd) v = sel(f, eq(f, x, K(f, 0.0)), x, v);
    return sel(f, ne(f, x, x), x, v);
}
static V trig_huge(fb *f, V x) {
    V ax = fabs1(f, x);
    return and1(f, gt(f, ax, K(f, 1.0e9)), ne(f, ax, K(f, INFINITY)));
}

/* memory(none): libm's sin and cos touch errno only for infinities, which
 * never reach them here; said so, the loop vectoriser may call the function
 * through its vector version. */
static LLVMAttributeRef no_memory(tjl_ir *ir) {
    return LLVMCreateEnumAttribute(ir->ctx, LLVMGetEnumAttributeKindForName("memory", 6), 0);
}

/* libm's name called through f's builder (nobuiltin, as tjl_libm) */
static V libm1(fb *f, const char *name, V x) {
    tjl_ir *ir = f->ir;
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef fn = LLVMGetNamedFunction(ir->mod, name);
    if (!fn) fn = LLVMAddFunction(ir->mod, name, LLVMFunctionType(t, &t, 1, 0));
    V call = LLVMBuildCall2(f->b, LLVMGlobalGetValueType(fn), fn, &x, 1, "");
    unsigned kind = LLVMGetEnumAttributeKindForName("nobuiltin", 9);
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ir->ctx, kind, 0));
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, no_memory(ir));
    return call;
}

/* The full function: the reduction's result, and past the range (rare) libm
 * for a scalar, the scalar function self lane by lane for a vector. */
static V trig_body(fb *f, V x, bool f32, bool odd, tjl_fn self, const char *libm) {
    fb d = f32 ? wide(f) : *f;
    V xd = f32 ? widen(f, x) : x;
    V v = sincos_fast(&d, xd, odd);
    if (f32) v = narrow(f, v);
    V huge = trig_huge(&d, xd);
    LLVMContextRef ctx = f->ir->ctx;
    LLVMBasicBlockRef here = LLVMGetInsertBlock(f->b);
    LLVMValueRef fn = LLVMGetBasicBlockParent(here);
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, no_memory(f->ir));
    LLVMBasicBlockRef fix = LLVMAppendBasicBlockInContext(ctx, fn, "huge");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ctx, fn, "done");
    V any = f->vf ? intrinsic1(f, "llvm.vector.reduce.or", huge) : huge;
    LLVMBuildCondBr(f->b, any, fix, done);
    LLVMPositionBuilderAtEnd(f->b, fix);
    V fixed = v;
    if (!f->vf) fixed = libm1(f, libm, x);
    else {
        LLVMValueRef scalar = tjl_math_fn(f->ir, self);
        LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
        for (unsigned i = 0; i < f->vf; i++) {
            V lane = LLVMConstInt(i32, i, 0);
            V xi = LLVMBuildExtractElement(f->b, x, lane, "");
            V ri = LLVMBuildCall2(f->b, LLVMGlobalGetValueType(scalar), scalar, &xi, 1, "");
            fixed = LLVMBuildInsertElement(f->b, fixed, ri, lane, "");
        }
    }
    LLVMBasicBlockRef fix_end = LLVMGetInsertBlock(f->b);
    LLVMBuildBr(f->b, done);
    LLVMPositionBuilderAtEnd(f->b, done);
    V phi = LLVMBuildPhi(f->b, f->t, "");
    V vals[2] = {v, fixed};
    LLVMBasicBlockRef from[2] = {here, fix_end};
    LLVMAddIncoming(phi, vals, from, 2);
    return phi;
}
V tjl_sinf_body(fb *f, V x) { return trig_body(f, x, true, false, TJL_SINF, "sinf"); }
V tjl_cosf_body(fb *f, V x) { return trig_body(f, x, true, true, TJL_COSF, "cosf"); }
V tjl_sind_body(fb *f, V x) { return trig_body(f, x, false, false, TJL_SIND, "sin"); }
V tjl_cosd_body(fb *f, V x) { return trig_body(f, x, false, true, TJL_COSD, "cos"); }

/* ---- expm1 ------------------------------------------------------------------------ */

static V expm1_tail(fb *f, V r) {
    static const double c[] = {1.0 / 87178291200.0, 1.0 / 6227020800.0, 1.0 / 479001600.0,
                               1.0 / 39916800.0,    1.0 / 3628800.0,    1.0 / 362880.0,
                               1.0 / 40320.0,       1.0 / 5040.0,       1.0 / 720.0,
                               1.0 / 120.0,         1.0 / 24.0,         1.0 / 6.0,
                               0.5};
    return mul(f, mul(f, r, r), horner(f, r, c, 13));
}
static V expm1d(fb *f, V x) {
    V xc = sel(f, ne(f, x, x), K(f, 0.0),
               sel(f, lt(f, x, K(f, -40.0)), K(f, -40.0), sel(f, gt(f, x, K(f, 710.0)), K(f, 710.0), x)));
    V fn = round_int(f, mul(f, xc, K(f, 1.4426950408889634)));
    V r = fma3(f, neg(f, fn), K(f, LN2_HI), xc);
    r = sub(f, r, mul(f, fn, K(f, LN2_LO)));
    V t = expm1_tail(f, r);
    V big = gt(f, fn, K(f, 53.0));
    V s = pow2_dd(f, sel(f, big, K(f, 0.0), fn));
    V near = add(f, add(f, sub(f, s, K(f, 1.0)), mul(f, s, r)), mul(f, s, t));
    V n1 = round_int(f, mul(f, fn, K(f, 0.5)));
    V far = mul(f, mul(f, add(f, add(f, K(f, 1.0), r), t), pow2_dd(f, n1)), pow2_dd(f, sub(f, fn, n1)));
    V v = sel(f, big, far, near);
    v = sel(f, eq(f, x, K(f, 0.0)), x, v);
    return sel(f, ne(f, x, x), x, v);
}
V tjl_expm1d_body(fb *f, V x) { return expm1d(f, x); }
V tjl_expm1f_body(fb *f, V x) {
    fb d = wide(f);
    return narrow(f, expm1d(&d, widen(f, x)));
}

/* ---- log (double-double), log1p ------------------------------------------------------ */

static V log_dd(fb *f, V x, V *lo) {
    V tiny = lt(f, x, K(f, 2.2250738585072014e-308));
    V xs = sel(f, tiny, mul(f, x, K(f, 18014398509481984.0)), x);
    V u = bits(f, xs);
    V field = iand(f, ilshr(f, u, KI(f, 52)), KI(f, 0x7ff));
    V fe = sub(f, from_bits(f, LLVMBuildOr(f->b, field, KI(f, 0x4330000000000000ull), "")),
               K(f, 4503599627370496.0));
    V k = sub(f, fe, sel(f, tiny, K(f, 1077.0), K(f, 1023.0)));
    V m = from_bits(f, LLVMBuildOr(f->b, iand(f, u, KI(f, 0x000fffffffffffffull)), KI(f, 0x3ff0000000000000ull), ""));
    V big = gt(f, m, K(f, 1.4142135623730950488));
    m = sel(f, big, mul(f, m, K(f, 0.5)), m);
    k = sel(f, big, add(f, k, K(f, 1.0)), k);
    V fr = sub(f, m, K(f, 1.0));
    V dh = add(f, K(f, 2.0), fr), dl = sub(f, fr, sub(f, dh, K(f, 2.0)));
    V sh = dv(f, fr, dh);
    V sl = dv(f, sub(f, fma3(f, neg(f, sh), dh, fr), mul(f, sh, dl)), dh);
    V s2h = mul(f, sh, sh), s2l = fma3(f, sh, sh, neg(f, s2h));
    V s3h = mul(f, s2h, sh), s3l = add(f, fma3(f, s2h, sh, neg(f, s3h)), mul(f, s2l, sh));
    static const double c[] = {0.08,       2.0 / 23.0, 2.0 / 21.0, 2.0 / 19.0, 2.0 / 17.0, 2.0 / 15.0,
                               2.0 / 13.0, 2.0 / 11.0, 2.0 / 9.0,  2.0 / 7.0,  0.4};
    V z = s2h;
    V qz = mul(f, horner(f, z, c, 11), z);
    V ch = add(f, K(f, 0.6666666666666666), qz);
    V cl = add(f, add(f, sub(f, K(f, 0.6666666666666666), ch), qz), K(f, 3.700743415417188e-17));
    V th = mul(f, s3h, ch);
    V tl = add(f, add(f, fma3(f, s3h, ch, neg(f, th)), add(f, mul(f, s3h, cl), mul(f, s3l, ch))),
               mul(f, mul(f, K(f, 2.0), s2h), sl));
    V sh2 = mul(f, K(f, 2.0), sh);
    V mh = add(f, sh2, th);
    V ml = add(f, add(f, sub(f, sh2, mh), th), add(f, mul(f, K(f, 2.0), sl), tl));
    V kh = mul(f, k, K(f, LN2_HI));
    V kl = add(f, fma3(f, k, K(f, LN2_HI), neg(f, kh)), mul(f, k, K(f, LN2_LO)));
    V h = add(f, kh, mh), hb = sub(f, h, kh);
    V e = add(f, add(f, sub(f, kh, sub(f, h, hb)), sub(f, mh, hb)), add(f, kl, ml));
    V hi = add(f, h, e);
    V l = sub(f, e, sub(f, hi, h));
    V zero = eq(f, x, K(f, 0.0)), keep = or1(f, eq(f, x, K(f, INFINITY)), ne(f, x, x));
    *lo = sel(f, or1(f, zero, keep), K(f, 0.0), l);
    return sel(f, zero, K(f, -INFINITY), sel(f, keep, x, hi));
}
static V log1pd(fb *f, V x) {
    V u = add(f, K(f, 1.0), x);
    V c = sel(f, lt(f, fabs1(f, x), K(f, 1.0)), sub(f, x, sub(f, u, K(f, 1.0))), sub(f, K(f, 1.0), sub(f, u, x)));
    V lo;
    V hi = log_dd(f, u, &lo);
    V v = add(f, hi, add(f, lo, dv(f, c, u)));
    v = sel(f, eq(f, x, K(f, -1.0)), K(f, -INFINITY), v);
    v = sel(f, lt(f, x, K(f, -1.0)), K(f, NAN), v);
    v = sel(f, or1(f, eq(f, x, K(f, INFINITY)), eq(f, x, K(f, 0.0))), x, v);
    return sel(f, ne(f, x, x), x, v);
}
V tjl_log1pd_body(fb *f, V x) { return log1pd(f, x); }
V tjl_log1pf_body(fb *f, V x) {
    fb d = wide(f);
    return narrow(f, log1pd(&d, widen(f, x)));
}

/* ---- pow ------------------------------------------------------------------------------- */

static V exp_dd(fb *f, V yh, V yl) {
    V y_nan = ne(f, yh, yh);
    yl = sel(f, ole(f, fabs1(f, yh), K(f, 800.0)), yl, K(f, 0.0));
    yh = sel(f, y_nan, K(f, 0.0),
             sel(f, lt(f, yh, K(f, -800.0)), K(f, -800.0), sel(f, gt(f, yh, K(f, 800.0)), K(f, 800.0), yh)));
    V fn = round_int(f, mul(f, yh, K(f, 1.4426950408889634)));
    V r = fma3(f, neg(f, fn), K(f, LN2_HI), yh);
    r = add(f, r, sub(f, yl, mul(f, fn, K(f, LN2_LO))));
    V e = add(f, add(f, K(f, 1.0), r), expm1_tail(f, r));
    V n1 = round_int(f, mul(f, fn, K(f, 0.5)));
    V v = mul(f, mul(f, e, pow2_dd(f, n1)), pow2_dd(f, sub(f, fn, n1)));
    return sel(f, y_nan, K(f, NAN), v);
}

/* C99's special cases after v = |a|^b (f is a's type; quiet: its NaNs' quiet bit) */
static V pow_specials(fb *f, V a, V b, V v, unsigned long long quiet, unsigned sign_shift) {
    V half = mul(f, b, K(f, 0.5));
    V b_int = eq(f, intrinsic1(f, "llvm.floor", b), b);
    V b_odd = and1(f, b_int, ne(f, intrinsic1(f, "llvm.floor", half), half));
    V a_neg = ine(f, ilshr(f, bits(f, a), KI(f, sign_shift)), KI(f, 0));
    v = sel(f, and1(f, a_neg, b_odd), neg(f, v), v);
    V bad = and1(f, and1(f, lt(f, a, K(f, 0.0)), ne(f, a, K(f, -INFINITY))), not1(f, b_int));
    v = sel(f, bad, K(f, NAN), v);
    v = sel(f, and1(f, eq(f, a, K(f, -1.0)), eq(f, fabs1(f, b), K(f, INFINITY))), K(f, 1.0), v);
    V sum = add(f, a, b);
    V snan_a = and1(f, ne(f, a, a), ieq(f, iand(f, bits(f, a), KI(f, quiet)), KI(f, 0)));
    V snan_b = and1(f, ne(f, b, b), ieq(f, iand(f, bits(f, b), KI(f, quiet)), KI(f, 0)));
    v = sel(f, eq(f, b, K(f, 0.0)), sel(f, snan_a, sum, K(f, 1.0)), v);
    return sel(f, eq(f, a, K(f, 1.0)), sel(f, snan_b, sum, K(f, 1.0)), v);
}
V tjl_powd_body(fb *f, V a, V b) {
    V ll;
    V lh = log_dd(f, fabs1(f, a), &ll);
    V yh = mul(f, b, lh);
    V v = exp_dd(f, yh, add(f, fma3(f, b, lh, neg(f, yh)), mul(f, b, ll)));
    return pow_specials(f, a, b, v, 0x8000000000000ull, 63);
}
V tjl_powf_body(fb *f, V a, V b) {
    fb d = wide(f);
    V ll, bd = widen(f, b);
    V lh = log_dd(&d, widen(f, fabs1(f, a)), &ll);
    V yh = mul(&d, bd, lh);
    V v = narrow(f, exp_dd(&d, yh, add(&d, fma3(&d, bd, lh, neg(&d, yh)), mul(&d, bd, ll))));
    return pow_specials(f, a, b, v, 0x400000, 31);
}
