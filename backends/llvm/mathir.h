/* mathir.h — the vocabulary in which math.c and trig.c write the
 * transcendentals as IR: a function being built (fb) and one helper per C
 * operation, so that each body reads like the C version it mirrors. */
#ifndef TJIT_TJL_MATHIR_H
#define TJIT_TJL_MATHIR_H

#include <string.h>

#include "internal.h"

typedef LLVMValueRef V;

/* A function being built: its builder and its float type (f32 or f64) and
 * the matching integer type for bit manipulation. */
typedef struct fb {
    tjl_ir *ir;
    LLVMBuilderRef b;
    LLVMTypeRef t, it;
    unsigned vf; /* lanes of a vector variant (t and it are vectors), else 0 */
} fb;

static inline V K(fb *f, double v) { return LLVMConstReal(f->t, v); } /* splats for a vector type */
static inline V KI(fb *f, unsigned long long v) {
    if (!f->vf) return LLVMConstInt(f->it, v, 0);
    V lane = LLVMConstInt(LLVMGetElementType(f->it), v, 0), lanes[64];
    for (unsigned i = 0; i < f->vf; i++) lanes[i] = lane;
    return LLVMConstVector(lanes, f->vf);
}
static inline V add(fb *f, V a, V b) { return LLVMBuildFAdd(f->b, a, b, ""); }
static inline V sub(fb *f, V a, V b) { return LLVMBuildFSub(f->b, a, b, ""); }
static inline V mul(fb *f, V a, V b) { return LLVMBuildFMul(f->b, a, b, ""); }
static inline V dv(fb *f, V a, V b) { return LLVMBuildFDiv(f->b, a, b, ""); }
static inline V neg(fb *f, V a) { return LLVMBuildFNeg(f->b, a, ""); }
static inline V cmp(fb *f, LLVMRealPredicate p, V a, V b) { return LLVMBuildFCmp(f->b, p, a, b, ""); }
static inline V lt(fb *f, V a, V b) { return cmp(f, LLVMRealOLT, a, b); }
static inline V gt(fb *f, V a, V b) { return cmp(f, LLVMRealOGT, a, b); }
static inline V eq(fb *f, V a, V b) { return cmp(f, LLVMRealOEQ, a, b); }
static inline V ne(fb *f, V a, V b) { return cmp(f, LLVMRealUNE, a, b); } /* C's != */
static inline V sel(fb *f, V c, V a, V b) { return LLVMBuildSelect(f->b, c, a, b, ""); }
static inline V and1(fb *f, V a, V b) { return LLVMBuildAnd(f->b, a, b, ""); }
static inline V or1(fb *f, V a, V b) { return LLVMBuildOr(f->b, a, b, ""); }
static inline V not1(fb *f, V a) { return LLVMBuildNot(f->b, a, ""); }
static inline V bits(fb *f, V x) { return LLVMBuildBitCast(f->b, x, f->it, ""); }
static inline V from_bits(fb *f, V u) { return LLVMBuildBitCast(f->b, u, f->t, ""); }

/* ((c[0] x + c[1]) x + ...) x + c[n-1]: a - c is a + (-c) bit for bit in
 * IEEE arithmetic, so C's subtractions of constants appear as additions. */
static inline V horner(fb *f, V x, const double *c, int n) {
    V p = K(f, c[0]);
    for (int i = 1; i < n; i++) p = add(f, mul(f, p, x), K(f, c[i]));
    return p;
}
/* Monic: ((x + c[0]) x + c[1]) x + ... + c[n-1]. */
static inline V horner1(fb *f, V x, const double *c, int n) {
    V p = add(f, x, K(f, c[0]));
    for (int i = 1; i < n; i++) p = add(f, mul(f, p, x), K(f, c[i]));
    return p;
}

static inline V fma3(fb *f, V a, V b, V c) {
    unsigned id = LLVMLookupIntrinsicID("llvm.fma", 8);
    LLVMTypeRef t = LLVMTypeOf(a);
    V args[3] = {a, b, c};
    return LLVMBuildCall2(f->b, LLVMIntrinsicGetType(f->ir->ctx, id, &t, 1),
                          LLVMGetIntrinsicDeclaration(f->ir->mod, id, &t, 1), args, 3, "");
}
/* An overloaded one-operand intrinsic (llvm.fabs, llvm.floor, ...) on x's type. */
static inline V intrinsic1(fb *f, const char *name, V x) {
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef t = LLVMTypeOf(x);
    return LLVMBuildCall2(f->b, LLVMIntrinsicGetType(f->ir->ctx, id, &t, 1),
                          LLVMGetIntrinsicDeclaration(f->ir->mod, id, &t, 1), &x, 1, "");
}
static inline V ole(fb *f, V a, V b) { return cmp(f, LLVMRealOLE, a, b); }
static inline V iand(fb *f, V a, V b) { return LLVMBuildAnd(f->b, a, b, ""); }
static inline V ixor(fb *f, V a, V b) { return LLVMBuildXor(f->b, a, b, ""); }
static inline V iadd(fb *f, V a, V b) { return LLVMBuildAdd(f->b, a, b, ""); }
static inline V ishl(fb *f, V a, V b) { return LLVMBuildShl(f->b, a, b, ""); }
static inline V ilshr(fb *f, V a, V b) { return LLVMBuildLShr(f->b, a, b, ""); }
static inline V ieq(fb *f, V a, V b) { return LLVMBuildICmp(f->b, LLVMIntEQ, a, b, ""); }
static inline V ine(fb *f, V a, V b) { return LLVMBuildICmp(f->b, LLVMIntNE, a, b, ""); }
/* The same lanes in double (f64 and i64), for the f32 functions that compute in double. */
static inline fb wide(const fb *f) {
    tjl_ir *ir = f->ir;
    fb d = {ir, f->b, f->vf ? LLVMVectorType(ir->f64, f->vf) : ir->f64,
            f->vf ? LLVMVectorType(ir->i64, f->vf) : ir->i64, f->vf};
    return d;
}
static inline V widen(fb *f, V x) { return LLVMBuildFPExt(f->b, x, wide(f).t, ""); }
static inline V narrow(fb *f, V x) { return LLVMBuildFPTrunc(f->b, x, f->t, ""); }

/* math.c: the module's scalar function of which (made on first use). */
LLVMValueRef tjl_math_fn(tjl_ir *ir, tjl_fn which);

/* trig.c: the bodies of core/pw_trig.h's functions */
V tjl_sinf_body(fb *f, V x);
V tjl_cosf_body(fb *f, V x);
V tjl_sind_body(fb *f, V x);
V tjl_cosd_body(fb *f, V x);
V tjl_expm1f_body(fb *f, V x);
V tjl_expm1d_body(fb *f, V x);
V tjl_log1pf_body(fb *f, V x);
V tjl_log1pd_body(fb *f, V x);
V tjl_powf_body(fb *f, V a, V b);
V tjl_powd_body(fb *f, V a, V b);

#endif
