/* pointwise.h — the CUDA backend's pointwise machinery (prefix tjcu_pw_, and
 * the copies every family can use): kernels generated as CUDA C from the rows
 * of core/ops_pointwise.def (one source per op and compute dtype, compiled on
 * first use for the running device; pw_codegen.c), their launching with a
 * contiguous, a vectorised and a strided/broadcast layout (op_pointwise.c),
 * and copies with broadcasting and dtype conversion built on the same
 * kernels. The device vocabulary is kernels/tjm_cuda.h, the loops
 * kernels/tjcu_pointwise.h. */
#ifndef TJIT_CUDA_POINTWISE_H
#define TJIT_CUDA_POINTWISE_H

#include "backends/cuda/sources.h"
#include "core/core.h"

/* The generated kernels' operand flags (TJPW_PARAM, TJPW_BCAST in
 * kernels/tjcu_pointwise.h): operand k is the scalar argument s / a single
 * element broadcast over a contiguous launch. */
#define TJCU_PW_BCAST(k) (1 << (k))
#define TJCU_PW_PARAM(k) (1 << (4 + (k)))

/* ---- sources ------------------------------------------------------------------ */

/* A parameter or scalar operand in the compute dtype's storage type: the
 * per-op kernels take it by value (args[] points at it: every member starts
 * at the union's first byte), the fused ones as a literal. */
typedef union tjcu_pw_scalar {
    float f;
    double d;
    long long i;
    unsigned char b;
} tjcu_pw_scalar;
/* An expression parameter (alpha, an approximation's choice) as
 * backends/cpu/pointwise.c converts it, and a .Scalar form's operand as
 * backends/cpu/copy.c does: integers saturate at different limits. */
tjcu_pw_scalar tjcu_pw_param(tj_dtype d, double v);
tjcu_pw_scalar tjcu_pw_operand(tj_dtype d, double v);

/* How generated CUDA C spells a dtype: its storage type ("unsigned char" for
 * bool), its compute type in kernels/tjm_cuda.h ("tjm::i64"), and the suffix
 * of the cv_ and sv_ conversions there ("b8"). */
const char *tjcu_c_storage_type(tj_dtype d);
const char *tjcu_c_compute_type(tj_dtype d);
const char *tjcu_c_suffix(tj_dtype d);

/* What every generated source starts with: tjcu_builtins.h's include and the
 * library's embedded copies of tjcu_kernel.h, tjm_cuda.h and
 * tjcu_pointwise.h (pasted, not included, so that the text is all a cache
 * key needs). Made once; NULL with an error when it cannot be. */
const char *tjcu_pw_preamble(void);
/* True when a pointwise row (its base form: not .Scalar, not in-place) has a
 * kernel computing in dtype compute: the dtypes the CPU generates loops for. */
bool tjcu_pw_takes(const tj_op_info *base, tj_dtype compute);
/* The dtype a row's expression yields when computing in compute. */
tj_dtype tjcu_pw_result(const tj_op_info *base, tj_dtype compute);
/* The source of base's kernels in compute (made once, kept for the process;
 * NULL with an error when out of memory), and its name, which is also its
 * module cache key ("pw_add_f32.cu"). */
const char *tjcu_pw_source(const tj_op_info *base, tj_dtype compute);
void tjcu_pw_key(char *buf, size_t n, const tj_op_info *base, tj_dtype compute);
/* The source of the conversion kernels from dtype src to dtype dst
 * ("copy_f32_from_i64.cu"). */
const char *tjcu_pw_copy_source(tj_dtype dst, tj_dtype src);
void tjcu_pw_copy_key(char *buf, size_t n, tj_dtype dst, tj_dtype src);

/* A source provider (sources.h): calls fn with the name and text of every
 * source this family can generate, each pointwise row for each compute dtype
 * it takes and each conversion, so that the NVRTC test compiles them all for
 * every architecture. */
bool tjcu_pointwise_sources(tjcu_source_fn fn, void *ctx);

/* For tests: every strided launch takes the 64-bit index kernel, which
 * otherwise runs only past 2^31 elements or offsets (too big for the host
 * harness). */
void tjcu_pw_set_wide_index(bool always);

/* ---- copies on a device ---------------------------------------------------------
 * what names the op in errors. */

/* dst[...] = src[...], src broadcast to dst's sizes and converted to its dtype
 * (backends/cpu/copy.c's conversions); safe when the two overlap. Both on one
 * CUDA device. */
tj_status tjcu_copy(const char *what, tj_tensor *dst, tj_tensor *src);
/* A new contiguous tensor on t's device with t's values in dtype (a new
 * reference, untracked), or NULL with an error. */
tj_tensor *tjcu_contiguous(const char *what, tj_tensor *t, tj_dtype dtype);
/* Sets every element of a contiguous tensor to zero. */
tj_status tjcu_zero(const char *what, tj_tensor *t);

#endif
