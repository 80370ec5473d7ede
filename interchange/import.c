/* import.c — an ONNX model as a tjit graph: checks the model (opsets,
 * names, order, types), makes the graph's inputs and parameters, runs the
 * import rule of each node (import_ops*.c) and sets the outputs. Every
 * failure frees what was made and names the node and the field. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "tjo.h"

#define MAX_NODES 1000000

static const tjo_import_rule *const rule_tables[] = {tjo_rules_pointwise, tjo_rules_shape,
                                                     tjo_rules_nn, tjo_rules_reduce};

static const tjo_import_rule *find_rule(const char *op_type) {
    for (size_t t = 0; t < sizeof rule_tables / sizeof rule_tables[0]; t++)
        for (const tjo_import_rule *r = rule_tables[t]; r->op_type; r++)
            if (!strcmp(r->op_type, op_type)) return r;
    return NULL;
}

static bool attr_allowed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *s = list; *s;) {
        size_t k = strcspn(s, "|");
        if (k == n && !strncmp(s, name, n)) return true;
        s += k;
        if (*s) s++;
    }
    return false;
}

/* The default domain's opset of the model. */
static tj_status read_opset(const Onnx__ModelProto *m, int *opset) {
    *opset = -1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (!o) continue;
        if (!o->domain || !o->domain[0] || !strcmp(o->domain, "ai.onnx")) {
            if (!o->has_version)
                return tjc_error(TJ_ERR_PARSE, "ONNX model: opset_import[%zu] has no version", i);
            *opset = o->version > 1000 ? 1000 : (int)o->version;
        }
    }
    if (*opset < 0)
        return tjc_error(TJ_ERR_UNSUPPORTED, "ONNX model: opset_import names no version of the "
                         "default domain (tjit imports only its ops)");
    if (*opset < TJ_ONNX_MIN_IMPORT_OPSET || *opset > TJ_ONNX_MAX_OPSET)
        return tjc_error(TJ_ERR_UNSUPPORTED, "ONNX model: opset %d of the default domain; tjit "
                         "imports opsets %d to %d", *opset, TJ_ONNX_MIN_IMPORT_OPSET,
                         TJ_ONNX_MAX_OPSET);
    return TJ_OK;
}

/* The type a graph input declares, or the caller's override. */
static tj_status input_type(const Onnx__ValueInfoProto *vi, const tj_onnx_import_options *opts,
                            size_t index, tj_type *out) {
    const char *name = vi->name;
    for (int k = 0; opts && k < opts->n_inputs; k++)
        if (opts->input_names && opts->input_names[k] ? !strcmp(opts->input_names[k], name) : (size_t)k == index) {
            *out = opts->input_types[k];
            return tj_type_check(out);
        }
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return tjc_error(TJ_ERR_UNSUPPORTED, "ONNX graph input #%zu '%s': type: only tensors are "
                         "supported", index, name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    int dt = tjo_dtype_from_onnx(tt->elem_type);
    if (dt < 0)
        return tjc_error(TJ_ERR_UNSUPPORTED, "ONNX graph input #%zu '%s': elem_type %s has no tjit "
                         "dtype", index, name, tjo_onnx_dtype_name(tt->elem_type));
    if (!tt->shape)
        return tjc_error(TJ_ERR_UNSUPPORTED, "ONNX graph input #%zu '%s': shape: the rank is not "
                         "given (give the input's type to the importer)", index, name);
    if (tt->shape->n_dim > TJ_MAX_DIMS)
        return tjc_error(TJ_ERR_UNSUPPORTED, "ONNX graph input #%zu '%s': shape: %zu dims, tjit "
                         "takes at most %d", index, name, tt->shape->n_dim, TJ_MAX_DIMS);
    int64_t sizes[TJ_MAX_DIMS];
    for (size_t d = 0; d < tt->shape->n_dim; d++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[d];
        if (!dim || dim->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
            return tjc_error(TJ_ERR_UNSUPPORTED, "ONNX graph input #%zu '%s': shape.dim[%zu] is "
                             "symbolic%s%s%s; tjit imports fixed sizes (give the input's type to "
                             "the importer, or --input to tjit run)", index, name, d,
                             dim && dim->dim_param ? " ('" : "",
                             dim && dim->dim_param ? dim->dim_param : "",
                             dim && dim->dim_param ? "')" : "");
        if (dim->dim_value < 0 || dim->dim_value > (INT64_C(1) << 31))
            return tjc_error(TJ_ERR_PARSE, "ONNX graph input #%zu '%s': shape.dim[%zu] is %lld",
                             index, name, d, (long long)dim->dim_value);
        sizes[d] = dim->dim_value;
    }
    int64_t numel = 1;
    for (size_t d = 0; d < tt->shape->n_dim; d++) {
        if (sizes[d] && numel > (INT64_C(1) << 40) / sizes[d])
            return tjc_error(TJ_ERR_UNSUPPORTED, "ONNX graph input #%zu '%s': shape: more than 2^40 "
                             "elements", index, name);
        numel *= sizes[d];
    }
    *out = tj_type_contiguous((tj_dtype)dt, sizes, (int)tt->shape->n_dim);
    return TJ_OK;
}

static tj_status define(tjo_importer *im, const char *name, tjo_val *v, const char *what) {
    if (!name || !name[0])
        return tjc_error(TJ_ERR_PARSE, "ONNX model: %s has an empty name", what);
    if (tjo_names_get(&im->names, name))
        return tjc_error(TJ_ERR_PARSE, "ONNX model: %s '%s' is defined twice", what, name);
    return tjo_names_put(&im->names, name, v) ? TJ_OK : TJ_ERR_MEMORY;
}

static tj_status import_node(tjo_importer *im, const Onnx__NodeProto *n, int index) {
    im->node = n;
    im->node_index = index;
    if (!n->op_type || !n->op_type[0])
        return tjo_node_error(im, TJ_ERR_PARSE, "op_type is empty");
    if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx"))
        return tjo_unsupported(im, "domain '%s': only the default domain's ops are supported",
                               n->domain);
    const tjo_import_rule *rule = find_rule(n->op_type);
    if (!rule) return tjo_unsupported(im, "op_type: tjit has no form of %s", n->op_type);
    for (size_t a = 0; a < n->n_attribute; a++) {
        const Onnx__AttributeProto *at = n->attribute[a];
        if (!at || !at->name) return tjo_node_error(im, TJ_ERR_PARSE, "attribute %zu has no name", a);
        if (at->ref_attr_name)
            return tjo_unsupported(im, "attribute '%s' refers to a function's attribute", at->name);
        if (!attr_allowed(rule->attrs, at->name))
            return tjo_unsupported(im, "attribute '%s' is not supported", at->name);
    }
    if (n->n_input > sizeof im->in / sizeof im->in[0])
        return tjo_unsupported(im, "%zu inputs; tjit imports at most %zu", n->n_input,
                               sizeof im->in / sizeof im->in[0]);
    im->n_in = (int)n->n_input;
    for (size_t i = 0; i < n->n_input; i++) {
        const char *name = n->input[i];
        im->in[i] = NULL;
        if (!name || !name[0]) continue; /* an absent optional input */
        im->in[i] = tjo_names_get(&im->names, name);
        if (!im->in[i])
            return tjo_node_error(im, TJ_ERR_PARSE, "input[%zu] '%s' is not defined by an earlier "
                                  "node, a graph input or an initializer (a dangling name, or "
                                  "nodes out of order or in a cycle)", i, name);
    }
    enum { MAX_OUT = 64 };
    if (n->n_output == 0 || n->n_output > MAX_OUT)
        return tjo_node_error(im, TJ_ERR_PARSE, "%zu outputs", n->n_output);
    tjo_val *out[MAX_OUT] = {0};
    tj_status st = rule->fn(im, out, (int)n->n_output);
    if (st) return st;
    for (size_t k = 0; k < n->n_output; k++) {
        const char *name = n->output[k];
        if (!name || !name[0]) continue; /* an output not asked for */
        if (!out[k])
            return tjo_unsupported(im, "output[%zu] '%s': tjit does not compute this output", k, name);
        tj_status d = define(im, name, out[k], "a node output");
        if (d) return tjo_node_error(im, d, "output[%zu]: %s", k, tj_last_error());
        if (!out[k]->name) out[k]->name = name;
        if (out[k]->v && !tj_value_name(out[k]->v) && tj_value_set_name(out[k]->v, name) != TJ_OK)
            return tj_last_status();
    }
    return TJ_OK;
}

static tj_status import_graph(tjo_importer *im, const Onnx__ModelProto *m,
                              const tj_onnx_import_options *opts) {
    const Onnx__GraphProto *gp = m->graph;
    if (!gp) return tjc_error(TJ_ERR_PARSE, "ONNX model: it has no graph");
    tj_status st = read_opset(m, &im->opset);
    if (st) return st;
    if (gp->n_sparse_initializer)
        return tjc_error(TJ_ERR_UNSUPPORTED, "ONNX graph: sparse_initializer is not supported");
    if (gp->n_node > MAX_NODES)
        return tjc_error(TJ_ERR_UNSUPPORTED, "ONNX graph: %zu nodes", gp->n_node);
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        char what[96];
        snprintf(what, sizeof what, "ONNX initializer #%zu '%s'", i, tp && tp->name ? tp->name : "");
        if (!tp || !tp->name) return tjc_error(TJ_ERR_PARSE, "%s: it has no name", what);
        tjo_val *v = tjo_val_new(im, tp->name);
        if (!v) return TJ_ERR_MEMORY;
        if (!(v->t = tjo_tensor_from_proto(tp, what))) return tj_last_status();
        v->param = true;
        v->type = tj_type_of_tensor(v->t);
        if ((st = define(im, tp->name, v, "initializer"))) return st;
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi || !vi->name || !vi->name[0])
            return tjc_error(TJ_ERR_PARSE, "ONNX graph input #%zu has no name", i);
        if (tjo_names_get(&im->names, vi->name)) continue; /* an initializer's default */
        tjo_val *v = tjo_val_new(im, vi->name);
        if (!v) return TJ_ERR_MEMORY;
        if ((st = input_type(vi, opts, i, &v->type))) return st;
        if (!(v->v = tj_graph_add_input(im->g, &v->type, vi->name))) return tj_last_status();
        if ((st = define(im, vi->name, v, "graph input"))) return st;
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        if (!gp->node[i]) return tjc_error(TJ_ERR_PARSE, "ONNX node #%zu is empty", i);
        if ((st = import_node(im, gp->node[i], (int)i))) return st;
    }
    im->node = NULL;
    if (gp->n_output == 0) return tjc_error(TJ_ERR_PARSE, "ONNX graph: it has no outputs");
    for (size_t k = 0; k < gp->n_output; k++) {
        const Onnx__ValueInfoProto *vi = gp->output[k];
        const char *name = vi && vi->name ? vi->name : "";
        tjo_val *v = tjo_names_get(&im->names, name);
        if (!v)
            return tjc_error(TJ_ERR_PARSE, "ONNX graph output #%zu '%s' is not defined by any node, "
                             "input or initializer", k, name);
        const Onnx__TypeProto *tp = vi->type;
        if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type &&
            tp->tensor_type->has_elem_type && tp->tensor_type->elem_type != tjo_onnx_dtype(v->type.dtype))
            return tjc_error(TJ_ERR_UNSUPPORTED, "ONNX graph output #%zu '%s': elem_type %s, where "
                             "tjit's ops compute %s", k, name,
                             tjo_onnx_dtype_name(tp->tensor_type->elem_type),
                             tj_dtype_name((tj_dtype)v->type.dtype));
        tj_value *gv = tjo_materialize(im, v);
        if (!gv) return tj_last_status();
        if ((st = tj_graph_add_output(im->g, gv))) return st;
    }
    return tjo_recover_patterns(im->g);
}

tj_graph *tj_graph_import_onnx_bytes(const void *data, size_t len,
                                     const tj_onnx_import_options *opts) {
    if (!data && len) {
        tjc_error(TJ_ERR_ARG, "tj_graph_import_onnx_bytes: data is NULL");
        return NULL;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, data);
    if (!m) {
        tjc_error(TJ_ERR_PARSE, "ONNX model: the protobuf encoding is malformed (a truncated file, "
                  "a field of the wrong wire type, or not an ONNX model)");
        return NULL;
    }
    tjo_importer im;
    memset(&im, 0, sizeof im);
    im.g = tj_graph_new();
    tj_status st = im.g ? import_graph(&im, m, opts) : TJ_ERR_MEMORY;
    for (int i = 0; i < im.n_all; i++) {
        tj_release(im.all[i]->t);
        tjc_free(im.all[i]);
    }
    tjc_free(im.all);
    tjo_names_free(&im.names);
    onnx__model_proto__free_unpacked(m, NULL);
    if (st == TJ_OK) st = tj_graph_verify(im.g);
    if (st != TJ_OK) {
        tj_graph_free(im.g);
        return NULL;
    }
    return im.g;
}

tj_graph *tj_graph_import_onnx_ex(const char *path, const tj_onnx_import_options *opts) {
    if (!path) {
        tjc_error(TJ_ERR_ARG, "tj_graph_import_onnx: path is NULL");
        return NULL;
    }
    size_t len = 0;
    void *data = tjo_read_file(path, &len);
    if (!data) return NULL;
    tj_graph *g = tj_graph_import_onnx_bytes(data, len, opts);
    tjc_free(data);
    if (!g) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", tj_last_error());
        tjc_error(tj_last_status(), "%s: %s", path, msg);
    }
    return g;
}

tj_graph *tj_graph_import_onnx(const char *path) { return tj_graph_import_onnx_ex(path, NULL); }

bool tj_onnx_available(void) { return true; }
