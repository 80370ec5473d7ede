/* grad_emit.c — the emitters that derivative rules run through (grad.h): the
 * eager one (tensors), the graph one (nodes, typed by the ops' own shape
 * rules), the helpers rules call, and the lookup of rules by op. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grad.h"

/* ---- rules by op ------------------------------------------------------------------ */

const tjg_rule_entry *tjg_rule_for(const tj_op_info *op) {
    static const tjg_rule_entry *const families[] = {tjg_rules_pointwise, tjg_rules_reduce,
                                                     tjg_rules_view, tjg_rules_linalg, tjg_rules_nn};
    if (!op) return NULL;
    /* in-place forms differentiate like their base */
    int id = op->inplace_of >= 0 ? op->inplace_of : op->id;
    for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
        for (const tjg_rule_entry *e = families[f]; e->op >= 0; e++)
            if (e->op == id) return e;
    return NULL;
}

/* ---- types from shape rules ------------------------------------------------------- */

static tjc_storage no_storage; /* shape rules read geometry, never data */

tj_status tjg_infer_types(const tj_op_info *op, const tj_type *const *in, int n_in,
                          const tj_attr *attrs, tj_type *out, int n_out, int *n_made) {
    enum { MAX_IN = 64 };
    struct tj_tensor fake[MAX_IN];
    tj_tensor *ptrs[MAX_IN];
    if (n_in > MAX_IN) return tjc_error(TJ_ERR_UNSUPPORTED, "%s: too many inputs to type", op->name);
    for (int i = 0; i < n_in; i++) {
        ptrs[i] = NULL;
        if (!in[i]) continue;
        const tj_type *t = in[i];
        if (t->kind != TJ_TYPE_TENSOR || t->dtype == TJ_UNKNOWN || t->ndim == TJ_UNKNOWN)
            return tjc_error(TJ_ERR_UNSUPPORTED, "%s: input %d has no known tensor type", op->name, i);
        memset(&fake[i], 0, sizeof fake[i]);
        fake[i].storage = &no_storage;
        fake[i].dtype = (tj_dtype)t->dtype;
        fake[i].ndim = t->ndim;
        bool strided = t->ndim > 0;
        for (int d = 0; d < t->ndim; d++) {
            if (t->sizes[d] == TJ_UNKNOWN_DIM)
                return tjc_error(TJ_ERR_UNSUPPORTED, "%s: input %d has an unknown size", op->name, i);
            fake[i].sizes[d] = t->sizes[d];
            strided &= t->strides[d] != TJ_UNKNOWN_DIM;
        }
        if (strided) memcpy(fake[i].strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
        else tjc_contiguous_strides(fake[i].sizes, t->ndim, fake[i].strides);
        ptrs[i] = &fake[i];
    }
    enum { MAX_META = 64 };
    tjc_meta metas[MAX_META];
    tjc_call call = {.op = op, .in = ptrs, .n_in = n_in, .attr = attrs, .n_attr = op->schema.n_attrs,
                     .meta = metas, .meta_cap = MAX_META};
    int n = 0;
    tj_status st = op->infer(&call, &n);
    if (st) return st;
    if (n > MAX_META || n > n_out)
        return tjc_error(TJ_ERR_UNSUPPORTED, "%s: %d outputs where %d were expected", op->name, n, n_out);
    const tj_type *on = NULL; /* outputs live where the inputs do */
    for (int i = 0; i < n_in && !on; i++) on = in[i];
    for (int k = 0; k < n; k++) {
        const tjc_meta *m = &metas[k];
        if (m->kind == TJC_OUT_SELF) {
            out[k] = *in[0];
            continue;
        }
        out[k] = tj_type_contiguous(m->dtype, m->sizes, m->ndim);
        if (m->kind == TJC_OUT_VIEW) memcpy(out[k].strides, m->strides, sizeof(int64_t) * (size_t)m->ndim);
        if (on) {
            out[k].device_type = on->device_type;
            out[k].device_index = on->device_index;
        }
    }
    *n_made = n;
    return TJ_OK;
}

/* ---- the eager emitter ------------------------------------------------------------ */

static tj_status eager_emit(tjg_emitter *e, const tj_op_info *op, const tjg_val *in, int n_in,
                            const tj_attr *attrs, tjg_val *out, int n_out) {
    (void)e;
    int n = tj_invoke(op->id, (tj_tensor *const *)in, n_in, attrs, op->schema.n_attrs,
                      (tj_tensor **)out, n_out);
    if (n < 0) return tj_last_status() ? tj_last_status() : TJ_ERR_INTERNAL;
    if (n != n_out) return tjc_error(TJ_ERR_INTERNAL, "%s: %d outputs, expected %d", op->name, n, n_out);
    return TJ_OK;
}

static tj_status eager_type(tjg_emitter *e, tjg_val v, tj_type *t) {
    (void)e;
    *t = tj_type_of_tensor((const tj_tensor *)v);
    return TJ_OK;
}

static const tjg_emitter_ops eager_ops = {eager_emit, eager_type};
static tjg_emitter eager = {&eager_ops};
tjg_emitter *tjg_eager_emitter(void) { return &eager; }

/* ---- the graph emitter ------------------------------------------------------------ */

static tj_status graph_emit(tjg_emitter *base, const tj_op_info *op, const tjg_val *in, int n_in,
                            const tj_attr *attrs, tjg_val *out, int n_out) {
    tjg_graph_emitter *e = (tjg_graph_emitter *)base;
    enum { MAX_IN = 64 };
    tj_value *values[MAX_IN];
    const tj_type *types[MAX_IN];
    if (n_in > MAX_IN) return tjc_error(TJ_ERR_UNSUPPORTED, "%s: too many inputs", op->name);
    for (int i = 0; i < n_in; i++) {
        if (in[i]) {
            values[i] = in[i];
            types[i] = tj_value_type(values[i]);
            continue;
        }
        tj_node *none = tj_node_create(e->g, TJ_NODE_NONE, NULL, 0, 1);
        if (!none || tj_block_append(tj_graph_block(e->g), none) != TJ_OK) return tj_last_status();
        values[i] = tj_node_output(none, 0);
        types[i] = NULL;
    }
    enum { MAX_OUT = 64 };
    tj_type out_types[MAX_OUT];
    int n_made = 0;
    tj_status st = tjg_infer_types(op, types, n_in, attrs, out_types, MAX_OUT, &n_made);
    if (st) return st;
    if (n_made != n_out)
        return tjc_error(TJ_ERR_INTERNAL, "%s: %d outputs, expected %d", op->name, n_made, n_out);
    tj_node *n = tj_node_create_op(e->g, op, values, n_in, attrs, op->schema.n_attrs, n_out);
    if (!n || tj_block_append(tj_graph_block(e->g), n) != TJ_OK) return tj_last_status();
    for (int k = 0; k < n_out; k++) {
        tj_status st = tj_value_set_type(tj_node_output(n, k), &out_types[k]);
        if (st) return st;
        out[k] = tj_node_output(n, k);
    }
    return TJ_OK;
}

static tj_status graph_type(tjg_emitter *e, tjg_val v, tj_type *t) {
    (void)e;
    *t = *tj_value_type((const tj_value *)v);
    return TJ_OK;
}

static const tjg_emitter_ops graph_ops = {graph_emit, graph_type};

void tjg_graph_emitter_init(tjg_graph_emitter *e, tj_graph *g) {
    e->base.ops = &graph_ops;
    e->g = g;
}

/* ---- helpers ------------------------------------------------------------------------ */

tjg_val tjg_input(tjg_ctx *c, int i) { return c->status ? NULL : c->input_fn(c, i); }
tjg_val tjg_output(tjg_ctx *c, int i) { return c->status ? NULL : c->output_fn(c, i); }

tj_type tjg_type(tjg_ctx *c, tjg_val v) {
    tj_type t = tj_type_tensor();
    if (c->status) {
        /* after a failure (memory ran out mid-rule) the rule runs on to its
         * end, emitting nothing: a small complete shape keeps its arithmetic
         * on sizes and dims within bounds */
        int64_t ones[4] = {1, 1, 1, 1};
        return tj_type_tensor_of(TJ_F32, ones, 4);
    }
    if (v) c->e->ops->type(c->e, v, &t);
    return t;
}

const tj_attr *tjg_attr(tjg_ctx *c, const char *name) {
    const tj_schema *s = &c->op->schema;
    for (int k = 0; k < s->n_attrs; k++)
        if (!strcmp(s->args[s->attr_pos[k]].name, name)) return &c->attrs[k];
    c->status = tjc_error(TJ_ERR_INTERNAL, "%s: the rule reads attribute '%s', which the op "
                          "does not have", c->op->name, name);
    static const tj_attr none = {0};
    return &none;
}

int tjg_op_n(tjg_ctx *c, int op_id, const tjg_val *in, int n_in, const tj_attr *attrs, tjg_val *out,
             int n_out) {
    if (c->status) return -1;
    const tj_op_info *op = tjc_op(op_id);
    const tj_schema *s = &op->schema;
    tj_attr defaults[TJ_MAX_ARGS];
    if (!attrs) {
        for (int k = 0; k < s->n_attrs; k++) defaults[k] = s->args[s->attr_pos[k]].def;
        attrs = defaults;
    }
    for (int i = 0; i < n_in; i++) /* a missing required operand: an earlier failure */
        if (!in[i] && (s->has_tensor_list || s->args[s->tensor_pos[i]].type != TJ_ARG_TENSOR_OPT)) {
            c->status = tjc_last_or(TJ_ERR_INTERNAL, "%s's rule: operand %d of %s is missing",
                                    c->op->name, i, op->name);
            return -1;
        }
    tj_status st = c->e->ops->emit(c->e, op, in, n_in, attrs, out, n_out);
    if (st) {
        char cause[600];
        snprintf(cause, sizeof cause, "%s", tj_last_error());
        c->status = tjc_error(st, "the derivative of %s: %s", c->op->name, cause);
        return -1;
    }
    return n_out;
}

tjg_val tjg_op(tjg_ctx *c, int op_id, const tjg_val *in, int n_in, const tj_attr *attrs) {
    tjg_val out = NULL;
    return tjg_op_n(c, op_id, in, n_in, attrs, &out, 1) == 1 ? out : NULL;
}

tjg_val tjg_add(tjg_ctx *c, tjg_val a, tjg_val b) {
    if (!a) return b;
    if (!b) return a;
    tj_attr alpha = {.scalar = tj_scalar_int(1)};
    return tjg_op(c, TJ_OP_add, (tjg_val[]){a, b}, 2, &alpha);
}

tjg_val tjg_sub(tjg_ctx *c, tjg_val a, tjg_val b) {
    if (!b) return a;
    if (!a) return tjg_neg(c, b);
    tj_attr alpha = {.scalar = tj_scalar_int(1)};
    return tjg_op(c, TJ_OP_sub, (tjg_val[]){a, b}, 2, &alpha);
}

tjg_val tjg_mul(tjg_ctx *c, tjg_val a, tjg_val b) {
    if (!a || !b) return NULL;
    return tjg_op(c, TJ_OP_mul, (tjg_val[]){a, b}, 2, NULL);
}

tjg_val tjg_div(tjg_ctx *c, tjg_val a, tjg_val b) {
    if (!a) return NULL;
    return tjg_op(c, TJ_OP_div, (tjg_val[]){a, b}, 2, NULL);
}

tjg_val tjg_neg(tjg_ctx *c, tjg_val a) { return a ? tjg_op(c, TJ_OP_neg, &a, 1, NULL) : NULL; }

tjg_val tjg_scale(tjg_ctx *c, tjg_val a, double s) {
    if (!a) return NULL;
    if (s == 1.0) return a;
    tj_attr other = {.scalar = tj_scalar_float(s)};
    return tjg_op(c, TJ_OP_mul_scalar, &a, 1, &other);
}

tjg_val tjg_add_scalar(tjg_ctx *c, tjg_val a, double s) {
    if (!a) return NULL;
    tj_attr attrs[2] = {{.scalar = tj_scalar_float(s)}, {.scalar = tj_scalar_int(1)}};
    return tjg_op(c, TJ_OP_add_scalar, &a, 1, attrs);
}

tj_type tjg_input_type(tjg_ctx *c, int i) {
    return c->input_type_fn ? c->input_type_fn(c, i) : tjg_type(c, tjg_input(c, i));
}

static tjg_val sum_to_type(tjg_ctx *c, tjg_val g, tj_type tl) {
    if (!g || c->status) return NULL;
    tj_type tg = tjg_type(c, g);
    if (tg.ndim != tl.ndim || memcmp(tg.sizes, tl.sizes, sizeof(int64_t) * (size_t)tl.ndim) != 0) {
        tj_attr size = {.ints = {tl.sizes, tl.ndim}};
        g = tjg_op(c, TJ_OP_sum_to_size, &g, 1, &size);
        tg = tjg_type(c, g);
    }
    if (g && tg.dtype != tl.dtype) {
        tj_attr dtype = {.dtype = (tj_dtype)tl.dtype};
        g = tjg_op(c, TJ_OP_to_dtype, &g, 1, &dtype);
    }
    return g;
}

tjg_val tjg_sum_to(tjg_ctx *c, tjg_val g, tjg_val like) {
    return like ? sum_to_type(c, g, tjg_type(c, like)) : NULL;
}

tjg_val tjg_sum_to_input(tjg_ctx *c, tjg_val g, int i) { return sum_to_type(c, g, tjg_input_type(c, i)); }

tjg_val tjg_zeros_like(tjg_ctx *c, tjg_val like) {
    return like ? tjg_op(c, TJ_OP_zeros_like, &like, 1, NULL) : NULL;
}

/* ---- rules run eagerly ------------------------------------------------------------ */

typedef struct eager_driver {
    tj_tensor *const *in, *const *out;
} eager_driver;

static tjg_val eager_input(tjg_ctx *c, int i) { return ((eager_driver *)c->driver)->in[i]; }
static tjg_val eager_output(tjg_ctx *c, int i) { return ((eager_driver *)c->driver)->out[i]; }
static tj_type eager_input_type(tjg_ctx *c, int i) {
    const tj_tensor *t = ((eager_driver *)c->driver)->in[i];
    return t ? tj_type_of_tensor(t) : tj_type_scalar(TJ_TYPE_NONE);
}

tj_status tjg_eager_grad(const tj_op_info *op, tj_tensor *const *in, int n_in, const tj_attr *attrs,
                         tj_tensor *const *out, int n_out, tj_tensor *const *grad_out,
                         const bool *needs, tj_tensor **grad_in) {
    const tjg_rule_entry *entry = tjg_rule_for(op);
    if (!entry || !entry->rule)
        return tjc_error(TJ_ERR_UNSUPPORTED, "%s has no derivative%s%s", op->name,
                         entry ? ": " : "", entry ? entry->why : "");
    eager_driver d = {in, out};
    tjg_ctx c = {.e = tjg_eager_emitter(), .op = op, .attrs = attrs, .n_in = n_in, .n_out = n_out,
                 .grad_out = (const tjg_val *)grad_out, .needs = needs, .grad_in = (tjg_val *)grad_in,
                 .input_fn = eager_input, .output_fn = eager_output,
                 .input_type_fn = eager_input_type, .driver = &d};
    for (int i = 0; i < n_in; i++) grad_in[i] = NULL;
    tj_scope_begin(); /* the rule's temporaries */
    tj_status st = entry->rule(&c);
    if (!st) st = c.status;
    for (int i = 0; i < n_in; i++) /* the caller's own references, whatever made them */
        grad_in[i] = st || !needs[i] ? NULL : tj_retain(grad_in[i]);
    tj_scope_end();
    return st;
}
