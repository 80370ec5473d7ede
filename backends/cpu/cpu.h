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

#define TJCPU_MAX_OPERANDS 8
#define TJCPU_GRAIN 32768 /* elements below which one thread does the work */

typedef void (*tjcpu_loop_fn)(int64_t n, char **ptrs, const int64_t *steps, const void *ctx);

void tjcpu_iter(tj_tensor *const *ops, int n_ops, tjcpu_loop_fn fn, const void *ctx);

/* Threads used by kernels (OpenMP); tj_set_num_threads changes it. */
int tjcpu_threads_for(int64_t work);

/* dst[...] = src[...] broadcast and converted; handles overlap. */
tj_status tjcpu_copy(tj_tensor *dst, tj_tensor *src);
/* A contiguous copy of t converted to dtype (a new reference, untracked). */
tj_tensor *tjcpu_to_contiguous(tj_tensor *t, tj_dtype dtype);

#endif
