/* cpu.h — the CPU backend's shared machinery: the strided iteration helper
 * that every elementwise kernel runs on, threading, and copies. Prefix tjcpu_.
 *
 * tjcpu_iter runs a loop function over the elements of ops[0] (the output),
 * with the other operands broadcast to its sizes. It drops size-1 dims,
 * orders dims by the output's strides, merges dims that are contiguous in
 * every operand, and splits the index space across threads above
 * TJCPU_GRAIN elements. The loop function sees one inner run at a time: n
 * elements, a pointer per operand, and each operand's step in bytes (0 for a
 * broadcast operand), so it can take a fast path when every step is the
 * element size.
 */
#ifndef TJIT_CPU_H
#define TJIT_CPU_H

#include "core/core.h"

#define TJCPU_MAX_OPERANDS 64 /* fusion groups read and write many */
#define TJCPU_GRAIN 32768 /* elements below which one thread does the work */

typedef void (*tjcpu_loop_fn)(int64_t n, char **ptrs, const int64_t *steps, const void *ctx);

void tjcpu_iter(tj_tensor *const *ops, int n_ops, tjcpu_loop_fn fn, const void *ctx);

/* Threads used by kernels (OpenMP); tj_set_num_threads changes it. */
int tjcpu_threads_for(int64_t work);

/* The typed loop of a pointwise call (tjc_pw_expr_op's row: its base's for
 * .Scalar and in-place forms) for a compute dtype, or NULL; operands: out,
 * then the inputs (a .Scalar form's operand last), all in the compute dtype. */
tjcpu_loop_fn tjcpu_pw_loop(const tj_op_info *op, const tj_attr *attrs, tj_dtype compute);
/* The loop's parameters (its ctx) from the op's attributes. */
void tjcpu_pw_params(const tj_op_info *op, const tj_attr *attrs, double prm[2]);
/* The loop converting elements of dtype from into dtype to (operands: out, in). */
tjcpu_loop_fn tjcpu_convert_loop(tj_dtype to, tj_dtype from);

/* One row of a fused row group (fused.c), contiguous: softmax or log_softmax
 * of x's n elements of dtype t (f32, f64) into y; layer_norm of x with weight
 * w and bias b. The unfused kernels' vectorised loops, built for each
 * instruction set (isa.h) and picked at run time. */
void tjcpu_softmax_row(const void *x, void *y, int64_t n, tj_dtype t, bool log_form);
void tjcpu_layer_norm_row(const void *x, const void *w, const void *b, void *y, int64_t n, tj_dtype t,
                          double eps);

/* dst[...] = src[...] broadcast and converted; handles overlap. */
tj_status tjcpu_copy(tj_tensor *dst, tj_tensor *src);
/* A contiguous copy of t converted to dtype (a new reference, untracked). */
tj_tensor *tjcpu_to_contiguous(tj_tensor *t, tj_dtype dtype);

#endif
