/* loss.cu — kernels of mse_loss, nll_loss, binary_cross_entropy_with_logits
 * and their backward ops (launched by backends/cuda/op_loss.c).
 *
 * As on the CPU (backends/cpu/loss.c) every element is read and computed in
 * double whatever its dtype, so the f32 results equal the CPU's up to the
 * last bit of a double. A reduced loss is two launches: *_partial kernels
 * leave one double per block (a grid-stride sum per thread, then a tree over
 * the block), and loss_finish adds those in one block and divides. Nothing
 * depends on timing, so a loss is the same from run to run.
 *
 * Dtype arguments are tj_dtype values: 0 f32, 1 f64 (losses take no other).
 * Targets that lie outside [0, C) were flagged by index.cu's index_check in the
 * same stream; the kernels here skip them, so a bad target never reads or
 * writes out of bounds before the caller reports it. */
#include "tjcu_builtins.h"
#include "tjcu_kernel.h"

/* The block size of every kernel that ends in block_sum (a power of two);
 * op_loss.c launches with the same. */
#define LOSS_THREADS 256

/* element i of a tensor of dtype dt (tj_dtype: f32, f64, i64, bool) as double;
 * mse_loss takes integer and bool operands whose promotion is a float */
__device__ __forceinline__ double ld_f(const TensorArg &t, int dt, long long i) {
    long long o = tjcu_offset(t, i);
    switch (dt) {
    case 0: return (double)((const float *)t.data)[o];
    case 1: return ((const double *)t.data)[o];
    case 2: return (double)((const long long *)t.data)[o];
    default: return ((const unsigned char *)t.data)[o] ? 1.0 : 0.0;
    }
}

__device__ __forceinline__ void st_f(void *p, int dt, long long i, double v) {
    if (dt == 0) ((float *)p)[i] = (float)v;
    else ((double *)p)[i] = v;
}

__device__ __forceinline__ long long ld_i(const TensorArg &t, long long i) {
    return ((const long long *)t.data)[tjcu_offset(t, i)];
}

/* The sum of v over the block (every thread gets it); sh holds LOSS_THREADS. */
__device__ double block_sum(double v, double *sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = LOSS_THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

/* The gradient factor of element i: grad_output[i] (reduction none), else the
 * scalar grad_output divided by divisor, or by *total when total is set. */
__device__ __forceinline__ double grad_at(const TensorArg &g, int gd, int per_element,
                                          double divisor, const double *total, long long i) {
    if (per_element) return ld_f(g, gd, i);
    return ld_f(g, gd, 0) / (total ? *total : divisor);
}

/* out[0] = sum(partial[0..np)) / d, where d is the sum of wpartial when given,
 * else divisor. One block of LOSS_THREADS. */
extern "C" __global__ void loss_finish(const double *partial, const double *wpartial, int np,
                                       double divisor, void *out, int od) {
    __shared__ double sh[LOSS_THREADS];
    double s = 0, w = 0;
    for (int k = threadIdx.x; k < np; k += LOSS_THREADS) {
        s += partial[k];
        if (wpartial) w += wpartial[k];
    }
    s = block_sum(s, sh);
    if (wpartial) divisor = block_sum(w, sh);
    if (threadIdx.x == 0) st_f(out, od, 0, s / divisor);
}
TJCU_EXPORT(loss_finish)

/* ---- mse_loss ---------------------------------------------------------------------- */

extern "C" __global__ void mse_loss_none(TensorArg x, int xd, TensorArg t, int td, void *out,
                                         int od, long long n) {
    TJCU_GRID_STRIDE(i, n) {
        double d = ld_f(x, xd, i) - ld_f(t, td, i);
        st_f(out, od, i, d * d);
    }
}
TJCU_EXPORT(mse_loss_none)

extern "C" __global__ void mse_loss_partial(TensorArg x, int xd, TensorArg t, int td, long long n,
                                            double *partial) {
    __shared__ double sh[LOSS_THREADS];
    double s = 0;
    TJCU_GRID_STRIDE(i, n) {
        double d = ld_f(x, xd, i) - ld_f(t, td, i);
        s += d * d;
    }
    s = block_sum(s, sh);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}
TJCU_EXPORT(mse_loss_partial)

/* gi = 2 (x - t) g */
extern "C" __global__ void mse_loss_backward(TensorArg g, int gd, int per_element, double divisor,
                                             TensorArg x, int xd, TensorArg t, int td, void *out,
                                             int od, long long n) {
    TJCU_GRID_STRIDE(i, n) {
        double d = 2.0 * (ld_f(x, xd, i) - ld_f(t, td, i));
        st_f(out, od, i, d * grad_at(g, gd, per_element, divisor, 0, i));
    }
}
TJCU_EXPORT(mse_loss_backward)

/* ---- nll_loss ------------------------------------------------------------------------
 * self [N, C, S] (a 1-D self is N = S = 1), target [N, S] (element i = n S + s),
 * weight [C] or absent (w.data null: ones). */

struct Nll {
    TensorArg x, t, w;
    int xd, wd;
    long long C, S, ignore;
};

/* The class of target element i, or -1 when it is ignored or out of range. */
__device__ __forceinline__ long long nll_class(const Nll &a, long long i) {
    long long k = ld_i(a.t, i);
    return (k == a.ignore || k < 0 || k >= a.C) ? -1 : k;
}

__device__ __forceinline__ double nll_weight(const Nll &a, long long k) {
    return a.w.data ? ld_f(a.w, a.wd, k) : 1.0;
}

/* -w[k] x[n, k, s] */
__device__ __forceinline__ double nll_term(const Nll &a, long long i, long long k) {
    long long n = i / a.S, s = i - n * a.S;
    return -nll_weight(a, k) * ld_f(a.x, a.xd, (n * a.C + k) * a.S + s);
}

extern "C" __global__ void nll_loss_none(Nll a, void *out, int od, long long n) {
    TJCU_GRID_STRIDE(i, n) {
        long long k = nll_class(a, i);
        st_f(out, od, i, k < 0 ? 0.0 : nll_term(a, i, k));
    }
}
TJCU_EXPORT(nll_loss_none)

/* The sum of the terms into partial, of the weights of the targets not
 * ignored into wpartial (the mean's divisor). */
extern "C" __global__ void nll_loss_partial(Nll a, long long n, double *partial,
                                            double *wpartial) {
    __shared__ double sh[LOSS_THREADS];
    double s = 0, w = 0;
    TJCU_GRID_STRIDE(i, n) {
        long long k = nll_class(a, i);
        if (k < 0) continue;
        s += nll_term(a, i, k);
        w += nll_weight(a, k);
    }
    s = block_sum(s, sh);
    w = block_sum(w, sh);
    if (threadIdx.x == 0) {
        partial[blockIdx.x] = s;
        wpartial[blockIdx.x] = w;
    }
}
TJCU_EXPORT(nll_loss_partial)

/* The weights of the targets not ignored (nll_loss_backward's mean divisor). */
extern "C" __global__ void nll_weight_partial(Nll a, long long n, double *partial) {
    __shared__ double sh[LOSS_THREADS];
    double w = 0;
    TJCU_GRID_STRIDE(i, n) {
        long long k = nll_class(a, i);
        if (k >= 0) w += nll_weight(a, k);
    }
    w = block_sum(w, sh);
    if (threadIdx.x == 0) partial[blockIdx.x] = w;
}
TJCU_EXPORT(nll_weight_partial)

/* gi[n, k, s] = -w[k] g' at each target (out is zeroed before); every target
 * element writes its own position, so no two threads meet. */
extern "C" __global__ void nll_loss_backward(TensorArg g, int gd, int per_element, double divisor,
                                             const double *total, Nll a, void *out, int od,
                                             long long n) {
    TJCU_GRID_STRIDE(i, n) {
        long long k = nll_class(a, i);
        if (k < 0) continue;
        long long nn = i / a.S, s = i - nn * a.S;
        st_f(out, od, (nn * a.C + k) * a.S + s,
             -nll_weight(a, k) * grad_at(g, gd, per_element, divisor, total, i));
    }
}
TJCU_EXPORT(nll_loss_backward)

/* ---- binary_cross_entropy_with_logits -----------------------------------------------
 * weight and pos_weight come broadcast to self's sizes (w.data null: ones). */

struct Bce {
    TensorArg x, y, w, pw;
    int xd, yd, wd, pwd;
};

/* softplus(-x) = log(1 + exp(-x)), finite for any x */
__device__ __forceinline__ double softplus_neg(double x) {
    return log1p(exp(-fabs(x))) + (x < 0 ? -x : 0.0);
}

__device__ __forceinline__ double sigmoid_d(double x) {
    if (x >= 0) return 1 / (1 + exp(-x));
    double e = exp(x);
    return e / (1 + e);
}

/* (1 - y) x + (1 + (pw - 1) y) softplus(-x), times w */
__device__ __forceinline__ double bce_term(const Bce &a, long long i) {
    double x = ld_f(a.x, a.xd, i), y = ld_f(a.y, a.yd, i);
    double pw = a.pw.data ? ld_f(a.pw, a.pwd, i) : 1.0, w = a.w.data ? ld_f(a.w, a.wd, i) : 1.0;
    return w * ((1 - y) * x + (1 + (pw - 1) * y) * softplus_neg(x));
}

extern "C" __global__ void bce_loss_none(Bce a, void *out, int od, long long n) {
    TJCU_GRID_STRIDE(i, n) st_f(out, od, i, bce_term(a, i));
}
TJCU_EXPORT(bce_loss_none)

extern "C" __global__ void bce_loss_partial(Bce a, long long n, double *partial) {
    __shared__ double sh[LOSS_THREADS];
    double s = 0;
    TJCU_GRID_STRIDE(i, n) s += bce_term(a, i);
    s = block_sum(s, sh);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}
TJCU_EXPORT(bce_loss_partial)

/* d/dx = w ((1 + (pw - 1) y) sigmoid(x) - pw y), times g */
extern "C" __global__ void bce_loss_backward(TensorArg g, int gd, int per_element, double divisor,
                                             Bce a, void *out, int od, long long n) {
    TJCU_GRID_STRIDE(i, n) {
        double x = ld_f(a.x, a.xd, i), y = ld_f(a.y, a.yd, i);
        double pw = a.pw.data ? ld_f(a.pw, a.pwd, i) : 1.0;
        double w = a.w.data ? ld_f(a.w, a.wd, i) : 1.0;
        double d = w * ((1 + (pw - 1) * y) * sigmoid_d(x) - pw * y);
        st_f(out, od, i, d * grad_at(g, gd, per_element, divisor, 0, i));
    }
}
TJCU_EXPORT(bce_loss_backward)
