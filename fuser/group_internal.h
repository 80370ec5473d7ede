/* group_internal.h — the fusion group runner's state, shared by group.c
 * (plain and row groups) and group_anchor.c (epilogue groups, fuser.h). */
#ifndef TJIT_FUSER_GROUP_INTERNAL_H
#define TJIT_FUSER_GROUP_INTERNAL_H

#include "fuser.h"

typedef struct gnode {
    const tj_op_info *op; /* NULL for prim::ConstantChunk */
    const tj_attr *attrs; /* the node's, in schema order */
    int64_t chunks, dim;
    bool row; /* the row op (fuser.h): its result has its input's sizes... */
    bool reduce, keepdim; /* ...unless it reduces the last dim (kept as 1, or dropped) */
    bool anchor; /* an epilogue group's matrix product (fuser.h) */
    int n_in, n_out;
    int *in, *out; /* slots */
} gnode;

typedef struct cached {
    tjf_spec *spec; /* tjf_spec_bytes of it: a full spec is 5 KB, most groups hold one input or two */
    const tjf_backend *backend; /* the device's: it compiled and releases the kernel */
    tjf_kernel *kernel;         /* NULL: the backend could not compile it (why: fallback) */
} cached;

struct tjf_group {
    const tj_graph *sub;
    tj_graph *owned; /* sub, when the group made it (an epilogue group's epilogue) */
    const tjf_backend *backend;
    int n_inputs, n_outputs, n_slots, n_nodes;
    int *output_slot;
    tj_dtype *output_dtype;
    gnode *nodes;
    pthread_mutex_t lock;
    cached *cache;
    int n_cache, cap_cache;
    char *fallback; /* why the group last ran op by op on a device with a backend */
    int node_id;
    bool cuda_fusion; /* TJIT_CUDA_FUSION, read once here, not at every launch */
    struct tjf_anchored *anchored; /* an epilogue group's anchor and epilogue, else NULL */
};

/* The kernel for inputs like these from g's cache (compiled now when new);
 * NULL with TJ_ERR_UNSUPPORTED, the reason noted, when the backend refuses. */
tjf_kernel *tjf_group_cached_kernel(tjf_group *g, const tjf_backend *backend, tj_tensor *const *inputs);
/* Records why the group runs op by op (said on stderr under TJIT_DUMP). */
void tjf_group_note_fallback(tjf_group *g, const char *why);
/* The group's subgraph run op by op through the device's kernels into
 * outputs the caller made (copied in). */
tj_status tjf_group_run_op_by_op_into(const tjf_group *g, tj_tensor *const *inputs,
                                      tj_tensor *const *outputs);
/* A group of subgraph sub (borrowed, or owned when own is true). */
tjf_group *tjf_group_of_subgraph(const tj_graph *sub, bool own, int node_id, const tjf_backend *backend);

/* ---- group_anchor.c ---- */
typedef struct tjf_anchored tjf_anchored;
/* Sets g up as an epilogue group (g->anchored) around its anchor node k. */
tj_status tjf_anchored_new(tjf_group *g, int k);
void tjf_anchored_free(tjf_anchored *a);
/* The epilogue group's versions of tjf_group_kernel and tjf_group_launch
 * (the kernel: the group's plan for inputs like these). */
tj_status tjf_anchored_kernel(tjf_group *g, tj_tensor *const *inputs, const tjf_kernel **kernel);
tj_status tjf_anchored_launch(tjf_group *g, const tjf_kernel *k, tj_tensor *const *inputs,
                              tj_tensor *const *outputs);

#endif
