/* tracer_internal.h — what tracer.c (recording) and views.c (writes
 * through views, and views read after their storage was written) share: the
 * tracer's state and the helpers that map tensors to values. */
#ifndef TJIT_TRACER_INTERNAL_H
#define TJIT_TRACER_INTERNAL_H

#include "core/core.h"
#include "core/ptrmap.h"

typedef struct pending {
    const tj_op_info *op;
    tj_value **values;
    tj_tensor **tensors;
    int n_in, cap;
    const tj_attr *attrs;
    int n_attrs;
} pending;

typedef struct tracer {
    tj_graph *g;
    tjc_ptrmap value_of;   /* tj_tensor* -> tj_value* */
    tjc_ptrmap stamp;      /* tj_tensor* -> storage version + 1 when mapped */
    tjc_ptrmap version;    /* tjc_storage* -> version */
    tjc_ptrmap created;    /* tensors made by creation functions while tracing */
    tjc_ptrmap constant_of; /* tjc_storage* -> its prim::Constant's value, until first written */
    tjc_ptrmap link_of;    /* tj_tensor* -> tjt_view_link*: how a view was made from its parent */
    struct tjt_view_link **links; /* every link, owned */
    int n_links, cap_links;
    tjc_ptrmap param_of;   /* tj_tensor* -> its graph input's value (inputs and parameters) */
    tj_tensor **written_params; /* inputs written through views: copied back at the end */
    int n_written, cap_written;
    tj_tensor **held;
    int n_held, cap_held;
    int n_params;
    bool failed;
    pending pend;
} tracer;

void tjt_fail(tracer *tr, tj_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The version of t's storage: bumped by every write into it. */
uintptr_t tjt_version_of(const tracer *tr, const tj_tensor *t);
void tjt_bump_version(tracer *tr, const tj_tensor *t);
/* Maps t to v as of its storage's current version. */
void tjt_map(tracer *tr, tj_tensor *t, tj_value *v);
/* Appends n; its first output, or NULL (the tracer failed). */
tj_value *tjt_append_node(tracer *tr, tj_node *n);
/* The value a tensor read by an op stands for (a view whose storage was
 * written since is made again from its base); NULL when the tracer failed. */
tj_value *tjt_value_for(tracer *tr, tj_tensor *t, const char *reader, const char *arg);

/* ---- views.c ---- */
/* Remembers how out[piece], an output of a view op (or of reshape, flatten
 * or contiguous when they aliased), was made from parent. */
void tjt_record_view(tracer *tr, tj_tensor *parent, tj_tensor *const *out, int piece,
                     const tj_op_info *op, const tj_attr *attrs, int n_attrs);
/* v's value made again from its base's current value (its storage was
 * written since v was mapped); NULL when it has no base to be made from. */
tj_value *tjt_view_again(tracer *tr, tj_tensor *v);
/* The op pd records writes into a view: it becomes its out-of-place form
 * plus scatters into the base, and returns true. false: it is recorded as it
 * is (not a view, or not the in-place form of another op). */
bool tjt_write_through_view(tracer *tr, const pending *pd);
/* At the end of the trace: each graph input written through a view gets its
 * final value copied into it (copy_), once per replay. */
void tjt_copy_back_params(tracer *tr);
void tjt_views_free(tracer *tr);

#endif
