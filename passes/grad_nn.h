/* grad_nn.h — what the nn family's rule files share: the normalisation rules
 * of grad_norm.c, listed in grad_nn.c's table, and the small emission helpers
 * both files use (defined in grad_norm.c). Prefix tjg_nn_. */
#ifndef TJIT_GRAD_NN_H
#define TJIT_GRAD_NN_H

#include "grad.h"

tj_status tjg_nn_d_native_batch_norm(tjg_ctx *c);
tj_status tjg_nn_d_batch_norm(tjg_ctx *c);
tj_status tjg_nn_d_native_batch_norm_backward(tjg_ctx *c);
tj_status tjg_nn_d_native_layer_norm(tjg_ctx *c);
tj_status tjg_nn_d_layer_norm(tjg_ctx *c);
tj_status tjg_nn_d_native_layer_norm_backward(tjg_ctx *c);
tj_status tjg_nn_d_native_group_norm(tjg_ctx *c);
tj_status tjg_nn_d_group_norm(tjg_ctx *c);
tj_status tjg_nn_d_native_group_norm_backward(tjg_ctx *c);

/* a reshaped to sizes (NULL stays NULL; no node when the sizes already match) */
tjg_val tjg_nn_reshape(tjg_ctx *c, tjg_val a, const int64_t *sizes, int ndim);
/* a broadcast to sizes with expand (NULL stays NULL; no node when equal) */
tjg_val tjg_nn_expand(tjg_ctx *c, tjg_val a, const int64_t *sizes, int ndim);
/* a summed down to sizes with sum_to_size (NULL stays NULL) */
tjg_val tjg_nn_sum_to_sizes(tjg_ctx *c, tjg_val a, const int64_t *sizes, int ndim);
/* sum of all elements, 0-dim (NULL stays NULL) */
tjg_val tjg_nn_sum_all(tjg_ctx *c, tjg_val a);

#endif
