/* math.c — the transcendentals as inline IR: the vectorisable f32 exp, log,
 * tanh and erf and the f64 exp, log, tanh and erf of core/pw_math.h (trig.c
 * has those of core/pw_trig.h), emitted operation for operation in the same order with no
 * fast-math flags (so no contraction into FMA and no reassociation), which
 * makes a kernel's bits equal to the C versions' (tests/test_llvm_math.c
 * checks it over sweeps of the floats). Each is an internal alwaysinline
 * function of the module, made on first use, so the optimiser inlines it into
 * the loop and vectorises it there. Also: calls of libm by name. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mathir.h"

static V call_with(tjl_ir *ir, LLVMBuilderRef b, tjl_fn which, V x, V y);
static LLVMValueRef get_vector_fn(tjl_ir *ir, tjl_fn which, unsigned vf);

/* An overloaded intrinsic on its operands' type, called through builder b. */
static V intrinsic_with(tjl_ir *ir, LLVMBuilderRef b, const char *name, V x, V y) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef t = LLVMTypeOf(x);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(ir->mod, id, &t, 1);
    V args[2] = {x, y};
    return LLVMBuildCall2(b, LLVMIntrinsicGetType(ir->ctx, id, &t, 1), fn, args, y ? 2 : 1, "");
}

LLVMValueRef tjl_intrinsic(tjl_ir *ir, const char *name, LLVMValueRef a, LLVMValueRef b) {
    return intrinsic_with(ir, ir->b, name, a, b);
}
/* A call from the function f is building. */
static V call_fn(fb *f, tjl_fn which, V x, V y) {
    if (!f->vf) return call_with(f->ir, f->b, which, x, y);
    LLVMValueRef fn = get_vector_fn(f->ir, which, f->vf); /* a vector body calls vector bodies */
    V args[1] = {x};
    (void)y;
    return LLVMBuildCall2(f->b, LLVMGlobalGetValueType(fn), fn, args, 1, "");
}

/* 2^n from an integer n in the normal exponent range (shift into the exponent). */
static V pow2i(fb *f, V n, int bias, int shift) {
    V e = LLVMBuildAdd(f->b, n, KI(f, (unsigned long long)bias), "");
    return from_bits(f, LLVMBuildShl(f->b, e, KI(f, (unsigned long long)shift), ""));
}

/* ---- f32 (tjm_expf, tjm_logf, tjm_tanhf) -------------------------------------- */

/* tjm_expm1f_core: e^r - 1 of the reduced argument, and n of 2^n (its
 * tjm_fmaf steps as llvm.fma; Estrin's scheme: three independent pairs,
 * then two steps in r^2) */
static V expm1f_core(fb *f, V y, V *n) {
    V fn = sub(f, fma3(f, y, K(f, 1.44269504088896341f), K(f, 12582912.0f)), K(f, 12582912.0f));
    *n = LLVMBuildFPToSI(f->b, fn, f->it, "");
    V r = fma3(f, fn, K(f, -0.693359375f), y);
    r = fma3(f, fn, K(f, 2.12194440e-4f), r);
    V z = mul(f, r, r);
    static const double c[] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                               4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
    V pa = fma3(f, K(f, c[0]), r, K(f, c[1])), pb = fma3(f, K(f, c[2]), r, K(f, c[3]));
    V pc = fma3(f, K(f, c[4]), r, K(f, c[5]));
    V p = fma3(f, fma3(f, pa, z, pb), z, pc);
    return fma3(f, p, z, r);
}
/* tjm_expf_core: e^r */
static V expf_core(fb *f, V y, V *n) { return add(f, expm1f_core(f, y, n), K(f, 1.0f)); }

static V expf_body(fb *f, V x) {
    V nan = ne(f, x, x);
    V xc = sel(f, nan, K(f, 0.0), sel(f, lt(f, x, K(f, -104.0f)), K(f, -104.0f),
                                      sel(f, gt(f, x, K(f, 89.0f)), K(f, 89.0f), x)));
    V n, p = expf_core(f, xc, &n);
    V n1 = LLVMBuildSDiv(f->b, n, KI(f, 2), "");
    V res = mul(f, mul(f, p, pow2i(f, n1, 127, 23)), pow2i(f, LLVMBuildSub(f->b, n, n1, ""), 127, 23));
    return sel(f, nan, x, res);
}

static V logf_body(fb *f, V x) {
    V tiny = lt(f, x, K(f, 1.17549435e-38f));
    V u = bits(f, sel(f, tiny, mul(f, x, K(f, 33554432.0f)), x));
    V e = LLVMBuildAnd(f->b, LLVMBuildLShr(f->b, u, KI(f, 23), ""), KI(f, 0xff), "");
    e = LLVMBuildSub(f->b, LLVMBuildSub(f->b, e, KI(f, 127), ""), sel(f, tiny, KI(f, 25), KI(f, 0)), "");
    V m = from_bits(f, LLVMBuildOr(f->b, LLVMBuildAnd(f->b, u, KI(f, 0x007fffff), ""), KI(f, 0x3f800000), ""));
    V big = gt(f, m, K(f, 1.41421356237f));
    m = sel(f, big, mul(f, m, K(f, 0.5f)), m);
    e = LLVMBuildAdd(f->b, e, LLVMBuildZExt(f->b, big, f->it, ""), "");
    V fr = sub(f, m, K(f, 1.0f)), z = mul(f, fr, fr), fe = LLVMBuildSIToFP(f->b, e, f->t, "");
    static const double c[] = {7.0376836292e-2f, -1.1514610310e-1f, 1.1676998740e-1f,
                               -1.2420140846e-1f, 1.4249322787e-1f, -1.6668057665e-1f,
                               2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f};
    V y = mul(f, mul(f, horner(f, fr, c, 9), fr), z);
    y = add(f, y, mul(f, K(f, -2.12194440e-4f), fe));
    y = add(f, y, mul(f, K(f, -0.5f), z));
    V r = add(f, add(f, fr, y), mul(f, K(f, 0.693359375f), fe));
    r = sel(f, eq(f, x, K(f, 0.0)), K(f, -INFINITY), r);
    r = sel(f, lt(f, x, K(f, 0.0)), K(f, NAN), r);
    r = sel(f, eq(f, x, K(f, INFINITY)), x, r);
    return sel(f, ne(f, x, x), x, r);
}

/* tjm_expf_sigmoid_range: e^y with y clamped into [-86, 89] (NaN to -86) */
static V expf_sigmoid_range(fb *f, V y) {
    y = sel(f, gt(f, y, K(f, -86.0f)), y, K(f, -86.0f));
    y = sel(f, lt(f, y, K(f, 89.0f)), y, K(f, 89.0f));
    V n, p = expf_core(f, y, &n);
    return mul(f, mul(f, p, K(f, 2.0f)), pow2i(f, n, 126, 23)); /* 2 p 2^(n-1) */
}

static V sigmoidf_body(fb *f, V x) {
    V r = dv(f, K(f, 1.0f), add(f, K(f, 1.0f), expf_sigmoid_range(f, neg(f, x))));
    return sel(f, ne(f, x, x), add(f, x, x), r);
}

static V siluf_body(fb *f, V x) {
    V r = dv(f, x, add(f, K(f, 1.0f), expf_sigmoid_range(f, neg(f, x))));
    return sel(f, ne(f, x, x), add(f, x, x), r);
}

static V tanhf_body(fb *f, V x) {
    V ux = bits(f, x), sign = iand(f, ux, KI(f, 0x80000000u));
    V ax = from_bits(f, iand(f, ux, KI(f, 0x7fffffffu)));
    V y = mul(f, K(f, 2.0f), sel(f, lt(f, ax, K(f, 9.1f)), ax, K(f, 9.1f)));
    V n, q = expm1f_core(f, y, &n), s = pow2i(f, n, 127, 23);
    V m = fma3(f, q, s, sub(f, s, K(f, 1.0f)));
    V r = from_bits(f, or1(f, bits(f, dv(f, m, add(f, m, K(f, 2.0f)))), sign));
    return sel(f, ne(f, x, x), add(f, x, x), r);
}

/* ---- f64 (tjm_expd, tjm_logd, tjm_tanhd, tjm_erfd) ------------------------------ */

/* The reduction of logd_body: m in [sqrt(1/2), sqrt(2))
 * as f = m - 1, and the exponent e as a float. */
static V log_reduce(fb *f, V x, V *fe) {
    V tiny = lt(f, x, K(f, 2.2250738585072014e-308));
    V u = bits(f, sel(f, tiny, mul(f, x, K(f, 18014398509481984.0)), x));
    V e = LLVMBuildAnd(f->b, LLVMBuildLShr(f->b, u, KI(f, 52), ""), KI(f, 0x7ff), "");
    e = LLVMBuildSub(f->b, LLVMBuildSub(f->b, e, KI(f, 1023), ""), sel(f, tiny, KI(f, 54), KI(f, 0)), "");
    V m = from_bits(f, LLVMBuildOr(f->b, LLVMBuildAnd(f->b, u, KI(f, 0x000fffffffffffffull), ""),
                                   KI(f, 0x3ff0000000000000ull), ""));
    V big = gt(f, m, K(f, 1.4142135623730950488));
    m = sel(f, big, mul(f, m, K(f, 0.5)), m);
    e = LLVMBuildAdd(f->b, e, LLVMBuildZExt(f->b, big, f->it, ""), "");
    *fe = LLVMBuildSIToFP(f->b, e, f->t, "");
    return sub(f, m, K(f, 1.0));
}

static const double logd_p[] = {1.01875663804580931796E-4, 4.97494994976747001425E-1,
                                4.70579119878881725854E0, 1.44989225341610930846E1,
                                1.79368678507819816313E1, 7.70838733755885391666E0};
static const double logd_q[] = {1.12873587189167450590E1, 4.52279145837532221105E1,
                                8.29875266912776603211E1, 7.11544750618563894466E1,
                                2.31251620126765340583E1};

/* logd's special cases: 0, negatives, +inf and NaN */
static V log_specials(fb *f, V x, V r) {
    r = sel(f, eq(f, x, K(f, 0.0)), K(f, -INFINITY), r);
    r = sel(f, lt(f, x, K(f, 0.0)), K(f, NAN), r);
    r = sel(f, eq(f, x, K(f, INFINITY)), x, r);
    return sel(f, ne(f, x, x), x, r);
}

static V expd_body(fb *f, V x) {
    V nan = ne(f, x, x);
    V xc = sel(f, nan, K(f, 0.0), sel(f, lt(f, x, K(f, -746.0)), K(f, -746.0),
                                      sel(f, gt(f, x, K(f, 710.0)), K(f, 710.0), x)));
    V fn = sub(f, add(f, mul(f, xc, K(f, 1.4426950408889634073599)), K(f, 6755399441055744.0)),
               K(f, 6755399441055744.0));
    V n = LLVMBuildFPToSI(f->b, fn, f->it, "");
    V r = sub(f, xc, mul(f, fn, K(f, 6.93145751953125E-1)));
    r = sub(f, r, mul(f, fn, K(f, 1.42860682030941723212E-6)));
    V z = mul(f, r, r);
    static const double P[] = {1.26177193074810590878E-4, 3.02994407707441961300E-2,
                               9.99999999999999999910E-1};
    static const double Q[] = {3.00198505138664455042E-6, 2.52448340349684104192E-3,
                               2.27265548208155028766E-1, 2.00000000000000000009E0};
    V p = mul(f, r, horner(f, z, P, 3));
    V q = horner(f, z, Q, 4);
    V e = dv(f, p, sub(f, q, p));
    e = add(f, K(f, 1.0), mul(f, K(f, 2.0), e));
    V n1 = LLVMBuildSDiv(f->b, n, KI(f, 2), "");
    V res = mul(f, mul(f, e, pow2i(f, n1, 1023, 52)), pow2i(f, LLVMBuildSub(f->b, n, n1, ""), 1023, 52));
    return sel(f, nan, x, res);
}

static V logd_body(fb *f, V x) {
    V fe;
    V fr = log_reduce(f, x, &fe), z = mul(f, fr, fr);
    V y = mul(f, fr, dv(f, mul(f, z, horner(f, fr, logd_p, 6)), horner1(f, fr, logd_q, 5)));
    y = add(f, y, mul(f, K(f, -2.121944400546905827679e-4), fe));
    y = add(f, y, mul(f, K(f, -0.5), z));
    V r = add(f, add(f, fr, y), mul(f, K(f, 0.693359375), fe));
    return log_specials(f, x, r);
}

static V tanhd_body(fb *f, V x) {
    V ax = sel(f, lt(f, x, K(f, 0.0)), neg(f, x), x), z = mul(f, x, x);
    static const double P[] = {-9.64399179425052238628E-1, -9.92877231001918586564E1,
                               -1.61468768441708447952E3};
    static const double Q[] = {1.12811678491632931402E2, 2.23548839060100448583E3,
                               4.84406305325125486048E3};
    V small = add(f, x, dv(f, mul(f, mul(f, x, z), horner(f, z, P, 3)), horner1(f, z, Q, 3)));
    V e = call_fn(f, TJL_EXPD, mul(f, K(f, 2.0), ax), NULL);
    V big = sub(f, K(f, 1.0), dv(f, K(f, 2.0), add(f, e, K(f, 1.0))));
    big = sel(f, lt(f, x, K(f, 0.0)), neg(f, big), big);
    small = sel(f, eq(f, x, K(f, 0.0)), x, small);
    return sel(f, lt(f, ax, K(f, 0.625)), small, big);
}

static V erfd_body(fb *f, V x) {
    V ax = sel(f, lt(f, x, K(f, 0.0)), neg(f, x), x), z = mul(f, x, x);
    static const double T[] = {9.60497373987051638749E0, 9.00260197203842689217E1,
                               2.23200534594684319226E3, 7.00332514112805075473E3,
                               5.55923013010394962768E4};
    static const double U[] = {3.35617141647503099647E1, 5.21357949780152679795E2,
                               4.59432382970980127987E3, 2.26290000613890934246E4,
                               4.92673942608635921086E4};
    static const double P[] = {2.46196981473530512524E-10, 5.64189564831068821977E-1,
                               7.46321056442269912687E0, 4.86371970985681366614E1,
                               1.96520832956077098242E2, 5.26445194995477358631E2,
                               9.34528527171957607540E2, 1.02755188689515710272E3,
                               5.57535335369399327526E2};
    static const double Q[] = {1.32281951154744992508E1, 8.67072140885989742329E1,
                               3.54937778887819891062E2, 9.75708501743205489753E2,
                               1.82390916687909736289E3, 2.24633760818710981792E3,
                               1.65666309194161350182E3, 5.57535340817727675546E2};
    V small = dv(f, mul(f, x, horner(f, z, T, 5)), horner1(f, z, U, 5));
    V a = sel(f, lt(f, ax, K(f, 8.0)), ax, K(f, 8.0));
    V e = call_fn(f, TJL_EXPD, mul(f, neg(f, a), a), NULL);
    V big = sub(f, K(f, 1.0), dv(f, mul(f, e, horner(f, a, P, 9)), horner1(f, a, Q, 8)));
    big = sel(f, lt(f, x, K(f, 0.0)), neg(f, big), big);
    V r = sel(f, lt(f, ax, K(f, 1.0)), small, big);
    return sel(f, ne(f, x, x), x, r);
}

/* tjm_erff: x (1 + T(x^2)) below 1, else 1 - e^(-b^2) G(1/b), b = |x| in [1, 4] */
static V erff_body(fb *f, V x) {
    static const double t[] = {7.898210184421817e-05f, -8.024354121533627e-04f,
                               5.1900535770086015e-03f, -2.685480853680238e-02f,
                               1.1283612428235859e-01f, -3.7612628843324375e-01f,
                               1.283791665100518e-01f};
    static const double g[] = {2.9677235918169887e-02f, -1.7400144137451656e-01f,
                               4.245884457081541e-01f,  -5.183950056395172e-01f,
                               2.2255830175326174e-01f, 2.390853734375367e-01f,
                               -3.78960746404066e-01f,  2.1224172375131165e-02f,
                               5.61681487835096e-01f,   1.2575778950791878e-04f};
    V a = sel(f, lt(f, x, K(f, 0.0)), neg(f, x), x), z = mul(f, x, x);
    V small = add(f, x, mul(f, x, horner(f, z, t, 7)));
    V b = sel(f, lt(f, a, K(f, 4.0f)), a, K(f, 4.0f));
    b = sel(f, gt(f, b, K(f, 1.0f)), b, K(f, 1.0f));
    V e = call_fn(f, TJL_EXPF, mul(f, neg(f, b), b), NULL);
    V big = sub(f, K(f, 1.0f), mul(f, e, horner(f, dv(f, K(f, 1.0f), b), g, 10)));
    big = sel(f, lt(f, x, K(f, 0.0)), neg(f, big), big);
    V r = sel(f, lt(f, a, K(f, 1.0f)), small, big);
    return sel(f, ne(f, x, x), x, r);
}

/* ---- the module's functions -------------------------------------------------- */

static const struct {
    const char *name;
    bool f64;
    int arity;
    V (*body1)(fb *, V);
    V (*body2)(fb *, V, V);
} fns[TJL_NUM_FNS] = {
    [TJL_EXPF] = {"tjl.expf", false, 1, expf_body, NULL},
    [TJL_LOGF] = {"tjl.logf", false, 1, logf_body, NULL},
    [TJL_TANHF] = {"tjl.tanhf", false, 1, tanhf_body, NULL},
    [TJL_EXPD] = {"tjl.expd", true, 1, expd_body, NULL},
    [TJL_LOGD] = {"tjl.logd", true, 1, logd_body, NULL},
    [TJL_TANHD] = {"tjl.tanhd", true, 1, tanhd_body, NULL},
    [TJL_ERFD] = {"tjl.erfd", true, 1, erfd_body, NULL},
    [TJL_ERFF] = {"tjl.erff", false, 1, erff_body, NULL},
    [TJL_SINF] = {"tjl.sinf", false, 1, tjl_sinf_body, NULL},
    [TJL_COSF] = {"tjl.cosf", false, 1, tjl_cosf_body, NULL},
    [TJL_SIND] = {"tjl.sind", true, 1, tjl_sind_body, NULL},
    [TJL_COSD] = {"tjl.cosd", true, 1, tjl_cosd_body, NULL},
    [TJL_EXPM1F] = {"tjl.expm1f", false, 1, tjl_expm1f_body, NULL},
    [TJL_EXPM1D] = {"tjl.expm1d", true, 1, tjl_expm1d_body, NULL},
    [TJL_LOG1PF] = {"tjl.log1pf", false, 1, tjl_log1pf_body, NULL},
    [TJL_LOG1PD] = {"tjl.log1pd", true, 1, tjl_log1pd_body, NULL},
    [TJL_POWF] = {"tjl.powf", false, 2, NULL, tjl_powf_body},
    [TJL_POWD] = {"tjl.powd", true, 2, NULL, tjl_powd_body},
    [TJL_SIGMOIDF] = {"tjl.sigmoidf", false, 1, sigmoidf_body, NULL},
    [TJL_SILUF] = {"tjl.siluf", false, 1, siluf_body, NULL},
};

static void add_fn_attr(tjl_ir *ir, LLVMValueRef fn, const char *name) {
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ir->ctx, kind, 0));
}

LLVMValueRef tjl_math_fn(tjl_ir *ir, tjl_fn which) {
    LLVMValueRef fn = LLVMGetNamedFunction(ir->mod, fns[which].name);
    if (fn) return fn;
    LLVMTypeRef t = fns[which].f64 ? ir->f64 : ir->f32;
    LLVMTypeRef params[2] = {t, t};
    LLVMTypeRef fty = LLVMFunctionType(t, params, (unsigned)fns[which].arity, 0);
    fn = LLVMAddFunction(ir->mod, fns[which].name, fty);
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    add_fn_attr(ir, fn, "alwaysinline");
    add_fn_attr(ir, fn, "nounwind");
    /* the body goes in with a builder of its own: the caller's stays where it is */
    fb f = {ir, LLVMCreateBuilderInContext(ir->ctx), t, fns[which].f64 ? ir->i64 : ir->i32, 0};
    LLVMPositionBuilderAtEnd(f.b, LLVMAppendBasicBlockInContext(ir->ctx, fn, "entry"));
    V r = fns[which].arity == 1 ? fns[which].body1(&f, LLVMGetParam(fn, 0))
                                : fns[which].body2(&f, LLVMGetParam(fn, 0), LLVMGetParam(fn, 1));
    LLVMBuildRet(f.b, r);
    LLVMDisposeBuilder(f.b);
    return fn;
}

static V call_with(tjl_ir *ir, LLVMBuilderRef b, tjl_fn which, V x, V y) {
    LLVMValueRef fn = tjl_math_fn(ir, which);
    V args[2] = {x, y};
    return LLVMBuildCall2(b, LLVMGlobalGetValueType(fn), fn, args, (unsigned)fns[which].arity, "");
}

LLVMValueRef tjl_math(tjl_ir *ir, tjl_fn which, LLVMValueRef a, LLVMValueRef b) {
    return call_with(ir, ir->b, which, a, b);
}

/* ---- vector variants ---------------------------------------------------------
 * Inlined, a function's body is vectorised (and interleaved) once per call
 * in a kernel: a group of 64 nodes with 30 tanh takes the code generator a
 * few seconds. Past a few calls the functions are outlined instead: each
 * gets one vector version of the machine's width, its body built from the
 * same emitter over vector types (so the same operations lane by lane, the
 * same bits), which the loop vectoriser calls through the
 * vector-function-abi-variant attribute of each call site. */

enum { OUTLINE_AFTER_CALLS = 8 };

/* The functions with vector versions: the unary ones but erff. */
static bool has_vector_variant(tjl_fn which) { return fns[which].arity == 1 && which != TJL_ERFF; }
/* sin and cos end in a branch (trig.c) that would keep a loop they are
 * inlined into scalar: they are always called out of line. */
static bool always_outlined(tjl_fn which) {
    return which == TJL_SINF || which == TJL_COSF || which == TJL_SIND || which == TJL_COSD;
}

static void vector_name(char *buf, size_t n, tjl_fn which, unsigned vf) {
    snprintf(buf, n, "%s.v%u", fns[which].name, vf);
}

static LLVMValueRef get_vector_fn(tjl_ir *ir, tjl_fn which, unsigned vf) {
    char name[64];
    vector_name(name, sizeof name, which, vf);
    LLVMValueRef fn = LLVMGetNamedFunction(ir->mod, name);
    if (fn) return fn;
    LLVMTypeRef t = LLVMVectorType(fns[which].f64 ? ir->f64 : ir->f32, vf);
    LLVMTypeRef it = LLVMVectorType(fns[which].f64 ? ir->i64 : ir->i32, vf);
    fn = LLVMAddFunction(ir->mod, name, LLVMFunctionType(t, &t, 1, 0));
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    add_fn_attr(ir, fn, "noinline");
    add_fn_attr(ir, fn, "nounwind");
    fb f = {ir, LLVMCreateBuilderInContext(ir->ctx), t, it, vf};
    LLVMPositionBuilderAtEnd(f.b, LLVMAppendBasicBlockInContext(ir->ctx, fn, "entry"));
    LLVMBuildRet(f.b, fns[which].body1(&f, LLVMGetParam(fn, 0)));
    LLVMDisposeBuilder(f.b);
    return fn;
}

/* The calls of fn made by the module's kernels (not by other functions of
 * this file), n at most. */
static int kernel_calls(LLVMValueRef fn, LLVMValueRef *calls, int n) {
    int k = 0;
    for (LLVMUseRef u = LLVMGetFirstUse(fn); u; u = LLVMGetNextUse(u)) {
        LLVMValueRef user = LLVMGetUser(u);
        if (!LLVMIsACallInst(user)) continue;
        const char *caller = LLVMGetValueName(LLVMGetBasicBlockParent(LLVMGetInstructionParent(user)));
        if (strncmp(caller, "tjl.", 4) == 0) continue;
        if (k < n) calls[k] = user;
        k++;
    }
    return k;
}

void tjl_math_outline(tjl_ir *ir, unsigned vector_bits) {
    enum { MAX_CALLS = 4096 };
    int total = 0;
    bool forced = false;
    for (int w = 0; w < TJL_NUM_FNS; w++) {
        LLVMValueRef fn = LLVMGetNamedFunction(ir->mod, fns[w].name);
        if (fn && has_vector_variant((tjl_fn)w)) total += kernel_calls(fn, NULL, 0);
        forced |= fn && always_outlined((tjl_fn)w);
    }
    if (total <= OUTLINE_AFTER_CALLS && !forced) return;
    for (int w = 0; w < TJL_NUM_FNS; w++) {
        LLVMValueRef fn = LLVMGetNamedFunction(ir->mod, fns[w].name), calls[MAX_CALLS];
        if (!fn || !has_vector_variant((tjl_fn)w)) continue;
        if (total <= OUTLINE_AFTER_CALLS && !always_outlined((tjl_fn)w)) continue;
        int n = kernel_calls(fn, calls, MAX_CALLS);
        if (n == 0 || n > MAX_CALLS) continue;
        /* the machine's width for the main loop, half of it for the vectorised
         * epilogue, which otherwise calls the scalar function once per lane */
        unsigned vf = vector_bits / (fns[w].f64 ? 64u : 32u);
        char variant[2 * 160] = "";
        for (unsigned v = vf; v >= 2 && v >= vf / 2; v /= 2) {
            char vname[64];
            vector_name(vname, sizeof vname, (tjl_fn)w, v);
            /* no caller until the vectoriser makes one: visible outside the module
             * until then, so that no pass removes it (tjl_math_drop_unused) */
            LLVMSetLinkage(get_vector_fn(ir, (tjl_fn)w, v), LLVMExternalLinkage);
            size_t at = strlen(variant);
            snprintf(variant + at, sizeof variant - at, "%s_ZGV_LLVM_N%uv_%s(%s)", at ? "," : "", v,
                     fns[w].name, vname);
        }
        unsigned inline_kind = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
        LLVMRemoveEnumAttributeAtIndex(fn, LLVMAttributeFunctionIndex, inline_kind);
        add_fn_attr(ir, fn, "noinline");
        LLVMAttributeRef attr = LLVMCreateStringAttribute(ir->ctx, "vector-function-abi-variant", 27,
                                                          variant, (unsigned)strlen(variant));
        for (int i = 0; i < n; i++) LLVMAddCallSiteAttribute(calls[i], LLVMAttributeFunctionIndex, attr);
    }
}

void tjl_math_drop_unused(tjl_ir *ir) {
    for (LLVMValueRef f = LLVMGetFirstFunction(ir->mod), next; f; f = next) {
        next = LLVMGetNextFunction(f);
        if (LLVMIsDeclaration(f) || LLVMGetLinkage(f) != LLVMExternalLinkage ||
            strncmp(LLVMGetValueName(f), "tjl.", 4))
            continue;
        if (LLVMGetFirstUse(f)) LLVMSetLinkage(f, LLVMInternalLinkage); /* no clash between modules */
        else LLVMDeleteFunction(f);
    }
}

LLVMValueRef tjl_libm(tjl_ir *ir, const char *name, LLVMValueRef a, LLVMValueRef b) {
    LLVMTypeRef t = LLVMTypeOf(a);
    int arity = b ? 2 : 1;
    LLVMValueRef fn = LLVMGetNamedFunction(ir->mod, name);
    if (!fn) {
        LLVMTypeRef params[2] = {t, t};
        fn = LLVMAddFunction(ir->mod, name, LLVMFunctionType(t, params, (unsigned)arity, 0));
        add_fn_attr(ir, fn, "nounwind");
    }
    V args[2] = {a, b};
    V call = LLVMBuildCall2(ir->b, LLVMGlobalGetValueType(fn), fn, args, (unsigned)arity, "");
    unsigned kind = LLVMGetEnumAttributeKindForName("nobuiltin", 9);
    LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ir->ctx, kind, 0));
    return call;
}
