/* cuda_linalg_cases.h — what the CUDA matmul and convolution tests add to
 * cuda_cases.h: operands in several layouts, and the tolerance of a product.
 * Prefix tt_. */
#ifndef TJIT_CUDA_LINALG_CASES_H
#define TJIT_CUDA_LINALG_CASES_H

#include "tests/support/cuda_cases.h"

/* The layouts a test puts an operand in (the values stay t's). */
typedef enum tt_layout {
    TT_DENSE,      /* t itself */
    TT_TRANSPOSED, /* the last two dims swapped in memory (a transposed view) */
    TT_STRIDED,    /* every other element of a wider buffer (tt_noncontiguous) */
    TT_CHANNELS_LAST, /* 3-D and up: dim 1 innermost in memory */
    TT_N_LAYOUTS
} tt_layout;
/* t in layout l, owned by the current scope; layouts that need more dims
 * than t has give t. */
tj_tensor *tt_in_layout(tj_generator *g, tj_tensor *t, tt_layout l);
const char *tt_layout_name(tt_layout l);

/* Tolerance (relative and absolute) of a sum of k products of values in
 * [-1, 1], CUDA against CPU: both round differently in another order, an
 * error that grows as sqrt(k) — 1e-5 sqrt(k) for f32, 1e-13 sqrt(k) for f64
 * (k at least 1); exact for i64. */
double tt_product_tol(tj_dtype d, int64_t k);

#endif
