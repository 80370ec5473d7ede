/* fuser.h — fusion groups at run time: the backend interface that code
 * generators implement, kernel specs, and the per-group kernel cache the
 * interpreter calls. Prefix tjf_. (Forming the groups is tj_pass_fuse, in
 * fuse.c.)
 *
 * A backend compiles a fusion group's subgraph for one input spec (the dtypes,
 * sizes and layout class of the group's inputs) into a kernel, and launches a
 * kernel on inputs that match that spec. The cache keys kernels by spec; the
 * spec is computed from the actual inputs at every run, so inputs whose
 * strides change get a kernel of their own instead of a wrong answer.
 */
#ifndef TJIT_FUSER_H
#define TJIT_FUSER_H

#include <stddef.h>
#include <pthread.h>

#include "core/core.h"
#include "tjit/ir.h"

#define TJF_MAX_ARGS 64 /* group inputs plus outputs; the fuser keeps groups within it */
/* Nodes of one group's subgraph at most: a long chain becomes several groups,
 * each a kernel a backend compiles quickly, whose temporaries stay in cache. */
#define TJF_MAX_GROUP_NODES 64

/* How an input is laid out, as far as a kernel cares. */
typedef enum tjf_layout {
    TJF_CONTIGUOUS, /* row-major without gaps (it may still broadcast by its sizes) */
    TJF_STRIDED,    /* anything else: the kernel must index it with its strides */
} tjf_layout;

typedef struct tjf_input_spec {
    tj_dtype dtype;
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
    tjf_layout layout;
} tjf_input_spec;

/* The inputs come last: a copy of a spec's first tjf_spec_bytes() bytes
 * holds all of it (a group keeps one per kernel it compiled). */
typedef struct tjf_spec {
    int n_inputs;
    tj_device_type device;
    tjf_input_spec inputs[TJF_MAX_ARGS];
} tjf_spec;

/* The bytes of spec that hold its n_inputs inputs. */
static inline size_t tjf_spec_bytes(const tjf_spec *spec) {
    return offsetof(tjf_spec, inputs) + sizeof(tjf_input_spec) * (size_t)spec->n_inputs;
}

typedef struct tjf_kernel tjf_kernel; /* a backend's compiled code */

typedef struct tjf_backend {
    const char *name;
    /* Compiles a fusion group's subgraph for inputs like spec; NULL with an
     * error when it cannot. */
    tjf_kernel *(*compile)(const tj_graph *subgraph, const tjf_spec *spec);
    /* Runs k on inputs that match its spec; outputs are allocated by the
     * caller: contiguous, of the group's iteration sizes and the subgraph
     * outputs' dtypes. */
    tj_status (*launch)(const tjf_kernel *k, tj_tensor *const *inputs, tj_tensor *const *outputs);
    void (*release)(tjf_kernel *k);
} tjf_backend;

/* The portable fused-loop runner (backends/cpu/fused.c). */
const tjf_backend *tjf_portable_backend(void);
/* The backend named "portable" (or others when built in); NULL if unknown. */
const tjf_backend *tjf_find_backend(const char *name);
/* The name of the backend that programs use when their options name none:
 * $TJIT_BACKEND when set, else "llvm" where it is built, else "portable". */
const char *tjf_default_backend_name(void);

/* The backend that compiles groups whose inputs live on a device of type d
 * other than the CPU: the one that device's backend registers with its
 * kernel table ("cuda"); NULL when none does: such groups run op by op
 * through the device's kernels. */
const tjf_backend *tjf_device_backend(tj_device_type d);

/* The spec of actual inputs. */
void tjf_spec_of(tj_tensor *const *inputs, int n, tjf_spec *spec);
/* The spec the graph's types give a group node's inputs (unknown strides
 * taken as contiguous): what dumps of a group's kernel show. */
void tjf_spec_of_types(const tj_node *group, tjf_spec *spec);

/* A fusion group node as the interpreter runs it: its subgraph, the shape
 * rule of the group, and the kernels compiled so far. Thread-safe. */
typedef struct tjf_group tjf_group;

tjf_group *tjf_group_new(const tj_node *fusion_group, const tjf_backend *backend);
void tjf_group_free(tjf_group *g);
/* Runs the group: outputs receive new references. */
tj_status tjf_group_run(tjf_group *g, tj_tensor *const *inputs, tj_tensor **outputs);
/* For a static plan, on inputs of fixed geometry (their data is not read):
 * the sizes all of the group's outputs share, and the kernel for inputs like
 * these (compiled now when new). Groups on devices without a fusion backend
 * are refused (TJ_ERR_UNSUPPORTED). */
tj_status tjf_group_prepare(tjf_group *g, tj_tensor *const *inputs, int *ndim, int64_t *sizes,
                            const tjf_kernel **kernel);
/* tjf_group_prepare in two steps, for a plan that compiles its groups' kernels
 * together: the output sizes alone (nothing compiled), then the kernel
 * (compiled now when new; safe to call for different groups at once). */
tj_status tjf_group_shape(tjf_group *g, tj_tensor *const *inputs, int *ndim, int64_t *sizes);
tj_status tjf_group_kernel(tjf_group *g, tj_tensor *const *inputs, const tjf_kernel **kernel);
/* Whether compiling the group's kernels for inputs on d takes long enough
 * (a code generator: LLVM) to be worth spreading over threads. */
bool tjf_group_compiles_slowly(const tjf_group *g, tj_device_type d);
int tjf_group_num_outputs(const tjf_group *g);
tj_dtype tjf_group_output_dtype(const tjf_group *g, int i);
/* Runs a prepared kernel on inputs like the ones it was prepared for, into
 * outputs the caller made (contiguous, of the prepared sizes and dtypes). */
tj_status tjf_group_launch(const tjf_group *g, const tjf_kernel *k, tj_tensor *const *inputs,
                           tj_tensor *const *outputs);
/* Why the group last ran op by op although its device has a backend (the
 * backend refused the group or its compiler failed); NULL when it never did. */
const char *tjf_group_fallback_reason(const tjf_group *g);
/* How many kernels the group has compiled (for tests). */
int tjf_group_num_kernels(const tjf_group *g);
/* The name of the backend that compiles the group's kernels (for profiles). */
const char *tjf_group_backend_name(const tjf_group *g);

/* Fusibility: one predicate over the op table's facts. */
bool tjf_fusible_op(const tj_op_info *op);

/* Row groups. A group may hold one row op: a normalisation or a reduction
 * over the last dim of the group's iteration space, which reads whole rows.
 * The pointwise nodes that do not depend on it are its prologue (recomputed
 * or kept per row by the backend), those that read its result its epilogue:
 * softmax(scores * 0.125), layer_norm(x + proj, w, b), exp(log_softmax(x)),
 * x * rsqrt(mean(x * x, -1, keepdim) + eps), logsumexp(a + b, -1).
 *   softmax, log_softmax: aten::softmax[dim=d](x) with d the last dim;
 *   layer_norm: aten::layer_norm[normalized_shape=[N], eps=e](x, w, b) with
 *   N the last size, w and b tensors of sizes [N] and x's dtype;
 *   sum, mean, amax, amin, logsumexp: aten::sum.dim_IntList, aten::mean.dim,
 *   aten::amax, aten::amin, aten::logsumexp with dim = [last] (or [-1]),
 *   keepdim either way, and N >= 2 (so that the two size classes below
 *   differ).
 * x is f32 or f64 and the result has x's dtype. A normalisation's input and
 * output have the group's iteration sizes. A reduction's input has the
 * group's full sizes [rows..., N], its result the reduced sizes [rows..., 1]
 * (keepdim) or [rows...]: every member of its group has one of the two
 * (a reduced member is one value per row), a full member reads a reduced
 * value only when the reduction keeps its dim (it then broadcasts along the
 * row), and all of the group's outputs share one of the two sizes (fuse.c). */
typedef enum tjf_row_kind {
    TJF_ROW_NONE,
    TJF_ROW_SOFTMAX,
    TJF_ROW_LOG_SOFTMAX,
    TJF_ROW_LAYER_NORM,
    TJF_ROW_SUM,
    TJF_ROW_MEAN,
    TJF_ROW_AMAX,
    TJF_ROW_AMIN,
    TJF_ROW_LOGSUMEXP,
} tjf_row_kind;

/* What row op n is (TJF_ROW_NONE: none, or not of the form above). */
tjf_row_kind tjf_row_op(const tj_node *n);
/* The row op node of a group's subgraph, or NULL. */
const tj_node *tjf_row_node(const tj_graph *subgraph);
/* Whether kind reduces each row to one value (sum ... logsumexp). */
static inline bool tjf_row_reduces(tjf_row_kind kind) { return kind >= TJF_ROW_SUM; }
/* Whether reduction n keeps its dim (keepdim). */
bool tjf_row_keepdim(const tj_node *n);

/* Epilogue groups (anchor.c, group_anchor.c). A group may also hold one
 * *anchor*: a matrix product or convolution whose pointwise users (bias,
 * activation, residual adds: its epilogue) run on its output block by block
 * while the block is in cache, instead of as separate sweeps over all of it.
 *   linear: aten::linear(x, w, b) with x of at least 2 dims, w 2-D, b 1-D;
 *   mm: aten::mm(a, b), both 2-D; matmul: aten::matmul(a, b), a of at least
 *   2 dims and b 2-D; conv2d: aten::conv2d(x, w, b) with x 4-D and b 1-D.
 * Every operand a tensor (no absent bias), f32 or f64 alike, on the CPU.
 * The group iterates the anchor's result's sizes, and its operands come from
 * outside the group; the group holds no row op. A block is a range of
 * *rows*: the result's leading dims (all but the last for the matrix
 * products, the batch for conv2d), which the anchor's first operand shares. */
typedef enum tjf_anchor_kind {
    TJF_ANCHOR_NONE,
    TJF_ANCHOR_LINEAR,
    TJF_ANCHOR_MM,
    TJF_ANCHOR_MATMUL,
    TJF_ANCHOR_CONV2D,
} tjf_anchor_kind;

/* What anchor n is (TJF_ANCHOR_NONE: none, or not of the form above). */
tjf_anchor_kind tjf_anchor_op(const tj_node *n);
/* The anchor of a group's subgraph, or NULL. */
const tj_node *tjf_anchor_node(const tj_graph *subgraph);
/* How many leading dims of an anchor's result of ndim dims are its rows. */
int tjf_anchor_row_dims(tjf_anchor_kind kind, int ndim);

#endif
