/* tjcu_pointwise.h — the loops of generated pointwise kernels
 * (backends/cuda/pw_codegen.c writes one source per op and compute dtype: a
 * struct Op with the row's expression, and four extern "C" kernels that call
 * these loops). Included after tjcu_builtins.h, tjcu_kernel.h and tjm_cuda.h.
 *
 * Op gives the storage types of its operands (X0, X1, X2), of its output (Y)
 * and of its parameters (P), its tensor arity, and
 *     static Y apply(X0, X1, X2, P p0, P p1)
 * which converts the operands to the compute type, evaluates the expression
 * and converts the result for storing.
 *
 * Every kernel takes (TensorArg o, x0, x1, x2, long long n, int flags,
 * P p0, P p1, P s): the output, up to three inputs (unused ones ignored), the
 * element count, and per-operand flags: TJPW_PARAM(k) makes operand k the
 * scalar s (the .Scalar forms' operand), TJPW_BCAST(k) marks a one-element
 * operand in the contiguous kernels. Layouts:
 *   contig     every operand contiguous with the output's sizes (or one element)
 *   vec        the same, every pointer aligned to four elements: 4 elements per
 *              thread through one aligned vector load or store per operand
 *   strided32  any strides (broadcast: stride 0), dims coalesced by the host;
 *   strided64  32-bit index arithmetic when every offset fits, else 64-bit
 */
#ifndef TJCU_POINTWISE_H
#define TJCU_POINTWISE_H

#define TJPW_BCAST(k) (1 << (k))
#define TJPW_PARAM(k) (1 << (4 + (k)))

template <typename S> struct alignas(4 * sizeof(S)) TjpwVec4 {
    S v[4];
};

/* Operand k at element index i of a contiguous layout. */
template <typename X, typename P>
__device__ __forceinline__ X tjpw_at(const TensorArg &t, long long i, int flags, int k, P s) {
    if (flags & TJPW_PARAM(k)) return (X)s;
    const X *p = (const X *)t.data;
    return p[(flags & TJPW_BCAST(k)) ? 0 : i];
}

template <class Op>
__device__ __forceinline__ void tjpw_contig_loop(const TensorArg &o, const TensorArg &x0,
                                                 const TensorArg &x1, const TensorArg &x2,
                                                 long long n, int flags, typename Op::P p0,
                                                 typename Op::P p1, typename Op::P s) {
    typedef typename Op::X0 X0;
    typedef typename Op::X1 X1;
    typedef typename Op::X2 X2;
    typedef typename Op::Y Y;
    Y *out = (Y *)o.data;
    TJCU_GRID_STRIDE(i, n) {
        X0 a = tjpw_at<X0>(x0, i, flags, 0, s);
        X1 b = Op::arity > 1 ? tjpw_at<X1>(x1, i, flags, 1, s) : X1();
        X2 c = Op::arity > 2 ? tjpw_at<X2>(x2, i, flags, 2, s) : X2();
        out[i] = Op::apply(a, b, c, p0, p1);
    }
}

/* Four consecutive elements of operand k, starting at 4 * q. */
template <typename X, typename P>
__device__ __forceinline__ TjpwVec4<X> tjpw_at4(const TensorArg &t, long long q, int flags, int k,
                                                P s) {
    TjpwVec4<X> r;
    if (flags & (TJPW_PARAM(k) | TJPW_BCAST(k))) {
        X v = (flags & TJPW_PARAM(k)) ? (X)s : *(const X *)t.data;
        r.v[0] = r.v[1] = r.v[2] = r.v[3] = v;
    } else {
        r = ((const TjpwVec4<X> *)t.data)[q];
    }
    return r;
}

template <class Op>
__device__ __forceinline__ void tjpw_vec_loop(const TensorArg &o, const TensorArg &x0,
                                              const TensorArg &x1, const TensorArg &x2,
                                              long long n, int flags, typename Op::P p0,
                                              typename Op::P p1, typename Op::P s) {
    typedef typename Op::X0 X0;
    typedef typename Op::X1 X1;
    typedef typename Op::X2 X2;
    typedef typename Op::Y Y;
    long long groups = n / 4;
    TJCU_GRID_STRIDE(q, groups) {
        TjpwVec4<X0> a = tjpw_at4<X0>(x0, q, flags, 0, s);
        TjpwVec4<X1> b;
        TjpwVec4<X2> c;
        if (Op::arity > 1) b = tjpw_at4<X1>(x1, q, flags, 1, s);
        else b.v[0] = b.v[1] = b.v[2] = b.v[3] = X1();
        if (Op::arity > 2) c = tjpw_at4<X2>(x2, q, flags, 2, s);
        else c.v[0] = c.v[1] = c.v[2] = c.v[3] = X2();
        TjpwVec4<Y> r;
#pragma unroll
        for (int j = 0; j < 4; j++) r.v[j] = Op::apply(a.v[j], b.v[j], c.v[j], p0, p1);
        ((TjpwVec4<Y> *)o.data)[q] = r;
    }
    /* the last n % 4 elements: one thread each */
    long long i = groups * 4 + (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        X0 av = tjpw_at<X0>(x0, i, flags, 0, s);
        X1 bv = Op::arity > 1 ? tjpw_at<X1>(x1, i, flags, 1, s) : X1();
        X2 cv = Op::arity > 2 ? tjpw_at<X2>(x2, i, flags, 2, s) : X2();
        ((Y *)o.data)[i] = Op::apply(av, bv, cv, p0, p1);
    }
}

/* I: the index type (unsigned or unsigned long long), D: the offset type
 * (int or long long); the host picks 32 bits when n and every operand's
 * largest offset fit. */
template <class Op, typename I, typename D>
__device__ __forceinline__ void tjpw_strided_loop(const TensorArg &o, const TensorArg &x0,
                                                  const TensorArg &x1, const TensorArg &x2,
                                                  long long n, int flags, typename Op::P p0,
                                                  typename Op::P p1, typename Op::P s) {
    typedef typename Op::X0 X0;
    typedef typename Op::X1 X1;
    typedef typename Op::X2 X2;
    typedef typename Op::Y Y;
    const int nd = o.ndim;
    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)n; i += (I)blockDim.x * gridDim.x) {
        I rem = i;
        D oo = 0, o0 = 0, o1 = 0, o2 = 0;
        for (int d = nd - 1; d >= 0; d--) {
            I size = (I)o.sizes[d];
            I q = rem / size;
            D r = (D)(rem - q * size);
            rem = q;
            oo += r * (D)o.strides[d];
            o0 += r * (D)x0.strides[d];
            if (Op::arity > 1) o1 += r * (D)x1.strides[d];
            if (Op::arity > 2) o2 += r * (D)x2.strides[d];
        }
        X0 a = ((const X0 *)x0.data)[o0];
        X1 b = (flags & TJPW_PARAM(1)) ? (X1)s : Op::arity > 1 ? ((const X1 *)x1.data)[o1] : X1();
        X2 c = Op::arity > 2 ? ((const X2 *)x2.data)[o2] : X2();
        ((Y *)o.data)[oo] = Op::apply(a, b, c, p0, p1);
    }
}

#endif
