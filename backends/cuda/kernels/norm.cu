/* norm.cu — batch, layer and group normalisation and their backward ops
 * (host side: backends/cuda/op_norm.c, op_norm_backward.c).
 *
 * Statistics are reductions on the engine of tjcu_reduce.h, in double
 * whatever the input (as the CPU's): moments (Welford within a lane, Chan
 * between lanes: mean and the sum of squared deviations) and the gradients'
 * sums. Small per-channel or per-group kernels turn them into coefficients
 * (double), and element kernels apply them:
 *   y = x * a[r] + d[r]                 (batch and group norm forward)
 *   y = g * a[r] + x * b[r] + d[r]      (their input gradients)
 * with r = (i / S) % P: the channel (P = C) or the (n, c) plane (P = N*C) of
 * element i, S elements per plane. The coefficients are rounded to the
 * element type first, as the CPU's loops do. */
#include "tjcu_builtins.h"
#include "tjcu_kernel.h"
#include "tjcu_reduce.h"

/* ---- element access by dtype (0 f32, 1 f64, 2 i64, 3 bool: tj_dtype) ------------------- */

/* Element i (row-major) of t as double; fill when t is absent. */
__device__ __forceinline__ double tjn_ld(const TensorArg &t, int dt, long long i, double fill) {
    if (!t.data) return fill;
    long long off = tjcu_offset(t, i);
    switch (dt) {
    case 0: return ((const float *)t.data)[off];
    case 1: return ((const double *)t.data)[off];
    case 2: return (double)((const long long *)t.data)[off];
    default: return ((const unsigned char *)t.data)[off] ? 1.0 : 0.0;
    }
}

__device__ __forceinline__ void tjn_st(const TensorArg &t, int dt, long long i, double v) {
    long long off = tjcu_offset(t, i);
    switch (dt) {
    case 0: ((float *)t.data)[off] = (float)v; break;
    case 1: ((double *)t.data)[off] = v; break;
    case 2: ((long long *)t.data)[off] = (long long)v; break;
    default: ((unsigned char *)t.data)[off] = v != 0; break;
    }
}

/* out[i] = element i of t, as double */
extern "C" __global__ void norm_to_double(TensorArg t, int dt, long long n, double *out) {
    TJCU_GRID_STRIDE(i, n) out[i] = tjn_ld(t, dt, i, 0);
}
TJCU_EXPORT(norm_to_double)

/* element i of t (of dtype dt) = v[i], rounded as a cast rounds */
extern "C" __global__ void norm_from_double(const double *v, long long n, TensorArg t, int dt) {
    TJCU_GRID_STRIDE(i, n) tjn_st(t, dt, i, v[i]);
}
TJCU_EXPORT(norm_from_double)

TJR_GATHER_KERNELS(norm)

/* ---- reducers ------------------------------------------------------------------------------ */

struct Moments {
    double n, mean, m2;
};

/* mean to out0, the sum of squared deviations to out1 (double) */
template <class T> struct MomentsOp {
    typedef Moments S;
    static __device__ __forceinline__ S init() {
        S s = {0, 0, 0};
        return s;
    }
    static __device__ __forceinline__ void upd(S &s, const RArgs &a, long long off, long long,
                                               long long) {
        double v = (double)tjr_ld<T>(a.in, off), d = v - s.mean;
        s.n += 1;
        s.mean += d / s.n;
        s.m2 += d * (v - s.mean);
    }
    static __device__ __forceinline__ void comb(S &s, const S &b, const RArgs &) {
        if (b.n == 0) return;
        if (s.n == 0) {
            s = b;
            return;
        }
        double total = s.n + b.n, d = b.mean - s.mean;
        s.mean += d * (b.n / total);
        s.m2 += b.m2 + d * d * (s.n * b.n / total);
        s.n = total;
    }
    static __device__ __forceinline__ S shfl(const S &s, int d, int w) {
        S r = {tjr_shfl(s.n, d, w), tjr_shfl(s.mean, d, w), tjr_shfl(s.m2, d, w)};
        return r;
    }
    static __device__ __forceinline__ void final(const S &s, const RArgs &a, long long out) {
        ((double *)a.out0)[out] = s.mean;
        ((double *)a.out1)[out] = s.m2;
    }
};

struct Pair {
    double a, b;
};

template <class T> struct PairBase {
    typedef Pair S;
    static __device__ __forceinline__ S init() {
        S s = {0, 0};
        return s;
    }
    static __device__ __forceinline__ void comb(S &s, const S &b, const RArgs &) {
        s.a += b.a;
        s.b += b.b;
    }
    static __device__ __forceinline__ S shfl(const S &s, int d, int w) {
        S r = {tjr_shfl(s.a, d, w), tjr_shfl(s.b, d, w)};
        return r;
    }
};

/* Batch and group norm gradients: in = g, in2 = x. sum g to out0, sum
 * g (x - shift) to out1 (double), where shift is pa at the output's index,
 * or with i0 = C, i1 = G, i2 = C/G (group norm's (n, c) planes) at the
 * plane's group n*G + c/(C/G). */
template <class T> struct GradSumsOp : PairBase<T> {
    typedef Pair S;
    static __device__ __forceinline__ void upd(S &s, const RArgs &a, long long off, long long,
                                               long long out) {
        long long k = a.i0 ? (out / a.i0) * a.i1 + (out % a.i0) / a.i2 : out;
        double g = (double)tjr_ld<T>(a.in, off), x = (double)tjr_ld<T>(a.in2, off);
        s.a += g;
        s.b += g * (x - a.pa[k]);
    }
    static __device__ __forceinline__ void final(const S &s, const RArgs &a, long long out) {
        ((double *)a.out0)[out] = s.a;
        ((double *)a.out1)[out] = s.b;
    }
};

/* Layer norm's row sums, over [M, L] rows: in = g, in2 = x, pa = mean (per
 * row), pb = weight (per column; NULL for ones). sum g w to out0, sum g w
 * (x - mean) to out1 (double). */
template <class T> struct LnRowOp : PairBase<T> {
    typedef Pair S;
    static __device__ __forceinline__ void upd(S &s, const RArgs &a, long long off, long long r,
                                               long long out) {
        double gw = (double)tjr_ld<T>(a.in, off) * (a.pb ? a.pb[r] : 1.0);
        s.a += gw;
        s.b += gw * ((double)tjr_ld<T>(a.in2, off) - a.pa[out]);
    }
    static __device__ __forceinline__ void final(const S &s, const RArgs &a, long long out) {
        ((double *)a.out0)[out] = s.a;
        ((double *)a.out1)[out] = s.b;
    }
};

/* Layer norm's column sums (the affine gradients), over the rows r of
 * [M, L]: pa = mean, pb = rstd (per row). sum g (x - mean) rstd to out0,
 * sum g to out1, as T. */
template <class T> struct LnColOp : PairBase<T> {
    typedef Pair S;
    static __device__ __forceinline__ void upd(S &s, const RArgs &a, long long off, long long r,
                                               long long) {
        double g = (double)tjr_ld<T>(a.in, off);
        s.a += g * ((double)tjr_ld<T>(a.in2, off) - a.pa[r]) * a.pb[r];
        s.b += g;
    }
    static __device__ __forceinline__ void final(const S &s, const RArgs &a, long long out) {
        ((T *)a.out0)[out] = (T)s.a;
        ((T *)a.out1)[out] = (T)s.b;
    }
};

TJR_KERNELS(moments_f32, MomentsOp<float>)
TJR_KERNELS(moments_f64, MomentsOp<double>)
TJR_KERNELS(gradsums_f32, GradSumsOp<float>)
TJR_KERNELS(gradsums_f64, GradSumsOp<double>)
TJR_KERNELS(lnrow_f32, LnRowOp<float>)
TJR_KERNELS(lnrow_f64, LnRowOp<double>)
TJR_KERNELS(lncol_f32, LnColOp<float>)
TJR_KERNELS(lncol_f64, LnColOp<double>)

/* ---- element kernels ------------------------------------------------------------------------ */

template <class T>
__device__ void tjn_affine(const TensorArg &x, T *y, long long n, long long S, long long P,
                           const double *a, const double *d) {
    const T *xp = (const T *)x.data;
    TJCU_GRID_STRIDE(i, n) {
        long long r = (i / S) % P;
        y[i] = xp[tjcu_offset(x, i)] * (T)a[r] + (T)d[r];
    }
}

template <class T>
__device__ void tjn_affine3(const TensorArg &g, const TensorArg &x, T *out, long long n,
                            long long S, long long P, const double *a, const double *b,
                            const double *d) {
    const T *gp = (const T *)g.data, *xp = (const T *)x.data;
    TJCU_GRID_STRIDE(i, n) {
        long long r = (i / S) % P;
        /* a b of 0 (batch norm in eval) drops the x term, as on the CPU */
        T xb = b[r] == 0 ? (T)0 : xp[tjcu_offset(x, i)] * (T)b[r];
        out[i] = gp[tjcu_offset(g, i)] * (T)a[r] + xb + (T)d[r];
    }
}

/* y[i, j] = (x[i, j] - mean[i]) rstd[i] w[j] + b[j] over [M, L] (in double
 * when there is an affine part, else x * rstd - mean * rstd in T) */
template <class T>
__device__ void tjn_ln_apply(const TensorArg &x, T *y, long long n, long long L,
                             const double *mean, const double *rstd, const double *w,
                             const double *b) {
    const T *xp = (const T *)x.data;
    TJCU_GRID_STRIDE(i, n) {
        long long row = i / L, j = i - row * L;
        double m = mean[row], r = rstd[row];
        T v = xp[tjcu_offset(x, i)];
        if (w || b) y[i] = (T)(((double)v - m) * r * (w ? w[j] : 1.0) + (b ? b[j] : 0.0));
        else y[i] = v * (T)r + (T)(-m * r);
    }
}

/* gx = rstd (g w - s1 / L - xh s2 / L) with xh = (x - mean) rstd; s1, s2p
 * from LnRowOp (s2 = s2p rstd) */
template <class T>
__device__ void tjn_ln_grad_input(const TensorArg &g, const TensorArg &x, T *gx, long long n,
                                  long long L, const double *mean, const double *rstd,
                                  const double *w, const double *s1, const double *s2p) {
    const T *gp = (const T *)g.data, *xp = (const T *)x.data;
    TJCU_GRID_STRIDE(i, n) {
        long long row = i / L, j = i - row * L;
        double m = mean[row], r = rstd[row];
        double a1 = s1[row] / (double)L, a2 = s2p[row] * r / (double)L;
        double gw = (double)gp[tjcu_offset(g, i)] * (w ? w[j] : 1.0);
        double xh = ((double)xp[tjcu_offset(x, i)] - m) * r;
        gx[i] = (T)(r * (gw - a1 - xh * a2));
    }
}

#define ELEMENT_KERNELS(sfx, T)                                                                 \
    extern "C" __global__ void norm_affine_##sfx(TensorArg x, T *y, long long n, long long S,   \
                                                 long long P, const double *a,                  \
                                                 const double *d) {                             \
        tjn_affine<T>(x, y, n, S, P, a, d);                                                     \
    }                                                                                           \
    TJCU_EXPORT(norm_affine_##sfx)                                                              \
    extern "C" __global__ void norm_affine3_##sfx(TensorArg g, TensorArg x, T *out, long long n, \
                                                  long long S, long long P, const double *a,    \
                                                  const double *b, const double *d) {           \
        tjn_affine3<T>(g, x, out, n, S, P, a, b, d);                                            \
    }                                                                                           \
    TJCU_EXPORT(norm_affine3_##sfx)                                                             \
    extern "C" __global__ void ln_apply_##sfx(TensorArg x, T *y, long long n, long long L,      \
                                              const double *mean, const double *rstd,           \
                                              const double *w, const double *b) {               \
        tjn_ln_apply<T>(x, y, n, L, mean, rstd, w, b);                                          \
    }                                                                                           \
    TJCU_EXPORT(ln_apply_##sfx)                                                                 \
    extern "C" __global__ void ln_grad_input_##sfx(TensorArg g, TensorArg x, T *gx, long long n, \
                                                   long long L, const double *mean,             \
                                                   const double *rstd, const double *w,         \
                                                   const double *s1, const double *s2p) {       \
        tjn_ln_grad_input<T>(g, x, gx, n, L, mean, rstd, w, s1, s2p);                           \
    }                                                                                           \
    TJCU_EXPORT(ln_grad_input_##sfx)
ELEMENT_KERNELS(f32, float)
ELEMENT_KERNELS(f64, double)

/* ---- per-row, per-channel and per-group coefficients ----------------------------------------- */

/* The CPU's rule for the statistics (backends/cpu/nn.h): an infinite mean or
 * variance is NaN, as PyTorch's running statistics leave it. */
__device__ __forceinline__ double tjn_mean(double m) {
    return m == INFINITY || m == -INFINITY ? (double)NAN : m;
}
__device__ __forceinline__ double tjn_rstd(double var, double eps) {
    return var == INFINITY ? (double)NAN : 1.0 / sqrt(var + eps);
}

/* Layer norm: rstd = 1 / sqrt(m2 / L + eps) per row (0 variance for L = 0);
 * mean_out and rstd_out (T, may be NULL) get the statistics. */
template <class T>
__device__ void tjn_ln_stats(const double *mean, const double *m2, long long M, long long L,
                             double eps, double *rstd, T *mean_out, T *rstd_out) {
    TJCU_GRID_STRIDE(i, M) {
        double r = tjn_rstd(L ? m2[i] / (double)L : 0.0, eps);
        rstd[i] = r;
        if (mean_out) mean_out[i] = (T)tjn_mean(mean[i]);
        if (rstd_out) rstd_out[i] = (T)r;
    }
}

/* Batch norm forward, per channel: the statistics used (the batch's when
 * training, updating the running ones in place with momentum, the variance
 * unbiased as PyTorch's; else the running ones), save_mean/save_invstd (may
 * be NULL), and a = w invstd, d = b - mean a. */
template <class T>
__device__ void tjn_bn_coef(long long C, int training, double momentum, double eps, double cnt,
                            const double *mean_d, const double *m2_d, const TensorArg &w, int wdt,
                            const TensorArg &b, int bdt, const TensorArg &rm, int rmdt,
                            const TensorArg &rv, int rvdt, T *save_mean, T *save_invstd, double *a,
                            double *d) {
    TJCU_GRID_STRIDE(c, C) {
        double mean, invstd;
        if (training) {
            double var = m2_d[c] / cnt;
            mean = mean_d[c]; /* the CPU keeps an infinite batch mean, as PyTorch */
            invstd = tjn_rstd(var, eps);
            if (rm.data) {
                double m0 = tjn_ld(rm, rmdt, c, 0), v0 = tjn_ld(rv, rvdt, c, 0);
                tjn_st(rm, rmdt, c, (1 - momentum) * m0 + momentum * mean);
                tjn_st(rv, rvdt, c, (1 - momentum) * v0 + momentum * var * cnt / (cnt - 1));
            }
        } else {
            mean = tjn_ld(rm, rmdt, c, 0);
            invstd = 1.0 / sqrt(tjn_ld(rv, rvdt, c, 0) + eps);
        }
        double k = tjn_ld(w, wdt, c, 1.0) * invstd;
        a[c] = k;
        d[c] = tjn_ld(b, bdt, c, 0.0) - mean * k;
        if (save_mean) save_mean[c] = (T)mean;
        if (save_invstd) save_invstd[c] = (T)invstd;
    }
}

/* Batch norm backward, per channel, from sg = sum g and sgxp = sum g (x - m)
 * with m the mean used (save_mean when train, else running_mean) and v its
 * save_invstd (train) or running_var: with k = w invstd and cnt values per
 * channel, gw = sgx = sgxp invstd, gb = sg, and
 *   train: gx = k g - k invstd sgx / cnt x + (k invstd m sgx - k sg) / cnt
 *   eval:  gx = k g. */
template <class T>
__device__ void tjn_bn_bwd_coef(long long C, int train, double eps, double cnt, const double *sg,
                                const double *sgxp, const TensorArg &w, int wdt, const double *m,
                                const TensorArg &v, int vdt, T *gw, T *gb, double *ra, double *rb,
                                double *rd) {
    TJCU_GRID_STRIDE(c, C) {
        double vc = tjn_ld(v, vdt, c, 0), invstd = train ? vc : 1.0 / sqrt(vc + eps);
        /* an empty batch's statistics are NaN but its sums are 0, and so is
         * the weight's gradient (the CPU kernel's rule) */
        double sgx = cnt > 0 ? sgxp[c] * invstd : 0.0, k = tjn_ld(w, wdt, c, 1.0) * invstd;
        gw[c] = (T)sgx;
        gb[c] = (T)sg[c];
        ra[c] = k;
        rb[c] = train ? -k * invstd * sgx / cnt : 0;
        rd[c] = train ? -k * sg[c] / cnt + k * invstd * m[c] * sgx / cnt : 0;
    }
}

/* Group norm forward: per group k (N*G of them, L = D*S values each) the
 * statistics to mean_out/rstd_out (may be NULL); per plane (n, c) the
 * coefficients a = rstd w[c], d = b[c] - mean a. */
template <class T>
__device__ void tjn_gn_coef(long long N, long long C, long long G, long long L, double eps,
                            const double *mean_d, const double *m2_d, const TensorArg &w, int wdt,
                            const TensorArg &b, int bdt, T *mean_out, T *rstd_out, double *a,
                            double *d) {
    long long D = C / G;
    TJCU_GRID_STRIDE(k, N * G) {
        if (mean_out) mean_out[k] = (T)tjn_mean(mean_d[k]);
        if (rstd_out) rstd_out[k] = (T)tjn_rstd(L ? m2_d[k] / (double)L : 0.0, eps);
    }
    TJCU_GRID_STRIDE(r, N * C) {
        long long n = r / C, c = r - n * C, k = n * G + c / D;
        double rs = tjn_rstd(L ? m2_d[k] / (double)L : 0.0, eps);
        double ar = rs * tjn_ld(w, wdt, c, 1.0);
        a[r] = ar;
        d[r] = tjn_ld(b, bdt, c, 0.0) - mean_d[k] * ar;
    }
}

#define COEF_KERNELS(sfx, T)                                                                    \
    extern "C" __global__ void ln_stats_##sfx(const double *mean, const double *m2, long long M, \
                                              long long L, double eps, double *rstd,            \
                                              T *mean_out, T *rstd_out) {                       \
        tjn_ln_stats<T>(mean, m2, M, L, eps, rstd, mean_out, rstd_out);                         \
    }                                                                                           \
    TJCU_EXPORT(ln_stats_##sfx)                                                                 \
    extern "C" __global__ void bn_coef_##sfx(                                                   \
        long long C, int training, double momentum, double eps, double cnt,                    \
        const double *mean_d, const double *m2_d, TensorArg w, int wdt, TensorArg b, int bdt,   \
        TensorArg rm, int rmdt, TensorArg rv, int rvdt, T *save_mean, T *save_invstd,          \
        double *a, double *d) {                                                                 \
        tjn_bn_coef<T>(C, training, momentum, eps, cnt, mean_d, m2_d, w, wdt, b, bdt, rm, rmdt, \
                       rv, rvdt, save_mean, save_invstd, a, d);                                 \
    }                                                                                           \
    TJCU_EXPORT(bn_coef_##sfx)                                                                  \
    extern "C" __global__ void bn_bwd_coef_##sfx(                                               \
        long long C, int train, double eps, double cnt, const double *sg, const double *sgxp,  \
        TensorArg w, int wdt, const double *m, TensorArg v, int vdt, T *gw, T *gb, double *ra, \
        double *rb, double *rd) {                                                               \
        tjn_bn_bwd_coef<T>(C, train, eps, cnt, sg, sgxp, w, wdt, m, v, vdt, gw, gb, ra, rb, rd); \
    }                                                                                           \
    TJCU_EXPORT(bn_bwd_coef_##sfx)                                                              \
    extern "C" __global__ void gn_coef_##sfx(long long N, long long C, long long G, long long L, \
                                             double eps, const double *mean_d,                  \
                                             const double *m2_d, TensorArg w, int wdt,          \
                                             TensorArg b, int bdt, T *mean_out, T *rstd_out,    \
                                             double *a, double *d) {                            \
        tjn_gn_coef<T>(N, C, G, L, eps, mean_d, m2_d, w, wdt, b, bdt, mean_out, rstd_out, a, d); \
    }                                                                                           \
    TJCU_EXPORT(gn_coef_##sfx)
COEF_KERNELS(f32, float)
COEF_KERNELS(f64, double)

/* ---- group norm backward: sums over a group's channels and over the batch --------------------
 * One warp per item (blockDim (32, 8)); lanes split the sum and meet by
 * butterfly shuffles, so every lane holds the total. */

__device__ __forceinline__ double tjn_warp_sum(double v) {
    for (int d = 16; d > 0; d >>= 1) v += __shfl_xor_sync(0xffffffffu, v, d, 32);
    return v;
}

/* Per group k = (n, g) with r = rstd, m = mean, s = 1 / (D S): from the
 * planes' db = sum g and ds = sum g (x - m),
 *   c2 = -sum_c(w ds) r^3 s,  gx = r w g + c2 x + (-c2 m - r s sum_c(w db)). */
extern "C" __global__ void gn_bwd_coef(long long N, long long C, long long G, long long S,
                                       const double *db, const double *ds, const double *mean,
                                       const double *rstd, TensorArg w, int wdt, double *ra,
                                       double *rb, double *rd) {
    long long D = C / G, k = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    bool live = k < N * G;
    long long n = live ? k / G : 0, c0 = live ? (k - n * G) * D : 0;
    double wds = 0, wdb = 0;
    if (live)
        for (long long c = c0 + threadIdx.x; c < c0 + D; c += 32) {
            double wc = tjn_ld(w, wdt, c, 1.0);
            wds += wc * ds[n * C + c];
            wdb += wc * db[n * C + c];
        }
    wds = tjn_warp_sum(wds);
    wdb = tjn_warp_sum(wdb);
    if (!live) return;
    double r = rstd[k], m = mean[k], s = 1.0 / (double)(D * S);
    double c2 = -wds * r * r * r * s;
    for (long long c = c0 + threadIdx.x; c < c0 + D; c += 32) {
        ra[n * C + c] = r * tjn_ld(w, wdt, c, 1.0);
        rb[n * C + c] = c2;
        rd[n * C + c] = -c2 * m - r * s * wdb;
    }
}
TJCU_EXPORT(gn_bwd_coef)

/* Per channel c: grad_weight = sum_n ds[n, c] rstd[n, c / D], grad_bias = sum_n db[n, c]. */
template <class T>
__device__ void tjn_gn_affine_grads(long long N, long long C, long long G, const double *db,
                                    const double *ds, const double *rstd, T *gw, T *gb) {
    long long D = C / G, c = (long long)blockIdx.x * blockDim.y + threadIdx.y;
    bool live = c < C;
    double aw = 0, ab = 0;
    if (live)
        for (long long n = threadIdx.x; n < N; n += 32) {
            aw += ds[n * C + c] * rstd[n * G + c / D];
            ab += db[n * C + c];
        }
    aw = tjn_warp_sum(aw);
    ab = tjn_warp_sum(ab);
    if (live && threadIdx.x == 0) {
        gw[c] = (T)aw;
        gb[c] = (T)ab;
    }
}

#define GN_GRADS(sfx, T)                                                                        \
    extern "C" __global__ void gn_affine_grads_##sfx(long long N, long long C, long long G,     \
                                                     const double *db, const double *ds,        \
                                                     const double *rstd, T *gw, T *gb) {        \
        tjn_gn_affine_grads<T>(N, C, G, db, ds, rstd, gw, gb);                                  \
    }                                                                                           \
    TJCU_EXPORT(gn_affine_grads_##sfx)
GN_GRADS(f32, float)
GN_GRADS(f64, double)
