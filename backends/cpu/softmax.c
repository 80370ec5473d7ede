/* softmax.c — CPU kernels of softmax, log_softmax, _softmax_backward_data
 * and _log_softmax_backward_data (rows of core/ops_nn.def). Numerically
 * stable: the row maximum is subtracted before exponentiating. The loops are
 * in softmax_t.inc; f32 uses a vectorisable exp (below), f64 libm's. Built once
 * per instruction set (isa.h). */
#include <math.h>

#include "core/pw_math.h"
#include "isa.h"
#include "nn.h"

/* exp(x) in f32 for x <= 88 (softmax only exponentiates x - max <= 0, and
 * log_softmax's backward exp(log-probabilities)): core/pw_math.h's reduction
 * and polynomial (within 2 ulp), with one power of two: results below FLT_MIN
 * flush to 0 (so exp(-inf) is 0) and NaN stays NaN. */
static inline float nn_expf(float x) {
    float xc = x > -87.0f ? x : -87.0f;
    xc = xc < 88.0f ? xc : 88.0f;
    int n; /* in [-126, 127]: a normal power of two */
    float p = tjm_expf_core(xc, &n);
    float y = x > -87.0f ? p * tjm_pow2i(n) : 0.0f;
    return x != x ? x : y;
}

/* Columns per task in the [outer, n, inner] case: long enough runs of each
 * row for the prefetcher (1 KiB in f32), few enough for stack buffers. */
enum { COL_BLOCK = 256 };

/* GCC vectorises a compare-and-select max reduction when OpenMP SIMD allows
 * the reordering; clang 14 cannot without fast-math flags and warns when
 * asked to, so it gets the plain loop. */
#if defined(__clang__)
#define SIMD_MAX_OF_M
#else
#define SIMD_MAX_OF_M _Pragma("omp simd reduction(max : m)")
#endif

#define T float
#define FN(name) name##_f32
#define EXP(x) nn_expf(x)
#include "softmax_t.inc"
#undef T
#undef FN
#undef EXP
#define T double
#define FN(name) name##_f64
#define EXP(x) exp(x)
#include "softmax_t.inc"
#undef T
#undef FN
#undef EXP

static tj_status softmax_forward(const tjc_call *c, bool log_form) {
    int dim;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, c->in[0]->ndim, &dim);
    if (st) return st;
    tj_tensor *x = tjnn_contig(c->in[0]);
    if (!x) return tj_last_status();
    int64_t outer, n, inner;
    tjnn_split(x, dim, &outer, &n, &inner);
    void *xp = tjc_data_ptr(x), *yp = tjc_data_ptr(c->out[0]);
    if (x->dtype == TJ_F32) {
        if (inner == 1) softmax_rows_f32(xp, yp, outer, n, log_form);
        else softmax_cols_f32(xp, yp, outer, n, inner, log_form);
    } else {
        if (inner == 1) softmax_rows_f64(xp, yp, outer, n, log_form);
        else softmax_cols_f64(xp, yp, outer, n, inner, log_form);
    }
    tj_release(x);
    return TJ_OK;
}

tj_status TJCPU_ISA_NAME(tjcpu_softmax)(const tjc_call *c) { return softmax_forward(c, false); }

void TJCPU_ISA_NAME(tjcpu_softmax_row)(const void *x, void *y, int64_t n, tj_dtype t, bool log_form) {
    if (t == TJ_F32) softmax_row_f32(x, y, n, log_form);
    else softmax_row_f64(x, y, n, log_form);
}
tj_status TJCPU_ISA_NAME(tjcpu_log_softmax)(const tjc_call *c) { return softmax_forward(c, true); }

/* in: grad_output, output; attrs: dim, input_dtype. Computed in output's
 * dtype and converted when input_dtype differs. */
static tj_status softmax_backward(const tjc_call *c, bool log_form) {
    int dim;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, c->in[1]->ndim, &dim);
    if (st) return st;
    tj_tensor *g = tjnn_contig(c->in[0]), *y = tjnn_contig(c->in[1]), *gi = NULL;
    if (g && y)
        gi = y->dtype == c->out[0]->dtype ? tj_retain(c->out[0])
                                          : tjc_alloc(y->sizes, y->ndim, y->dtype);
    if (!g || !y || !gi) {
        st = tj_last_status();
    } else {
        int64_t outer, n, inner;
        tjnn_split(y, dim, &outer, &n, &inner);
        void *gp = tjc_data_ptr(g), *yp = tjc_data_ptr(y), *op = tjc_data_ptr(gi);
        if (y->dtype == TJ_F32) {
            if (inner == 1) softmax_back_rows_f32(gp, yp, op, outer, n, log_form);
            else softmax_back_cols_f32(gp, yp, op, outer, n, inner, log_form);
        } else {
            if (inner == 1) softmax_back_rows_f64(gp, yp, op, outer, n, log_form);
            else softmax_back_cols_f64(gp, yp, op, outer, n, inner, log_form);
        }
        if (gi != c->out[0]) st = tjcpu_copy(c->out[0], gi);
    }
    tj_release(g), tj_release(y), tj_release(gi);
    return st;
}

tj_status TJCPU_ISA_NAME(tjcpu_softmax_backward_data)(const tjc_call *c) { return softmax_backward(c, false); }
tj_status TJCPU_ISA_NAME(tjcpu_log_softmax_backward_data)(const tjc_call *c) { return softmax_backward(c, true); }
