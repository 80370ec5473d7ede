/* reduce.cu — the reducers of sum, mean, prod, amax, amin, argmax, argmin,
 * max.dim and min.dim (and sum_to_size, which is sum), run by the engine in
 * tjcu_reduce.h. Kernels are <op>_<dtype>_p1 and _p2.
 *
 * Numerics follow the CPU kernels (backends/cpu/reduce.c): f32 sums, means
 * and products accumulate in double; i64 and bool sum and multiply in
 * unsigned 64-bit (exact, wrapping). The extrema compare in the input's
 * dtype, a NaN wins, and the index forms give the first index among equal
 * values (and the first NaN): their comb compares indices, so the tree's
 * order cannot change the answer. */
#include "tjcu_builtins.h"
#include "tjcu_kernel.h"
#include "tjcu_reduce.h"

/* ---- sum, mean, prod: A is the accumulator, Out the result ---------------------------- */

struct AddF {
    template <class A> static __device__ __forceinline__ A op(A x, A y) { return x + y; }
    template <class A> static __device__ __forceinline__ A zero() { return (A)0; }
};
struct MulF {
    template <class A> static __device__ __forceinline__ A op(A x, A y) { return x * y; }
    template <class A> static __device__ __forceinline__ A zero() { return (A)1; }
};

template <class T, class A, class Out, class F, bool MEAN> struct FoldOp {
    typedef A S;
    static __device__ __forceinline__ S init() { return F::template zero<A>(); }
    static __device__ __forceinline__ void upd(S &s, const RArgs &a, long long off, long long,
                                               long long) {
        s = F::op(s, (A)tjr_ld<T>(a.in, off));
    }
    static __device__ __forceinline__ void comb(S &s, const S &b, const RArgs &) { s = F::op(s, b); }
    static __device__ __forceinline__ S shfl(const S &s, int d, int w) { return tjr_shfl(s, d, w); }
    static __device__ __forceinline__ void final(const S &s, const RArgs &a, long long out) {
        /* mean of nothing is 0/0: NaN, as PyTorch */
        ((Out *)a.out0)[out] = MEAN ? (Out)((double)s / (double)a.n) : (Out)s;
    }
};

typedef unsigned long long u64;
typedef unsigned char b8;

TJR_KERNELS(sum_f32, FoldOp<float, double, float, AddF, false>)
TJR_KERNELS(sum_f64, FoldOp<double, double, double, AddF, false>)
TJR_KERNELS(sum_i64, FoldOp<long long, u64, long long, AddF, false>)
TJR_KERNELS(sum_bool, FoldOp<b8, u64, long long, AddF, false>)
TJR_KERNELS(prod_f32, FoldOp<float, double, float, MulF, false>)
TJR_KERNELS(prod_f64, FoldOp<double, double, double, MulF, false>)
TJR_KERNELS(prod_i64, FoldOp<long long, u64, long long, MulF, false>)
TJR_KERNELS(prod_bool, FoldOp<b8, u64, long long, MulF, false>)
TJR_KERNELS(mean_f32, FoldOp<float, double, float, AddF, true>)
TJR_KERNELS(mean_f64, FoldOp<double, double, double, AddF, true>)

/* ---- amax, amin -------------------------------------------------------------------------
 * `!(x <= s)` takes a larger x and a NaN x; a NaN s stays. */
template <class T, bool MAX> struct ExtOp {
    typedef T S;
    static __device__ __forceinline__ S init() { return MAX ? TjrLim<T>::lo() : TjrLim<T>::hi(); }
    static __device__ __forceinline__ void join(S &s, T x) {
        bool better = MAX ? !(x <= s) : !(x >= s);
        if (better && !tjr_isnan(s)) s = x;
    }
    static __device__ __forceinline__ void upd(S &s, const RArgs &a, long long off, long long,
                                               long long) {
        join(s, tjr_ld<T>(a.in, off));
    }
    static __device__ __forceinline__ void comb(S &s, const S &b, const RArgs &) { join(s, b); }
    static __device__ __forceinline__ S shfl(const S &s, int d, int w) { return tjr_shfl(s, d, w); }
    static __device__ __forceinline__ void final(const S &s, const RArgs &a, long long out) {
        ((T *)a.out0)[out] = s;
    }
};

TJR_KERNELS(amax_f32, ExtOp<float, true>)
TJR_KERNELS(amax_f64, ExtOp<double, true>)
TJR_KERNELS(amax_i64, ExtOp<long long, true>)
TJR_KERNELS(amax_bool, ExtOp<b8, true>)
TJR_KERNELS(amin_f32, ExtOp<float, false>)
TJR_KERNELS(amin_f64, ExtOp<double, false>)
TJR_KERNELS(amin_i64, ExtOp<long long, false>)
TJR_KERNELS(amin_bool, ExtOp<b8, false>)

/* ---- argmax, argmin, max.dim, min.dim --------------------------------------------------
 * (value, index); the identity has an index past every real one, so the
 * first element always replaces it (even one equal to the identity's value). */
template <class T> struct ArgS {
    T v;
    long long i;
};

/* VALUES: max.dim/min.dim (values to out0, indices to out1); else the index to out0. */
template <class T, bool MAX, bool VALUES> struct ArgOp {
    typedef ArgS<T> S;
    static __device__ __forceinline__ S init() {
        S s;
        s.v = MAX ? TjrLim<T>::lo() : TjrLim<T>::hi();
        s.i = LLONG_MAX;
        return s;
    }
    /* true when b should replace s: a NaN beats any number (the first NaN
     * wins among NaNs), then the larger (smaller) value, then the smaller index */
    static __device__ __forceinline__ bool wins(const S &b, const S &s) {
        bool bn = tjr_isnan(b.v), sn = tjr_isnan(s.v);
        if (bn || sn) return bn && (!sn || b.i < s.i);
        if (b.v == s.v) return b.i < s.i;
        return MAX ? b.v > s.v : b.v < s.v;
    }
    static __device__ __forceinline__ void upd(S &s, const RArgs &a, long long off, long long r,
                                               long long) {
        S b;
        b.v = tjr_ld<T>(a.in, off);
        b.i = r;
        if (wins(b, s)) s = b;
    }
    static __device__ __forceinline__ void comb(S &s, const S &b, const RArgs &) {
        if (wins(b, s)) s = b;
    }
    static __device__ __forceinline__ S shfl(const S &s, int d, int w) {
        S r;
        r.v = tjr_shfl(s.v, d, w);
        r.i = tjr_shfl(s.i, d, w);
        return r;
    }
    static __device__ __forceinline__ void final(const S &s, const RArgs &a, long long out) {
        if (VALUES) {
            ((T *)a.out0)[out] = s.v;
            ((long long *)a.out1)[out] = s.i;
        } else {
            ((long long *)a.out0)[out] = s.i;
        }
    }
};

TJR_KERNELS(argmax_f32, ArgOp<float, true, false>)
TJR_KERNELS(argmax_f64, ArgOp<double, true, false>)
TJR_KERNELS(argmax_i64, ArgOp<long long, true, false>)
TJR_KERNELS(argmax_bool, ArgOp<b8, true, false>)
TJR_KERNELS(argmin_f32, ArgOp<float, false, false>)
TJR_KERNELS(argmin_f64, ArgOp<double, false, false>)
TJR_KERNELS(argmin_i64, ArgOp<long long, false, false>)
TJR_KERNELS(argmin_bool, ArgOp<b8, false, false>)
TJR_KERNELS(max_dim_f32, ArgOp<float, true, true>)
TJR_KERNELS(max_dim_f64, ArgOp<double, true, true>)
TJR_KERNELS(max_dim_i64, ArgOp<long long, true, true>)
TJR_KERNELS(max_dim_bool, ArgOp<b8, true, true>)
TJR_KERNELS(min_dim_f32, ArgOp<float, false, true>)
TJR_KERNELS(min_dim_f64, ArgOp<double, false, true>)
TJR_KERNELS(min_dim_i64, ArgOp<long long, false, true>)
TJR_KERNELS(min_dim_bool, ArgOp<b8, false, true>)
