/* cuda_layout.h — the CPU-against-CUDA op check of cuda_cases.h for inputs
 * whose layout matters: tt_cuda_check_op hands the device contiguous
 * copies, so a strided, transposed, expanded or offset view would reach the
 * CUDA kernel dense. tt_cuda_check_layout copies each input's whole storage
 * to the device (and to a fresh host buffer for the CPU run) and makes the
 * same view of it there: same sizes, strides and storage offset on both
 * devices, and the caller's tensors are never written. Prefix tt_cuda_. */
#ifndef TJIT_CUDA_LAYOUT_H
#define TJIT_CUDA_LAYOUT_H

#include "tests/support/cuda_cases.h"

/* As tt_cuda_check_op (same comparison, same failure messages, one counted
 * case), with every input keeping its geometry on both devices. */
int tt_cuda_check_layout_(const char *op, tj_tensor *const *in, int n_in, const tj_attr *attrs,
                          int n_attrs, double rtol, double atol, const char *file, int line);
#define tt_cuda_check_layout(op, in, n_in, attrs, n_attrs, rtol, atol) \
    tt_cuda_check_layout_(op, in, n_in, attrs, n_attrs, rtol, atol, __FILE__, __LINE__)

#endif
