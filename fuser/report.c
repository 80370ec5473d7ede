/* report.c — tj_fusion_report: why nodes were left outside fusion groups and
 * why neighbouring groups were not merged (docs/passes.md, "Fusion report").
 * Every reason comes from the fuser's own rules (fuse_rules.h), asked of the
 * graph as tj_pass_fuse left it. Nodes are named as the canonical printer
 * names their first result. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/text.h"
#include "core/ptrmap.h"
#include "fuse_rules.h"
#include "tjit/passes.h"

typedef struct report {
    tjc_text out;
    tjc_ptrmap number; /* value -> canonical number + 1 */
} report;

static void put(report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(report *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tjc_vput(&r->out, fmt, ap);
    va_end(ap);
}

/* Values numbered as TJ_PRINT_CANONICAL numbers them: inputs, then results in order. */
static bool number_values(report *r, const tj_graph *g) {
    const tj_block *b = tj_graph_block((tj_graph *)g);
    intptr_t k = 0;
    for (int i = 0; i < tj_block_num_inputs(b); i++)
        if (!tjc_ptrmap_put(&r->number, tj_block_input(b, i), (void *)++k)) return false;
    for (const tj_node *n = tj_block_first(b); n; n = tj_node_next(n))
        for (int o = 0; o < tj_node_num_outputs(n); o++)
            if (!tjc_ptrmap_put(&r->number, tj_node_output(n, o), (void *)++k)) return false;
    return true;
}

static void put_value(report *r, const tj_value *v) {
    if (tj_value_name(v)) put(r, "%%%s", tj_value_name(v));
    else put(r, "%%%d", (int)(intptr_t)tjc_ptrmap_get(&r->number, v) - 1);
}

/* "%7 aten::add" */
static void put_node(report *r, const tj_node *n) {
    if (tj_node_kind_of(n) == TJ_NODE_RETURN) {
        put(r, "the graph's return");
        return;
    }
    if (tj_node_num_outputs(n) > 0) {
        put_value(r, tj_node_output(n, 0));
        put(r, " ");
    }
    put(r, "%s", tj_node_name(n));
}

static void put_sizes(report *r, const tj_type *t) {
    put(r, "[");
    for (int d = 0; d < t->ndim; d++) put(r, "%s%lld", d ? ", " : "", (long long)t->sizes[d]);
    put(r, "]");
}

/* Whether c depends on x through the block's values (x before c). */
static bool depends_on(const tj_node *c, const tj_node *x) {
    tjc_ptrmap seen;
    tjc_ptrmap_init(&seen);
    const tj_node *stack_small[64];
    const tj_node **stack = stack_small;
    int n = 0, cap = 64;
    bool found = false, ok = true;
    stack[n++] = c;
    while (n && !found && ok) {
        const tj_node *m = stack[--n];
        for (int i = 0; i < tj_node_num_inputs(m) && !found && ok; i++) {
            const tj_node *p = tj_value_node(tj_node_input(m, i));
            if (p == x) found = true;
            if (found || tj_node_kind_of(p) == TJ_NODE_PARAM || !tj_node_is_before(x, p) ||
                tjc_ptrmap_has(&seen, p))
                continue;
            if (!(ok = tjc_ptrmap_put(&seen, p, (void *)1))) break;
            if (n == cap) {
                const tj_node **grown = tjc_malloc(sizeof *grown * (size_t)cap * 2);
                if (!(ok = grown != NULL)) break;
                memcpy(grown, stack, sizeof *grown * (size_t)n);
                if (stack != stack_small) tjc_free(stack);
                stack = grown;
                cap *= 2;
            }
            stack[n++] = p;
        }
    }
    if (stack != stack_small) tjc_free(stack);
    tjc_ptrmap_free(&seen);
    return found;
}

/* The reason of a verdict, after "node: " (p producer, c consumer when a merge). */
static void put_reason(report *r, tjf_verdict v, const tj_node *p, const tj_node *c) {
    switch (v.reason) {
    case TJF_FUSIBLE: put(r, "fusible"); break;
    case TJF_NOT_AN_OP: put(r, "not fusible: a %s node", tj_node_name(p)); break;
    case TJF_OP_KIND:
        put(r, "not fusible: its kind is %s, not pointwise", tj_op_kind_name(tj_op_kind_of(tj_node_op(p))));
        break;
    case TJF_OP_NO_EXPR: put(r, "not fusible: the op table gives it no scalar expression"); break;
    case TJF_OP_INPLACE: put(r, "not fusible: it writes into an input (an in-place form)"); break;
    case TJF_OP_OUTPUTS: put(r, "not fusible: it has more than one output"); break;
    case TJF_NODE_OPERANDS:
        put(r, "not fusible: %d inputs, more than the 3 a fused node takes", tj_node_num_inputs(p));
        break;
    case TJF_UNKNOWN_TYPE:
        put(r, "not fusible: ");
        put_value(r, v.value);
        put(r, " is not a tensor of known dtype and sizes");
        break;
    case TJF_UNEVEN_CHUNK:
        put(r, "not fusible: not a chunk into equal pieces of a tensor of known sizes");
        break;
    case TJF_CHUNKS_PRODUCER:
        put(r, "the group chunks a value it makes (a group chunks only its inputs)");
        break;
    case TJF_NOT_BEFORE: put(r, "the producer does not come before the consumer"); break;
    case TJF_GROUP_SIZE:
        put(r, "group-size cap: the merged group would hold %d nodes, more than %d", v.count,
            TJF_MAX_GROUP_NODES);
        break;
    case TJF_USED_BEFORE:
        put(r, "another user, ");
        put_node(r, v.node);
        if (depends_on(c, v.node)) {
            put(r, ", comes before the consumer and feeds it: merging would create a cycle through ");
            put_value(r, tj_node_output(v.node, 0));
        } else {
            put(r, ", comes before the consumer: merging would need it moved, which the fuser does "
                   "not do");
        }
        break;
    case TJF_CHUNK_USED_OUTSIDE:
        put(r, "a piece of the chunk is read outside, by ");
        put_node(r, v.node);
        put(r, " (chunk pieces cannot be group outputs)");
        break;
    case TJF_OUTPUT_SIZES:
        put(r, "its result ");
        put_value(r, v.value);
        put(r, " is read outside with sizes ");
        put_sizes(r, tj_value_type(v.value));
        put(r, ", not the group's iteration sizes ");
        put_sizes(r, tj_value_type(tj_node_output(c, 0)));
        break;
    case TJF_READ_TWICE: put(r, "the group reads its result through more than one input"); break;
    case TJF_TWO_ROW_OPS:
        put(r, "both hold a row op (softmax, log_softmax, layer_norm, a reduction over the last dim); a group holds one");
        break;
    case TJF_ROW_SIZES:
        put_value(r, v.value);
        put(r, " has sizes ");
        put_sizes(r, tj_value_type(v.value));
        put(r, ", not those of the row op, whose rows the group iterates");
        break;
    case TJF_ROW_DROPPED_DIM:
        put_value(r, v.value);
        put(r, " has the sizes ");
        put_sizes(r, tj_value_type(v.value));
        put(r, " of a reduction without keepdim, and a member reads it into other sizes: "
               "broadcasting aligns it with the last dim, not with the rows");
        break;
    case TJF_ROW_OUTSIDE_READ:
        put_value(r, v.value);
        put(r, " of sizes ");
        put_sizes(r, tj_value_type(v.value));
        put(r, " comes from outside into a member of a reduction without keepdim: such a group "
               "reads only values of sizes all 1 there");
        break;
    case TJF_ANCHOR_FORM:
        put(r, "not fusible: a matrix product takes an epilogue as linear(x, w, b), mm, matmul by a "
               "2-D matrix or conv2d(x, w, b), every operand an f32 or f64 tensor (no absent bias)");
        break;
    case TJF_ANCHOR_DEVICE:
        put(r, "not fusible: a matrix product takes an epilogue on the CPU only");
        break;
    case TJF_ANCHOR_OPERAND:
        put(r, "it feeds the matrix product of ");
        put_node(r, c);
        put(r, ", whose operands come from outside its group (the product runs first, its epilogue after)");
        break;
    case TJF_TWO_ANCHORS: put(r, "both hold a matrix product; a group holds one"); break;
    case TJF_ANCHOR_ROW:
        put(r, "a matrix product's epilogue and a row op (softmax, log_softmax, layer_norm, a reduction "
               "over the last dim) do not share a group");
        break;
    case TJF_ANCHOR_SIZES:
        put_value(r, v.value);
        put(r, " has sizes ");
        put_sizes(r, tj_value_type(v.value));
        put(r, ", not those of the matrix product, whose rows the group runs block by block");
        break;
    case TJF_OPERAND_CAP:
        put(r, "operand cap: the merged group would have %d operands (inputs, outputs and chunk "
               "pieces), more than %d", v.count, TJF_MAX_OPERANDS);
        break;
    }
}

static bool is_group(const tj_node *n) { return tj_node_kind_of(n) == TJ_NODE_FUSION_GROUP; }

/* Nodes of the pointwise kind, and chunks: what a user expects to fuse. */
static bool fusible_kind(const tj_node *n) {
    if (tj_node_kind_of(n) != TJ_NODE_OP) return false;
    const char *name = tj_node_name(n);
    return tj_op_kind_of(tj_node_op(n)) == TJ_KIND_POINTWISE || !strcmp(name, "aten::chunk") ||
           !strcmp(name, "aten::split.Tensor");
}

/* What the fuser takes as a member, with the reason when it does not. */
static tjf_verdict member_verdict(const tj_node *n) {
    if (is_group(n)) return (tjf_verdict){.reason = TJF_FUSIBLE};
    const char *name = tj_node_kind_of(n) == TJ_NODE_OP ? tj_node_name(n) : "";
    if (!strcmp(name, "aten::chunk") || !strcmp(name, "aten::split.Tensor"))
        return (tjf_verdict){.reason = tjf_is_even_chunk(n) ? TJF_FUSIBLE : TJF_UNEVEN_CHUNK};
    return tjf_check_node(n);
}

static bool is_used(const tj_node *n) {
    for (int o = 0; o < tj_node_num_outputs(n); o++)
        if (tj_value_num_uses(tj_node_output(n, o)) > 0) return true;
    return false;
}

/* Why p and c (p feeding c, both takeable) stay apart; false if nothing keeps them apart. */
static bool merge_verdict(const tj_node *p, const tj_node *c, tjf_verdict *v) {
    *v = tjf_check_merge(p, c);
    if (v->reason == TJF_FUSIBLE) *v = tjf_check_operands(p, c);
    return v->reason != TJF_FUSIBLE;
}

/* " (none is fusible: %3 aten::mm, ...)": the nodes n reads from and the
 * nodes that read n, graph inputs and the return left out. */
static void put_neighbours(report *r, const tj_node *n) {
    enum { SHOWN = 4 };
    const tj_node *seen[SHOWN + 1];
    int k = 0;
    for (int i = 0; i < tj_node_num_inputs(n) && k <= SHOWN; i++) {
        const tj_node *p = tj_value_node(tj_node_input(n, i));
        bool dup = tj_node_kind_of(p) == TJ_NODE_PARAM;
        for (int j = 0; j < k && !dup; j++) dup = seen[j] == p;
        if (!dup) seen[k++] = p;
    }
    for (int o = 0; o < tj_node_num_outputs(n) && k <= SHOWN; o++) {
        const tj_value *v = tj_node_output(n, o);
        for (int u = 0; u < tj_value_num_uses(v) && k <= SHOWN; u++) {
            const tj_node *c = tj_value_use(v, u).user;
            bool dup = tj_node_kind_of(c) == TJ_NODE_RETURN;
            for (int j = 0; j < k && !dup; j++) dup = seen[j] == c;
            if (!dup) seen[k++] = c;
        }
    }
    if (!k) {
        put(r, " (it reads only graph inputs, and only the graph returns it)");
        return;
    }
    put(r, " (none is fusible: ");
    for (int j = 0; j < k && j < SHOWN; j++) {
        if (j) put(r, ", ");
        put_node(r, seen[j]);
    }
    put(r, "%s)", k > SHOWN ? ", ..." : "");
}

/* One line per pair that n (takeable, outside any group) could not join. */
static int explain_outside(report *r, const tj_node *n) {
    int lines = 0;
    tjf_verdict v;
    if (tj_node_kind_of(n) == TJ_NODE_OP && !tjf_is_even_chunk(n) && !is_used(n)) {
        put(r, "  ");
        put_node(r, n);
        put(r, ": nobody reads its result (dead code is left to dce)\n");
        return 1;
    }
    for (int i = 0; i < tj_node_num_inputs(n); i++) { /* n as the consumer */
        const tj_node *p = tj_value_node(tj_node_input(n, i));
        if (tjf_is_even_chunk(n) || tj_node_kind_of(p) == TJ_NODE_PARAM) continue;
        v = member_verdict(p);
        /* a matrix product that takes no epilogue says why: users ask */
        bool product = v.reason == TJF_ANCHOR_FORM || v.reason == TJF_ANCHOR_DEVICE;
        if (!product && (v.reason != TJF_FUSIBLE || !merge_verdict(p, n, &v))) continue;
        put(r, "  ");
        put_node(r, n);
        put(r, ": not merged with its producer ");
        put_node(r, p);
        put(r, ": ");
        put_reason(r, v, p, n);
        put(r, "\n");
        lines++;
    }
    for (int o = 0; o < tj_node_num_outputs(n); o++) { /* n as the producer */
        const tj_value *out = tj_node_output(n, o);
        for (int u = 0; u < tj_value_num_uses(out); u++) {
            const tj_node *c = tj_value_use(out, u).user;
            bool seen = false; /* a user reading n twice is one pair */
            for (int k = 0; k < u; k++) seen |= tj_value_use(out, k).user == c;
            if (seen || (!is_group(c) && tjf_check_node(c).reason != TJF_FUSIBLE) || !is_used(c))
                continue;
            if (!merge_verdict(n, c, &v)) continue;
            put(r, "  ");
            put_node(r, n);
            put(r, ": not merged into its user ");
            put_node(r, c);
            put(r, ": ");
            put_reason(r, v, n, c);
            put(r, "\n");
            lines++;
        }
    }
    if (!lines) {
        put(r, "  ");
        put_node(r, n);
        put(r, ": no producer or user it could join");
        put_neighbours(r, n);
        put(r, "\n");
        lines = 1;
    }
    return lines;
}

char *tj_fusion_report(const tj_graph *g) {
    if (!g) return tjc_error(TJ_ERR_ARG, "tj_fusion_report: the graph is NULL"), NULL;
    report r = {0};
    tjc_ptrmap_init(&r.number);
    if (!number_values(&r, g)) r.out.failed = true;
    const tj_block *b = tj_graph_block((tj_graph *)g);
    int groups = 0, fused = 0, left_out = 0;
    put(&r, "# fusion report\n# left outside any group\n");
    for (const tj_node *n = tj_block_first(b); n; n = tj_node_next(n)) {
        if (is_group(n)) {
            groups++;
            fused += tj_block_num_nodes(tj_graph_block(tj_node_subgraph(n)));
            continue;
        }
        if (!fusible_kind(n)) continue;
        left_out++;
        tjf_verdict v = member_verdict(n);
        if (v.reason == TJF_FUSIBLE) {
            explain_outside(&r, n);
            continue;
        }
        put(&r, "  ");
        put_node(&r, n);
        put(&r, ": ");
        put_reason(&r, v, n, NULL);
        put(&r, "\n");
    }
    put(&r, "# neighbouring groups not merged\n");
    for (const tj_node *c = tj_block_first(b); c; c = tj_node_next(c)) {
        if (!is_group(c) || !is_used(c)) continue;
        for (int i = 0; i < tj_node_num_inputs(c); i++) {
            const tj_node *p = tj_value_node(tj_node_input(c, i));
            bool seen = false; /* a group read through two inputs is one pair */
            for (int k = 0; k < i; k++) seen |= tj_value_node(tj_node_input(c, k)) == p;
            tjf_verdict v;
            if (seen || !is_group(p) || !merge_verdict(p, c, &v)) continue;
            put(&r, "  ");
            put_node(&r, p);
            put(&r, " -> ");
            put_node(&r, c);
            put(&r, ": ");
            put_reason(&r, v, p, c);
            put(&r, "\n");
        }
    }
    put(&r, "# %d group%s formed, %d node%s fused, %d fusible-kind node%s left out\n", groups,
        groups == 1 ? "" : "s", fused, fused == 1 ? "" : "s", left_out, left_out == 1 ? "" : "s");
    tjc_ptrmap_free(&r.number);
    return tjc_text_finish(&r.out);
}
