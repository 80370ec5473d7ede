/* linalg.h — the CUDA backend's matmul and convolution family (prefix
 * tjcu_): one strided, batched GEMM description and the two ways to run it
 * (cuBLAS on a GPU, the backend's own kernel everywhere), the strided copy
 * that packs operands, the cuDNN convolutions, and the switches that tests
 * use to compare the two paths on one device.
 *
 * Files: gemm.c (the own GEMM and pack launches, and the choice of path),
 * blas.c (cuBLAS handles and calls), dnn.c (cuDNN), op_linalg.c (mm, bmm,
 * matmul, addmm, linear and tjcu_register_linalg), op_conv.c (the
 * convolutions on im2col + GEMM, or on cuDNN); kernels/gemm.cu, conv.cu.
 */
#ifndef TJIT_CUDA_LINALG_H
#define TJIT_CUDA_LINALG_H

#include "backends/cuda/cuda.h"
#include "core/linalg.h"

/* C[z][i, j] = alpha * sum_p A[z][i, p] * B[z][p, j] + beta * C[z][i, j] for
 * i < m, j < n and every batch index z of batch[0..nbatch); element (i, j) of
 * X in batch z is at x + sum_d z_d * x_bs[d] + i * x_rs + j * x_cs elements
 * (strides may be 0 for a broadcast operand, never for C). With beta == 0, C
 * is not read. dtype f32, f64 or i64 (alpha and beta then integers). */
typedef struct tjcu_gemm {
    tj_dtype dtype;
    int64_t m, n, k;
    const void *a;
    int64_t a_rs, a_cs;
    const void *b;
    int64_t b_rs, b_cs;
    void *c;
    int64_t c_rs, c_cs;
    int nbatch;
    int64_t batch[TJ_MAX_DIMS], a_bs[TJ_MAX_DIMS], b_bs[TJ_MAX_DIMS], c_bs[TJ_MAX_DIMS];
    double alpha, beta;
} tjcu_gemm;

/* Runs g on dev: on cuBLAS where the device has it and the dtype is f32 or
 * f64 (and the libraries are not switched off), else on the own kernel.
 * Errors name op. */
tj_status tjcu_gemm_run(const char *op, tj_device dev, const tjcu_gemm *g);
/* Always the backend's own kernel. */
tj_status tjcu_gemm_kernel(const char *op, tj_device dev, const tjcu_gemm *g);
/* cuBLAS, as tjcu_blas_plan_of plans it; *used is false (and nothing is
 * queued) when the plan says cuBLAS does not take g. */
tj_status tjcu_gemm_cublas(const char *op, tj_device dev, const tjcu_gemm *g, bool *used);

/* cuBLAS's terms for a product: tjcu_gemm_cublas runs `calls` calls of
 * cublas<t>gemmStridedBatched(trans_a, trans_b, m, n, k, A + off[0], lda,
 * stride_a, B + off[1], ldb, stride_b, C + off[2], ldc, stride_c, count) in
 * cuBLAS's column-major sense, where A is our B (or the packed copy of
 * pack_view_a when pack_a) and B is our A (pack_view_b likewise): row-major
 * C = A B is column-major C^T = B^T A^T. Apart from cuBLAS so that tests can
 * check it on the host. */
typedef struct tjcu_blas_plan {
    bool trans_a, trans_b;
    int64_t m, n, k, lda, ldb, ldc;
    int64_t stride_a, stride_b, stride_c, count, calls;
    bool pack_a, pack_b;
    tjcu_tensor_arg pack_view_a, pack_view_b; /* packed row-major, contiguous */
    int64_t pack_elems_a, pack_elems_b;
    /* the batch dims looped over calls, and each operand's strides along them */
    int n_outer;
    int64_t outer[TJ_MAX_DIMS], outer_a[TJ_MAX_DIMS], outer_b[TJ_MAX_DIMS], outer_c[TJ_MAX_DIMS];
} tjcu_blas_plan;
/* False when cuBLAS does not take g: i64, k == 0, C without unit column
 * stride, sizes beyond int. A product with nothing to compute gives m == 0. */
bool tjcu_blas_plan_of(const tjcu_gemm *g, tjcu_blas_plan *p);
/* Element offsets of call i into A, B and C. */
void tjcu_blas_plan_offsets(const tjcu_blas_plan *p, int64_t call, int64_t off[3]);

/* Copies the view src (a geometry of up to TJCU_MAX_DIMS dims over element
 * size es) into dst, contiguous, in row-major order. */
tj_status tjcu_pack(const char *op, tj_device dev, const tjcu_tensor_arg *src, size_t es,
                    void *dst);

/* True when the dims (sizes, strides) walk memory as one run of equal steps
 * (size-1 dims skipped); *step is that step (1 when all dims have size 1). */
bool tjcu_collapse(const int64_t *sizes, const int64_t *strides, int n, int64_t *step);

/* ---- the libraries -------------------------------------------------------------
 * Whether this thread's matmul and conv calls may use cuBLAS and cuDNN on a
 * device that has them (default true). Tests switch it off to run the own
 * kernels on the same GPU and compare. */
void tjcu_linalg_set_libraries(bool enabled);
bool tjcu_linalg_libraries(tj_device dev);

/* Makes dev current for the CUDA runtime on this thread (cuBLAS and cuDNN
 * run in the runtime's context of the current device). */
tj_status tjcu_runtime_bind(const char *op, tj_device dev);
/* The device's compute capability major version (0 when unknown): TF32
 * tensor cores exist from 8 (Ampere) on. */
int tjcu_compute_major(tj_device dev);

/* The convolution kernels (op_conv.c): conv1d and conv2d; conv2d_backward_input
 * and conv_transpose2d; conv2d_backward_weight. */
tj_status tjcu_conv_forward(const tjc_call *c);
tj_status tjcu_conv_backward_input(const tjc_call *c);
tj_status tjcu_conv_backward_weight(const tjc_call *c);
/* Bytes of im2col scratch per group of images in the own convolutions (0:
 * the default, 64 MiB); tests make it small to run many groups. */
void tjcu_conv_set_col_budget(int64_t bytes);

/* A convolution for cuDNN: the geometry and which of the three products. */
typedef enum tjcu_conv_kind {
    TJCU_CONV_FORWARD,         /* y = conv(x, w) */
    TJCU_CONV_BACKWARD_DATA,   /* dx = conv^T(dy, w): backward_input, conv_transpose2d */
    TJCU_CONV_BACKWARD_FILTER  /* dw = the weight gradient of conv(x, .) at dy */
} tjcu_conv_kind;

/* Runs one convolution product on cuDNN over contiguous NCHW buffers (conv1d
 * as height 1; an unbatched call as n = 1): x [n, c_in, h, w], w [c_out,
 * c_in / groups, kh, kw], y [n, c_out, ho, wo]; the product's output becomes
 * the product plus beta times its old value (beta 0 or 1). *used is false
 * (and nothing is queued) where cuDNN refuses the problem (then the caller
 * runs its own kernels); other cuDNN failures are errors naming op, the call
 * and cuDNN's message. Algorithms come from cuDNN's heuristics, or, in
 * benchmark mode (tj_cuda_set_cudnn_benchmark), from timing every candidate
 * once per problem; the choice is cached per problem either way. */
tj_status tjcu_dnn_conv(const char *op, tj_device dev, tjcu_conv_kind kind,
                        const tjc_conv_geom *g, tj_dtype dtype, void *x, void *w, void *y,
                        double beta, bool *used);

#endif
