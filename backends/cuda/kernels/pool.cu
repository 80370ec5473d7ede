/* pool.cu — kernels of max_pool2d(_with_indices), avg_pool2d,
 * adaptive_avg_pool2d, their backward ops and max_pool2d_gather (launched by
 * backends/cuda/op_pool.c), after backends/cpu/pool_impl.h.
 *
 * The N * C planes of an input are read through its strides (Strides4: n, c,
 * h, w; n's is 0 when unbatched); outputs and input gradients are contiguous.
 * Forward kernels take one thread per output cell and walk its window in the
 * CPU's order, so they give the CPU's values and max indices exactly (the
 * index of a max is its flat h * w position in its plane; NaN wins).
 *
 * The average-pool backward ops are gathers: one thread per input element adds
 * the shares of the cells whose windows hold it, in the CPU's cell order and
 * in the dtype, so they equal the CPU's sums bit for bit. max_pool2d's
 * backward scatters through arbitrary indices (any position of the plane is
 * valid, as on the CPU), so it adds atomically; where windows overlap, the
 * order of those adds differs from the CPU's, within rounding. */
#include "tjcu_builtins.h"
#include "tjcu_kernel.h"

typedef unsigned long long u64;

/* Mirrors tjc_pool_geom's integers (op_pool.c fills it). */
struct PoolGeom {
    long long n, c, h, w, oh, ow;
    long long kh, kw, sh, sw, ph, pw, dh, dw;
    long long count_include_pad;
};

struct Strides4 {
    long long n, c, h, w;
};

/* Plane p = n * C + c of a strided operand. */
template <typename E>
__device__ __forceinline__ const E *plane_of(const E *base, const Strides4 &s, const PoolGeom &g,
                                              long long p) {
    return base + (p / g.c) * s.n + (p % g.c) * s.c;
}

template <typename T>
__device__ void max_pool(PoolGeom g, const T *x, Strides4 xs, T *out, long long *ind,
                         long long total) {
    TJCU_GRID_STRIDE(e, total) {
        long long cell = e % (g.oh * g.ow), p = e / (g.oh * g.ow);
        long long oh = cell / g.ow, ow = cell - oh * g.ow;
        const T *xp = plane_of(x, xs, g, p);
        long long hs = oh * g.sh - g.ph, he = hs + (g.kh - 1) * g.dh + 1;
        if (he > g.h) he = g.h;
        while (hs < 0) hs += g.dh;
        long long ws = ow * g.sw - g.pw, we = ws + (g.kw - 1) * g.dw + 1;
        if (we > g.w) we = g.w;
        while (ws < 0) ws += g.dw;
        T best = -(T)INFINITY;
        long long at = hs * g.w + ws;
        for (long long y = hs; y < he; y += g.dh)
            for (long long xx = ws; xx < we; xx += g.dw) {
                T v = xp[y * xs.h + xx * xs.w];
                if (v > best || v != v) { /* NaN wins, as in PyTorch */
                    best = v;
                    at = y * g.w + xx;
                }
            }
        out[e] = best;
        if (ind) ind[e] = at;
    }
}

__device__ __forceinline__ void atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void atomic_add(double *p, double v) { atomicAdd(p, v); }

/* gi[p, ind[p, cell]] += go[p, cell]; an index outside its plane is recorded
 * in *bad (the lowest such cell) and skipped. gi is zeroed before. */
template <typename T>
__device__ void max_pool_backward(PoolGeom g, const T *go, Strides4 gs, const long long *ind,
                                  Strides4 is, T *gi, u64 *bad, long long total) {
    long long hw = g.h * g.w;
    TJCU_GRID_STRIDE(e, total) {
        long long cell = e % (g.oh * g.ow), p = e / (g.oh * g.ow);
        long long y = cell / g.ow, xx = cell - y * g.ow;
        long long k = plane_of(ind, is, g, p)[y * is.h + xx * is.w];
        if (k < 0 || k >= hw) {
            atomicMin(bad, (u64)e);
            continue;
        }
        atomic_add(gi + p * hw + k, plane_of(go, gs, g, p)[y * gs.h + xx * gs.w]);
    }
}

/* out[p, cell] = x[p, ind[p, cell]] */
template <typename T>
__device__ void max_pool_gather(PoolGeom g, const T *x, Strides4 xs, const long long *ind,
                                Strides4 is, T *out, u64 *bad, long long total) {
    long long hw = g.h * g.w;
    TJCU_GRID_STRIDE(e, total) {
        long long cell = e % (g.oh * g.ow), p = e / (g.oh * g.ow);
        long long y = cell / g.ow, xx = cell - y * g.ow;
        long long k = plane_of(ind, is, g, p)[y * is.h + xx * is.w];
        if (k < 0 || k >= hw) {
            atomicMin(bad, (u64)e);
            continue;
        }
        out[e] = plane_of(x, xs, g, p)[(k / g.w) * xs.h + (k % g.w) * xs.w];
    }
}

/* The window of average-pooling cell (oh, ow) clipped to the input and its
 * divisor, exactly as pool_impl.h's avg_window (PyTorch's rule). */
__device__ __forceinline__ long long avg_window(const PoolGeom &g, long long oh, long long ow,
                                                long long *hs, long long *he, long long *ws,
                                                long long *we) {
    *hs = oh * g.sh - g.ph, *ws = ow * g.sw - g.pw;
    *he = *hs + g.kh, *we = *ws + g.kw;
    if (*he > g.h + g.ph) *he = g.h + g.ph;
    if (*we > g.w + g.pw) *we = g.w + g.pw;
    long long padded = (*he - *hs) * (*we - *ws);
    if (*hs < 0) *hs = 0;
    if (*ws < 0) *ws = 0;
    if (*he > g.h) *he = g.h;
    if (*we > g.w) *we = g.w;
    return g.count_include_pad ? padded : (*he - *hs) * (*we - *ws);
}

template <typename T>
__device__ void avg_pool(PoolGeom g, const T *x, Strides4 xs, T *out, long long total) {
    TJCU_GRID_STRIDE(e, total) {
        long long cell = e % (g.oh * g.ow), p = e / (g.oh * g.ow);
        long long oh = cell / g.ow, ow = cell - oh * g.ow;
        const T *xp = plane_of(x, xs, g, p);
        long long hs, he, ws, we, div = avg_window(g, oh, ow, &hs, &he, &ws, &we);
        double sum = 0;
        for (long long y = hs; y < he; y++)
            for (long long xx = ws; xx < we; xx++) sum += xp[y * xs.h + xx * xs.w];
        out[e] = (hs >= he || ws >= we) ? (T)0 : (T)(sum / (double)div);
    }
}

/* The cells [*lo, *hi) along one axis whose stride-s, size-k windows (starting
 * at cell * s - pad) can hold position i: a superset, checked exactly by the
 * callers. */
__device__ __forceinline__ void window_cells(long long i, long long k, long long s, long long pad,
                                             long long cells, long long *lo, long long *hi) {
    long long a = i + pad - k;
    *lo = a < 0 ? 0 : a / s;
    *hi = (i + pad) / s + 1;
    if (*hi > cells) *hi = cells;
}

/* gi[p, y, x] = sum over the cells whose clipped windows hold (y, x), in row-
 * major cell order, of (T)(go / div): pool_impl.h's adds in its order. */
template <typename T>
__device__ void avg_pool_backward(PoolGeom g, const T *go, Strides4 gs, T *gi, long long total) {
    TJCU_GRID_STRIDE(e, total) {
        long long pos = e % (g.h * g.w), p = e / (g.h * g.w);
        long long y = pos / g.w, xx = pos - y * g.w;
        const T *gop = plane_of(go, gs, g, p);
        long long oh0, oh1, ow0, ow1;
        window_cells(y, g.kh, g.sh, g.ph, g.oh, &oh0, &oh1);
        window_cells(xx, g.kw, g.sw, g.pw, g.ow, &ow0, &ow1);
        T acc = 0;
        for (long long oh = oh0; oh < oh1; oh++)
            for (long long ow = ow0; ow < ow1; ow++) {
                long long hs, he, ws, we, div = avg_window(g, oh, ow, &hs, &he, &ws, &we);
                if (hs >= he || ws >= we) continue;
                if (y < hs || y >= he || xx < ws || xx >= we) continue;
                acc += (T)(gop[oh * gs.h + ow * gs.w] / (double)div);
            }
        gi[e] = acc;
    }
}

/* The window of adaptive cell i of n over len: [floor(i len / n), ceil((i + 1) len / n)) */
__device__ __forceinline__ long long ad_start(long long i, long long len, long long n) {
    return (i * len) / n;
}
__device__ __forceinline__ long long ad_end(long long i, long long len, long long n) {
    return ((i + 1) * len + n - 1) / n;
}

template <typename T>
__device__ void adaptive_avg(PoolGeom g, const T *x, Strides4 xs, T *out, long long total) {
    TJCU_GRID_STRIDE(e, total) {
        long long cell = e % (g.oh * g.ow), p = e / (g.oh * g.ow);
        long long oh = cell / g.ow, ow = cell - oh * g.ow;
        const T *xp = plane_of(x, xs, g, p);
        long long hs = ad_start(oh, g.h, g.oh), he = ad_end(oh, g.h, g.oh);
        long long ws = ad_start(ow, g.w, g.ow), we = ad_end(ow, g.w, g.ow);
        double sum = 0;
        for (long long y = hs; y < he; y++)
            for (long long xx = ws; xx < we; xx++) sum += xp[y * xs.h + xx * xs.w];
        out[e] = (T)(sum / (double)((he - hs) * (we - ws)));
    }
}

/* The cells along one axis whose adaptive windows can hold position i: those
 * in [floor(i n / len), ceil((i + 1) n / len)), widened by one each side and
 * checked exactly by the caller. */
__device__ __forceinline__ void adaptive_cells(long long i, long long len, long long n,
                                               long long *lo, long long *hi) {
    *lo = ad_start(i, n, len) - 1;
    *hi = ad_end(i, n, len) + 1;
    if (*lo < 0) *lo = 0;
    if (*hi > n) *hi = n;
}

template <typename T>
__device__ void adaptive_avg_backward(PoolGeom g, const T *go, Strides4 gs, T *gi,
                                      long long total) {
    TJCU_GRID_STRIDE(e, total) {
        long long pos = e % (g.h * g.w), p = e / (g.h * g.w);
        long long y = pos / g.w, xx = pos - y * g.w;
        const T *gop = plane_of(go, gs, g, p);
        long long oh0, oh1, ow0, ow1;
        adaptive_cells(y, g.h, g.oh, &oh0, &oh1);
        adaptive_cells(xx, g.w, g.ow, &ow0, &ow1);
        T acc = 0;
        for (long long oh = oh0; oh < oh1; oh++) {
            long long hs = ad_start(oh, g.h, g.oh), he = ad_end(oh, g.h, g.oh);
            if (y < hs || y >= he) continue;
            for (long long ow = ow0; ow < ow1; ow++) {
                long long ws = ad_start(ow, g.w, g.ow), we = ad_end(ow, g.w, g.ow);
                if (xx < ws || xx >= we) continue;
                acc += (T)(gop[oh * gs.h + ow * gs.w] / (double)((he - hs) * (we - ws)));
            }
        }
        gi[e] = acc;
    }
}

#define BY_FLOAT(SFX, T)                                                                       \
    extern "C" __global__ void max_pool_##SFX(PoolGeom g, const T *x, Strides4 xs, T *out,     \
                                              long long *ind, long long total) {               \
        max_pool<T>(g, x, xs, out, ind, total);                                                \
    }                                                                                          \
    TJCU_EXPORT(max_pool_##SFX)                                                                \
    extern "C" __global__ void max_pool_backward_##SFX(PoolGeom g, const T *go, Strides4 gs,   \
                                                       const long long *ind, Strides4 is,      \
                                                       T *gi, u64 *bad, long long total) {     \
        max_pool_backward<T>(g, go, gs, ind, is, gi, bad, total);                              \
    }                                                                                          \
    TJCU_EXPORT(max_pool_backward_##SFX)                                                       \
    extern "C" __global__ void max_pool_gather_##SFX(PoolGeom g, const T *x, Strides4 xs,      \
                                                     const long long *ind, Strides4 is,        \
                                                     T *out, u64 *bad, long long total) {      \
        max_pool_gather<T>(g, x, xs, ind, is, out, bad, total);                                \
    }                                                                                          \
    TJCU_EXPORT(max_pool_gather_##SFX)                                                         \
    extern "C" __global__ void avg_pool_##SFX(PoolGeom g, const T *x, Strides4 xs, T *out,     \
                                              long long total) {                               \
        avg_pool<T>(g, x, xs, out, total);                                                     \
    }                                                                                          \
    TJCU_EXPORT(avg_pool_##SFX)                                                                \
    extern "C" __global__ void avg_pool_backward_##SFX(PoolGeom g, const T *go, Strides4 gs,   \
                                                       T *gi, long long total) {               \
        avg_pool_backward<T>(g, go, gs, gi, total);                                            \
    }                                                                                          \
    TJCU_EXPORT(avg_pool_backward_##SFX)                                                       \
    extern "C" __global__ void adaptive_avg_##SFX(PoolGeom g, const T *x, Strides4 xs, T *out, \
                                                  long long total) {                           \
        adaptive_avg<T>(g, x, xs, out, total);                                                 \
    }                                                                                          \
    TJCU_EXPORT(adaptive_avg_##SFX)                                                            \
    extern "C" __global__ void adaptive_avg_backward_##SFX(PoolGeom g, const T *go,            \
                                                           Strides4 gs, T *gi,                 \
                                                           long long total) {                  \
        adaptive_avg_backward<T>(g, go, gs, gi, total);                                        \
    }                                                                                          \
    TJCU_EXPORT(adaptive_avg_backward_##SFX)

BY_FLOAT(f32, float)
BY_FLOAT(f64, double)
