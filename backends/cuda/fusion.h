/* fusion.h — the `cuda` fuser backend (prefix tjcu_fuse_): a fusion group
 * (pointwise ops and prim::ConstantChunk, fuser/fuser.h) becomes one CUDA C
 * kernel, specialised for an input spec, compiled by NVRTC for the device
 * (by the host C++ compiler on the host execution harness) and launched on
 * the calling thread's stream.
 *
 * fuse_codegen.c writes a group's kernel text: the iteration space and every
 * operand's strides are constants of the spec (inputs of the strided layout
 * class read their strides from the arguments), chunks of an input are
 * pointer offsets into it, each node is the op table row's expression
 * (core/ops_pointwise.def) evaluated in namespace tjm (kernels/tjm_cuda.h),
 * as the per-op kernels do. Three entry points: a 32-bit and a 64-bit index
 * grid-stride loop, and a vectorised one (four elements a thread, 128-bit
 * loads and stores) for groups whose operands are all read whole or as one
 * broadcast element; the launcher picks one per call.
 *
 * fuse_backend.c compiles lazily and in batches: compile() only writes the
 * text; the first launch of any pending kernel compiles every pending kernel
 * together in one module (a program's groups, or a test's hundreds of
 * groups, cost one NVRTC or host-compiler run), through the backend's module
 * cache and NVRTC's disk cache (TJIT_CACHE_DIR). A kernel that cannot be
 * compiled is marked failed with the compiler's message and the offending
 * source line; the fuser (fuser/group.c) then runs its group op by op. */
#ifndef TJIT_CUDA_FUSION_H
#define TJIT_CUDA_FUSION_H

#include <stdio.h>

#include "core/text.h"
#include "fuser/fuser.h"

/* The kernel text of a group for spec, its entry points named
 * <name>_vec, <name>_i32 and <name>_i64 (name: an identifier), and what the
 * launcher needs to know of it. */
typedef struct tjcu_fuse_operand {
    int input;         /* the group input it reads */
    int chunk_dim;     /* -1, or the dim of input that the chunk splits */
    int64_t chunks, chunk_index;
    bool runtime;      /* strides read from the arguments (a strided input) */
    bool whole;        /* read at the linear index: the vectorised kernel may run */
    tj_dtype dtype;
} tjcu_fuse_operand;

/* A row group's kernel (fuse_rows.c): rows of len elements, each taken by
 * lanes threads (one warp, blockDim (32, per_block), for short rows; else
 * one block of lanes threads a row); each lane keeps its cache elements of
 * the row's input in registers when the row fits in lanes * cache, else
 * recomputes the prologue at every pass (cache 0). */
typedef struct tjcu_fuse_row {
    tjf_row_kind kind;
    tj_dtype dtype;
    int64_t len, rows;
    unsigned lanes, per_block;
    int cache;
    double eps;
} tjcu_fuse_row;

typedef struct tjcu_fuse_layout {
    int n_outputs, n_operands, n_runtime;
    tjcu_fuse_operand operand[TJF_MAX_ARGS];
    tj_dtype output_dtype[TJF_MAX_ARGS];
    /* what an element stores: one value per output, or, for a group ending in
     * aten::cat (fuser/fuse.c fuses a concatenation on CUDA), one per piece
     * into its slice of the one output */
    int n_stores;
    tj_dtype store_dtype[TJF_MAX_ARGS];
    /* the iteration space without its size-1 dims (coalesced when no operand
     * has run-time strides): what the kernel's index runs over */
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
    /* the full iteration space (a concatenation's piece) */
    int it_ndim;
    int64_t it_sizes[TJ_MAX_DIMS];
    /* the group's output sizes, as the caller allocates them */
    int out_ndim;
    int64_t out_sizes[TJ_MAX_DIMS];
    int64_t numel;
    bool vectorisable;
    size_t args_bytes; /* the kernel's argument block */
    tjcu_fuse_row row;  /* kind TJF_ROW_NONE: the elementwise kernels */
} tjcu_fuse_layout;

/* fuse_rows.c: the row kernel's shape for row op n over the iteration
 * sizes; TJ_ERR_UNSUPPORTED when the group is not of fuser.h's form. */
tj_status tjcu_fuse_row_plan(const tj_node *n, int ndim, const int64_t *sizes, tjcu_fuse_row *row);
/* Its entry points <name>_i32 and <name>_i64 around the element functions
 * <name>_rowx and <name>_rowy that fuse_codegen.c writes. */
void tjcu_fuse_put_row_kernel(tjc_text *t, const char *name, const tjcu_fuse_row *row);

/* The text (malloc'd) and layout of the group's kernels; NULL with an error
 * (TJ_ERR_UNSUPPORTED naming the node) for what a kernel cannot express. */
char *tjcu_fuse_kernel_text(const tj_graph *subgraph, const tjf_spec *spec, const char *name,
                            tjcu_fuse_layout *layout);

/* The backend ("cuda"). */
const tjf_backend *tjcu_fuse_backend(void);

/* For tests and `tjit dump --kernels --device cuda`: the whole source
 * (preamble and kernels, entry points named name_*) of the group for spec;
 * malloc'd. */
char *tjcu_fuse_source(const tj_graph *subgraph, const tjf_spec *spec, const char *name);
/* `tjit dump --kernels --device cuda`: every fusion group of g, its CUDA C
 * for the inputs its types give, and the PTX NVRTC makes of it for arch
 * ("sm_90"). */
tj_status tjcu_fuse_dump(const tj_graph *g, const char *arch, FILE *out);
/* Calls fn with every module of fused kernels this process has built so far
 * (its key and full source); stops early when fn returns false. */
void tjcu_fuse_for_each_module(bool (*fn)(void *ctx, const char *key, const char *source),
                               void *ctx);
/* Counts since the process started: kernels written, modules built (each a
 * compiler run unless cached), kernels that failed to compile. */
typedef struct tjcu_fuse_stats {
    long kernels, modules, failed;
} tjcu_fuse_stats;
void tjcu_fuse_get_stats(tjcu_fuse_stats *s);
/* For tests: kernels written from now on call the function named, so that
 * their compile fails (NULL: no more). */
void tjcu_fuse_set_fault(const char *function);

#endif
