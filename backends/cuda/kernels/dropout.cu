/* dropout.cu — kernels of native_dropout, dropout and native_dropout_backward
 * (launched by backends/cuda/op_dropout.c).
 *
 * The same counter-based Philox-4x32-10 as core/random.c: element i (row-major)
 * is kept when the 53-bit uniform of counter base + i under key seed is >= p.
 * The host reserves the counters from the generator exactly as the CPU kernel
 * does, so one seed and offset give the CPU's mask bit for bit, and the kept
 * values are the CPU's too (x * scale in double, rounded once to the dtype). */
#include "tjcu_builtins.h"
#include "tjcu_kernel.h"

typedef unsigned int u32;
typedef unsigned long long u64;

/* core/random.c's tjc_philox, word for word */
__device__ __forceinline__ void philox(u64 seed, u64 counter, u32 out[4]) {
    u32 c0 = (u32)counter, c1 = (u32)(counter >> 32), c2 = 0, c3 = 0;
    u32 k0 = (u32)seed, k1 = (u32)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        u64 p0 = (u64)0xD2511F53u * c0, p1 = (u64)0xCD9E8D57u * c2;
        u32 n0 = (u32)(p1 >> 32) ^ c1 ^ k0, n2 = (u32)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (u32)p1;
        c2 = n2;
        c3 = (u32)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* core/random.c's tjc_uniform53: [0, 1) with 53 bits (2^-53 is exact in double) */
__device__ __forceinline__ double uniform53(u32 hi, u32 lo) {
    u64 bits = ((u64)hi << 21) ^ (lo >> 11);
    return (double)(bits & ((1ull << 53) - 1)) * 1.1102230246251565404236316680908203125e-16;
}

/* out[i] = keep ? x[i] * scale : 0, mask[i] = keep (mask may be null) */
template <typename T>
__device__ void dropout_train(const TensorArg &x, T *out, unsigned char *mask, long long n,
                              u64 seed, u64 base, double p, double scale) {
    const T *xp = (const T *)x.data;
    TJCU_GRID_STRIDE(i, n) {
        u32 w[4];
        philox(seed, base + (u64)i, w);
        bool keep = uniform53(w[0], w[1]) >= p;
        out[i] = keep ? (T)((double)xp[tjcu_offset(x, i)] * scale) : (T)0;
        if (mask) mask[i] = keep;
    }
}

/* gi[i] = g[i] * (mask[i] * scale), as PyTorch: an inf or NaN gradient where
 * the mask is false gives NaN, not 0 */
template <typename T>
__device__ void dropout_backward(const TensorArg &g, const TensorArg &mask, T *out, long long n,
                                 double scale) {
    const T *gp = (const T *)g.data;
    const unsigned char *mp = (const unsigned char *)mask.data;
    TJCU_GRID_STRIDE(i, n) {
        out[i] = (T)((double)gp[tjcu_offset(g, i)] * (mp[tjcu_offset(mask, i)] ? scale : 0.0));
    }
}

#define BY_FLOAT(SFX, T)                                                                       \
    extern "C" __global__ void dropout_train_##SFX(TensorArg x, T *out, unsigned char *mask,   \
                                                   long long n, u64 seed, u64 base, double p,  \
                                                   double scale) {                             \
        dropout_train<T>(x, out, mask, n, seed, base, p, scale);                               \
    }                                                                                          \
    TJCU_EXPORT(dropout_train_##SFX)                                                           \
    extern "C" __global__ void dropout_backward_##SFX(TensorArg g, TensorArg mask, T *out,     \
                                                      long long n, double scale) {             \
        dropout_backward<T>(g, mask, out, n, scale);                                           \
    }                                                                                          \
    TJCU_EXPORT(dropout_backward_##SFX)

BY_FLOAT(f32, float)
BY_FLOAT(f64, double)
