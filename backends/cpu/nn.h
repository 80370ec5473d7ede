/* nn.h — helpers shared by the CPU kernels of the nn family (norm.c,
 * softmax.c, loss.c, index.c, dropout.c): element access by dtype,
 * contiguous copies, double-precision scratch vectors and a sum whose
 * result does not depend on the thread count. Prefix tjnn_. */
#ifndef TJIT_CPU_NN_H
#define TJIT_CPU_NN_H

#include <math.h>
#include <stdlib.h>

#include "core/nn_rules.h"
#include "cpu.h"

/* Element i of a buffer of dtype dt, as double. For the loops of ops whose
 * cost is not in the arithmetic (losses, indexing); the switch is predicted. */
static inline double tjnn_ld(const void *base, tj_dtype dt, int64_t i) {
    switch (dt) {
    case TJ_F32: return ((const float *)base)[i];
    case TJ_F64: return ((const double *)base)[i];
    case TJ_I64: return (double)((const int64_t *)base)[i];
    default: return ((const bool *)base)[i];
    }
}

static inline void tjnn_st(void *base, tj_dtype dt, int64_t i, double v) {
    switch (dt) {
    case TJ_F32: ((float *)base)[i] = (float)v; break;
    case TJ_F64: ((double *)base)[i] = v; break;
    case TJ_I64: ((int64_t *)base)[i] = (int64_t)v; break;
    default: ((bool *)base)[i] = v != 0; break;
    }
}

/* A normalisation's statistics as PyTorch's running ones leave them: a mean
 * or a variance that is infinite (an infinite element, or squares that
 * overflow) is NaN, and so is every normalised value of the row. */
static inline double tjnn_norm_mean(double m) { return isinf(m) ? NAN : m; }
static inline double tjnn_norm_rstd(double var, double eps) {
    return isinf(var) ? NAN : 1.0 / sqrt(var + eps);
}

/* t itself (retained) when contiguous, else a contiguous copy in its dtype;
 * NULL for NULL. The caller releases the result. */
tj_tensor *tjnn_contig(tj_tensor *t);

/* The elements of t (any strides and float dtype), broadcast to n elements
 * when t has one, as a malloc'd double array; fill when t is NULL. NULL with
 * an error set when out of memory. The caller frees it. */
double *tjnn_doubles(const tj_tensor *t, int64_t n, double fill);

/* A malloc'd double array of n elements (at least one), or NULL with an
 * error set naming op. */
double *tjnn_scratch(const char *op, int64_t n);

/* Sum over [0, n) of fn's partial sums over fixed blocks: blocks run in
 * parallel, their sums are added in order, so the result is the same at any
 * thread count. */
typedef double (*tjnn_block_fn)(int64_t lo, int64_t hi, const void *ctx);
double tjnn_sum_blocks(int64_t n, tjnn_block_fn fn, const void *ctx);

/* The sizes of a contiguous tensor as [outer, sizes[dim], inner]. */
void tjnn_split(const tj_tensor *t, int dim, int64_t *outer, int64_t *n, int64_t *inner);

#endif
