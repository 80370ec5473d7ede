/* import_emit.c — how import rules build the graph: values that are known
 * at import (constants, initializers) and values of the graph; ops emitted as
 * nodes typed by their shape rules, or run at once when all their inputs are
 * constants (so that shape arithmetic of a model folds away); the current
 * node's attributes and constant inputs; errors naming the node. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "passes/grad.h"
#include "tjo.h"

/* ---- errors ------------------------------------------------------------------------- */

static tj_status node_error_v(tjo_importer *im, tj_status s, const char *fmt, va_list ap) {
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    const Onnx__NodeProto *n = im->node;
    if (!n) return tjc_error(s, "ONNX graph: %s", msg);
    return tjc_error(s, "ONNX node #%d%s%s%s (%s): %s", im->node_index, n->name && n->name[0] ? " '" : "",
                     n->name && n->name[0] ? n->name : "", n->name && n->name[0] ? "'" : "",
                     n->op_type ? n->op_type : "?", msg);
}

tj_status tjo_need_inputs(tjo_importer *im, int lo, int hi) {
    if (im->n_in < lo || im->n_in > hi)
        return tjo_node_error(im, TJ_ERR_PARSE, "expected %d to %d inputs, got %d", lo, hi, im->n_in);
    for (int i = 0; i < lo; i++)
        if (!im->in[i]) return tjo_node_error(im, TJ_ERR_PARSE, "input[%d] is required", i);
    return TJ_OK;
}

tj_status tjo_node_error(tjo_importer *im, tj_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tj_status r = node_error_v(im, s, fmt, ap);
    va_end(ap);
    return r;
}

tj_status tjo_unsupported(tjo_importer *im, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tj_status r = node_error_v(im, TJ_ERR_UNSUPPORTED, fmt, ap);
    va_end(ap);
    return r;
}

/* ---- values -------------------------------------------------------------------------- */

tjo_val *tjo_val_new(tjo_importer *im, const char *name) {
    if (im->n_all == im->cap_all) {
        int cap = im->cap_all ? im->cap_all * 2 : 256;
        tjo_val **all = tjc_realloc(im->all, sizeof *all * (size_t)cap);
        if (!all) {
            tjc_error(TJ_ERR_MEMORY, "out of memory");
            return NULL;
        }
        im->all = all;
        im->cap_all = cap;
    }
    tjo_val *v = tjc_calloc(1, sizeof *v);
    if (!v) {
        tjc_error(TJ_ERR_MEMORY, "out of memory");
        return NULL;
    }
    v->name = name;
    v->type = tj_type_tensor();
    im->all[im->n_all++] = v;
    return v;
}

tjo_val *tjo_const_val(tjo_importer *im, tj_tensor *t) {
    tjo_val *v = tjo_val_new(im, NULL);
    if (!v) {
        tj_release(t);
        return NULL;
    }
    v->t = t;
    v->type = tj_type_of_tensor(t);
    return v;
}

tj_value *tjo_materialize(tjo_importer *im, tjo_val *v) {
    if (v->v) return v->v;
    if (v->param) {
        tj_type t = tj_type_of_tensor(v->t);
        v->v = tj_graph_add_input(im->g, &t, v->name);
        if (v->v && tj_graph_bind_input(im->g, tj_graph_num_inputs(im->g) - 1, v->t) != TJ_OK)
            return NULL;
        return v->v;
    }
    tj_node *c = tj_node_create_tensor_constant(im->g, v->t);
    if (!c || tj_block_append(tj_graph_block(im->g), c) != TJ_OK) return NULL;
    v->v = tj_node_output(c, 0);
    if (v->name && tj_value_set_name(v->v, v->name) != TJ_OK) return NULL;
    return v->v;
}

/* ---- emitting ops ----------------------------------------------------------------------- */

enum { MAX_IO = 64 };

/* Whether a required (not Tensor?) input is NULL: an earlier emission failed. */
static bool missing_input(const tj_op_info *op, tjo_val *const *ins, int n_in) {
    const tj_schema *s = &op->schema;
    for (int i = 0; i < n_in; i++)
        if (!ins[i] && (s->has_tensor_list || i >= s->n_tensor_args ||
                        s->args[s->tensor_pos[i]].type != TJ_ARG_TENSOR_OPT))
            return true;
    return false;
}

tj_status tjo_emit(tjo_importer *im, int op_id, tjo_val *const *ins, int n_in, const tj_attr *attrs,
                   tjo_val **out, int n_out) {
    const tj_op_info *op = tjc_op(op_id);
    if (n_in > MAX_IO || n_out > MAX_IO) return tjo_unsupported(im, "too many inputs or outputs");
    if (missing_input(op, ins, n_in))
        return tjo_node_error(im, TJ_ERR_INTERNAL, "%s: a required input is missing", op->name);
    bool folds = true;
    for (int i = 0; i < n_in; i++)
        if (ins[i] && (!ins[i]->t || ins[i]->param)) folds = false;
    const tj_type *types[MAX_IO];
    for (int i = 0; i < n_in; i++) types[i] = ins[i] ? &ins[i]->type : NULL;
    tj_type otypes[MAX_IO];
    int made = 0;
    tj_status st = tjg_infer_types(op, types, n_in, attrs, otypes, MAX_IO, &made);
    if (st) return tjo_node_error(im, st, "%s", tj_last_error());
    for (int k = 0; k < made; k++) {
        if (!tjo_check_sizes(im, otypes[k].sizes, otypes[k].ndim, op->name)) return TJ_ERR_UNSUPPORTED;
        if (tjc_numel(otypes[k].sizes, otypes[k].ndim) > TJO_MAX_FOLD) folds = false;
    }
    if (folds) {
        tj_tensor *tin[MAX_IO], *res[MAX_IO] = {0};
        for (int i = 0; i < n_in; i++) tin[i] = ins[i] ? ins[i]->t : NULL;
        int n = tjc_invoke_nested(op, tin, n_in, attrs, res, MAX_IO);
        if (n < 0) return tjo_node_error(im, tj_last_status(), "%s", tj_last_error());
        if (n != n_out) {
            for (int k = 0; k < n; k++) tj_release(res[k]);
            return tjo_node_error(im, TJ_ERR_INTERNAL, "%s gave %d outputs, expected %d", op->name,
                                  n, n_out);
        }
        for (int k = 0; k < n; k++) {
            tj_tensor *c = res[k];
            if (!tj_is_contiguous(c)) { /* a view of a constant: keep only what it shows */
                c = tjc_invoke_nested(tjc_op(TJ_OP_contiguous), &res[k], 1, NULL, &c, 1) == 1 ? c : NULL;
                tj_release(res[k]);
                res[k] = NULL;
            }
            if (!c || !(out[k] = tjo_const_val(im, c))) {
                for (int j = k + 1; j < n; j++) tj_release(res[j]);
                return tj_last_status() ? tj_last_status() : TJ_ERR_MEMORY;
            }
        }
        return TJ_OK;
    }
    tj_value *vals[MAX_IO];
    for (int i = 0; i < n_in; i++) {
        if (ins[i]) {
            if (!(vals[i] = tjo_materialize(im, ins[i]))) return tj_last_status();
            continue;
        }
        tj_node *none = tj_node_create(im->g, TJ_NODE_NONE, NULL, 0, 1);
        if (!none || tj_block_append(tj_graph_block(im->g), none) != TJ_OK) return tj_last_status();
        vals[i] = tj_node_output(none, 0);
    }
    if (made != n_out)
        return tjo_node_error(im, TJ_ERR_INTERNAL, "%s gives %d outputs, expected %d", op->name,
                              made, n_out);
    tj_node *n = tj_node_create_op(im->g, op, vals, n_in, attrs, op->schema.n_attrs, n_out);
    if (!n || tj_block_append(tj_graph_block(im->g), n) != TJ_OK) return tj_last_status();
    for (int k = 0; k < n_out; k++) {
        tj_value *v = tj_node_output(n, k);
        if (tj_value_set_type(v, &otypes[k]) != TJ_OK) return tj_last_status();
        if (!(out[k] = tjo_val_new(im, NULL))) return TJ_ERR_MEMORY;
        out[k]->v = v;
        out[k]->type = otypes[k];
    }
    return TJ_OK;
}

tjo_val *tjo_emit1(tjo_importer *im, int op_id, tjo_val *const *ins, int n_in, const tj_attr *attrs) {
    tjo_val *out = NULL;
    if (missing_input(tjc_op(op_id), ins, n_in)) return NULL; /* an earlier emission failed */
    return tjo_emit(im, op_id, ins, n_in, attrs, &out, 1) == TJ_OK ? out : NULL;
}

tjo_val *tjo_unary(tjo_importer *im, int op_id, tjo_val *x) {
    if (!x) return NULL;
    tjo_val *in[1] = {x};
    return tjo_emit1(im, op_id, in, 1, NULL);
}

tj_scalar tjo_scalar_for(const tjo_val *x, double v) {
    bool integral = x && (x->type.dtype == TJ_I64 || x->type.dtype == TJ_BOOL);
    if (integral && isfinite(v) && v == nearbyint(v) && fabs(v) < 0x1p63) return tj_scalar_int((int64_t)v);
    return tj_scalar_float(v);
}

tjo_val *tjo_binary(tjo_importer *im, int op_id, tjo_val *a, tjo_val *b) {
    if (!a || !b) return NULL;
    tjo_val *in[2] = {a, b};
    const tj_op_info *op = tjc_op(op_id);
    tj_attr attrs[2] = {{.scalar = tj_scalar_int(1)}, {.f = 1.0}}; /* add and sub: alpha = 1 */
    return tjo_emit1(im, op_id, in, 2, op->schema.n_attrs ? attrs : NULL);
}

tjo_val *tjo_scalar(tjo_importer *im, double value, tj_dtype d) {
    if (d == TJ_I64 && !(value >= -9.2e18 && value <= 9.2e18)) {
        tjo_unsupported(im, "the integer constant %g is out of int64's range", value);
        return NULL;
    }
    tj_tensor *t = tjc_alloc(NULL, 0, d);
    if (!t) return NULL;
    void *p = tjc_data_ptr(t);
    switch (d) {
    case TJ_F32: *(float *)p = (float)value; break;
    case TJ_F64: *(double *)p = value; break;
    case TJ_I64: *(int64_t *)p = (int64_t)value; break;
    default: *(bool *)p = value != 0; break;
    }
    return tjo_const_val(im, t);
}

tjo_val *tjo_cast(tjo_importer *im, tjo_val *x, tj_dtype d) {
    if (!x) return NULL;
    if (x->type.dtype == (int)d) return x;
    tj_attr a = {.dtype = d};
    tjo_val *in[1] = {x};
    return tjo_emit1(im, TJ_OP_to_dtype, in, 1, &a);
}

tjo_val *tjo_reshape(tjo_importer *im, tjo_val *x, const int64_t *sizes, int ndim) {
    if (!x) return NULL;
    bool same = x->type.ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = x->type.sizes[d] == sizes[d];
    if (same) return x;
    tj_attr a = {.ints = {sizes, ndim}};
    tjo_val *in[1] = {x};
    return tjo_emit1(im, TJ_OP_reshape, in, 1, &a);
}

/* ---- the current node's attributes and inputs --------------------------------------------- */

const Onnx__AttributeProto *tjo_attr(tjo_importer *im, const char *name) {
    for (size_t i = 0; i < im->node->n_attribute; i++)
        if (!strcmp(im->node->attribute[i]->name, name)) return im->node->attribute[i];
    return NULL;
}

static bool wrong_kind(tjo_importer *im, const Onnx__AttributeProto *a, const char *want) {
    tjo_node_error(im, TJ_ERR_PARSE, "attribute '%s': expected %s (type %d)", a->name, want,
                   (int)a->type);
    return false;
}

bool tjo_attr_int(tjo_importer *im, const char *name, int64_t def, int64_t *out) {
    const Onnx__AttributeProto *a = tjo_attr(im, name);
    *out = def;
    if (!a) return true;
    if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT) return wrong_kind(im, a, "an int");
    *out = a->i;
    return true;
}

bool tjo_attr_float(tjo_importer *im, const char *name, double def, double *out) {
    const Onnx__AttributeProto *a = tjo_attr(im, name);
    *out = def;
    if (!a) return true;
    if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT) return wrong_kind(im, a, "a float");
    *out = a->f;
    return true;
}

bool tjo_attr_ints(tjo_importer *im, const char *name, const int64_t **data, int *n) {
    const Onnx__AttributeProto *a = tjo_attr(im, name);
    *data = NULL;
    *n = 0;
    if (!a) return true;
    if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS) return wrong_kind(im, a, "ints");
    if (a->n_ints > 1 << 20) return wrong_kind(im, a, "at most 2^20 ints");
    *data = a->ints;
    *n = (int)a->n_ints;
    return true;
}

bool tjo_attr_floats(tjo_importer *im, const char *name, const float **data, int *n) {
    const Onnx__AttributeProto *a = tjo_attr(im, name);
    *data = NULL;
    *n = 0;
    if (!a) return true;
    if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS) return wrong_kind(im, a, "floats");
    if (a->n_floats > 1 << 20) return wrong_kind(im, a, "at most 2^20 floats");
    *data = a->floats;
    *n = (int)a->n_floats;
    return true;
}

bool tjo_attr_str(tjo_importer *im, const char *name, const char *def, const char **out) {
    const Onnx__AttributeProto *a = tjo_attr(im, name);
    *out = def;
    if (!a) return true;
    if (a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING || !a->has_s)
        return wrong_kind(im, a, "a string");
    /* the bytes need not end in a NUL: keep a copy in the message's own block */
    static _Thread_local char buf[64];
    size_t n = a->s.len < sizeof buf - 1 ? a->s.len : sizeof buf - 1;
    if (a->s.len >= sizeof buf) return wrong_kind(im, a, "a short string");
    memcpy(buf, a->s.data, n);
    buf[n] = '\0';
    if (strlen(buf) != n) return wrong_kind(im, a, "a string without NUL bytes");
    *out = buf;
    return true;
}

bool tjo_has_input(tjo_importer *im, int i) { return i < im->n_in && im->in[i] != NULL; }

bool tjo_const_ints(tjo_importer *im, int i, const char *what, int64_t *out, int *n, int cap) {
    if (!tjo_has_input(im, i)) {
        tjo_node_error(im, TJ_ERR_PARSE, "input[%d] (%s) is missing", i, what);
        return false;
    }
    const tj_tensor *t = im->in[i]->t;
    if (!t) {
        tjo_unsupported(im, "input[%d] (%s) is computed at run time; tjit needs it constant", i, what);
        return false;
    }
    if (tj_tensor_dtype(t) != TJ_I64 || tj_ndim(t) > 1) {
        tjo_node_error(im, TJ_ERR_PARSE, "input[%d] (%s): expected a 1-D int64 tensor", i, what);
        return false;
    }
    int64_t k = tj_numel(t);
    if (k > cap) {
        tjo_unsupported(im, "input[%d] (%s): %lld values, at most %d", i, what, (long long)k, cap);
        return false;
    }
    const int64_t *p = (const int64_t *)tjc_data_ptr(t);
    for (int64_t j = 0; j < k; j++) out[j] = p[j * (tj_ndim(t) ? tj_strides(t)[0] : 1)];
    *n = (int)k;
    return true;
}

bool tjo_check_sizes(tjo_importer *im, const int64_t *sizes, int n, const char *what) {
    int64_t numel = 1;
    for (int d = 0; d < n; d++) {
        if (sizes[d] < 0 || sizes[d] > (INT64_C(1) << 31)) {
            tjo_unsupported(im, "%s: size %lld is absurd", what, (long long)sizes[d]);
            return false;
        }
        if (sizes[d] && numel > TJO_MAX_NUMEL / sizes[d]) {
            tjo_unsupported(im, "%s: more than 2^40 elements", what);
            return false;
        }
        numel *= sizes[d];
    }
    return true;
}

bool tjo_axis(tjo_importer *im, int64_t axis, int rank, const char *what, int *out) {
    int64_t r = rank ? rank : 1;
    if (axis < -r || axis >= r) {
        tjo_node_error(im, TJ_ERR_PARSE, "%s %lld is out of range for rank %d", what,
                       (long long)axis, rank);
        return false;
    }
    *out = (int)(axis < 0 ? axis + r : axis);
    return true;
}
