/* printer.c — the text form of a graph (docs/ir.md): value references,
 * attributes (tensor literals included), nodes, and subgraphs printed after
 * the main graph as `with prim::FusionGroup_<k> = graph(...)`.
 *
 * Values print as %name when named, else as a number: the value's id, or in
 * canonical mode its index in order of definition (inputs first), so that
 * graphs built in different orders print alike. Subgraphs are numbered in
 * the order they are reached, breadth first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "ir_internal.h"

typedef struct printer {
    tjir_buf b;
    unsigned flags;
    const tj_graph **subs; /* subgraphs in print order */
    int n_subs, cap_subs;
    tjir_map sub_index;    /* graph -> index + 1 */
    tjir_map numbers;      /* value -> number + 1, for the graph being printed */
} printer;

/* ---- attributes ------------------------------------------------------------------- */

static void put_tensor_literal(tjir_buf *b, const tj_tensor *t) {
    tj_tensor *host = NULL; /* a device constant prints from a host copy */
    if (tj_tensor_device(t).type != TJ_CPU) {
        if (!(host = tjc_to_device((tj_tensor *)t, (tj_device){TJ_CPU, 0}))) {
            tjir_buf_put(b, "<tensor not readable>");
            return;
        }
        t = host;
    }
    tjir_buf_put(b, "tensor([");
    int64_t idx[TJ_MAX_DIMS] = {0};
    int64_t n = tj_numel(t);
    const char *base = tjc_data_ptr(t);
    size_t esz = tj_dtype_size(t->dtype);
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int d = 0; d < t->ndim; d++) off += idx[d] * t->strides[d];
        const char *p = base + off * (int64_t)esz;
        if (k) tjir_buf_put(b, ", ");
        switch (t->dtype) {
        case TJ_F32: {
            float v;
            memcpy(&v, p, sizeof v);
            tjir_put_float(b, v, true);
            break;
        }
        case TJ_F64: {
            double v;
            memcpy(&v, p, sizeof v);
            tjir_put_float(b, v, false);
            break;
        }
        case TJ_I64: {
            int64_t v;
            memcpy(&v, p, sizeof v);
            tjir_buf_printf(b, "%lld", (long long)v);
            break;
        }
        default: {
            bool v;
            memcpy(&v, p, sizeof v);
            tjir_buf_put(b, v ? "True" : "False");
        }
        }
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (++idx[d] < t->sizes[d]) break;
            idx[d] = 0;
        }
    }
    tjir_buf_printf(b, "], dtype=%s, sizes=[", tjir_dtype_ir_name(t->dtype));
    for (int d = 0; d < t->ndim; d++) tjir_buf_printf(b, d ? ", %lld" : "%lld", (long long)t->sizes[d]);
    tjir_buf_put(b, "])");
    tj_release(host);
}

void tjir_put_attr(tjir_buf *b, const tj_node *n, int i) {
    const tj_attr *a = &n->attrs[i];
    switch (n->attr_kinds[i]) {
    case TJ_ATTR_INT: tjir_buf_printf(b, "%lld", (long long)a->i); break;
    case TJ_ATTR_FLOAT: tjir_put_float(b, a->f, false); break;
    case TJ_ATTR_BOOL: tjir_buf_put(b, a->b ? "True" : "False"); break;
    case TJ_ATTR_SCALAR:
        switch (tjc_scalar_kind(&a->scalar)) {
        case TJ_SCALAR_INT: tjir_buf_printf(b, "%lld", (long long)a->scalar.i); break;
        case TJ_SCALAR_BOOL: tjir_buf_put(b, a->scalar.i ? "True" : "False"); break;
        default: tjir_put_float(b, a->scalar.f, false); break;
        }
        break;
    case TJ_ATTR_STR: tjir_put_string(b, a->s ? a->s : ""); break;
    case TJ_ATTR_INTS:
        tjir_buf_put(b, "[");
        for (int k = 0; k < a->ints.n; k++)
            tjir_buf_printf(b, k ? ", %lld" : "%lld", (long long)a->ints.data[k]);
        tjir_buf_put(b, "]");
        break;
    case TJ_ATTR_FLOATS:
        tjir_buf_put(b, "[");
        for (int k = 0; k < a->floats.n; k++) {
            if (k) tjir_buf_put(b, ", ");
            tjir_put_float(b, a->floats.data[k], false);
        }
        tjir_buf_put(b, "]");
        break;
    case TJ_ATTR_DTYPE: {
        const char *name = tjir_dtype_ir_name(a->dtype);
        tjir_buf_put(b, name ? name : "<bad dtype>");
        break;
    }
    case TJ_ATTR_NONE: tjir_buf_put(b, "None"); break;
    case TJ_ATTR_GENERATOR: tjir_buf_put(b, "<generator>"); break;
    case TJ_ATTR_TENSOR:
        if (n->tensor) put_tensor_literal(b, n->tensor);
        else tjir_buf_put(b, "<no tensor>");
        break;
    case TJ_ATTR_GRAPH: tjir_buf_put(b, "<graph>"); break;
    default: tjir_buf_put(b, "<unset>");
    }
}

/* ---- values and nodes ---------------------------------------------------------------- */

static void put_value(printer *p, const tj_value *v) {
    intptr_t num = (intptr_t)tjir_map_get(&p->numbers, v);
    if (!num) tjir_buf_printf(&p->b, "%%?%d", v->id); /* not defined in this graph */
    else if (v->name) tjir_buf_printf(&p->b, "%%%s", v->name);
    else tjir_buf_printf(&p->b, "%%%ld", (long)(num - 1));
}

static void put_typed_value(printer *p, const tj_value *v) {
    put_value(p, v);
    if (p->flags & TJ_PRINT_NO_TYPES) return;
    tjir_buf_put(&p->b, " : ");
    tjir_put_type(&p->b, v->type, p->flags);
}

static int subgraph_number(printer *p, const tj_graph *sub) {
    intptr_t k = (intptr_t)tjir_map_get(&p->sub_index, sub);
    if (k) return (int)k - 1;
    if (!tjir_grow_heap((void **)&p->subs, &p->cap_subs, p->n_subs + 1, sizeof *p->subs) ||
        !tjir_map_put(&p->sub_index, sub, (void *)(intptr_t)(p->n_subs + 1))) {
        p->b.failed = true;
        return 0;
    }
    p->subs[p->n_subs] = sub;
    return p->n_subs++;
}

static void put_node(printer *p, const tj_node *n) {
    tjir_buf *b = &p->b;
    tjir_buf_put(b, "  ");
    for (int i = 0; i < n->n_outputs; i++) {
        if (i) tjir_buf_put(b, ", ");
        put_typed_value(p, n->outputs[i]);
    }
    tjir_buf_put(b, n->n_outputs ? " = " : "= ");
    char plain[128];
    tjir_buf_put(b, n->op && (p->flags & TJ_PRINT_PLAIN_NAMES) ? tjir_plain_name(n->op, plain, sizeof plain)
                                                             : tj_node_name(n));
    if (n->subgraph) tjir_buf_printf(b, "_%d", subgraph_number(p, n->subgraph));
    bool open = false;
    for (int i = 0; i < n->n_attrs; i++) {
        if (n->attr_kinds[i] == TJ_ATTR_GRAPH) continue;
        tjir_buf_put(b, open ? ", " : "[");
        open = true;
        tjir_buf_printf(b, "%s=", n->attr_names[i] ? n->attr_names[i] : "?");
        tjir_put_attr(b, n, i);
    }
    if (open) tjir_buf_put(b, "]");
    tjir_buf_put(b, "(");
    for (int i = 0; i < n->n_inputs; i++) {
        if (i) tjir_buf_put(b, ", ");
        put_value(p, n->inputs[i]);
    }
    tjir_buf_put(b, ")\n");
}

static bool number_values(printer *p, const tj_graph *g) {
    tjir_map_clear(&p->numbers);
    const tj_block *blk = &g->block;
    intptr_t k = 0;
    bool canonical = p->flags & TJ_PRINT_CANONICAL;
    for (int i = 0; i < blk->param->n_outputs; i++) {
        const tj_value *v = blk->param->outputs[i];
        if (!tjir_map_put(&p->numbers, v, (void *)(canonical ? ++k : (intptr_t)v->id + 1)))
            return false;
    }
    for (const tj_node *n = blk->first; n; n = n->next)
        for (int i = 0; i < n->n_outputs; i++) {
            const tj_value *v = n->outputs[i];
            if (!tjir_map_put(&p->numbers, v, (void *)(canonical ? ++k : (intptr_t)v->id + 1)))
                return false;
        }
    return true;
}

static void put_graph(printer *p, const tj_graph *g) {
    tjir_buf *b = &p->b;
    if (!number_values(p, g)) {
        b->failed = true;
        return;
    }
    const tj_block *blk = &g->block;
    tjir_buf_put(b, "graph(");
    for (int i = 0; i < blk->param->n_outputs; i++) {
        if (i) tjir_buf_put(b, ",\n      ");
        put_typed_value(p, blk->param->outputs[i]);
    }
    tjir_buf_put(b, "):\n");
    for (const tj_node *n = blk->first; n; n = n->next) put_node(p, n);
    tjir_buf_put(b, "  return (");
    for (int i = 0; i < blk->ret->n_inputs; i++) {
        if (i) tjir_buf_put(b, ", ");
        put_value(p, blk->ret->inputs[i]);
    }
    tjir_buf_put(b, ")\n");
}

char *tj_graph_to_string(const tj_graph *g, unsigned flags) {
    if (!g) {
        tjc_error(TJ_ERR_ARG, "tj_graph_to_string: the graph is NULL");
        return NULL;
    }
    printer p = {.flags = flags};
    tjir_map_init(&p.sub_index, false);
    tjir_map_init(&p.numbers, false);
    put_graph(&p, g);
    for (int k = 0; k < p.n_subs && !p.b.failed; k++) {
        const tj_graph *sub = p.subs[k];
        tjir_buf_printf(&p.b, "with %s_%d = ", tj_node_name(sub->owner), k);
        put_graph(&p, sub);
    }
    tjc_free(p.subs);
    tjir_map_clear(&p.sub_index);
    tjir_map_clear(&p.numbers);
    return tjir_buf_finish(&p.b);
}
