/* copy.c — copies with broadcasting and dtype conversion: copy_, clone,
 * to_dtype, and the conversions other kernels need. The conversion loops and
 * their table are built once per instruction set (isa.h); the rest once. */
#include <string.h>

#include "cpu.h"
#include "isa.h"

static inline float to_f32(double v) { return (float)v; }
static inline double to_f64(double v) { return v; }
static inline int64_t to_i64(double v) { /* saturate: out-of-range casts are undefined in C */
    if (v != v) return 0;
    if (v >= 9.2233720368547758e18) return INT64_MAX;
    if (v <= -9.2233720368547758e18) return INT64_MIN;
    return (int64_t)v;
}
static inline bool to_bool(double v) { return v != 0; }

/* Integer sources convert exactly to integers; through double for the rest. */
#define CONVERT_f32(x) to_f32((double)(x))
#define CONVERT_f64(x) to_f64((double)(x))
#define CONVERT_b8(x) ((x) != 0)
#define CONVERT_i64(x) _Generic((x), float: to_i64, double: to_i64, default: ident_i64)(x)
static inline int64_t ident_i64(int64_t v) { return v; }

#define CONV_LOOP(dn, D, sn, S)                                                          \
    static void conv_##dn##_##sn(int64_t n, char **p, const int64_t *st, const void *ctx) { \
        (void)ctx;                                                                      \
        if (st[0] == sizeof(D) && st[1] == sizeof(S)) {                                 \
            D *restrict o = (D *)p[0];                                                  \
            const S *restrict x = (const S *)p[1];                                      \
            for (int64_t i = 0; i < n; i++) o[i] = CONVERT_##dn(x[i]);                  \
        } else {                                                                        \
            for (int64_t i = 0; i < n; i++)                                             \
                *(D *)(p[0] + i * st[0]) = CONVERT_##dn(*(const S *)(p[1] + i * st[1])); \
        }                                                                               \
    }
#define CONV_FROM(dn, D)                \
    CONV_LOOP(dn, D, f32, float)        \
    CONV_LOOP(dn, D, f64, double)       \
    CONV_LOOP(dn, D, i64, int64_t)      \
    CONV_LOOP(dn, D, b8, bool)
CONV_FROM(f32, float)
CONV_FROM(f64, double)
CONV_FROM(i64, int64_t)
CONV_FROM(b8, bool)

#define CONV_ROW(dn) {[TJ_F32] = conv_##dn##_f32, [TJ_F64] = conv_##dn##_f64, \
                      [TJ_I64] = conv_##dn##_i64, [TJ_BOOL] = conv_##dn##_b8}
const tjcpu_loop_fn TJCPU_ISA_NAME(tjcpu_conv_loops)[TJ_NUM_DTYPES][TJ_NUM_DTYPES] = {
    [TJ_F32] = CONV_ROW(f32), [TJ_F64] = CONV_ROW(f64),
    [TJ_I64] = CONV_ROW(i64), [TJ_BOOL] = CONV_ROW(b8),
};

#ifndef TJCPU_ISA_SUFFIX /* the rest is built once */
#ifdef TJIT_ISA_VARIANTS
extern const tjcpu_loop_fn tjcpu_conv_loops_avx2[TJ_NUM_DTYPES][TJ_NUM_DTYPES];
extern const tjcpu_loop_fn tjcpu_conv_loops_avx512[TJ_NUM_DTYPES][TJ_NUM_DTYPES];
#endif

tj_status tjcpu_copy(tj_tensor *dst, tj_tensor *src) {
    if (dst == src) return TJ_OK;
    tj_tensor *tmp = NULL;
    if (tjc_may_overlap(dst, src)) { /* read everything before writing anything */
        tmp = tjc_alloc(src->sizes, src->ndim, src->dtype);
        if (!tmp) return tj_last_status();
        tj_tensor *ops[2] = {tmp, src};
        tjcpu_iter(ops, 2, TJCPU_ISA_PICK(tjcpu_conv_loops)[src->dtype][src->dtype], NULL);
        src = tmp;
    }
    tj_tensor *ops[2] = {dst, src};
    tjcpu_iter(ops, 2, TJCPU_ISA_PICK(tjcpu_conv_loops)[dst->dtype][src->dtype], NULL);
    tj_release(tmp);
    return TJ_OK;
}

tj_tensor *tjcpu_to_contiguous(tj_tensor *t, tj_dtype dtype) {
    tj_tensor *out = tjc_alloc(t->sizes, t->ndim, dtype);
    if (out && tjcpu_copy(out, t) != TJ_OK) {
        tj_release(out);
        return NULL;
    }
    return out;
}

tj_status tjcpu_copy_kernel(const tjc_call *c) {
    return tjcpu_copy(c->out[0], c->n_in > 1 ? c->in[1] : c->in[0]);
}

tjcpu_loop_fn tjcpu_convert_loop(tj_dtype to, tj_dtype from) {
    return TJCPU_ISA_PICK(tjcpu_conv_loops)[to][from];
}

tj_status tjcpu_zeros_kernel(const tjc_call *c) {
    tj_tensor *out = c->out[0]; /* fresh and contiguous */
    memset(tjc_data_ptr(out), 0, (size_t)tjc_numel(out->sizes, out->ndim) * tj_dtype_size(out->dtype));
    return TJ_OK;
}
#endif
