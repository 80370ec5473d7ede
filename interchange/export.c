/* export.c — a tjit graph as an ONNX model: names for values (unique, the
 * graph's own where it has them), graph inputs and initializers (the
 * parameters, with their names), the nodes (each op through its rule in
 * export_ops*.c, fusion groups inlined as their subgraph's ops), value_info
 * with every value's dtype and sizes, and the outputs; then protobuf-c packs
 * the model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "tjo.h"

/* ---- names ------------------------------------------------------------------------- */

static char *key_of(tjo_exporter *ex, const tj_value *v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%p", (const void *)v);
    return tjo_strdup(&ex->pool, buf);
}

const char *tjo_name_of(tjo_exporter *ex, const tj_value *v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%p", (const void *)v);
    return tjo_names_get(&ex->names, buf);
}

/* A name nobody holds yet, from base. */
static const char *unique(tjo_exporter *ex, const char *base) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", base);
    for (int k = 1; tjo_names_get(&ex->names, buf); k++) snprintf(buf, sizeof buf, "%s.%d", base, k);
    char *name = tjo_strdup(&ex->pool, buf);
    if (!name || !tjo_names_put(&ex->names, name, name)) return NULL;
    return name;
}

static const char *assign(tjo_exporter *ex, const tj_value *v) {
    char base[64];
    const char *n = tj_value_name(v);
    if (!n) snprintf(base, sizeof base, "_%d", ex->next_tmp++);
    const char *name = unique(ex, n ? n : base);
    char *key = key_of(ex, v);
    if (!name || !key || !tjo_names_put(&ex->names, key, (void *)name)) return NULL;
    return name;
}

static bool alias(tjo_exporter *ex, const tj_value *v, const char *name) {
    char *key = key_of(ex, v);
    return key && tjo_names_put(&ex->names, key, (void *)name);
}

const char *tjo_tmp(tjo_exporter *ex, const char *hint) {
    char base[96];
    snprintf(base, sizeof base, "_%s_%d", hint, ex->next_tmp++);
    return unique(ex, base);
}

tj_status tjo_export_error(tjo_exporter *ex, tj_status s, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!ex->node) return tjc_error(s, "ONNX export: %s", msg);
    return tjc_error(s, "ONNX export: node #%d %s: %s", tj_node_id(ex->node), tj_node_name(ex->node), msg);
}

/* ---- building messages --------------------------------------------------------------------- */

static bool push(tjo_exporter *ex, void ***arr, int *n, int *cap, void *item) {
    if (!item) return false;
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 64;
        void **a = tjo_alloc(&ex->pool, sizeof *a * (size_t)c);
        if (!a) return false;
        if (*n) memcpy(a, *arr, sizeof *a * (size_t)*n);
        *arr = a;
        *cap = c;
    }
    (*arr)[(*n)++] = item;
    return true;
}

enum { MAX_NODE_ATTRS = 16 };

Onnx__NodeProto *tjo_node(tjo_exporter *ex, const char *op_type, const char *const *ins, int n_in,
                          const char *const *outs, int n_out) {
    Onnx__NodeProto *n = tjo_alloc(&ex->pool, sizeof *n);
    if (!n) return NULL;
    onnx__node_proto__init(n);
    n->op_type = tjo_strdup(&ex->pool, op_type);
    n->input = tjo_alloc(&ex->pool, sizeof(char *) * (size_t)(n_in + 1));
    n->output = tjo_alloc(&ex->pool, sizeof(char *) * (size_t)(n_out + 1));
    n->attribute = tjo_alloc(&ex->pool, sizeof(Onnx__AttributeProto *) * MAX_NODE_ATTRS);
    if (!n->input || !n->output || !n->attribute) return NULL;
    for (int i = 0; i < n_in; i++) n->input[i] = (char *)ins[i];
    for (int i = 0; i < n_out; i++) n->output[i] = (char *)outs[i];
    n->n_input = (size_t)n_in;
    n->n_output = (size_t)n_out;
    char name[128];
    snprintf(name, sizeof name, "%s_%d", op_type, ex->n_nodes);
    n->name = tjo_strdup(&ex->pool, name);
    return push(ex, (void ***)&ex->nodes, &ex->n_nodes, &ex->cap_nodes, n) ? n : NULL;
}

static Onnx__AttributeProto *new_attr(tjo_exporter *ex, Onnx__NodeProto *n, const char *name,
                                      Onnx__AttributeProto__AttributeType type) {
    if (!n || n->n_attribute >= MAX_NODE_ATTRS) return NULL;
    Onnx__AttributeProto *a = tjo_alloc(&ex->pool, sizeof *a);
    if (!a) return NULL;
    onnx__attribute_proto__init(a);
    a->name = tjo_strdup(&ex->pool, name);
    a->has_type = true;
    a->type = type;
    n->attribute[n->n_attribute++] = a;
    return a;
}

bool tjo_set_int(tjo_exporter *ex, Onnx__NodeProto *n, const char *name, int64_t v) {
    Onnx__AttributeProto *a = new_attr(ex, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
    if (!a) return false;
    a->has_i = true;
    a->i = v;
    return true;
}

bool tjo_set_float(tjo_exporter *ex, Onnx__NodeProto *n, const char *name, double v) {
    Onnx__AttributeProto *a = new_attr(ex, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
    if (!a) return false;
    a->has_f = true;
    a->f = (float)v;
    return true;
}

bool tjo_set_ints(tjo_exporter *ex, Onnx__NodeProto *n, const char *name, const int64_t *v, int k) {
    Onnx__AttributeProto *a = new_attr(ex, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
    if (!a || !(a->ints = tjo_alloc(&ex->pool, sizeof *v * (size_t)(k ? k : 1)))) return false;
    if (k) memcpy(a->ints, v, sizeof *v * (size_t)k);
    a->n_ints = (size_t)k;
    return true;
}

bool tjo_set_str(tjo_exporter *ex, Onnx__NodeProto *n, const char *name, const char *v) {
    Onnx__AttributeProto *a = new_attr(ex, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
    if (!a || !(a->s.data = (uint8_t *)tjo_strdup(&ex->pool, v))) return false;
    a->has_s = true;
    a->s.len = strlen(v);
    return true;
}

bool tjo_set_tensor(tjo_exporter *ex, Onnx__NodeProto *n, const char *name, const tj_tensor *t) {
    Onnx__AttributeProto *a = new_attr(ex, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    return a && (a->t = tjo_tensor_to_proto(&ex->pool, t, NULL)) != NULL;
}

const char *tjo_x_const_tensor(tjo_exporter *ex, const tj_tensor *t) {
    const char *name = tjo_tmp(ex, "const");
    Onnx__NodeProto *n = name ? tjo_node(ex, "Constant", NULL, 0, &name, 1) : NULL;
    Onnx__AttributeProto *a = new_attr(ex, n, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
    if (!a || !(a->t = tjo_tensor_to_proto(&ex->pool, t, NULL))) return NULL;
    return name;
}

const char *tjo_x_const_ints(tjo_exporter *ex, const int64_t *v, int n) {
    int64_t len = n;
    tj_tensor *t = tjc_alloc(&len, 1, TJ_I64);
    if (!t) return NULL;
    if (n) memcpy(tjc_data_ptr(t), v, sizeof *v * (size_t)n);
    const char *name = tjo_x_const_tensor(ex, t);
    tj_release(t);
    return name;
}

const char *tjo_x_const_scalar(tjo_exporter *ex, double v, tj_dtype d) {
    tj_tensor *t = tjc_alloc(NULL, 0, d);
    if (!t) return NULL;
    void *p = tjc_data_ptr(t);
    if (d == TJ_F32) *(float *)p = (float)v;
    else if (d == TJ_F64) *(double *)p = v;
    else if (d == TJ_I64) *(int64_t *)p = (int64_t)v;
    else *(bool *)p = v != 0;
    const char *name = tjo_x_const_tensor(ex, t);
    tj_release(t);
    return name;
}

/* A ValueInfoProto of a tensor type; symbolic dims named from name when dynamic. */
static Onnx__ValueInfoProto *value_info(tjo_exporter *ex, const char *name, const tj_type *t,
                                        bool symbolic, bool sizes) {
    if (t->kind != TJ_TYPE_TENSOR || t->dtype == TJ_UNKNOWN) {
        tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "value %s has no known tensor dtype", name);
        return NULL;
    }
    Onnx__ValueInfoProto *vi = tjo_alloc(&ex->pool, sizeof *vi);
    Onnx__TypeProto *tp = tjo_alloc(&ex->pool, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = tjo_alloc(&ex->pool, sizeof *tt);
    if (!vi || !tp || !tt) return NULL;
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    vi->name = (char *)name;
    vi->type = tp;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    tt->has_elem_type = true;
    tt->elem_type = tjo_onnx_dtype((tj_dtype)t->dtype);
    if (!sizes || t->ndim == TJ_UNKNOWN) return vi;
    Onnx__TensorShapeProto *sp = tjo_alloc(&ex->pool, sizeof *sp);
    if (!sp) return NULL;
    onnx__tensor_shape_proto__init(sp);
    sp->dim = tjo_alloc(&ex->pool, sizeof *sp->dim * (size_t)(t->ndim + 1));
    if (!sp->dim) return NULL;
    for (int d = 0; d < t->ndim; d++) {
        Onnx__TensorShapeProto__Dimension *dim = tjo_alloc(&ex->pool, sizeof *dim);
        if (!dim) return NULL;
        onnx__tensor_shape_proto__dimension__init(dim);
        if (symbolic || t->sizes[d] == TJ_UNKNOWN_DIM) {
            char buf[300];
            snprintf(buf, sizeof buf, "%s_dim%d", name, d);
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            if (!(dim->dim_param = tjo_strdup(&ex->pool, buf))) return NULL;
        } else {
            dim->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            dim->dim_value = t->sizes[d];
        }
        sp->dim[sp->n_dim++] = dim;
    }
    tt->shape = sp;
    return vi;
}

/* ---- the walk ------------------------------------------------------------------------------ */

static tj_status export_nodes(tjo_exporter *ex, const tj_graph *g);

static tj_status export_node(tjo_exporter *ex, const tj_node *n) {
    enum { MAX_IO = 64 };
    const char *in[MAX_IO], *out[MAX_IO];
    ex->node = n;
    int n_in = tj_node_num_inputs(n), n_out = tj_node_num_outputs(n);
    if (n_in > MAX_IO || n_out > MAX_IO) return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "too many values");
    for (int i = 0; i < n_in; i++)
        if (!(in[i] = tjo_name_of(ex, tj_node_input(n, i))))
            return tjo_export_error(ex, TJ_ERR_INTERNAL, "input %d has no ONNX name", i);
    switch (tj_node_kind_of(n)) {
    case TJ_NODE_NONE: return alias(ex, tj_node_output(n, 0), "") ? TJ_OK : TJ_ERR_MEMORY;
    case TJ_NODE_CONSTANT: {
        tj_value *v = tj_node_output(n, 0);
        if (!tj_node_tensor(n)) {
            if (tj_value_num_uses(v) == 0) return TJ_OK;
            return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "a scalar constant used as a value has "
                                    "no ONNX form (op attributes hold scalars)");
        }
        const char *name = assign(ex, v);
        Onnx__NodeProto *c = name ? tjo_node(ex, "Constant", NULL, 0, &name, 1) : NULL;
        Onnx__AttributeProto *a = new_attr(ex, c, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
        if (!a || !(a->t = tjo_tensor_to_proto(&ex->pool, tj_node_tensor(n), NULL))) return TJ_ERR_MEMORY;
        return TJ_OK;
    }
    case TJ_NODE_FUSION_GROUP: { /* the subgraph's ops, on the group's inputs */
        const tj_graph *sub = tj_node_subgraph(n);
        for (int i = 0; i < n_in; i++)
            if (!alias(ex, tj_graph_input(sub, i), in[i])) return TJ_ERR_MEMORY;
        tj_status st = export_nodes(ex, sub);
        if (st) return st;
        for (int k = 0; k < n_out; k++) {
            const char *name = tjo_name_of(ex, tj_graph_output(sub, k));
            if (!name || !alias(ex, tj_node_output(n, k), name)) return TJ_ERR_MEMORY;
        }
        return TJ_OK;
    }
    case TJ_NODE_OP:
    case TJ_NODE_CONSTANT_CHUNK: /* the rules read dtypes and sizes */
        for (int i = 0; i < n_in + n_out; i++) {
            const tj_value *v = i < n_in ? tj_node_input(n, i) : tj_node_output(n, i - n_in);
            const tj_type *t = tj_value_type(v);
            bool known = t->kind == TJ_TYPE_NONE ||
                         (t->kind == TJ_TYPE_TENSOR && t->dtype != TJ_UNKNOWN && t->ndim != TJ_UNKNOWN);
            for (int d = 0; known && t->kind == TJ_TYPE_TENSOR && d < t->ndim; d++)
                known = t->sizes[d] != TJ_UNKNOWN_DIM;
            if (!known)
                return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "its %s %d has no known dtype and sizes "
                                        "(export a traced graph, or one with types)",
                                        i < n_in ? "input" : "output", i < n_in ? i : i - n_in);
        }
        break;
    default:
        return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "%s has no ONNX form", tj_node_name(n));
    }
    for (int k = 0; k < n_out; k++)
        if (!(out[k] = assign(ex, tj_node_output(n, k)))) return TJ_ERR_MEMORY;
    int id = tj_node_kind_of(n) == TJ_NODE_OP ? tj_op_id(tj_node_op(n)) : TJ_OP_chunk;
    const char *why = NULL;
    tjo_export_fn rule = tjo_export_rule(id, &why);
    if (!rule)
        return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "not exportable: %s",
                                why ? why : "tjit has no ONNX form for it");
    tj_status st = rule(ex, n, in, out);
    if (st) return st;
    if (ex->pool.failed) return TJ_ERR_MEMORY;
    for (int k = 0; k < n_out && !ex->opts->allow_size_change; k++) { /* sizes as traced */
        const tj_type *t = tj_value_type(tj_node_output(n, k));
        if (t->kind != TJ_TYPE_TENSOR || t->dtype == TJ_UNKNOWN) continue;
        Onnx__ValueInfoProto *vi = value_info(ex, out[k], t, false, true);
        if (!push(ex, (void ***)&ex->infos, &ex->n_infos, &ex->cap_infos, vi)) return TJ_ERR_MEMORY;
    }
    return TJ_OK;
}

static tj_status export_nodes(tjo_exporter *ex, const tj_graph *g) {
    for (tj_node *n = tj_block_first(tj_graph_block((tj_graph *)g)); n; n = tj_node_next(n)) {
        tj_status st = export_node(ex, n);
        if (st) return st;
    }
    ex->node = NULL;
    return TJ_OK;
}

static tj_status export_graph(tjo_exporter *ex, const tj_graph *g, Onnx__GraphProto *gp) {
    Onnx__ValueInfoProto **inputs = NULL, **outputs = NULL;
    int n_inputs = 0, cap_inputs = 0, n_outputs = 0, cap_outputs = 0;
    for (int i = 0; i < tj_graph_num_inputs(g); i++) {
        tj_value *v = tj_graph_input(g, i);
        const char *name = assign(ex, v);
        if (!name) return TJ_ERR_MEMORY;
        tj_tensor *bound = tj_graph_input_binding(g, i);
        if (bound && !ex->opts->params_as_inputs) {
            Onnx__TensorProto *init = tjo_tensor_to_proto(&ex->pool, bound, name);
            if (!push(ex, (void ***)&ex->inits, &ex->n_inits, &ex->cap_inits, init)) return TJ_ERR_MEMORY;
            continue;
        }
        const tj_type *t = tj_value_type(v);
        bool known = t->kind == TJ_TYPE_TENSOR && t->dtype != TJ_UNKNOWN && t->ndim != TJ_UNKNOWN;
        if (!known)
            return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "graph input %d '%s' has no known dtype and rank",
                                    i, name);
        Onnx__ValueInfoProto *vi = value_info(ex, name, t, ex->opts->allow_size_change && !bound, true);
        if (!push(ex, (void ***)&inputs, &n_inputs, &cap_inputs, vi)) return tj_last_status();
    }
    tj_status st = export_nodes(ex, g);
    if (st) return st;
    for (int k = 0; k < tj_graph_num_outputs(g); k++) {
        tj_value *v = tj_graph_output(g, k);
        const char *name = tjo_name_of(ex, v);
        bool taken = tj_value_node(v) == tj_block_param(tj_graph_block((tj_graph *)g)) || !name || !name[0];
        for (int j = 0; j < n_outputs && !taken; j++) taken = !strcmp(outputs[j]->name, name);
        if (!name || !name[0]) return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "output %d is absent", k);
        if (taken) { /* an input, or an output twice: ONNX wants a value of its own */
            const char *copy = tjo_tmp(ex, "output");
            if (!copy || !tjo_node(ex, "Identity", &name, 1, &copy, 1)) return TJ_ERR_MEMORY;
            name = copy;
        }
        Onnx__ValueInfoProto *vi = value_info(ex, name, tj_value_type(v), ex->opts->allow_size_change, true);
        if (!push(ex, (void ***)&outputs, &n_outputs, &cap_outputs, vi)) return tj_last_status();
    }
    /* initializers no node reads (a parameter the ONNX form does not need) */
    tjo_names used = {0};
    bool ok = true;
    for (int i = 0; i < ex->n_nodes; i++)
        for (size_t j = 0; j < ex->nodes[i]->n_input; j++) ok &= tjo_names_put(&used, ex->nodes[i]->input[j], &used);
    int kept_inits = 0;
    for (int i = 0; i < ex->n_inits; i++)
        if (tjo_names_get(&used, ex->inits[i]->name)) ex->inits[kept_inits++] = ex->inits[i];
    ex->n_inits = kept_inits;
    tjo_names_free(&used);
    if (!ok) return TJ_ERR_MEMORY;
    gp->name = "tjit";
    gp->node = ex->nodes;
    gp->n_node = (size_t)ex->n_nodes;
    gp->initializer = ex->inits;
    gp->n_initializer = (size_t)ex->n_inits;
    gp->input = inputs;
    gp->n_input = (size_t)n_inputs;
    gp->output = outputs;
    gp->n_output = (size_t)n_outputs;
    /* value_info for what is neither an input nor an output */
    int kept = 0;
    for (int i = 0; i < ex->n_infos; i++) {
        bool is_out = false;
        for (int j = 0; j < n_outputs && !is_out; j++) is_out = !strcmp(outputs[j]->name, ex->infos[i]->name);
        if (!is_out) ex->infos[kept++] = ex->infos[i];
    }
    gp->value_info = ex->infos;
    gp->n_value_info = (size_t)kept;
    return TJ_OK;
}

tj_status tj_graph_export_onnx_bytes(const tj_graph *g, const tj_onnx_export_options *opts,
                                     void **data, size_t *len) {
    if (!g || !data || !len) return tjc_error(TJ_ERR_ARG, "tj_graph_export_onnx: NULL argument");
    tj_onnx_export_options defaults = {0};
    tjo_exporter ex;
    memset(&ex, 0, sizeof ex);
    ex.opts = opts ? opts : &defaults;
    ex.opset = ex.opts->opset ? ex.opts->opset : TJ_ONNX_DEFAULT_OPSET;
    if (ex.opset < TJ_ONNX_MIN_EXPORT_OPSET || ex.opset > TJ_ONNX_MAX_OPSET)
        return tjc_error(TJ_ERR_ARG, "tj_graph_export_onnx: opset %d; tjit writes opsets %d to %d",
                         ex.opset, TJ_ONNX_MIN_EXPORT_OPSET, TJ_ONNX_MAX_OPSET);
    Onnx__GraphProto gp;
    onnx__graph_proto__init(&gp);
    tj_status st = export_graph(&ex, g, &gp);
    if (st == TJ_OK && ex.pool.failed) st = TJ_ERR_MEMORY;
    if (st == TJ_OK) {
        Onnx__OperatorSetIdProto opset, *opsets[1] = {&opset};
        onnx__operator_set_id_proto__init(&opset);
        opset.domain = "";
        opset.has_version = true;
        opset.version = ex.opset;
        Onnx__ModelProto m;
        onnx__model_proto__init(&m);
        m.has_ir_version = true;
        m.ir_version = 8; /* ONNX 1.10 to 1.12, opsets up to 17 */
        m.producer_name = "tjit";
        m.producer_version = (char *)tj_version();
        m.graph = &gp;
        m.n_opset_import = 1;
        m.opset_import = opsets;
        *len = onnx__model_proto__get_packed_size(&m);
        *data = tjc_malloc(*len ? *len : 1);
        if (!*data) st = tjc_error(TJ_ERR_MEMORY, "out of memory");
        else onnx__model_proto__pack(&m, *data);
    }
    tjo_names_free(&ex.names);
    tjo_pool_free(&ex.pool);
    return st;
}

tj_status tj_graph_export_onnx(const tj_graph *g, const char *path, const tj_onnx_export_options *opts) {
    if (!path) return tjc_error(TJ_ERR_ARG, "tj_graph_export_onnx: path is NULL");
    void *data = NULL;
    size_t len = 0;
    tj_status st = tj_graph_export_onnx_bytes(g, opts, &data, &len);
    if (st == TJ_OK) st = tjo_write_file(path, data, len);
    tjc_free(data);
    return st;
}
