/* gemm.cu — the backend's own matrix product (the matmul family and the
 * convolutions' im2col products run on it wherever cuBLAS does not: the host
 * execution harness, i64, and shapes the library is not given), and the
 * strided copy that packs operands and broadcasts addends.
 *
 * C[z][i, j] = alpha * sum_p A[z][i, p] * B[z][p, j] + beta * C[z][i, j]
 * where every operand is read through its own row, column and batch strides
 * (so a transposed or broadcast operand needs no copy) and C is not read when
 * beta is 0. One 256-thread block computes a 64x64 tile of C, 4x4 outputs per
 * thread, staging 16-deep slices of A and B in shared memory. f32 accumulates
 * in f32 with fused multiply-adds, f64 in f64, i64 in unsigned 64-bit
 * arithmetic (two's-complement wrapping, as the CPU's loop).
 */
#include "tjcu_builtins.h"
#include "tjcu_kernel.h"

#define GEMM_BM 64
#define GEMM_BN 64
#define GEMM_BK 16
#define GEMM_THREADS 256 /* 16 x 16 threads, each 4 x 4 outputs */

/* Mirrors tjcu_gemm_args in backends/cuda/linalg.h (same layout). */
struct GemmArgs {
    const void *a;
    const void *b;
    void *c;
    long long m, n, k;
    long long a_rs, a_cs, b_rs, b_cs, c_rs, c_cs;
    long long batches; /* product of batch[0..nbatch) */
    int nbatch;
    int pad_;
    long long batch[TJCU_MAX_DIMS];
    long long a_bs[TJCU_MAX_DIMS];
    long long b_bs[TJCU_MAX_DIMS];
    long long c_bs[TJCU_MAX_DIMS];
    double alpha, beta;       /* f32, f64 */
    long long ialpha, ibeta;  /* i64 */
};

/* The type products accumulate in: i64 wraps, so it computes unsigned. */
template <typename T> struct GemmAcc { typedef T type; };
template <> struct GemmAcc<long long> { typedef unsigned long long type; };

__device__ __forceinline__ float gemm_mad(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double gemm_mad(double a, double b, double c) { return fma(a, b, c); }
__device__ __forceinline__ unsigned long long gemm_mad(unsigned long long a, unsigned long long b,
                                                      unsigned long long c) {
    return a * b + c;
}

/* alpha * acc + beta * old, old read only when beta is not 0; with k == 0
 * the product is absent (so an infinite alpha does not make 0 * inf). */
__device__ __forceinline__ float gemm_out(float acc, const float *c, const GemmArgs &p) {
    float v = p.k > 0 ? (float)p.alpha * acc : 0.0f;
    return p.beta != 0 ? v + (float)p.beta * *c : v;
}
__device__ __forceinline__ double gemm_out(double acc, const double *c, const GemmArgs &p) {
    double v = p.k > 0 ? p.alpha * acc : 0.0;
    return p.beta != 0 ? v + p.beta * *c : v;
}
__device__ __forceinline__ long long gemm_out(unsigned long long acc, const long long *c,
                                              const GemmArgs &p) {
    unsigned long long v = p.k > 0 ? (unsigned long long)p.ialpha * acc : 0ull;
    if (p.ibeta != 0) v += (unsigned long long)p.ibeta * (unsigned long long)*c;
    return (long long)v;
}

template <typename T> __device__ void gemm_body(const GemmArgs &p) {
    typedef typename GemmAcc<T>::type U;
    /* +1 column: the row-major fill of a slice (A read along k) walks a
     * column of As, which would otherwise hit one bank 16 times */
    __shared__ U As[GEMM_BK][GEMM_BM + 1];
    __shared__ U Bs[GEMM_BK][GEMM_BN + 1];
    const T *A = (const T *)p.a, *B = (const T *)p.b;
    T *C = (T *)p.c;
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    /* neighbouring threads read neighbouring addresses of whichever operand
     * dim has the unit stride */
    const bool a_along_k = p.a_cs == 1, b_along_n = p.b_cs == 1 || p.b_rs != 1;
    const long long tiles_m = (p.m + GEMM_BM - 1) / GEMM_BM;
    const long long tiles_n = (p.n + GEMM_BN - 1) / GEMM_BN;
    for (long long z = blockIdx.z; z < p.batches; z += gridDim.z) {
        long long ao = 0, bo = 0, co = 0, rem = z;
        for (int d = p.nbatch - 1; d >= 0; d--) {
            long long idx = rem % p.batch[d];
            rem /= p.batch[d];
            ao += idx * p.a_bs[d];
            bo += idx * p.b_bs[d];
            co += idx * p.c_bs[d];
        }
        for (long long tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
            for (long long tn = blockIdx.x; tn < tiles_n; tn += gridDim.x) {
                const long long row0 = tm * GEMM_BM, col0 = tn * GEMM_BN;
                U acc[4][4];
                for (int i = 0; i < 4; i++)
                    for (int j = 0; j < 4; j++) acc[i][j] = (U)0;
                for (long long k0 = 0; k0 < p.k; k0 += GEMM_BK) {
                    for (int l = 0; l < (GEMM_BM * GEMM_BK) / GEMM_THREADS; l++) {
                        int e = tid + l * GEMM_THREADS, r, kk;
                        if (a_along_k) kk = e % GEMM_BK, r = e / GEMM_BK;
                        else r = e % GEMM_BM, kk = e / GEMM_BM;
                        long long gr = row0 + r, gk = k0 + kk;
                        As[kk][r] = gr < p.m && gk < p.k ? (U)A[ao + gr * p.a_rs + gk * p.a_cs]
                                                         : (U)0;
                    }
                    for (int l = 0; l < (GEMM_BN * GEMM_BK) / GEMM_THREADS; l++) {
                        int e = tid + l * GEMM_THREADS, cc, kk;
                        if (b_along_n) cc = e % GEMM_BN, kk = e / GEMM_BN;
                        else kk = e % GEMM_BK, cc = e / GEMM_BK;
                        long long gc = col0 + cc, gk = k0 + kk;
                        Bs[kk][cc] = gc < p.n && gk < p.k ? (U)B[bo + gk * p.b_rs + gc * p.b_cs]
                                                          : (U)0;
                    }
                    __syncthreads();
                    for (int kk = 0; kk < GEMM_BK; kk++) {
                        U av[4], bv[4];
                        for (int i = 0; i < 4; i++) av[i] = As[kk][ty + 16 * i];
                        for (int j = 0; j < 4; j++) bv[j] = Bs[kk][tx + 16 * j];
                        for (int i = 0; i < 4; i++)
                            for (int j = 0; j < 4; j++)
                                acc[i][j] = gemm_mad(av[i], bv[j], acc[i][j]);
                    }
                    __syncthreads();
                }
                for (int i = 0; i < 4; i++) {
                    long long r = row0 + ty + 16 * i;
                    if (r >= p.m) continue;
                    for (int j = 0; j < 4; j++) {
                        long long cc = col0 + tx + 16 * j;
                        if (cc >= p.n) continue;
                        T *cp = C + co + r * p.c_rs + cc * p.c_cs;
                        *cp = gemm_out(acc[i][j], cp, p);
                    }
                }
            }
        }
    }
}

extern "C" __global__ void gemm_f32(GemmArgs p) { gemm_body<float>(p); }
TJCU_EXPORT(gemm_f32)
extern "C" __global__ void gemm_f64(GemmArgs p) { gemm_body<double>(p); }
TJCU_EXPORT(gemm_f64)
extern "C" __global__ void gemm_i64(GemmArgs p) { gemm_body<long long>(p); }
TJCU_EXPORT(gemm_i64)

/* dst[i] = src at row-major index i of src's geometry, for n elements: packs a
 * strided operand or materialises a broadcast one. Values move as bits, so
 * the element size picks the kernel. */
template <typename U> __device__ void pack_body(const TensorArg &src, U *dst, long long n) {
    const U *s = tjcu_ptr<const U>(src);
    TJCU_GRID_STRIDE(i, n) dst[i] = s[tjcu_offset(src, i)];
}

extern "C" __global__ void gemm_pack_4(TensorArg src, unsigned int *dst, long long n) {
    pack_body<unsigned int>(src, dst, n);
}
TJCU_EXPORT(gemm_pack_4)
extern "C" __global__ void gemm_pack_8(TensorArg src, unsigned long long *dst, long long n) {
    pack_body<unsigned long long>(src, dst, n);
}
TJCU_EXPORT(gemm_pack_8)
