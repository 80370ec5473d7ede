/* reduce_stats.cu — the reducers of var, std, logsumexp and
 * linalg_vector_norm, run by the engine in tjcu_reduce.h. Kernels are
 * <op>_<dtype>_p1 and _p2; the norms are norm_<kind>_<dtype>.
 *
 * Numerics follow the CPU kernels (backends/cpu/reduce.c, reduce_norm.c),
 * all in double whatever the input: var/std fold elements by Welford's update
 * and join lanes by Chan's formula; logsumexp keeps (max, sum of exp(x -
 * max)); the norms keep (scale, sum) as LAPACK's dnrm2 does, so f64 norms of
 * huge or tiny values neither overflow nor underflow. */
#include "tjcu_builtins.h"
#include "tjcu_kernel.h"
#include "tjcu_reduce.h"

/* ---- var, std ---------------------------------------------------------------------------- */

struct Moments {
    double n, mean, m2; /* m2: the sum of squared deviations from mean */
};

__device__ __forceinline__ void tjr_welford(Moments &s, double v) {
    double d = v - s.mean;
    s.n += 1;
    s.mean += d / s.n;
    s.m2 += d * (v - s.mean);
}

__device__ __forceinline__ void tjr_chan(Moments &s, const Moments &b) {
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

template <class T, bool STD> struct VarOp {
    typedef Moments S;
    static __device__ __forceinline__ S init() {
        S s = {0, 0, 0};
        return s;
    }
    static __device__ __forceinline__ void upd(S &s, const RArgs &a, long long off, long long,
                                               long long) {
        tjr_welford(s, (double)tjr_ld<T>(a.in, off));
    }
    static __device__ __forceinline__ void comb(S &s, const S &b, const RArgs &) { tjr_chan(s, b); }
    static __device__ __forceinline__ S shfl(const S &s, int d, int w) {
        S r = {tjr_shfl(s.n, d, w), tjr_shfl(s.mean, d, w), tjr_shfl(s.m2, d, w)};
        return r;
    }
    /* divides by max(0, n - correction): NaN or inf when that is 0, as PyTorch */
    static __device__ __forceinline__ void final(const S &s, const RArgs &a, long long out) {
        double div = s.n - (double)a.correction;
        double v = s.m2 / (div > 0 ? div : 0);
        ((T *)a.out0)[out] = (T)(STD ? sqrt(v) : v);
    }
};

TJR_KERNELS(var_f32, VarOp<float, false>)
TJR_KERNELS(var_f64, VarOp<double, false>)
TJR_KERNELS(std_f32, VarOp<float, true>)
TJR_KERNELS(std_f64, VarOp<double, true>)

/* ---- logsumexp ------------------------------------------------------------------------------
 * (m, s) stands for m + log(s). Equal maxima add directly, which keeps
 * infinities exact; a NaN lands in the last branch and makes s NaN. */
struct Lse {
    double m, s;
};

__device__ __forceinline__ void tjr_lse_join(Lse &a, double m, double s) {
    if (m > a.m) {
        a.s = a.s * exp(a.m - m) + s;
        a.m = m;
    } else if (m == a.m) {
        a.s += s;
    } else {
        a.s += s * exp(m - a.m);
    }
}

template <class T> struct LseOp {
    typedef Lse S;
    static __device__ __forceinline__ S init() {
        S s = {-(double)INFINITY, 0};
        return s;
    }
    static __device__ __forceinline__ void upd(S &s, const RArgs &a, long long off, long long,
                                               long long) {
        tjr_lse_join(s, (double)tjr_ld<T>(a.in, off), 1);
    }
    static __device__ __forceinline__ void comb(S &s, const S &b, const RArgs &) {
        tjr_lse_join(s, b.m, b.s);
    }
    static __device__ __forceinline__ S shfl(const S &s, int d, int w) {
        S r = {tjr_shfl(s.m, d, w), tjr_shfl(s.s, d, w)};
        return r;
    }
    static __device__ __forceinline__ void final(const S &s, const RArgs &a, long long out) {
        ((T *)a.out0)[out] = (T)(s.m + log(s.s));
    }
};

TJR_KERNELS(logsumexp_f32, LseOp<float>)
TJR_KERNELS(logsumexp_f64, LseOp<double>)

/* ---- linalg_vector_norm ----------------------------------------------------------------------
 * One state (a, b) for every kind: a is a scale or an extreme |x|, b a sum.
 *   sq   ord 2 of f32: the sum of squares in double (cannot overflow)
 *   abs  ord 1;  cnt  ord 0 (NaN counts as nonzero, as PyTorch)
 *   max  ord inf;  min  ord -inf (a NaN wins)
 *   pos  other ord > 0 (and ord 2 of f64): b sums (|x| / a)^ord, a the largest |x|
 *   neg  ord < 0: the same with a the smallest |x| */
struct Nrm {
    double a, b;
};

__device__ __forceinline__ double tjr_powp(double r, double p) { return p == 2 ? r * r : pow(r, p); }

/* `!(ax <= s)` also takes a NaN; a NaN s stays */
__device__ __forceinline__ void tjr_max_abs(double &s, double ax) {
    if (!(ax <= s) && !tjr_isnan(s)) s = ax;
}
__device__ __forceinline__ void tjr_min_abs(double &s, double ax) {
    if (!(ax >= s) && !tjr_isnan(s)) s = ax;
}

/* Joins (a, b) into s; NEG: a is the smallest |x| instead of the largest.
 * Equal scales add directly, which keeps zeros and infinities exact. */
template <bool NEG> __device__ __forceinline__ void tjr_scaled_join(Nrm &s, double a, double b, double ord) {
    if (tjr_isnan(s.b) || tjr_isnan(b)) {
        s.b = NAN;
    } else if (NEG ? a < s.a : a > s.a) {
        s.b = s.b * tjr_powp(s.a / a, ord) + b;
        s.a = a;
    } else if (a == s.a) {
        s.b += b;
    } else {
        s.b += b * tjr_powp(a / s.a, ord);
    }
}

enum { NRM_SQ, NRM_ABS, NRM_CNT, NRM_MAX, NRM_MIN, NRM_POS, NRM_NEG };

template <class T, int K> struct NormOp {
    typedef Nrm S;
    static __device__ __forceinline__ S init() {
        S s = {(K == NRM_MIN || K == NRM_NEG) ? (double)INFINITY : 0.0, 0.0};
        return s;
    }
    static __device__ __forceinline__ void upd(S &s, const RArgs &a, long long off, long long,
                                               long long) {
        double v = (double)tjr_ld<T>(a.in, off), ax = fabs(v);
        if (K == NRM_SQ) s.b += v * v;
        if (K == NRM_ABS) s.b += ax;
        if (K == NRM_CNT) s.b += v != 0 ? 1.0 : 0.0;
        if (K == NRM_MAX) tjr_max_abs(s.a, ax);
        if (K == NRM_MIN) tjr_min_abs(s.a, ax);
        if (K == NRM_POS || K == NRM_NEG) tjr_scaled_join<K == NRM_NEG>(s, ax, tjr_isnan(v) ? v : 1.0, a.ord);
    }
    static __device__ __forceinline__ void comb(S &s, const S &b, const RArgs &a) {
        if (K == NRM_SQ || K == NRM_ABS || K == NRM_CNT) s.b += b.b;
        if (K == NRM_MAX) tjr_max_abs(s.a, b.a);
        if (K == NRM_MIN) tjr_min_abs(s.a, b.a);
        if (K == NRM_POS || K == NRM_NEG) tjr_scaled_join<K == NRM_NEG>(s, b.a, b.b, a.ord);
    }
    static __device__ __forceinline__ S shfl(const S &s, int d, int w) {
        S r = {tjr_shfl(s.a, d, w), tjr_shfl(s.b, d, w)};
        return r;
    }
    static __device__ __forceinline__ void final(const S &s, const RArgs &a, long long out) {
        double v;
        if (K == NRM_SQ) v = sqrt(s.b);
        else if (K == NRM_ABS || K == NRM_CNT) v = s.b;
        else if (K == NRM_MAX || K == NRM_MIN) v = s.a;
        else if (K == NRM_POS && a.ord == 2) v = s.a * sqrt(s.b);
        else v = s.a * pow(s.b, 1 / a.ord);
        ((T *)a.out0)[out] = (T)v;
    }
};

TJR_KERNELS(norm_sq_f32, NormOp<float, NRM_SQ>)
TJR_KERNELS(norm_abs_f32, NormOp<float, NRM_ABS>)
TJR_KERNELS(norm_abs_f64, NormOp<double, NRM_ABS>)
TJR_KERNELS(norm_cnt_f32, NormOp<float, NRM_CNT>)
TJR_KERNELS(norm_cnt_f64, NormOp<double, NRM_CNT>)
TJR_KERNELS(norm_max_f32, NormOp<float, NRM_MAX>)
TJR_KERNELS(norm_max_f64, NormOp<double, NRM_MAX>)
TJR_KERNELS(norm_min_f32, NormOp<float, NRM_MIN>)
TJR_KERNELS(norm_min_f64, NormOp<double, NRM_MIN>)
TJR_KERNELS(norm_pos_f32, NormOp<float, NRM_POS>)
TJR_KERNELS(norm_pos_f64, NormOp<double, NRM_POS>)
TJR_KERNELS(norm_neg_f32, NormOp<float, NRM_NEG>)
TJR_KERNELS(norm_neg_f64, NormOp<double, NRM_NEG>)
