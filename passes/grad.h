/* grad.h — derivative rules and the emitter they are written against.
 * Prefix tjg_.
 *
 * A rule computes the gradients of an op's inputs from the gradients of its
 * outputs by emitting ops: through the graph emitter the same rule appends
 * nodes to a backward graph (autodiff.c); through the eager emitter it runs
 * them on tensors (gradient checks). A rule reads the forward node's inputs
 * and outputs with tjg_input / tjg_output; in a graph those become the values
 * the forward pass saves for backward, so what a rule does not read is not
 * kept.
 *
 * Values (tjg_val) are opaque: tensors for the eager emitter, graph values for
 * the graph emitter. A NULL gradient means zero: rules receive NULL for
 * outputs nobody differentiated, and may return NULL for an input whose
 * gradient is zero. Emission helpers propagate failure: once one fails, the
 * context's status is set and later helpers return NULL.
 *
 * Every op of the table appears in exactly one family table of rules
 * (tjg_rule_entry), with a rule or with the reason it has none
 * (tests/test_grad.c checks this). Rules of ops whose gradients need other
 * ops (conv2d needs conv2d_backward_input) emit those ops, which have rules
 * of their own, so backward graphs can be differentiated again.
 */
#ifndef TJIT_GRAD_H
#define TJIT_GRAD_H

#include "core/core.h"
#include "tjit/ir.h"

typedef void *tjg_val;

typedef struct tjg_emitter tjg_emitter;
typedef struct tjg_emitter_ops {
    /* Emits op on in (NULL for an absent optional tensor) with attrs (the
     * op's attributes in schema order); writes n_out outputs. */
    tj_status (*emit)(tjg_emitter *e, const tj_op_info *op, const tjg_val *in, int n_in,
                      const tj_attr *attrs, tjg_val *out, int n_out);
    /* The type of a value: dtype and sizes are always known. */
    tj_status (*type)(tjg_emitter *e, tjg_val v, tj_type *t);
} tjg_emitter_ops;
struct tjg_emitter {
    const tjg_emitter_ops *ops;
};

typedef struct tjg_ctx tjg_ctx;
struct tjg_ctx {
    tjg_emitter *e;
    const tj_op_info *op;
    const tj_attr *attrs; /* the forward node's attributes, schema order */
    int n_in, n_out;
    const tjg_val *grad_out; /* n_out; NULL entries are zero */
    const bool *needs;       /* n_in: whether input i wants a gradient */
    tjg_val *grad_in;        /* n_in: the rule's results (NULL: zero) */
    tj_status status;        /* the first failure of an emission helper */
    /* the driver's: forward values by position */
    tjg_val (*input_fn)(tjg_ctx *c, int i);
    tjg_val (*output_fn)(tjg_ctx *c, int i);
    tj_type (*input_type_fn)(tjg_ctx *c, int i);
    void *driver;
};

typedef tj_status (*tjg_rule)(tjg_ctx *c);

typedef struct tjg_rule_entry {
    int op;          /* TJ_OP_... */
    tjg_rule rule;   /* NULL: the op has no gradient */
    const char *why; /* when rule is NULL: e.g. "piecewise constant: its gradient is zero" */
} tjg_rule_entry;

/* The family tables (passes/grad_*.c), each ending with {-1, NULL, NULL}. */
extern const tjg_rule_entry tjg_rules_pointwise[], tjg_rules_reduce[], tjg_rules_view[],
    tjg_rules_linalg[], tjg_rules_nn[];
/* The entry for an op, or NULL when no table lists it. */
const tjg_rule_entry *tjg_rule_for(const tj_op_info *op);

/* ---- what rules call ----------------------------------------------------------- */

tjg_val tjg_input(tjg_ctx *c, int i);  /* forward input i (NULL for an absent optional) */
tjg_val tjg_output(tjg_ctx *c, int i); /* forward output i */
tj_type tjg_type(tjg_ctx *c, tjg_val v);
/* The type of forward input i, without saving the input for backward. */
tj_type tjg_input_type(tjg_ctx *c, int i);
/* The forward input's attribute by name (a rule may also index c->attrs). */
const tj_attr *tjg_attr(tjg_ctx *c, const char *name);

/* Emits an op by id; attrs NULL takes the schema's defaults. */
tjg_val tjg_op(tjg_ctx *c, int op_id, const tjg_val *in, int n_in, const tj_attr *attrs);
int tjg_op_n(tjg_ctx *c, int op_id, const tjg_val *in, int n_in, const tj_attr *attrs, tjg_val *out,
             int n_out);

/* Common compositions; NULL inputs stand for zero where the result allows. */
tjg_val tjg_add(tjg_ctx *c, tjg_val a, tjg_val b); /* NULL + b = b */
tjg_val tjg_sub(tjg_ctx *c, tjg_val a, tjg_val b);
tjg_val tjg_mul(tjg_ctx *c, tjg_val a, tjg_val b); /* NULL * b = NULL */
tjg_val tjg_div(tjg_ctx *c, tjg_val a, tjg_val b);
tjg_val tjg_neg(tjg_ctx *c, tjg_val a);
tjg_val tjg_scale(tjg_ctx *c, tjg_val a, double s);      /* a * s */
tjg_val tjg_add_scalar(tjg_ctx *c, tjg_val a, double s); /* a + s */
/* A gradient of a broadcast result reduced to like's sizes and converted to
 * like's dtype (the way every broadcasting op's rule ends). */
tjg_val tjg_sum_to(tjg_ctx *c, tjg_val g, tjg_val like);
/* The same to forward input i's sizes and dtype, which needs only its type:
 * prefer it, since it does not keep the input alive for backward. */
tjg_val tjg_sum_to_input(tjg_ctx *c, tjg_val g, int i);
tjg_val tjg_zeros_like(tjg_ctx *c, tjg_val like);

/* ---- emitters ------------------------------------------------------------------- */

/* Runs ops on tensors; values are tj_tensor* owned by the innermost scope. */
tjg_emitter *tjg_eager_emitter(void);

/* Appends nodes to g's block; values are tj_value* of g. */
typedef struct tjg_graph_emitter {
    tjg_emitter base;
    tj_graph *g;
} tjg_graph_emitter;
void tjg_graph_emitter_init(tjg_graph_emitter *e, tj_graph *g);

/* The types of op's outputs for inputs of the given types (NULL for absent
 * optionals), from the op's shape rule. */
tj_status tjg_infer_types(const tj_op_info *op, const tj_type *const *in, int n_in,
                          const tj_attr *attrs, tj_type *out, int n_out, int *n_made);

/* Runs op's rule eagerly on tensors: grads of the inputs (new references, NULL
 * when zero or not needed) for outputs' grads grad_out. For tests. */
tj_status tjg_eager_grad(const tj_op_info *op, tj_tensor *const *in, int n_in, const tj_attr *attrs,
                         tj_tensor *const *out, int n_out, tj_tensor *const *grad_out,
                         const bool *needs, tj_tensor **grad_in);

#endif
