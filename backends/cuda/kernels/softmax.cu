/* softmax.cu — softmax, log_softmax and their backward ops over a dense
 * input seen as [outer, n, inner] around the softmax dim (host side:
 * backends/cuda/op_softmax.c).
 *
 * Each (outer, inner) line of n elements gets a group of lanes: along x when
 * inner == 1 (row mode: neighbouring lanes read neighbouring elements), along
 * y otherwise (column mode: neighbouring threads take neighbouring lines).
 * Forward: every lane folds its elements into (max, sum of exp(x - max)),
 * rescaling when the max grows, so the line is read once for its statistics;
 * the lanes' states meet in a tree and every lane then writes its elements.
 * Stable: exponents are x - max <= 0. A line whose max is infinite (all
 * -inf, or a +inf) is NaN, as the CPU's exp(x - max) makes it; a NaN
 * anywhere makes the line NaN through its sum. exp is the precise one
 * (expf/exp), not the fast intrinsic, whose error grows with |x - max|. */
#include "tjcu_builtins.h"
#include "tjcu_kernel.h"
#include "tjcu_reduce.h"

__device__ __forceinline__ float tjs_exp(float x) { return expf(x); }
__device__ __forceinline__ double tjs_exp(double x) { return exp(x); }
__device__ __forceinline__ float tjs_log(float x) { return logf(x); }
__device__ __forceinline__ double tjs_log(double x) { return log(x); }

template <class T> struct MaxSum {
    T m, s;
};

/* (m, s) stands for m + log(s); see reduce_stats.cu's logsumexp */
template <class T> struct MaxSumOp {
    typedef MaxSum<T> S;
    static __device__ __forceinline__ S init() {
        S s = {-(T)INFINITY, (T)0};
        return s;
    }
    static __device__ __forceinline__ void join(S &a, T m, T s) {
        if (m > a.m) {
            a.s = a.s * tjs_exp(a.m - m) + s;
            a.m = m;
        } else if (m == a.m) {
            a.s += s;
        } else {
            a.s += s * tjs_exp(m - a.m);
        }
    }
    static __device__ __forceinline__ void comb(S &a, const S &b, const RArgs &) { join(a, b.m, b.s); }
    static __device__ __forceinline__ S shfl(const S &s, int d, int w) {
        S r = {tjr_shfl(s.m, d, w), tjr_shfl(s.s, d, w)};
        return r;
    }
};

template <class T> struct SumOpT {
    typedef T S;
    static __device__ __forceinline__ S init() { return (T)0; }
    static __device__ __forceinline__ void comb(S &a, const S &b, const RArgs &) { a += b; }
    static __device__ __forceinline__ S shfl(const S &s, int d, int w) { return tjr_shfl(s, d, w); }
};

/* The line this thread works on, its first element, the step between its
 * elements, and its lane; false past the last line. */
struct Line {
    long long base, step;
    int lane, lanes;
    bool live;
};

__device__ __forceinline__ Line tjs_line(long long outer, long long n, long long inner, int row) {
    Line l;
    if (row) {
        long long r = (long long)blockIdx.x * blockDim.y + threadIdx.y;
        l.live = r < outer;
        l.base = r * n;
        l.step = 1;
        l.lane = (int)threadIdx.x;
        l.lanes = (int)blockDim.x;
    } else {
        long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x;
        long long o = c / inner, i = c - o * inner;
        l.live = c < outer * inner;
        l.base = o * n * inner + i;
        l.step = inner;
        l.lane = (int)threadIdx.y;
        l.lanes = (int)blockDim.y;
    }
    return l;
}

/* A state of the line's tree, known to every lane of the line. */
template <class Op>
__device__ __forceinline__ typename Op::S tjs_all(typename Op::S s, int row, typename Op::S *sm) {
    RArgs none = RArgs();
    if (row) return tjr_bcast_x<Op>(tjr_tree_x<Op>(s, none, sm), sm);
    return tjr_tree_y<Op>(s, none, sm);
}

template <class T>
__device__ void tjs_forward(const T *x, T *y, long long outer, long long n, long long inner,
                            int row, int log_form) {
    typedef MaxSumOp<T> Op;
    TJCU_DYNAMIC_SHARED(typename Op::S, sm);
    Line l = tjs_line(outer, n, inner, row);
    typename Op::S st = Op::init();
    if (l.live)
        for (long long j = l.lane; j < n; j += l.lanes) Op::join(st, x[l.base + j * l.step], (T)1);
    st = tjs_all<Op>(st, row, sm);
    if (!l.live) return;
    T m = st.m, s = st.s;
    if (m == (T)INFINITY || m == -(T)INFINITY) s = (T)NAN;
    if (log_form) {
        /* (x - max) is exact near the max; subtracting max + log(sum) at once
         * would round at the magnitude of x */
        T ls = tjs_log(s);
        for (long long j = l.lane; j < n; j += l.lanes) {
            long long at = l.base + j * l.step;
            y[at] = (x[at] - m) - ls;
        }
    } else {
        T inv = (T)1 / s;
        for (long long j = l.lane; j < n; j += l.lanes) {
            long long at = l.base + j * l.step;
            y[at] = tjs_exp(x[at] - m) * inv;
        }
    }
}

/* softmax: gi = y (g - sum(g y));  log_softmax: gi = g - exp(y) sum(g).
 * Computed in T (the output's dtype), stored as O (input_dtype). */
template <class T, class O>
__device__ void tjs_backward(const T *g, const T *y, O *gi, long long outer, long long n,
                             long long inner, int row, int log_form) {
    typedef SumOpT<T> Op;
    TJCU_DYNAMIC_SHARED(T, sm);
    Line l = tjs_line(outer, n, inner, row);
    T s = 0;
    if (l.live)
        for (long long j = l.lane; j < n; j += l.lanes) {
            long long at = l.base + j * l.step;
            s += log_form ? g[at] : g[at] * y[at];
        }
    s = tjs_all<Op>(s, row, sm);
    if (!l.live) return;
    for (long long j = l.lane; j < n; j += l.lanes) {
        long long at = l.base + j * l.step;
        T v = log_form ? g[at] - tjs_exp(y[at]) * s : y[at] * (g[at] - s);
        gi[at] = (O)v;
    }
}

#define FORWARD(sfx, T)                                                                         \
    extern "C" __global__ void softmax_fwd_##sfx(const T *x, T *y, long long outer, long long n, \
                                                 long long inner, int row, int log_form) {       \
        tjs_forward<T>(x, y, outer, n, inner, row, log_form);                                   \
    }                                                                                           \
    TJCU_EXPORT(softmax_fwd_##sfx)
FORWARD(f32, float)
FORWARD(f64, double)

#define BACKWARD(sfx, T, O)                                                                     \
    extern "C" __global__ void softmax_bwd_##sfx(const T *g, const T *y, O *gi, long long outer, \
                                                 long long n, long long inner, int row,          \
                                                 int log_form) {                                 \
        tjs_backward<T, O>(g, y, gi, outer, n, inner, row, log_form);                           \
    }                                                                                           \
    TJCU_EXPORT(softmax_bwd_##sfx)
BACKWARD(f32_f32, float, float)
BACKWARD(f32_f64, float, double)
BACKWARD(f64_f32, double, float)
BACKWARD(f64_f64, double, double)

TJR_GATHER_KERNELS(softmax)
