/* conv.cu — the pieces the backend's own convolutions put around its GEMM
 * (kernels/gemm.cu): im2col, its adjoint col2im, and the bias fill.
 *
 * Geometry as core/linalg.h's tjc_conv_geom: the forward convolution's input
 * [n, c_in, h, w], weight [c_out, c_in / groups, kh, kw] and output
 * [n, c_out, ho, wo]; conv1d is h = kh = 1. For image n and group g,
 *   col[n, g][(ci * kh + ki) * kw + kj, oh * wo + ow]
 *       = x[n, g * cg + ci, oh * sh - ph + ki * dh, ow * sw - pw + kj * dw]
 * (0 where that lies in the padding). Where col lives is given by strides per
 * image, group and row (positions are adjacent), so one kernel builds the
 * layout of the forward product ([n, g, row, pos]) and of the weight
 * gradient's ([g, row, n, pos], the images joining the summed dim).
 */
#include "tjcu_builtins.h"
#include "tjcu_kernel.h"

/* Mirrors tjcu_conv_args in backends/cuda/linalg.h (same layout). */
struct ConvArgs {
    const void *x; /* im2col: the input; col2im: col */
    void *y;       /* im2col: col; col2im: the input's gradient (contiguous) */
    const void *bias;
    long long bias_stride;
    long long nimg; /* images in this call */
    long long c_in, h, w, c_out, kh, kw, ho, wo;
    long long sh, sw, ph, pw, dh, dw, groups;
    long long xs_n, xs_c, xs_h, xs_w;      /* the input's strides */
    long long col_n, col_g, col_r;         /* col's strides */
};

/* One thread per col element, reading x through its strides. */
template <typename T> __device__ void im2col_body(const ConvArgs &a) {
    const T *x = (const T *)a.x;
    T *col = (T *)a.y;
    const long long cg = a.c_in / a.groups;
    const long long total = a.nimg * a.c_in * a.kh * a.kw * a.ho * a.wo;
    TJCU_GRID_STRIDE(i, total) {
        long long q = i;
        long long ow = q % a.wo;
        q /= a.wo;
        long long oh = q % a.ho;
        q /= a.ho;
        long long kj = q % a.kw;
        q /= a.kw;
        long long ki = q % a.kh;
        q /= a.kh;
        long long c = q % a.c_in;
        long long n = q / a.c_in;
        long long g = c / cg, ci = c - g * cg;
        long long ih = oh * a.sh - a.ph + ki * a.dh, iw = ow * a.sw - a.pw + kj * a.dw;
        T v = (T)0;
        if (ih >= 0 && ih < a.h && iw >= 0 && iw < a.w)
            v = x[n * a.xs_n + c * a.xs_c + ih * a.xs_h + iw * a.xs_w];
        long long row = (ci * a.kh + ki) * a.kw + kj;
        col[n * a.col_n + g * a.col_g + row * a.col_r + oh * a.wo + ow] = v;
    }
}

/* One thread per input-gradient element: the sum of the col entries that
 * im2col took from it, in kernel-offset order (as the CPU's col2im adds them),
 * plus bias[c] when given (conv_transpose2d). A gather, so no atomics and the
 * same result every run. */
template <typename T> __device__ void col2im_body(const ConvArgs &a) {
    const T *col = (const T *)a.x;
    T *dx = (T *)a.y;
    const T *bias = (const T *)a.bias;
    const long long cg = a.c_in / a.groups;
    const long long total = a.nimg * a.c_in * a.h * a.w;
    TJCU_GRID_STRIDE(i, total) {
        long long q = i;
        long long iw = q % a.w;
        q /= a.w;
        long long ih = q % a.h;
        q /= a.h;
        long long c = q % a.c_in;
        long long n = q / a.c_in;
        long long g = c / cg, ci = c - g * cg;
        const T *base = col + n * a.col_n + g * a.col_g;
        T sum = (T)0;
        for (long long ki = 0; ki < a.kh; ki++) {
            long long th = ih + a.ph - ki * a.dh;
            if (th < 0 || th % a.sh != 0) continue;
            long long oh = th / a.sh;
            if (oh >= a.ho) continue;
            for (long long kj = 0; kj < a.kw; kj++) {
                long long tw = iw + a.pw - kj * a.dw;
                if (tw < 0 || tw % a.sw != 0) continue;
                long long ow = tw / a.sw;
                if (ow >= a.wo) continue;
                sum += base[((ci * a.kh + ki) * a.kw + kj) * a.col_r + oh * a.wo + ow];
            }
        }
        if (bias) sum += bias[c * a.bias_stride];
        dx[i] = sum;
    }
}

/* y[n, c, pos] = bias[c] over nimg images of c_out channels and ho * wo
 * positions, before a product that adds into y (beta = 1). */
template <typename T> __device__ void bias_fill_body(const ConvArgs &a) {
    const T *bias = (const T *)a.bias;
    T *y = (T *)a.y;
    const long long pos = a.ho * a.wo, total = a.nimg * a.c_out * pos;
    TJCU_GRID_STRIDE(i, total) y[i] = bias[((i / pos) % a.c_out) * a.bias_stride];
}

extern "C" __global__ void conv_im2col_f32(ConvArgs a) { im2col_body<float>(a); }
TJCU_EXPORT(conv_im2col_f32)
extern "C" __global__ void conv_col2im_f32(ConvArgs a) { col2im_body<float>(a); }
TJCU_EXPORT(conv_col2im_f32)
extern "C" __global__ void conv_bias_fill_f32(ConvArgs a) { bias_fill_body<float>(a); }
TJCU_EXPORT(conv_bias_fill_f32)
extern "C" __global__ void conv_im2col_f64(ConvArgs a) { im2col_body<double>(a); }
TJCU_EXPORT(conv_im2col_f64)
extern "C" __global__ void conv_col2im_f64(ConvArgs a) { col2im_body<double>(a); }
TJCU_EXPORT(conv_col2im_f64)
extern "C" __global__ void conv_bias_fill_f64(ConvArgs a) { bias_fill_body<double>(a); }
TJCU_EXPORT(conv_bias_fill_f64)
