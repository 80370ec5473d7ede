/* index.cu — kernels of embedding, embedding_dense_backward, index_select,
 * gather, scatter_add and one_hot (launched by backends/cuda/op_index.c), the
 * check of index tensors that they and the losses share, and a strided copy.
 *
 * index_check records the lowest element of an index tensor that lies out of
 * range in one device word (atomicMin); the host reads that word after the
 * op's kernels are queued and reports the element and its value as the CPU
 * does. The kernels that follow the check skip bad indices, so nothing reads
 * or writes out of bounds in the meantime.
 *
 * Copies move whole elements by size (E: 1, 4 or 8 bytes), so every dtype
 * works. The adds of embedding_dense_backward and scatter_add are atomic: the
 * order of float additions then differs from the CPU's (which adds in index
 * order), within rounding; i64 adds wrap and are exact in any order. */
#include "tjcu_builtins.h"
#include "tjcu_kernel.h"

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

__device__ __forceinline__ long long ld_i(const TensorArg &t, long long i) {
    return ((const long long *)t.data)[tjcu_offset(t, i)];
}

/* *first_bad = min(its value, every element i of idx with idx[i] outside
 * [0, size), idx[i] == ignore excepted when has_ignore). */
extern "C" __global__ void index_check(TensorArg idx, long long n, long long size, int has_ignore,
                                       long long ignore, u64 *first_bad) {
    TJCU_GRID_STRIDE(i, n) {
        long long v = ld_i(idx, i);
        if (has_ignore && v == ignore) continue;
        if (v < 0 || v >= size) atomicMin(first_bad, (u64)i);
    }
}
TJCU_EXPORT(index_check)

/* out[i] = x[i] (row-major), x read through its strides. */
template <typename E> __device__ void copy_strided(const TensorArg &x, E *out, long long n) {
    const E *xp = (const E *)x.data;
    TJCU_GRID_STRIDE(i, n) out[i] = xp[tjcu_offset(x, i)];
}

/* out[i, :] = weight[indices[i], :] */
template <typename E>
__device__ void embedding(const TensorArg &w, const TensorArg &idx, E *out, long long n,
                          long long D) {
    const E *wp = (const E *)w.data;
    TJCU_GRID_STRIDE(e, n * D) {
        long long i = e / D, j = e - i * D, v = ld_i(idx, i);
        if (v < 0 || v >= w.sizes[0]) continue;
        out[e] = wp[v * w.strides[0] + j * w.strides[1]];
    }
}

/* self [.., S (dim), ..] -> out [.., K, ..]: out's position with its dim
 * coordinate k reads self's with idx[k]. */
template <typename E>
__device__ void index_select(const TensorArg &x, const TensorArg &idx, int dim, long long K,
                             E *out, long long n) {
    const E *xp = (const E *)x.data;
    TJCU_GRID_STRIDE(e, n) {
        long long r = e, off = 0;
        bool ok = true;
        for (int d = x.ndim - 1; d >= 0; d--) {
            long long s = d == dim ? K : x.sizes[d], q = r / s, c = r - q * s;
            r = q;
            if (d == dim) {
                c = ld_i(idx, c);
                ok = c >= 0 && c < x.sizes[d];
            }
            off += c * x.strides[d];
        }
        if (ok) out[e] = xp[off];
    }
}

/* out[p] = self[p with p[dim] = idx[p]], p over idx's sizes. */
template <typename E>
__device__ void gather(const TensorArg &x, const TensorArg &idx, int dim, E *out, long long n) {
    const E *xp = (const E *)x.data;
    const long long *ip = (const long long *)idx.data;
    long long dsize = x.ndim ? x.sizes[dim] : 1;
    TJCU_GRID_STRIDE(e, n) {
        long long r = e, xoff = 0, ioff = 0;
        for (int d = idx.ndim - 1; d >= 0; d--) {
            long long s = idx.sizes[d], q = r / s, c = r - q * s;
            r = q;
            ioff += c * idx.strides[d];
            if (d != dim) xoff += c * x.strides[d];
        }
        long long v = ip[ioff];
        if (v < 0 || v >= dsize) continue;
        if (x.ndim) xoff += v * x.strides[dim];
        out[e] = xp[xoff];
    }
}

__device__ __forceinline__ void atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double *p, double v) { atomicAdd(p, v); }
/* two's complement: the unsigned add wraps exactly as the signed one */
__device__ __forceinline__ void atomic_add(long long *p, long long v) {
    atomicAdd((u64 *)p, (u64)v);
}
/* bools add as or: every writer stores the same 1, so plain stores suffice */
__device__ __forceinline__ void atomic_add(bool *p, bool v) {
    if (v) *(volatile bool *)p = true;
}

/* out[p with p[dim] = idx[p]] += src[p], p over idx's sizes; out (contiguous,
 * geometry o) already holds self. */
template <typename T>
__device__ void scatter_add(const TensorArg &src, const TensorArg &idx, int dim, const TensorArg &o,
                            long long n) {
    const T *sp = (const T *)src.data;
    const long long *ip = (const long long *)idx.data;
    long long dsize = o.ndim ? o.sizes[dim] : 1;
    TJCU_GRID_STRIDE(e, n) {
        long long r = e, soff = 0, ioff = 0, ooff = 0;
        for (int d = idx.ndim - 1; d >= 0; d--) {
            long long s = idx.sizes[d], q = r / s, c = r - q * s;
            r = q;
            ioff += c * idx.strides[d];
            soff += c * src.strides[d];
            if (d != dim) ooff += c * o.strides[d];
        }
        long long v = ip[ioff];
        if (v < 0 || v >= dsize) continue;
        if (o.ndim) ooff += v * o.strides[dim];
        atomic_add((T *)o.data + ooff, sp[soff]);
    }
}

/* counts[v] = how many indices are v */
extern "C" __global__ void embedding_count(TensorArg idx, long long n, long long V, u64 *counts) {
    TJCU_GRID_STRIDE(i, n) {
        long long v = ld_i(idx, i);
        if (v >= 0 && v < V) atomicAdd(&counts[v], (u64)1);
    }
}
TJCU_EXPORT(embedding_count)

/* out[v, j] += g[i, j] * scale[v] for v = idx[i] other than pad; scale is
 * 1 / counts[v] when counts is given (scale_grad_by_freq), else 1. out is
 * zeroed before. */
template <typename T>
__device__ void embedding_backward(const TensorArg &g, const TensorArg &idx, long long n,
                                   long long D, long long V, long long pad, const u64 *counts,
                                   T *out) {
    const T *gp = (const T *)g.data;
    TJCU_GRID_STRIDE(e, n * D) {
        long long i = e / D, j = e - i * D, v = ld_i(idx, i);
        if (v < 0 || v >= V || v == pad) continue;
        double scale = counts ? 1.0 / (double)counts[v] : 1.0;
        atomic_add(out + v * D + j, (T)((double)gp[tjcu_offset(g, e)] * scale));
    }
}

/* out[i, j] = (self[i] == j) over n elements and C classes */
extern "C" __global__ void one_hot(TensorArg x, long long n, long long C, long long *out) {
    TJCU_GRID_STRIDE(e, n * C) {
        long long i = e / C, j = e - i * C;
        out[e] = ld_i(x, i) == j;
    }
}
TJCU_EXPORT(one_hot)

/* One extern "C" kernel per element size (copies) or dtype (adds). */
#define BY_SIZE(SFX, E)                                                                        \
    extern "C" __global__ void copy_strided_##SFX(TensorArg x, E *out, long long n) {         \
        copy_strided<E>(x, out, n);                                                            \
    }                                                                                          \
    TJCU_EXPORT(copy_strided_##SFX)                                                            \
    extern "C" __global__ void embedding_##SFX(TensorArg w, TensorArg idx, E *out, long long n, \
                                               long long D) {                                  \
        embedding<E>(w, idx, out, n, D);                                                       \
    }                                                                                          \
    TJCU_EXPORT(embedding_##SFX)                                                               \
    extern "C" __global__ void index_select_##SFX(TensorArg x, TensorArg idx, int dim,         \
                                                  long long K, E *out, long long n) {          \
        index_select<E>(x, idx, dim, K, out, n);                                               \
    }                                                                                          \
    TJCU_EXPORT(index_select_##SFX)                                                            \
    extern "C" __global__ void gather_##SFX(TensorArg x, TensorArg idx, int dim, E *out,       \
                                            long long n) {                                     \
        gather<E>(x, idx, dim, out, n);                                                        \
    }                                                                                          \
    TJCU_EXPORT(gather_##SFX)

BY_SIZE(1, u8)
BY_SIZE(4, u32)
BY_SIZE(8, u64)

#define BY_DTYPE(SFX, T)                                                                       \
    extern "C" __global__ void scatter_add_##SFX(TensorArg src, TensorArg idx, int dim,        \
                                                 TensorArg out, long long n) {                 \
        scatter_add<T>(src, idx, dim, out, n);                                                 \
    }                                                                                          \
    TJCU_EXPORT(scatter_add_##SFX)

BY_DTYPE(f32, float)
BY_DTYPE(f64, double)
BY_DTYPE(i64, long long)
BY_DTYPE(b8, bool)

#define BY_FLOAT(SFX, T)                                                                       \
    extern "C" __global__ void embedding_backward_##SFX(TensorArg g, TensorArg idx, long long n, \
                                                        long long D, long long V, long long pad, \
                                                        const u64 *counts, T *out) {           \
        embedding_backward<T>(g, idx, n, D, V, pad, counts, out);                              \
    }                                                                                          \
    TJCU_EXPORT(embedding_backward_##SFX)

BY_FLOAT(f32, float)
BY_FLOAT(f64, double)
