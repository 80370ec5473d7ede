/* view_grad.h — what the shape rules of the view gradient ops
 * (select_backward, slice_backward; core/view_grad_rules.c) share with their
 * kernels (backends/cpu/view_grad.c). */
#ifndef TJIT_VIEW_GRAD_H
#define TJIT_VIEW_GRAD_H

#include "core.h"

/* The elements slice(dim, start, end, step) takes from a dim of size n, the
 * way slice's shape rule reads its arguments: *first is the first index,
 * *len their count. step must be positive. */
void tjc_slice_range(int64_t n, int64_t start, int64_t end, int64_t step, int64_t *first,
                     int64_t *len);

#endif
