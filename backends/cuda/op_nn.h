/* op_nn.h — the CUDA kernels of the nn family's losses, indexing and dropout
 * rows (core/ops_nn.def), registered by tjcu_register_nn (op_nn.c), and the
 * helpers they and the pooling kernels (op_pool.c) share: 1-D launches, the
 * device-side check of index tensors, and strided copies. Prefix tjcu_nn_.
 *
 * Kernel sources: kernels/loss.cu, index.cu, dropout.cu (pool.cu for op_pool.c).
 * Every kernel here computes what its CPU kernel (backends/cpu/loss.c,
 * index.c, dropout.c) computes, and fails where it fails with the same
 * message. */
#ifndef TJIT_CUDA_OP_NN_H
#define TJIT_CUDA_OP_NN_H

#include "backends/cuda/cuda.h"

/* Threads per block of every 1-D launch of the family (the reduction
 * kernels of loss.cu assume it too). */
#define TJCU_NN_THREADS 256

/* A grid-stride launch of module/kernel over n elements on the call's device
 * (nothing is launched when n is 0). */
tj_status tjcu_nn_launch(const tjc_call *c, const char *module, const char *kernel, int64_t n,
                         void **args);
/* The grid tjcu_nn_launch uses for n (at least one block). */
tjcu_dim3 tjcu_nn_grid(const tjc_call *c, int64_t n);

/* "1", "4" or "8": the element size of dt, the suffix of index.cu's copies. */
const char *tjcu_nn_size_suffix(tj_dtype dt);
/* "f32", "f64" or "i64". */
const char *tjcu_nn_dtype_suffix(tj_dtype dt);

/* dst (contiguous, on the call's device) = src's elements in row-major order
 * (any strides, same dtype and numel). */
tj_status tjcu_nn_copy(const tjc_call *c, tj_tensor *dst, const tj_tensor *src);

/* The check of an index tensor: index_check (index.cu) records the lowest
 * element of idx outside [0, size) (ignore excepted when has_ignore) in a
 * scratch word on the device. begin queues it; the op queues its kernels,
 * which skip bad indices; end waits for the word and frees it. */
typedef struct tjcu_nn_check {
    void *word; /* NULL when nothing was checked (no elements) */
    const tj_tensor *idx;
} tjcu_nn_check;

tj_status tjcu_nn_check_begin(const tjc_call *c, const tj_tensor *idx, int64_t size,
                              bool has_ignore, int64_t ignore, tjcu_nn_check *chk);
/* *element = -1 when every index was in range, else the lowest bad element
 * (row-major) and *value its index. Frees the word, even on failure. */
tj_status tjcu_nn_check_end(const tjc_call *c, tjcu_nn_check *chk, int64_t *element,
                            int64_t *value);
/* Frees the word of a check whose op failed before end. */
void tjcu_nn_check_drop(const tjc_call *c, tjcu_nn_check *chk);

/* Scratch on the call's device, NULL with an error naming the op. */
void *tjcu_nn_scratch(const tjc_call *c, size_t bytes);

/* ---- the family's kernels ---------------------------------------------------------- */
tj_status tjcu_mse_loss(const tjc_call *c);
tj_status tjcu_mse_loss_backward(const tjc_call *c);
tj_status tjcu_nll_loss(const tjc_call *c);
tj_status tjcu_nll_loss_backward(const tjc_call *c);
tj_status tjcu_cross_entropy_loss(const tjc_call *c);
tj_status tjcu_bce_with_logits(const tjc_call *c);
tj_status tjcu_bce_with_logits_backward(const tjc_call *c);

tj_status tjcu_embedding(const tjc_call *c);
tj_status tjcu_embedding_dense_backward(const tjc_call *c);
tj_status tjcu_index_select(const tjc_call *c);
tj_status tjcu_gather(const tjc_call *c);
tj_status tjcu_scatter_add(const tjc_call *c);
tj_status tjcu_one_hot(const tjc_call *c);

tj_status tjcu_native_dropout(const tjc_call *c);
tj_status tjcu_dropout(const tjc_call *c);
tj_status tjcu_native_dropout_backward(const tjc_call *c);

#endif
