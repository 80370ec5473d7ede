/* fuse.c — tj_pass_fuse: groups producer/consumer chains of pointwise ops
 * into prim::FusionGroup nodes (docs/passes.md, "Fusion").
 *
 * 1. Chunk hoisting: chunk(p(a, b)) with p pointwise and used only by the
 *    chunk becomes p(chunk(a)[i], chunk(b)[i]) for each i (inputs broadcast
 *    along the chunked dim pass through), repeatedly, so chunks move up to
 *    the values that feed the pointwise chain.
 * 2. Grouping: walking the block backwards, a consumer (a fusible node or a
 *    group) absorbs a producer (a fusible node, a group, or an even chunk of
 *    a value made outside) when every other use of the producer comes after
 *    the consumer: then the merged group can sit where the consumer was, and
 *    the producer's other uses read a group output. Repeated until nothing
 *    changes. Chunks enter as prim::ConstantChunk and only when all their
 *    pieces are used inside the group; group outputs all have the group's
 *    iteration sizes
 *    (a reduction's group: its full sizes or its reduced ones, all outputs
 *    the same, fuser.h).
 * The rules (which node may enter, which pair may merge, how many operands a
 * merge needs) return their reason (fuse_rules.h), so that the fusion report
 * (report.c) explains with the very checks that decide here.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/ptrmap.h"
#include "fuse_rules.h"
#include "tjit/passes.h"

enum { MAX_OPERANDS = TJF_MAX_OPERANDS };

bool tjf_fusible_op(const tj_op_info *op) {
    return op && tj_op_kind_of(op) == TJ_KIND_POINTWISE && op->pw_expr && op->inplace_of < 0 &&
           !op->schema.mutates_inputs && op->schema.n_outputs == 1;
}

/* A tensor of known dtype and sizes. Any device: a group runs where its
 * inputs live, compiled by that device's fusion backend, or op by op through
 * the device's kernels where it has none (fuser/group.c). */
bool tjf_known_tensor(const tj_value *v) {
    const tj_type *t = tj_value_type(v);
    if (t->kind != TJ_TYPE_TENSOR || t->dtype == TJ_UNKNOWN || t->ndim == TJ_UNKNOWN) return false;
    for (int d = 0; d < t->ndim; d++)
        if (t->sizes[d] == TJ_UNKNOWN_DIM) return false;
    return true;
}

static tjf_row_kind row_kind_of(const tj_op_info *op) {
    switch (op->id) {
    case TJ_OP_softmax: return TJF_ROW_SOFTMAX;
    case TJ_OP_log_softmax: return TJF_ROW_LOG_SOFTMAX;
    case TJ_OP_layer_norm: return TJF_ROW_LAYER_NORM;
    case TJ_OP_sum: return TJF_ROW_SUM;
    case TJ_OP_mean: return TJF_ROW_MEAN;
    case TJ_OP_amax: return TJF_ROW_AMAX;
    case TJ_OP_amin: return TJF_ROW_AMIN;
    case TJ_OP_logsumexp: return TJF_ROW_LOGSUMEXP;
    default: return TJF_ROW_NONE;
    }
}

bool tjf_row_keepdim(const tj_node *n) {
    int k = tj_node_attr_index((tj_node *)n, "keepdim");
    return k >= 0 && tj_node_attr((tj_node *)n, k)->b;
}

/* A reduction over the last dim of x (dim = [last] or [-1]) whose result
 * y has x's sizes with the last one 1 (keepdim) or dropped. */
static bool last_dim_reduction(const tj_node *n, const tj_type *tx, const tj_type *ty) {
    const tj_attr *dim = tj_node_attr((tj_node *)n, tj_node_attr_index((tj_node *)n, "dim"));
    if (dim->ints.n != 1 || (dim->ints.data[0] != -1 && dim->ints.data[0] != tx->ndim - 1)) return false;
    if (tx->sizes[tx->ndim - 1] < 2) return false;
    bool keep = tjf_row_keepdim(n);
    int rows = tx->ndim - 1;
    if (ty->ndim != (keep ? tx->ndim : rows)) return false;
    if (memcmp(tx->sizes, ty->sizes, sizeof(int64_t) * (size_t)rows)) return false;
    return !keep || ty->sizes[rows] == 1;
}

tjf_row_kind tjf_row_op(const tj_node *n) {
    if (tj_node_kind_of(n) != TJ_NODE_OP || tj_node_num_outputs(n) != 1) return TJF_ROW_NONE;
    tjf_row_kind kind = row_kind_of(tj_node_op(n));
    if (kind == TJF_ROW_NONE) return kind;
    const tj_value *x = tj_node_input(n, 0), *y = tj_node_output(n, 0);
    if (!tjf_known_tensor(x) || !tjf_known_tensor(y)) return TJF_ROW_NONE;
    const tj_type *tx = tj_value_type(x), *ty = tj_value_type(y);
    if ((tx->dtype != TJ_F32 && tx->dtype != TJ_F64) || ty->dtype != tx->dtype || tx->ndim < 1)
        return TJF_ROW_NONE;
    if (tjf_row_reduces(kind))
        return tj_node_num_inputs(n) == 1 && last_dim_reduction(n, tx, ty) ? kind : TJF_ROW_NONE;
    if (ty->ndim != tx->ndim || memcmp(tx->sizes, ty->sizes, sizeof(int64_t) * (size_t)tx->ndim))
        return TJF_ROW_NONE;
    int64_t last = tx->sizes[tx->ndim - 1];
    if (last < 1) return TJF_ROW_NONE;
    if (kind != TJF_ROW_LAYER_NORM) {
        int64_t dim = tj_node_attr(n, tj_node_attr_index(n, "dim"))->i;
        return dim == -1 || dim == tx->ndim - 1 ? kind : TJF_ROW_NONE;
    }
    const tj_attr *shape = tj_node_attr(n, tj_node_attr_index(n, "normalized_shape"));
    if (shape->ints.n != 1 || shape->ints.data[0] != last || tj_node_num_inputs(n) != 3)
        return TJF_ROW_NONE;
    for (int i = 1; i < 3; i++) {
        const tj_value *p = tj_node_input(n, i);
        if (!tjf_known_tensor(p)) return TJF_ROW_NONE;
        const tj_type *t = tj_value_type(p);
        if (t->dtype != tx->dtype || t->ndim != 1 || t->sizes[0] != last) return TJF_ROW_NONE;
    }
    return kind;
}

const tj_node *tjf_row_node(const tj_graph *subgraph) {
    for (tj_node *x = tj_block_first(tj_graph_block((tj_graph *)subgraph)); x; x = tj_node_next(x))
        if (tjf_row_op(x) != TJF_ROW_NONE) return x;
    return NULL;
}

static tjf_verdict verdict(tjf_reason r) { return (tjf_verdict){.reason = r}; }

tjf_verdict tjf_check_node(const tj_node *n) {
    if (tj_node_kind_of(n) != TJ_NODE_OP) return verdict(TJF_NOT_AN_OP);
    if (tjf_row_op(n) != TJF_ROW_NONE) return verdict(TJF_FUSIBLE);
    const tj_op_info *op = tj_node_op(n);
    tj_op_kind kind = tj_op_kind_of(op);
    if (kind == TJ_KIND_MATMUL || kind == TJ_KIND_CONV) return tjf_check_anchor_node(n);
    if (!tjf_fusible_op(op)) { /* which part of tjf_fusible_op fails, for the report */
        if (tj_op_kind_of(op) != TJ_KIND_POINTWISE) return verdict(TJF_OP_KIND);
        if (!op->pw_expr) return verdict(TJF_OP_NO_EXPR);
        if (op->schema.n_outputs != 1) return verdict(TJF_OP_OUTPUTS);
        return verdict(TJF_OP_INPLACE);
    }
    if (tj_node_num_inputs(n) > 3) return verdict(TJF_NODE_OPERANDS);
    for (int i = 0; i < tj_node_num_inputs(n); i++)
        if (!tjf_known_tensor(tj_node_input(n, i)))
            return (tjf_verdict){.reason = TJF_UNKNOWN_TYPE, .value = tj_node_input(n, i)};
    if (!tjf_known_tensor(tj_node_output(n, 0)))
        return (tjf_verdict){.reason = TJF_UNKNOWN_TYPE, .value = tj_node_output(n, 0)};
    return verdict(TJF_FUSIBLE);
}

static bool fusible_node(const tj_node *n) { return tjf_check_node(n).reason == TJF_FUSIBLE; }

static bool is_group(const tj_node *n) { return tj_node_kind_of(n) == TJ_NODE_FUSION_GROUP; }

/* An aten::chunk (or split into equal pieces) of a known tensor into pieces of
 * equal size: its count and normalised dim. */
static bool even_chunk(const tj_node *n, int64_t *chunks, int *dim) {
    if (tj_node_kind_of(n) != TJ_NODE_OP) return false;
    const char *name = tj_op_name(tj_node_op(n));
    bool is_chunk = !strcmp(name, "aten::chunk"), is_split = !strcmp(name, "aten::split.Tensor");
    if (!is_chunk && !is_split) return false;
    const tj_value *x = tj_node_input(n, 0);
    if (!tjf_known_tensor(x)) return false;
    const tj_type *t = tj_value_type(x);
    int64_t d = tj_node_attr(n, tj_node_attr_index(n, "dim"))->i;
    if (t->ndim == 0 || d < -t->ndim || d >= t->ndim) return false;
    *dim = (int)(d < 0 ? d + t->ndim : d);
    int64_t size = t->sizes[*dim];
    int64_t c = is_chunk ? tj_node_attr(n, 0)->i : 0;
    if (is_split) {
        int64_t piece = tj_node_attr(n, 0)->i;
        if (piece <= 0 || size % piece) return false;
        c = size / piece;
    }
    *chunks = c;
    return c > 0 && size % c == 0 && tj_node_num_outputs(n) == c;
}

bool tjf_is_even_chunk(const tj_node *n) {
    int64_t chunks;
    int dim;
    return even_chunk(n, &chunks, &dim);
}

bool tjf_same_sizes(const tj_type *a, const tj_type *b) {
    return a->ndim == b->ndim && !memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->ndim);
}

/* ---- chunk hoisting ------------------------------------------------------------ */

static tj_value *append_before(tj_node *pos, tj_node *n) {
    if (!n || tj_node_insert_before(n, pos) != TJ_OK) return NULL;
    return tj_node_output(n, 0);
}

/* chunk(p(...)) -> p(chunk(...)[i], ...) for each piece i. */
static tj_status hoist_one(tj_graph *g, tj_node *k, int64_t chunks, int dim, bool *changed) {
    tj_value *x = tj_node_input(k, 0);
    tj_node *p = tj_value_node(x);
    if (!fusible_node(p) || tjf_row_op(p) != TJF_ROW_NONE || tjf_anchor_op(p) != TJF_ANCHOR_NONE ||
        tj_value_num_uses(x) != 1)
        return TJ_OK;
    const tj_type *xt = tj_value_type(x);
    int n_in = tj_node_num_inputs(p);
    tj_value *pieces[3][TJ_MAX_DIMS * 8] = {{0}};
    bool chunked[3] = {false};
    int pdim[3] = {0};
    if (chunks > TJ_MAX_DIMS * 8) return TJ_OK;
    for (int i = 0; i < n_in; i++) { /* which inputs split along the dim, which broadcast */
        const tj_type *at = tj_value_type(tj_node_input(p, i));
        int da = dim - (xt->ndim - at->ndim);
        if (da >= 0 && at->sizes[da] == xt->sizes[dim]) {
            chunked[i] = true;
            pdim[i] = da;
        } else if (da >= 0 && at->sizes[da] != 1) {
            return TJ_OK;
        }
    }
    const tj_op_info *chunk_op = tj_op_find("aten::chunk");
    for (int i = 0; i < n_in; i++) {
        if (!chunked[i]) continue;
        int same = -1; /* add(x, x): one chunk of x serves both operands */
        for (int j = 0; j < i; j++)
            if (chunked[j] && tj_node_input(p, j) == tj_node_input(p, i) && pdim[j] == pdim[i]) same = j;
        if (same >= 0) {
            for (int j = 0; j < chunks; j++) pieces[i][j] = pieces[same][j];
            continue;
        }
        tj_value *a = tj_node_input(p, i);
        tj_attr attrs[2] = {{.i = chunks}, {.i = pdim[i]}};
        tj_node *c = tj_node_create_op(g, chunk_op, &a, 1, attrs, 2, (int)chunks);
        if (!c || tj_node_insert_before(c, k) != TJ_OK) return tj_last_status();
        const tj_type *at = tj_value_type(a);
        int64_t sizes[TJ_MAX_DIMS];
        memcpy(sizes, at->sizes, sizeof sizes);
        sizes[pdim[i]] /= chunks;
        tj_type piece = tj_type_tensor_of((tj_dtype)at->dtype, sizes, at->ndim);
        for (int j = 0; j < chunks; j++) {
            pieces[i][j] = tj_node_output(c, j);
            tj_status st = tj_value_set_type(pieces[i][j], &piece);
            if (st) return st;
        }
    }
    for (int j = 0; j < chunks; j++) {
        if (tj_value_num_uses(tj_node_output(k, j)) == 0) continue; /* nobody reads this piece */
        tj_value *ins[3];
        for (int i = 0; i < n_in; i++) ins[i] = chunked[i] ? pieces[i][j] : tj_node_input(p, i);
        tj_node *q = tj_node_create_op(g, tj_node_op(p), ins, n_in, tj_node_attrs(p),
                                       tj_node_num_attrs(p), 1);
        tj_value *v = append_before(k, q);
        if (!v) return tj_last_status();
        tj_status st = tj_value_set_type(v, tj_value_type(tj_node_output(k, j)));
        if (!st) st = tj_value_replace_uses(tj_node_output(k, j), v);
        if (st) return st;
    }
    tj_status st = tj_node_destroy(k);
    if (!st) st = tj_node_destroy(p);
    *changed = true;
    return st;
}

static tj_status hoist_chunks(tj_graph *g) {
    bool changed = true;
    while (changed) {
        changed = false;
        for (tj_node *n = tj_block_first(tj_graph_block(g)); n && !changed; n = tj_node_next(n)) {
            int64_t chunks;
            int dim;
            if (!even_chunk(n, &chunks, &dim)) continue;
            tj_status st = hoist_one(g, n, chunks, dim, &changed);
            if (st) return st;
        }
    }
    return TJ_OK;
}

/* ---- grouping --------------------------------------------------------------------- */

static const tj_type *group_type(const tj_node *c) { return tj_value_type(tj_node_output(c, 0)); }

/* Nodes a member brings into a group (a group: its subgraph's). */
static int member_size(const tj_node *n) {
    return is_group(n) ? tj_block_num_nodes(tj_graph_block(tj_node_subgraph(n))) : 1;
}

/* What a group holds, known without walking its members: the pass asks for
 * every candidate pair, and groups grow to TJF_MAX_GROUP_NODES nodes. Group
 * nodes live until their graph is freed, so a destroyed group's key is never
 * reused; a merge makes a new group, and an absorb updates its group's entry.
 * NULL (the public checks): walk. */
typedef struct group_memo {
    tjc_ptrmap flags; /* group node -> HOLDS_KNOWN | HOLDS_ROW | HOLDS_CHUNK | HOLDS_ANCHOR */
} group_memo;

enum { HOLDS_KNOWN = 1, HOLDS_ROW = 2, HOLDS_CHUNK = 4, HOLDS_ANCHOR = 8 };

static int group_holds(const tj_node *grp, group_memo *memo) {
    int known = memo ? (int)(intptr_t)tjc_ptrmap_get(&memo->flags, grp) : 0;
    if (known) return known;
    int flags = HOLDS_KNOWN;
    for (const tj_node *n = tj_block_first(tj_graph_block(tj_node_subgraph(grp))); n; n = tj_node_next(n)) {
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK) flags |= HOLDS_CHUNK;
        else if (tjf_row_op(n) != TJF_ROW_NONE) flags |= HOLDS_ROW;
        else if (tjf_anchor_op(n) != TJF_ANCHOR_NONE) flags |= HOLDS_ANCHOR;
    }
    if (memo) (void)tjc_ptrmap_put(&memo->flags, grp, (void *)(intptr_t)flags); /* else: walk again */
    return flags;
}

/* What node p brings into a group: HOLDS_ROW, HOLDS_ANCHOR or nothing. */
static int node_holds(const tj_node *p) {
    if (tjf_row_op(p) != TJF_ROW_NONE) return HOLDS_ROW;
    return tjf_anchor_op(p) != TJF_ANCHOR_NONE ? HOLDS_ANCHOR : 0;
}

/* After p joined group c in place (absorb); holds: node_holds(p). */
static void note_absorbed(group_memo *memo, const tj_node *c, int holds) {
    int known = (int)(intptr_t)tjc_ptrmap_get(&memo->flags, c);
    if (known && holds) (void)tjc_ptrmap_put(&memo->flags, c, (void *)(intptr_t)(known | holds));
}

/* Whether group c chunks a value that p makes: the runner chunks only group
 * inputs, so p must stay outside (else the chunk would read a value made
 * inside the merged group). */
static bool chunks_output_of(const tj_node *c, const tj_node *p, group_memo *memo) {
    if (!is_group(c) || !(group_holds(c, memo) & HOLDS_CHUNK)) return false;
    const tj_block *b = tj_graph_block(tj_node_subgraph(c));
    for (int j = 0; j < tj_node_num_inputs(c); j++) { /* p's results only, not every member */
        if (tj_value_node(tj_node_input(c, j)) != p) continue;
        const tj_value *in = tj_block_input(b, j);
        for (int u = 0; u < tj_value_num_uses(in); u++)
            if (tj_node_kind_of(tj_value_use(in, u).user) == TJ_NODE_CONSTANT_CHUNK) return true;
    }
    return false;
}

static bool has_row(const tj_node *m, group_memo *memo) {
    return is_group(m) ? (group_holds(m, memo) & HOLDS_ROW) != 0 : tjf_row_op(m) != TJF_ROW_NONE;
}

/* The anchor of a member (a node or a group), or NULL. */
static const tj_node *anchor_of(const tj_node *m, group_memo *memo) {
    if (is_group(m))
        return group_holds(m, memo) & HOLDS_ANCHOR ? tjf_anchor_node(tj_node_subgraph(m)) : NULL;
    return tjf_anchor_op(m) != TJF_ANCHOR_NONE ? m : NULL;
}

/* The anchor rules (fuse_rules.h) for members a before b. */
static tjf_verdict check_anchors(const tj_node *a, const tj_node *b, group_memo *memo) {
    const tj_node *anchor_a = anchor_of(a, memo), *anchor_b = anchor_of(b, memo);
    if (!anchor_a && !anchor_b) return verdict(TJF_FUSIBLE);
    return tjf_check_anchors(a, b, anchor_a, anchor_b, has_row(a, memo) || has_row(b, memo));
}

/* The row op of a member (a node or a group), or NULL. */
static const tj_node *row_of(const tj_node *m) {
    if (is_group(m)) return tjf_row_node(tj_node_subgraph(m));
    return tjf_row_op(m) != TJF_ROW_NONE ? m : NULL;
}

static bool all_ones(const tj_type *t) {
    for (int d = 0; d < t->ndim; d++)
        if (t->sizes[d] != 1) return false;
    return true;
}

/* Whether v, read inside member m (a node, or a node of group m's subgraph),
 * is made inside the merge of m and other. */
static bool made_inside(const tj_value *v, const tj_node *m, const tj_node *other) {
    const tj_node *p = tj_value_node(v);
    if (is_group(m) && tj_node_kind_of(p) == TJ_NODE_PARAM) { /* a block input: the group's operand */
        const tj_block *b = tj_graph_block(tj_node_subgraph(m));
        for (int j = 0; j < tj_block_num_inputs(b); j++)
            if (tj_block_input(b, j) == v) return tj_value_node(tj_node_input(m, j)) == other;
        return false;
    }
    return is_group(m) || p == other;
}

/* A reduction r's group, r in a or b: with a dropped dim (keepdim false)
 * the backends keep a reduced value as one per row, which broadcasting by
 * the sizes would align with the last dim instead; so no member reads a
 * value of the reduced sizes into a result of other sizes, and a reduced
 * member reads from outside only values of sizes all 1. */
static tjf_verdict check_reduction(const tj_node *a, const tj_node *b, const tj_node *r) {
    const tj_type *full = tj_value_type(tj_node_input(r, 0)), *red = tj_value_type(tj_node_output(r, 0));
    const tj_node *members[2] = {a, b};
    for (int m = 0; m < 2; m++)
        for (int o = 0; o < tj_node_num_outputs(members[m]); o++) {
            const tj_type *t = tj_value_type(tj_node_output(members[m], o));
            if (!tjf_same_sizes(t, full) && !tjf_same_sizes(t, red))
                return (tjf_verdict){.reason = TJF_ROW_SIZES, .value = tj_node_output(members[m], o)};
        }
    if (tjf_row_keepdim(r) || all_ones(red)) return verdict(TJF_FUSIBLE);
    for (int m = 0; m < 2; m++) {
        const tj_node *mm = members[m];
        const tj_node *n = is_group(mm) ? tj_block_first(tj_graph_block(tj_node_subgraph(mm))) : mm;
        for (; n; n = is_group(mm) ? tj_node_next(n) : NULL) {
            if (tj_node_kind_of(n) != TJ_NODE_OP || n == r || tj_node_num_outputs(n) != 1) continue;
            bool reduced = tjf_same_sizes(tj_value_type(tj_node_output(n, 0)), red);
            for (int i = 0; i < tj_node_num_inputs(n); i++) {
                const tj_value *v = tj_node_input(n, i);
                const tj_type *t = tj_value_type(v);
                if (!reduced && tjf_same_sizes(t, red))
                    return (tjf_verdict){.reason = TJF_ROW_DROPPED_DIM, .value = v};
                if (reduced && !all_ones(t) && !made_inside(v, mm, members[1 - m]))
                    return (tjf_verdict){.reason = TJF_ROW_OUTSIDE_READ, .value = v};
            }
        }
    }
    return verdict(TJF_FUSIBLE);
}

/* A group holds one row op. A normalisation's members have its sizes, so
 * that it sees whole rows of the iteration space; a reduction's have its
 * input's or its result's (check_reduction). */
static tjf_verdict check_rows(const tj_node *a, const tj_node *b, group_memo *memo) {
    bool in_a = has_row(a, memo), in_b = has_row(b, memo);
    if (!in_a && !in_b) return verdict(TJF_FUSIBLE);
    const tj_node *ra = in_a ? row_of(a) : NULL, *rb = in_b ? row_of(b) : NULL;
    if (ra && rb) return verdict(TJF_TWO_ROW_OPS);
    const tj_node *r = ra ? ra : rb;
    if (!r) return verdict(TJF_FUSIBLE);
    if (tjf_row_reduces(tjf_row_op(r))) return check_reduction(a, b, r);
    const tj_type *rt = tj_value_type(tj_node_output(r, 0));
    const tj_node *members[2] = {a, b};
    for (int m = 0; m < 2; m++)
        for (int o = 0; o < tj_node_num_outputs(members[m]); o++)
            if (!tjf_same_sizes(tj_value_type(tj_node_output(members[m], o)), rt))
                return (tjf_verdict){.reason = TJF_ROW_SIZES, .value = tj_node_output(members[m], o)};
    return verdict(TJF_FUSIBLE);
}

/* Whether p can join consumer c (see the file comment). */
static tjf_verdict check_merge(const tj_node *p, const tj_node *c, group_memo *memo) {
    bool chunk = tjf_is_even_chunk(p);
    if (!chunk && !is_group(p)) {
        tjf_verdict v = tjf_check_node(p);
        if (v.reason != TJF_FUSIBLE) return v;
    }
    if (chunks_output_of(c, p, memo)) return verdict(TJF_CHUNKS_PRODUCER);
    if (!tj_node_is_before(p, c)) return verdict(TJF_NOT_BEFORE);
    if (!chunk) {
        tjf_verdict rows = check_rows(p, c, memo);
        if (rows.reason != TJF_FUSIBLE) return rows;
    }
    tjf_verdict anchors = check_anchors(p, c, memo);
    if (anchors.reason != TJF_FUSIBLE) return anchors;
    if (member_size(p) + member_size(c) > TJF_MAX_GROUP_NODES)
        return (tjf_verdict){.reason = TJF_GROUP_SIZE, .count = member_size(p) + member_size(c)};
    for (int o = 0; o < tj_node_num_outputs(p); o++) {
        const tj_value *v = tj_node_output(p, o);
        for (int u = 0; u < tj_value_num_uses(v); u++) {
            const tj_node *user = tj_value_use(v, u).user;
            if (user == c) continue;
            bool after = tj_node_kind_of(user) == TJ_NODE_RETURN || tj_node_is_before(c, user);
            if (!after) return (tjf_verdict){.reason = TJF_USED_BEFORE, .node = user};
            if (chunk) return (tjf_verdict){.reason = TJF_CHUNK_USED_OUTSIDE, .node = user};
            if (!tjf_same_sizes(tj_value_type(v), group_type(c))) /* a group output */
                return (tjf_verdict){.reason = TJF_OUTPUT_SIZES, .value = v};
        }
    }
    return verdict(TJF_FUSIBLE);
}

tjf_verdict tjf_check_merge(const tj_node *p, const tj_node *c) { return check_merge(p, c, NULL); }

static bool can_merge(const tj_node *p, const tj_node *c, group_memo *memo) {
    return check_merge(p, c, memo).reason == TJF_FUSIBLE;
}

/* ---- operand counts --------------------------------------------------------------- */

static bool has_value(const tj_value *const *vs, int n, const tj_value *v) {
    for (int i = 0; i < n; i++)
        if (vs[i] == v) return true;
    return false;
}

/* The operands of the group that merge() would make of p and c: the distinct
 * outside values they read, their results read elsewhere, and chunk pieces. */
static int merge_operands(const tj_node *p, const tj_node *c) {
    const tj_node *members[2] = {p, c};
    const tj_value *seen[2 * (TJF_MAX_ARGS + 4)];
    int n_in = 0, n_out = 0, n_pieces = 0;
    for (int m = 0; m < 2; m++) {
        for (int i = 0; i < tj_node_num_inputs(members[m]); i++) {
            const tj_value *v = tj_node_input(members[m], i);
            if (tj_value_node(v) == p || has_value(seen, n_in, v)) continue;
            if (n_in == (int)(sizeof seen / sizeof seen[0])) return n_in + 1; /* over any cap */
            seen[n_in++] = v;
        }
        for (int o = 0; o < tj_node_num_outputs(members[m]); o++) {
            const tj_value *v = tj_node_output(members[m], o);
            bool outside = false;
            for (int u = 0; u < tj_value_num_uses(v); u++)
                outside |= tj_value_use(v, u).user != p && tj_value_use(v, u).user != c;
            n_out += outside;
        }
        if (is_group(members[m])) {
            const tj_block *b = tj_graph_block(tj_node_subgraph(members[m]));
            for (const tj_node *n = tj_block_first(b); n; n = tj_node_next(n))
                if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK) n_pieces += tj_node_num_outputs(n);
        } else if (tjf_is_even_chunk(members[m])) {
            n_pieces += tj_node_num_outputs(members[m]);
        }
    }
    return n_in + n_out + n_pieces;
}

/* For absorb(): where each input of p goes among c's inputs (slot), whether
 * p's result is read outside c, how often c reads it, and the operands the
 * grown group would have. */
static int absorb_plan(const tj_node *p, const tj_node *c, int *slot, bool *outside, int *n_read) {
    const tj_value *out = tj_node_output(p, 0);
    int n_in = tj_node_num_inputs(p), n_c_in = tj_node_num_inputs(c), n_new = 0;
    for (int i = 0; i < n_in; i++) {
        const tj_value *v = tj_node_input(p, i);
        slot[i] = -1;
        for (int j = 0; j < n_c_in && slot[i] < 0; j++)
            if (tj_node_input(c, j) == v) slot[i] = j;
        for (int k = 0; k < i && slot[i] < 0; k++)
            if (tj_node_input(p, k) == v) slot[i] = slot[k]; /* add(x, x) */
        if (slot[i] < 0) slot[i] = n_c_in + n_new++;
    }
    *outside = false;
    *n_read = 0;
    for (int u = 0; u < tj_value_num_uses(out); u++) {
        if (tj_value_use(out, u).user == c) ++*n_read;
        else *outside = true;
    }
    return n_c_in + n_new - 1 + tj_node_num_outputs(c) + (*outside ? 1 : 0);
}

tjf_verdict tjf_check_operands(const tj_node *p, const tj_node *c) {
    int count;
    if (is_group(c) && fusible_node(p)) { /* the fuser absorbs p into c */
        int slot[3];
        bool outside;
        int n_read;
        count = absorb_plan(p, c, slot, &outside, &n_read);
        if (n_read != 1) return verdict(TJF_READ_TWICE);
    } else {
        count = merge_operands(p, c);
    }
    return (tjf_verdict){.reason = count > MAX_OPERANDS ? TJF_OPERAND_CAP : TJF_FUSIBLE, .count = count};
}

/* Copies member m into sub, mapping values through map (outside values
 * become subgraph inputs, collected in ext_in). */
typedef struct builder {
    tj_graph *sub;
    tj_value_map *map;
    tj_value **ext_in;
    int n_ext_in;
} builder;

static tj_value *inner(builder *B, tj_value *v) {
    tj_value *m = tj_value_map_get(B->map, v);
    if (m) return m;
    if (B->n_ext_in >= MAX_OPERANDS) return NULL;
    m = tj_graph_add_input(B->sub, tj_value_type(v), NULL);
    if (!m || tj_value_map_set(B->map, v, m) != TJ_OK) return NULL;
    B->ext_in[B->n_ext_in++] = v;
    return m;
}

static tj_status copy_member(builder *B, tj_node *m) {
    tj_value *ins[TJF_MAX_ARGS + 4];
    int n_in = tj_node_num_inputs(m);
    if (n_in > TJF_MAX_ARGS) return TJ_ERR_UNSUPPORTED;
    for (int i = 0; i < n_in; i++)
        if (!(ins[i] = inner(B, tj_node_input(m, i)))) return TJ_ERR_UNSUPPORTED;
    if (is_group(m)) {
        tj_graph *src = tj_node_subgraph(m);
        tj_value *outs[TJF_MAX_ARGS + 4];
        if (tj_graph_num_outputs(src) > TJF_MAX_ARGS) return TJ_ERR_UNSUPPORTED;
        tj_status st = tj_graph_insert_before(tj_block_return(tj_graph_block(B->sub)), src, ins, outs);
        for (int o = 0; st == TJ_OK && o < tj_node_num_outputs(m); o++)
            st = tj_value_map_set(B->map, tj_node_output(m, o), outs[o]);
        return st;
    }
    int64_t chunks;
    int dim;
    tj_node *copy;
    if (even_chunk(m, &chunks, &dim)) {
        copy = tj_node_create(B->sub, TJ_NODE_CONSTANT_CHUNK, ins, 1, (int)chunks);
        tj_attr c = {.i = chunks}, d = {.i = dim};
        if (!copy || tj_node_set_attr(copy, "chunks", TJ_ATTR_INT, &c) ||
            tj_node_set_attr(copy, "dim", TJ_ATTR_INT, &d))
            return tj_last_status();
    } else {
        copy = tj_node_create_op(B->sub, tj_node_op(m), ins, n_in, tj_node_attrs(m),
                                 tj_node_num_attrs(m), tj_node_num_outputs(m));
    }
    if (!copy || tj_block_append(tj_graph_block(B->sub), copy) != TJ_OK) return tj_last_status();
    for (int o = 0; o < tj_node_num_outputs(m); o++) {
        tj_status st = tj_value_set_type(tj_node_output(copy, o), tj_value_type(tj_node_output(m, o)));
        if (!st) st = tj_value_map_set(B->map, tj_node_output(m, o), tj_node_output(copy, o));
        if (st) return st;
    }
    return TJ_OK;
}

static bool is_member(tj_node *const *members, int n, const tj_node *x) {
    for (int i = 0; i < n; i++)
        if (members[i] == x) return true;
    return false;
}

/* Replaces p and c (p before c) by one group at c's place; NULL when the
 * group would exceed the operand limit (the graph is then unchanged). */
static tj_node *merge(tj_graph *g, tj_node *p, tj_node *c, tj_status *st) {
    *st = TJ_OK;
    if (merge_operands(p, c) > MAX_OPERANDS) return NULL; /* too big: leave them apart */
    tj_node *members[2] = {p, c};
    tj_value *ext_in[MAX_OPERANDS], *ext_out[MAX_OPERANDS];
    builder B = {tj_graph_new(), tj_value_map_new(), ext_in, 0};
    int n_out = 0, n_pieces = 0;
    *st = B.sub && B.map ? TJ_OK : TJ_ERR_MEMORY;
    for (int i = 0; i < 2 && *st == TJ_OK; i++) *st = copy_member(&B, members[i]);
    for (int i = 0; i < 2 && *st == TJ_OK; i++) { /* values used outside become outputs */
        for (int o = 0; o < tj_node_num_outputs(members[i]) && *st == TJ_OK; o++) {
            tj_value *v = tj_node_output(members[i], o);
            bool outside = false;
            for (int u = 0; u < tj_value_num_uses(v); u++)
                outside |= !is_member(members, 2, tj_value_use(v, u).user);
            if (!outside) continue;
            if (n_out == MAX_OPERANDS) *st = TJ_ERR_UNSUPPORTED;
            else if ((*st = tj_graph_add_output(B.sub, tj_value_map_get(B.map, v))) == TJ_OK)
                ext_out[n_out++] = v;
        }
    }
    for (tj_node *n = B.sub ? tj_block_first(tj_graph_block(B.sub)) : NULL; n; n = tj_node_next(n))
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK) n_pieces += tj_node_num_outputs(n);
    tj_node *grp = NULL;
    if (*st == TJ_OK && B.n_ext_in + n_out + n_pieces <= MAX_OPERANDS)
        grp = tj_node_create_fusion_group(g, B.sub, ext_in, B.n_ext_in);
    tj_value_map_free(B.map);
    if (!grp) {
        tj_graph_free(B.sub);
        if (*st == TJ_ERR_UNSUPPORTED) *st = TJ_OK; /* too big: leave them apart */
        if (*st == TJ_OK) tj_clear_error();
        else if (!tj_last_status()) tjc_error(*st, "fuse: out of memory");
        return NULL;
    }
    if ((*st = tj_node_insert_before(grp, c)) != TJ_OK) return NULL;
    for (int o = 0; o < n_out; o++)
        if ((*st = tj_value_replace_uses(ext_out[o], tj_node_output(grp, o))) != TJ_OK) return NULL;
    if ((*st = tj_node_destroy(c)) != TJ_OK || (*st = tj_node_destroy(p)) != TJ_OK) return NULL;
    return grp;
}

/* Moves the single fusible node p into group c (p before c) in place: p's
 * copy goes first in c's subgraph, p's outside inputs join c's inputs, and
 * p's output becomes a group output when read after c. Costs O(p's inputs
 * and uses + c's operands), not a copy of the whole group, so growing a group
 * node by node stays linear. false (the graph unchanged) when the operands
 * would exceed the limit. */
static bool absorb(tj_node *p, tj_node *c, tj_status *st) {
    tj_graph *sub = tj_node_subgraph(c);
    tj_block *b = tj_graph_block(sub);
    tj_value *out = tj_node_output(p, 0);
    int n_in = tj_node_num_inputs(p), n_read;
    int slot[3];
    bool outside;
    if (absorb_plan(p, c, slot, &outside, &n_read) > MAX_OPERANDS || n_read != 1) return false;
    tj_value *ins[3];
    for (int i = 0; i < n_in && *st == TJ_OK; i++) {
        tj_value *v = tj_node_input(p, i);
        if (slot[i] >= tj_node_num_inputs(c) &&
            (!tj_graph_add_input(sub, tj_value_type(v), NULL) || tj_node_add_input(c, v) != TJ_OK))
            *st = tj_last_status() ? tj_last_status() : TJ_ERR_MEMORY;
        ins[i] = tj_block_input(b, slot[i]);
    }
    tj_node *copy = *st ? NULL
                        : tj_node_create_op(sub, tj_node_op(p), ins, n_in, tj_node_attrs(p),
                                            tj_node_num_attrs(p), 1);
    tj_node *front = tj_block_first(b);
    if (!copy || (front ? tj_node_insert_before(copy, front) : tj_block_append(b, copy)) != TJ_OK) {
        if (*st == TJ_OK) *st = tj_last_status() ? tj_last_status() : TJ_ERR_MEMORY;
        return false;
    }
    tj_value *inner_out = tj_node_output(copy, 0);
    if ((*st = tj_value_set_type(inner_out, tj_value_type(out)))) return false;
    int j = 0;
    while (tj_node_input(c, j) != out) j++;
    if ((*st = tj_value_replace_uses(tj_block_input(b, j), inner_out)) ||
        (*st = tj_block_remove_input(b, j)) || (*st = tj_node_remove_input(c, j)))
        return false;
    if (outside) {
        tj_value *go;
        if ((*st = tj_graph_add_output(sub, inner_out)) ||
            !(go = tj_node_add_output(c, tj_value_type(out)))) {
            if (*st == TJ_OK) *st = tj_last_status();
            return false;
        }
        if ((*st = tj_value_replace_uses(out, go))) return false;
    }
    *st = tj_node_destroy(p);
    return *st == TJ_OK;
}

/* ---- siblings and concatenation ------------------------------------------------------ */

static bool same_device(const tj_type *a, const tj_type *b) {
    return a->device_type == b->device_type && a->device_index == b->device_index;
}

/* Whether group a may merge with group b, a later group with no path from a
 * (they feed one consumer): at b's place, so every user of a's results must
 * come after b, and the two must share their iteration sizes and device. */
static tjf_verdict check_siblings(const tj_node *a, const tj_node *b, group_memo *memo) {
    if (!is_group(a) || !is_group(b) || a == b) return verdict(TJF_NOT_AN_OP);
    if (!tj_node_is_before(a, b)) return verdict(TJF_NOT_BEFORE);
    if (!tjf_same_sizes(group_type(a), group_type(b)) || !same_device(group_type(a), group_type(b)))
        return (tjf_verdict){.reason = TJF_OUTPUT_SIZES, .value = tj_node_output(a, 0)};
    if (member_size(a) + member_size(b) > TJF_MAX_GROUP_NODES)
        return (tjf_verdict){.reason = TJF_GROUP_SIZE, .count = member_size(a) + member_size(b)};
    tjf_verdict rows = check_rows(a, b, memo);
    if (rows.reason != TJF_FUSIBLE) return rows;
    tjf_verdict anchors = check_anchors(a, b, memo);
    if (anchors.reason != TJF_FUSIBLE) return anchors;
    for (int o = 0; o < tj_node_num_outputs(a); o++) {
        const tj_value *v = tj_node_output(a, o);
        for (int u = 0; u < tj_value_num_uses(v); u++) {
            const tj_node *user = tj_value_use(v, u).user;
            if (user != b && tj_node_kind_of(user) != TJ_NODE_RETURN && !tj_node_is_before(b, user))
                return (tjf_verdict){.reason = TJF_USED_BEFORE, .node = user};
        }
    }
    int count = merge_operands(a, b);
    return (tjf_verdict){.reason = count > MAX_OPERANDS ? TJF_OPERAND_CAP : TJF_FUSIBLE, .count = count};
}

tjf_verdict tjf_check_siblings(const tj_node *a, const tj_node *b) { return check_siblings(a, b, NULL); }

/* Groups that feed one consumer become one group (the LSTM cell's backward:
 * the gates' gradients made by two groups for one aten::cat): one kernel
 * reads their shared inputs once. */
static int by_position(const void *a, const void *b) {
    const tj_node *x = *(tj_node *const *)a, *y = *(tj_node *const *)b;
    if (x == y) return 0;
    return tj_node_is_before(x, y) ? -1 : 1;
}

/* Merges the groups that feed consumer n, taken in block order: each joins
 * the newest open group it may merge with, else opens one. Sorting and a
 * few open groups keep a consumer of k inputs (a cat of thousands) at
 * k log k checks, where trying every pair of inputs again after each merge
 * cost k^3. */
static tj_status merge_siblings_of(tj_graph *g, tj_node *n, group_memo *memo, bool *changed) {
    enum { OPEN_MAX = 8 };
    int k = tj_node_num_inputs(n), m = 0;
    tj_node *local[16], **cand = k <= 16 ? local : tjc_malloc(sizeof *cand * (size_t)k);
    if (!cand) return tjc_error(TJ_ERR_MEMORY, "fuse: out of memory");
    for (int i = 0; i < k; i++) {
        tj_node *p = tj_value_node(tj_node_input(n, i));
        if (is_group(p)) cand[m++] = p;
    }
    qsort(cand, (size_t)m, sizeof *cand, by_position);
    tj_node *open[OPEN_MAX];
    int n_open = 0;
    tj_status st = TJ_OK;
    for (int i = 0; i < m && st == TJ_OK; i++) {
        tj_node *b = cand[i];
        if (i > 0 && b == cand[i - 1]) continue; /* read twice */
        bool joined = false;
        for (int o = n_open - 1; o >= 0 && !joined && st == TJ_OK; o--) {
            if (check_siblings(open[o], b, memo).reason != TJF_FUSIBLE) continue;
            tj_node *grp = merge(g, open[o], b, &st);
            if (!grp) continue;
            *changed = joined = true;
            for (int q = o; q + 1 < n_open; q++) open[q] = open[q + 1]; /* the newest now */
            open[n_open - 1] = grp;
        }
        if (joined) continue;
        if (n_open == OPEN_MAX) memmove(open, open + 1, sizeof *open * --n_open);
        open[n_open++] = b;
    }
    if (cand != local) tjc_free(cand);
    return st;
}

static tj_status merge_siblings(tj_graph *g, group_memo *memo, bool *changed) {
    tj_status st = TJ_OK;
    for (tj_node *n = tj_block_last(tj_graph_block(g)); n && st == TJ_OK; n = tj_node_prev(n))
        if (tj_node_num_inputs(n) > 1) st = merge_siblings_of(g, n, memo, changed);
    return st;
}

/* Whether cat node n (aten::cat of a known dim) concatenates exactly the
 * outputs of one group, in order, each read only by it, on a device whose
 * fusion backend writes a concatenation (CUDA: kernels write each piece
 * into its slice; the CPU's backends do not take it). */
static tj_node *concatenated_group(const tj_node *n) {
    if (tj_node_kind_of(n) != TJ_NODE_OP || strcmp(tj_op_name(tj_node_op(n)), "aten::cat")) return NULL;
    if (tj_node_num_inputs(n) < 2) return NULL;
    tj_node *grp = tj_value_node(tj_node_input(n, 0));
    if (!is_group(grp) || tj_node_num_outputs(grp) != tj_node_num_inputs(n)) return NULL;
    const tj_type *t = tj_value_type(tj_node_output(n, 0));
    if (t->device_type != TJ_CUDA || !tjf_known_tensor(tj_node_output(n, 0))) return NULL;
    tj_graph *sub = tj_node_subgraph(grp);
    for (const tj_node *m = tj_block_first(tj_graph_block(sub)); m; m = tj_node_next(m))
        if (tj_node_kind_of(m) == TJ_NODE_OP && !tjf_fusible_op(tj_node_op(m))) return NULL; /* one cat */
    for (int i = 0; i < tj_node_num_inputs(n); i++) {
        tj_value *v = tj_node_input(n, i);
        if (v != tj_node_output(grp, i) || tj_value_num_uses(v) != 1) return NULL;
    }
    return grp;
}

/* cat(group outputs) becomes the group's last node: the group's one output
 * is the concatenation, which its kernel writes piece by piece. */
static tj_status fuse_concat(tj_node *cat, tj_node *grp) {
    tj_graph *sub = tj_node_subgraph(grp);
    tj_block *b = tj_graph_block(sub);
    int n = tj_node_num_inputs(cat);
    tj_value *pieces[TJF_MAX_ARGS];
    if (n > TJF_MAX_ARGS) return TJ_OK;
    for (int i = 0; i < n; i++) pieces[i] = tj_block_output(b, i);
    tj_node *inner = tj_node_create_op(sub, tj_node_op(cat), pieces, n, tj_node_attrs(cat),
                                       tj_node_num_attrs(cat), 1);
    if (!inner || tj_block_append(b, inner) != TJ_OK) return tj_last_status() ? tj_last_status() : TJ_ERR_MEMORY;
    tj_status st = tj_value_set_type(tj_node_output(inner, 0), tj_value_type(tj_node_output(cat, 0)));
    for (int i = n - 1; i >= 0 && st == TJ_OK; i--) st = tj_block_remove_output(b, i);
    if (!st) st = tj_graph_add_output(sub, tj_node_output(inner, 0));
    /* the group node: one output, the concatenation's type, in place of the cat */
    tj_value *whole = st ? NULL : tj_node_add_output(grp, tj_value_type(tj_node_output(cat, 0)));
    if (!st && !whole) st = tj_last_status() ? tj_last_status() : TJ_ERR_MEMORY;
    if (!st) st = tj_value_replace_uses(tj_node_output(cat, 0), whole);
    if (!st) st = tj_node_destroy(cat);
    for (int i = n - 1; i >= 0 && st == TJ_OK; i--) st = tj_node_remove_output(grp, i);
    return st;
}

static tj_status fuse_concats(tj_graph *g) {
    tj_status st = TJ_OK;
    for (tj_node *n = tj_block_last(tj_graph_block(g)); n && st == TJ_OK;) {
        tj_node *prev = tj_node_prev(n);
        tj_node *grp = concatenated_group(n);
        if (grp) st = fuse_concat(n, grp);
        n = prev;
    }
    return st;
}

tj_status tj_pass_fuse(tj_graph *g) {
    if (!g) return tjc_error(TJ_ERR_ARG, "tj_pass_fuse: graph is NULL");
    tj_status st = hoist_chunks(g);
    group_memo memo;
    tjc_ptrmap_init(&memo.flags);
    bool changed = true;
    while (changed && st == TJ_OK) {
        changed = false;
        if ((st = merge_siblings(g, &memo, &changed))) break;
        for (tj_node *n = tj_block_last(tj_graph_block(g)); n && st == TJ_OK; n = tj_node_prev(n)) {
            if (!fusible_node(n) && !is_group(n)) continue;
            bool used = false; /* a dead consumer is DCE's to remove, not worth a group */
            for (int o = 0; o < tj_node_num_outputs(n); o++) used |= tj_value_num_uses(tj_node_output(n, o)) > 0;
            if (!used) continue;
            /* grown: what the group absorbed during this scan of its inputs; an
             * input refused before may merge now (its path to the group ran
             * through the absorbed node), so a scan that grew the group is
             * followed by another, rather than starting again at each absorb
             * (a scan per absorbed node: the group's operands times its size) */
            bool grown = false;
            for (int i = 0; st == TJ_OK; i++) {
                if (i == tj_node_num_inputs(n)) {
                    if (!grown) break;
                    grown = false;
                    i = -1;
                    continue;
                }
                tj_node *p = tj_value_node(tj_node_input(n, i));
                tj_node_kind k = tj_node_kind_of(p);
                if (k == TJ_NODE_PARAM || !can_merge(p, n, &memo)) continue;
                if (is_group(n) && fusible_node(p)) {
                    int holds = node_holds(p);
                    if (absorb(p, n, &st)) {
                        note_absorbed(&memo, n, holds);
                        i--; /* input i was p's; the next one moved into its place */
                        grown = changed = true;
                    }
                    continue;
                }
                tj_node *grp = merge(g, p, n, &st);
                if (!grp) continue;
                n = grp;
                i = -1; /* scan the new group's inputs from the start */
                changed = true;
            }
        }
    }
    tjc_ptrmap_free(&memo.flags);
    if (st == TJ_OK) st = fuse_concats(g);
    return st;
}
