/* tjcu_reduce.h — the device side of the CUDA backend's reduction engine
 * (host side: backends/cuda/reduce_plan.c). Included by reduce.cu,
 * reduce_stats.cu and norm.cu after tjcu_builtins.h and tjcu_kernel.h.
 *
 * A reduction is M outputs, each folding N input elements. The host lays the
 * input out as kept dims (ksize/kin, with the output's strides kout) and
 * reduced dims (rsize/rin), innermost first, so that element r of output o
 * sits at kept_offset(o) + reduced_offset(r). A block takes several outputs
 * and gives each a group of lanes:
 *   row mode     lanes along x (the reduction is innermost in memory, so
 *                neighbouring lanes read neighbouring elements); outputs along y;
 *   column mode  outputs along x (a kept dim is innermost); lanes along y.
 * Each lane folds every L-th element of its slice of the reduction into a
 * state; the lanes' states meet in a tree (warp shuffles in row mode, a
 * shared-memory tree in column mode). The reduction is cut into gridDim.y
 * slices of `chunk` elements so that no lane folds more than a few hundred
 * elements in sequence; with more than one slice, pass 1 leaves one state
 * per slice in scratch and pass 2 folds them, again in a tree.
 *
 * An Op (a reducer) provides:
 *   typedef S                        its state
 *   static S init()                  the identity of comb
 *   static void upd(S&, const RArgs&, long long in_off, long long r, long long out_off)
 *                                    folds element r (at in_off) of the output at out_off
 *   static void comb(S&, const S&, const RArgs&)
 *                                    joins two states; must not depend on their order
 *                                    beyond rounding (index reductions break ties by index)
 *   static S shfl(const S&, int delta, int width)   __shfl_down_sync of every field
 *   static void final(const S&, const RArgs&, long long out_off)
 *                                    writes the result(s)
 */
#ifndef TJCU_REDUCE_H
#define TJCU_REDUCE_H

/* Mirrors tjcu_rgeom in backends/cuda/reduce_plan.h (same layout). */
struct RGeom {
    long long M, N, chunk;
    int nk, nr, row, pad;
    long long ksize[TJCU_MAX_DIMS], kin[TJCU_MAX_DIMS], kout[TJCU_MAX_DIMS];
    long long rsize[TJCU_MAX_DIMS], rin[TJCU_MAX_DIMS];
};

/* Mirrors tjcu_rargs: what reducers read besides the geometry. */
struct RArgs {
    const void *in, *in2; /* in2: a second input with in's geometry */
    void *out0, *out1;
    const double *pa, *pb; /* per-output or per-element parameters (norms) */
    long long n;           /* elements per output */
    long long correction;  /* var, std */
    double ord;            /* linalg_vector_norm */
    long long i0, i1, i2;  /* reducer-specific integers */
};

/* ---- geometry -------------------------------------------------------------------- */

/* Input offset of output o's first element; *out_off gets its output offset. */
__device__ __forceinline__ long long tjr_kept(const RGeom &g, long long o, long long *out_off) {
    long long in = 0, out = 0;
    for (int k = 0; k < g.nk; k++) {
        long long s = g.ksize[k], q = o / s, i = o - q * s;
        in += i * g.kin[k];
        out += i * g.kout[k];
        o = q;
    }
    *out_off = out;
    return in;
}

__device__ __forceinline__ long long tjr_roff(const RGeom &g, long long r) {
    if (g.nr == 1) return r * g.rin[0];
    long long off = 0;
    for (int k = 0; k < g.nr; k++) {
        long long s = g.rsize[k], q = r / s;
        off += (r - q * s) * g.rin[k];
        r = q;
    }
    return off;
}

/* ---- element helpers --------------------------------------------------------------- */

template <class T> __device__ __forceinline__ T tjr_shfl(T v, int d, int w) {
    return __shfl_down_sync(0xffffffffu, v, d, w);
}
__device__ __forceinline__ unsigned char tjr_shfl(unsigned char v, int d, int w) {
    return (unsigned char)__shfl_down_sync(0xffffffffu, (int)v, d, w);
}

template <class T> __device__ __forceinline__ bool tjr_isnan(T x) { return x != x; }

/* The smallest and largest values of T (bool is unsigned char). */
template <class T> struct TjrLim;
template <> struct TjrLim<float> {
    static __device__ __forceinline__ float lo() { return -INFINITY; }
    static __device__ __forceinline__ float hi() { return INFINITY; }
};
template <> struct TjrLim<double> {
    static __device__ __forceinline__ double lo() { return -(double)INFINITY; }
    static __device__ __forceinline__ double hi() { return (double)INFINITY; }
};
template <> struct TjrLim<long long> {
    static __device__ __forceinline__ long long lo() { return LLONG_MIN; }
    static __device__ __forceinline__ long long hi() { return LLONG_MAX; }
};
template <> struct TjrLim<unsigned char> {
    static __device__ __forceinline__ unsigned char lo() { return 0; }
    static __device__ __forceinline__ unsigned char hi() { return 1; }
};

template <class T> __device__ __forceinline__ T tjr_ld(const void *p, long long off) {
    return ((const T *)p)[off];
}

/* ---- the lanes' tree --------------------------------------------------------------- */

/* Row mode: lanes are threadIdx.x (blockDim.x a power of two; the block a
 * whole number of warps). The result is valid in lane 0. */
template <class Op>
__device__ __forceinline__ typename Op::S tjr_tree_x(typename Op::S s, const RArgs &a,
                                                     typename Op::S *sm) {
    int L = (int)blockDim.x, w = L < 32 ? L : 32;
    for (int d = w / 2; d > 0; d >>= 1) Op::comb(s, Op::shfl(s, d, w), a);
    if (L > 32) {
        int lane = (int)threadIdx.x & 31, warp = (int)threadIdx.x >> 5, nw = L >> 5;
        if (lane == 0) sm[threadIdx.y * nw + warp] = s;
        __syncthreads();
        if (warp == 0) {
            s = lane < nw ? sm[threadIdx.y * nw + lane] : Op::init();
            for (int d = 16; d > 0; d >>= 1) Op::comb(s, Op::shfl(s, d, 32), a);
        }
    }
    return s;
}

/* Column mode: lanes are threadIdx.y (blockDim.y a power of two); sm holds
 * one state per thread. The result is valid where threadIdx.y == 0. */
template <class Op>
__device__ __forceinline__ typename Op::S tjr_tree_y(typename Op::S s, const RArgs &a,
                                                     typename Op::S *sm) {
    typedef typename Op::S S;
    int bx = (int)blockDim.x, at = (int)threadIdx.y * bx + (int)threadIdx.x;
    sm[at] = s;
    __syncthreads();
    for (int st = (int)blockDim.y / 2; st > 0; st >>= 1) {
        if ((int)threadIdx.y < st) {
            S v = sm[at];
            Op::comb(v, sm[at + st * bx], a);
            sm[at] = v;
        }
        __syncthreads();
    }
    return sm[threadIdx.x];
}

/* ---- the two passes ------------------------------------------------------------------ */

template <class Op> __device__ void tjr_pass1(const RGeom &g, const RArgs &a, void *partials) {
    typedef typename Op::S S;
    TJCU_DYNAMIC_SHARED(S, sm);
    bool row = g.row != 0;
    long long o = row ? (long long)blockIdx.x * blockDim.y + threadIdx.y
                      : (long long)blockIdx.x * blockDim.x + threadIdx.x;
    int lane = row ? (int)threadIdx.x : (int)threadIdx.y;
    int L = row ? (int)blockDim.x : (int)blockDim.y;
    S s = Op::init();
    long long out_off = 0;
    if (o < g.M) {
        long long base = tjr_kept(g, o, &out_off);
        long long lo = (long long)blockIdx.y * g.chunk;
        long long hi = lo + g.chunk < g.N ? lo + g.chunk : g.N;
        for (long long r = lo + lane; r < hi; r += L) Op::upd(s, a, base + tjr_roff(g, r), r, out_off);
    }
    /* every thread takes part in the tree, those past the last output too */
    s = row ? tjr_tree_x<Op>(s, a, sm) : tjr_tree_y<Op>(s, a, sm);
    if (lane == 0 && o < g.M) {
        if (gridDim.y == 1) Op::final(s, a, out_off);
        else ((S *)partials)[o * gridDim.y + blockIdx.y] = s;
    }
}

/* One output per block (blockIdx.x), its `parts` states folded by the
 * block's lanes along x. */
template <class Op>
__device__ void tjr_pass2(const RGeom &g, const RArgs &a, const void *partials, int parts) {
    typedef typename Op::S S;
    TJCU_DYNAMIC_SHARED(S, sm);
    long long o = blockIdx.x;
    const S *p = (const S *)partials + o * parts;
    S s = Op::init();
    for (int k = (int)threadIdx.x; k < parts; k += (int)blockDim.x) Op::comb(s, p[k], a);
    s = tjr_tree_x<Op>(s, a, sm);
    if (threadIdx.x == 0) {
        long long out_off;
        tjr_kept(g, o, &out_off);
        Op::final(s, a, out_off);
    }
}

/* Row mode: after tjr_tree_x, every lane of each group gets lane 0's state. */
template <class Op>
__device__ __forceinline__ typename Op::S tjr_bcast_x(typename Op::S s, typename Op::S *sm) {
    __syncthreads(); /* the tree may still be reading sm */
    if (threadIdx.x == 0) sm[threadIdx.y] = s;
    __syncthreads();
    return sm[threadIdx.y];
}

/* Contiguous copies of strided float tensors (dst[i] = src at row-major
 * index i), for kernels that want dense rows: <prefix>_gather_f32/_f64. */
#define TJR_GATHER_KERNEL(prefix, sfx, T)                                                       \
    extern "C" __global__ void prefix##_gather_##sfx(TensorArg src, T *dst, long long n) {      \
        const T *p = (const T *)src.data;                                                       \
        TJCU_GRID_STRIDE(i, n) dst[i] = p[tjcu_offset(src, i)];                                 \
    }                                                                                           \
    TJCU_EXPORT(prefix##_gather_##sfx)
#define TJR_GATHER_KERNELS(prefix)                                                              \
    TJR_GATHER_KERNEL(prefix, f32, float)                                                       \
    TJR_GATHER_KERNEL(prefix, f64, double)

/* The two kernels of reducer Op, named <name>_p1 and <name>_p2. */
#define TJR_KERNELS(name, ...)                                                                  \
    extern "C" __global__ void name##_p1(RGeom g, RArgs a, void *partials) {                   \
        tjr_pass1<__VA_ARGS__>(g, a, partials);                                                 \
    }                                                                                           \
    TJCU_EXPORT(name##_p1)                                                                      \
    extern "C" __global__ void name##_p2(RGeom g, RArgs a, const void *partials, int parts) {  \
        tjr_pass2<__VA_ARGS__>(g, a, partials, parts);                                          \
    }                                                                                           \
    TJCU_EXPORT(name##_p2)

#endif
