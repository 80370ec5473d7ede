/* linalg.h — the geometry of matmul, convolution and pooling calls, computed
 * once from a call by core/ (the shape rules validate with it) and again by the
 * CPU kernels, so both read the arguments the same way. Prefix tjc_.
 *
 * Every convolution op is described by the forward convolution it belongs to:
 * conv2d_backward_input and conv_transpose2d run that convolution's adjoint
 * with respect to its input, conv2d_backward_weight the one with respect to its
 * weight. conv1d is a conv2d with a height of 1.
 */
#ifndef TJIT_LINALG_H
#define TJIT_LINALG_H

#include "core.h"

/* C[batch..., m, n] = A[batch..., m, k] @ B[batch..., k, n]; strides in
 * elements, batch strides 0 where an operand is broadcast. */
typedef struct tjc_mm_geom {
    int nbatch;
    int64_t batch[TJ_MAX_DIMS];
    int64_t a_bs[TJ_MAX_DIMS], b_bs[TJ_MAX_DIMS];
    int64_t m, n, k;
    int64_t a_rs, a_cs, b_rs, b_cs;
    const tj_tensor *a, *b; /* the operands whose data the strides index */
    int out_ndim;
    int64_t out_sizes[TJ_MAX_DIMS];
    tj_dtype dtype;
} tjc_mm_geom;

/* For mm, bmm, matmul, addmm (mat1 @ mat2) and linear (input @ weight^T). */
tj_status tjc_mm_geometry(const tjc_call *c, tjc_mm_geom *g);

typedef struct tjc_conv_geom {
    int64_t n, c_in, h, w;     /* the forward convolution's input */
    int64_t c_out, kh, kw;     /* its weight: [c_out, c_in / groups, kh, kw] */
    int64_t ho, wo;            /* its output */
    int64_t sh, sw, ph, pw, dh, dw, groups;
    bool batched;              /* false: the op's tensors have no batch dim */
    int spatial;               /* 1 for conv1d, else 2 */
} tjc_conv_geom;

/* For conv1d, conv2d, conv_transpose2d, conv2d_backward_input and
 * conv2d_backward_weight; fills the op's output sizes too when out is not NULL. */
tj_status tjc_conv_geometry(const tjc_call *c, tjc_conv_geom *g, int64_t *out_sizes, int *out_ndim);

typedef struct tjc_pool_geom {
    int64_t n, c, h, w, oh, ow;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw; /* unused by adaptive pooling */
    bool ceil_mode, count_include_pad, batched;
} tjc_pool_geom;

/* For the max, average and adaptive average pools and their backward ops. */
tj_status tjc_pool_geometry(const tjc_call *c, tjc_pool_geom *g);

/* The window of adaptive pooling output cell i of n over an input of size len:
 * [floor(i * len / n), ceil((i + 1) * len / n)). */
static inline int64_t tjc_adaptive_start(int64_t i, int64_t len, int64_t n) {
    return (i * len) / n;
}
static inline int64_t tjc_adaptive_end(int64_t i, int64_t len, int64_t n) {
    return ((i + 1) * len + n - 1) / n;
}

#endif
