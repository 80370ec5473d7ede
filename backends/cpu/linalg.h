/* linalg.h — the GEMM that the CPU matmul and convolution kernels share
 * (defined in matmul.c), and control of OpenBLAS's threads. Prefix tjcpu_.
 *
 * Threads: tjit's thread count (tj_set_num_threads) governs BLAS too. A kernel
 * that calls BLAS first calls tjcpu_blas_threads(0), which gives OpenBLAS
 * tjit's count when it differs. A kernel that calls BLAS from inside its own
 * OpenMP loop needs nothing more: OpenBLAS's OpenMP build runs a call made
 * inside an active parallel region on the calling thread alone. The count is
 * never lowered around such a loop: it is one setting for the whole process,
 * and another thread replaying at the same time would see its products run
 * with the wrong count while OpenBLAS resizes its buffers under them (results
 * came out corrupted that way).
 */
#ifndef TJIT_CPU_LINALG_H
#define TJIT_CPU_LINALG_H

#include "cpu.h"

/* A matrix operand: element (i, j) is at p + (i * rs + j * cs) * dtype size. */
typedef struct tjcpu_mat {
    const void *p;
    int64_t rs, cs;
} tjcpu_mat;

/* C[m, n] = alpha * A[m, k] @ B[k, n] + beta * C, where C's rows are ldc
 * elements apart and its columns adjacent. With beta == 0, C is not read.
 * f32 and f64 go to BLAS: an operand with a unit stride in either dim is
 * passed as it lies (transposed if need be), any other is packed first. i64
 * runs a plain loop (wrapping on overflow). Safe to call from several threads
 * at once. */
tj_status tjcpu_gemm(tj_dtype dtype, int64_t m, int64_t n, int64_t k, double alpha, tjcpu_mat a,
                     tjcpu_mat b, double beta, void *c, int64_t ldc);

/* True when dims (sizes, strides) walk memory as one run of equal nonzero
 * steps; *step is that step. Size-1 dims are skipped, as their stride is free. */
bool tjcpu_collapse(const int64_t *sizes, const int64_t *strides, int n, int64_t *step);

/* Sets OpenBLAS's thread count to n, or to tjit's count when n is 0. */
void tjcpu_blas_threads(int n);
/* Once per process, from tjcpu_gemm before its first BLAS call: when OpenBLAS
 * chose kernels below the CPU's AVX2 (a CPU model newer than the library),
 * has it choose again (blas_core.c). */
void tjcpu_blas_check_core(void);
/* Whether OpenBLAS's kernel family `core` (openblas_get_corename) uses AVX2 or wider. */
bool tjcpu_blas_core_has_avx2(const char *core);

#endif
