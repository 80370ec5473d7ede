/* op_norm.h — the CUDA kernels of softmax and the normalisations (rows of
 * core/ops_nn.def), shared by the files that define them (op_softmax.c,
 * op_norm.c, op_norm_backward.c) and registered by tjcu_register_norm
 * (op_norm.c); plus the helpers those files share. Prefix tjcu_. */
#ifndef TJIT_CUDA_OP_NORM_H
#define TJIT_CUDA_OP_NORM_H

#include "backends/cuda/reduce_plan.h"

tj_status tjcu_softmax(const tjc_call *c);
tj_status tjcu_log_softmax(const tjc_call *c);
tj_status tjcu_softmax_backward_data(const tjc_call *c);
tj_status tjcu_log_softmax_backward_data(const tjc_call *c);

tj_status tjcu_native_batch_norm_backward(const tjc_call *c);
tj_status tjcu_native_layer_norm_backward(const tjc_call *c);
tj_status tjcu_native_group_norm_backward(const tjc_call *c);

/* ---- helpers of the norm kernels (op_norm.c) ------------------------------------------- */

/* t's geometry, or an absent argument (data NULL) for NULL. */
tjcu_tensor_arg tjcu_norm_arg(const tj_tensor *t);
/* n doubles of scratch on c's device (at least one), or NULL with the error set. */
double *tjcu_norm_scratch(const tjc_call *c, int64_t n);
/* The first n elements of t in row-major order as doubles in new scratch;
 * NULL for a NULL t (no error) or with the error set. */
double *tjcu_norm_doubles(const tjc_call *c, const tj_tensor *t, int64_t n);
/* Launches one of norm.cu's element kernels over n elements (nothing for 0). */
tj_status tjcu_norm_elements(const tjc_call *c, const char *kernel, int64_t n, void **args);
/* Runs norm.cu's reducer <base>_<dtype> over a dense [rows, cols] matrix,
 * reducing dim `dim` (0 or 1), with args a (in, in2, outputs filled by the caller). */
tj_status tjcu_norm_reduce_matrix(const tjc_call *c, const char *base, tj_dtype dtype,
                                  int64_t rows, int64_t cols, int dim, tjcu_rargs *a);
/* "f32" or "f64" */
const char *tjcu_norm_sfx(tj_dtype d);
/* The product of sizes[2..] of a [N, C, *] tensor. */
int64_t tjcu_norm_hxw(const tj_tensor *x);

#endif
