/* reduce.h — what a reduction's arguments mean, worked out once and shared by
 * the shape rules (core/reduce_rules.c) and the CPU kernels
 * (backends/cpu/reduce*.c), so the two can never disagree about which dims
 * are reduced or where a kept dim lands in the output.
 *
 * Rows of ops_reduce.def name their arguments like PyTorch: `dim` (int[] or
 * int), `keepdim`, and for sum_to_size `size`. An empty dim list means every
 * dim (for argmax/argmin: the flattened input, PyTorch's dim=None).
 */
#ifndef TJIT_REDUCE_H
#define TJIT_REDUCE_H

#include "core.h"

typedef struct tjc_reduce_info {
    int ndim;                      /* of the input */
    bool reduced[TJ_MAX_DIMS];     /* per input dim */
    int out_dim[TJ_MAX_DIMS];      /* output dim of each input dim; -1 when dropped */
    int out_ndim;
    int64_t out_sizes[TJ_MAX_DIMS];
    int64_t n_reduce;              /* input elements folded into each output */
    int64_t n_out;                 /* output elements */
    int zero_dim;                  /* a reduced dim of size 0, else -1 */
} tjc_reduce_info;

/* Validates the dims of a reduction call (range, repeats, the sum_to_size
 * target) and describes the reduction. Errors name the op and the sizes. */
tj_status tjc_reduce_info_of(const tjc_call *c, tjc_reduce_info *r);

/* The `ord` of linalg_vector_norm and the `correction` of var/std, found by
 * argument name so that the rows stay the one place that orders them. */
const tj_attr *tjc_reduce_attr(const tjc_call *c, const char *name);

#endif
