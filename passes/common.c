/* common.c — the facts and helpers the passes share (passes_internal.h):
 * effects and commutativity read from the op table, layout facts, structural
 * hashing and equality of attributes and tensor constants, and removal of
 * dead nodes. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "passes/grad.h"
#include "passes/passes_internal.h"

/* ---- effects ------------------------------------------------------------------------ */

bool tjp_is_op(const tj_node *n, int id) {
    const tj_op_info *op = tj_node_op(n);
    return op && tj_op_id(op) == id;
}

bool tjp_writes_input(const tj_node *n, int i) {
    const tj_op_info *op = tj_node_op(n);
    if (!op) return false;
    const tj_schema *s = tj_op_schema(op);
    /* a Tensor[] argument is never written in place (no such row exists) */
    if (!s->mutates_inputs || s->has_tensor_list || i < 0 || i >= s->n_tensor_args) return false;
    if (!s->args[s->tensor_pos[i]].mutated) return false;
    const tj_value *v = tj_node_input(n, i);
    /* an absent Tensor(b!)? (prim::None) is not written */
    return v && tj_value_type(v)->kind != TJ_TYPE_NONE;
}

/* A fusion group is pure: its members have no effect (the verifier's
 * invariant 9, docs/ir.md), so neither question looks inside one. */
bool tjp_mutates(const tj_node *n) {
    for (int i = 0; i < tj_node_num_inputs(n); i++)
        if (tjp_writes_input(n, i)) return true;
    return false;
}

bool tjp_is_random(const tj_node *n) {
    const tj_op_info *op = tj_node_op(n);
    return op && tjc_op_is_random(op);
}

bool tjp_has_effect(const tj_node *n) { return tjp_mutates(n) || tjp_is_random(n); }

bool tjp_is_commutative(const tj_node *n) {
    const tj_op_info *op = tj_node_op(n);
    if (!op || tj_node_num_inputs(n) != 2) return false;
    switch (tj_op_id(op)) {
    case TJ_OP_add: {
        /* self + alpha * other is symmetric only when alpha is 1 */
        int k = tj_node_attr_index(n, "alpha");
        return k >= 0 && tj_node_attr_kind(n, k) == TJ_ATTR_SCALAR && tj_node_attr(n, k)->f == 1.0;
    }
    case TJ_OP_mul:
    case TJ_OP_maximum:
    case TJ_OP_minimum:
    case TJ_OP_eq:
    case TJ_OP_ne:
    case TJ_OP_logical_and:
    case TJ_OP_logical_or: return true;
    default: return false;
    }
}

/* ---- layout -------------------------------------------------------------------------- */

bool tjp_type_contiguous(const tj_type *t) {
    if (t->kind != TJ_TYPE_TENSOR || t->ndim == TJ_UNKNOWN) return false;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] == TJ_UNKNOWN_DIM || t->strides[d] == TJ_UNKNOWN_DIM) return false;
        if (t->sizes[d] == 0) return true;
    }
    int64_t expected = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->sizes[d] == 1) continue;
        if (t->strides[d] != expected) return false;
        expected *= t->sizes[d];
    }
    return true;
}

bool tjp_surely_contiguous(const tj_value *v) {
    /* follows input 0 through views that keep a contiguous tensor contiguous;
     * a chain longer than the bound answers "not sure", which is safe, and
     * keeps a graph of n views from costing n times the bound */
    enum { MAX_VIEWS_FOLLOWED = 32 };
    for (int depth = 0; v && depth < MAX_VIEWS_FOLLOWED; depth++) {
        tj_node *n = tj_value_node(v);
        tj_node_kind k = tj_node_kind_of(n);
        if (k == TJ_NODE_CONSTANT) {
            const tj_tensor *t = tj_node_tensor(n);
            return t && tj_is_contiguous(t) && tjp_type_contiguous(tj_value_type(v));
        }
        const tj_op_info *op = tj_node_op(n);
        if (!op || !tjp_type_contiguous(tj_value_type(v))) return false;
        const tj_schema *s = tj_op_schema(op);
        int id = tj_op_id(op);
        if (id == TJ_OP_contiguous) return true;
        if (!s->aliases_self && !s->mutates_self) return true; /* a fresh contiguous tensor */
        bool keeps = id == TJ_OP_view || id == TJ_OP_reshape || id == TJ_OP_flatten ||
                     id == TJ_OP_squeeze || id == TJ_OP_squeeze_dim || id == TJ_OP_unsqueeze;
        if (!keeps) return false;
        v = tj_node_input(n, 0);
    }
    return false;
}

bool tjp_same_shape_type(const tj_type *a, const tj_type *b) {
    if (a->kind != TJ_TYPE_TENSOR || b->kind != TJ_TYPE_TENSOR) return false;
    if (a->dtype == TJ_UNKNOWN || a->dtype != b->dtype) return false;
    if (a->ndim == TJ_UNKNOWN || a->ndim != b->ndim) return false;
    if (a->device_type != b->device_type || a->device_index != b->device_index) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] == TJ_UNKNOWN_DIM || a->sizes[d] != b->sizes[d]) return false;
    return true;
}

/* ---- hashing ----------------------------------------------------------------------------- */

uint64_t tjp_hash_u64(uint64_t h, uint64_t x) {
    /* splitmix64's finaliser over the running state: cheap and well mixed */
    uint64_t z = h ^ (x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t tjp_hash_bytes(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t f = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) f = (f ^ b[i]) * 0x100000001b3ull;
    return tjp_hash_u64(h, f ^ n);
}

uint64_t tjp_hash_str(uint64_t h, const char *s) {
    return s ? tjp_hash_bytes(h, s, strlen(s)) : tjp_hash_u64(h, 0x5a5a);
}

/* Calls fn on the bytes of each element of a CPU tensor in row-major order,
 * at most limit of them; stops early when fn returns false. */
typedef bool (*elem_fn)(void *ctx, const char *elem);
static void for_elements(const tj_tensor *t, int64_t limit, elem_fn fn, void *ctx) {
    int64_t n = tj_numel(t);
    if (n > limit) n = limit;
    int nd = tj_ndim(t);
    const int64_t *sizes = tj_sizes(t), *strides = tj_strides(t);
    int64_t idx[TJ_MAX_DIMS] = {0};
    size_t esz = tj_dtype_size(tj_tensor_dtype(t));
    const char *base = tjc_data_ptr(t);
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int d = 0; d < nd; d++) off += idx[d] * strides[d];
        if (!fn(ctx, base + off * (int64_t)esz)) return;
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < sizes[d]) break;
            idx[d] = 0;
        }
    }
}

typedef struct hash_ctx {
    uint64_t h;
    size_t esz;
} hash_ctx;

static bool hash_elem(void *ctx, const char *elem) {
    hash_ctx *c = ctx;
    c->h = tjp_hash_bytes(c->h, elem, c->esz);
    return true;
}

static bool on_cpu(const tj_tensor *t) { return tj_tensor_device(t).type == TJ_CPU; }

uint64_t tjp_hash_tensor(uint64_t h, const tj_tensor *t) {
    if (!t) return tjp_hash_u64(h, 0x7e);
    h = tjp_hash_u64(h, (uint64_t)tj_tensor_dtype(t));
    h = tjp_hash_u64(h, (uint64_t)tj_ndim(t));
    for (int d = 0; d < tj_ndim(t); d++) h = tjp_hash_u64(h, (uint64_t)tj_sizes(t)[d]);
    if (!on_cpu(t)) return h;
    hash_ctx c = {h, tj_dtype_size(tj_tensor_dtype(t))};
    for_elements(t, TJP_VALUE_COMPARE_MAX, hash_elem, &c);
    return c.h;
}

typedef struct gather_ctx {
    char *out;
    size_t esz, n;
} gather_ctx;

static bool gather_elem(void *ctx, const char *elem) {
    gather_ctx *c = ctx;
    memcpy(c->out + c->n * c->esz, elem, c->esz);
    c->n++;
    return true;
}

bool tjp_tensor_equal(const tj_tensor *a, const tj_tensor *b) {
    if (a == b) return true;
    if (!a || !b || tj_tensor_dtype(a) != tj_tensor_dtype(b) || tj_ndim(a) != tj_ndim(b)) return false;
    for (int d = 0; d < tj_ndim(a); d++)
        if (tj_sizes(a)[d] != tj_sizes(b)[d]) return false;
    int64_t n = tj_numel(a);
    if (!on_cpu(a) || !on_cpu(b) || n > TJP_VALUE_COMPARE_MAX) return false;
    if (n == 0) return true;
    size_t esz = tj_dtype_size(tj_tensor_dtype(a));
    char *ba = tjc_malloc((size_t)n * esz), *bb = tjc_malloc((size_t)n * esz);
    bool eq = false;
    if (ba && bb) {
        gather_ctx ca = {ba, esz, 0}, cb = {bb, esz, 0};
        for_elements(a, n, gather_elem, &ca);
        for_elements(b, n, gather_elem, &cb);
        eq = memcmp(ba, bb, (size_t)n * esz) == 0;
    }
    tjc_free(ba);
    tjc_free(bb);
    return eq;
}

typedef struct all_ctx {
    tj_dtype dtype;
    double v;
    bool all;
} all_ctx;

static bool all_elem(void *ctx, const char *elem) {
    all_ctx *c = ctx;
    double x;
    switch (c->dtype) {
    case TJ_F32: {
        float f;
        memcpy(&f, elem, sizeof f);
        x = f;
        break;
    }
    case TJ_F64: memcpy(&x, elem, sizeof x); break;
    case TJ_I64: {
        int64_t i;
        memcpy(&i, elem, sizeof i);
        x = (double)i;
        break;
    }
    default: {
        bool b;
        memcpy(&b, elem, sizeof b);
        x = b;
    }
    }
    if (x != c->v) c->all = false;
    return c->all;
}

bool tjp_constant_all(const tj_node *n, double v) {
    if (tj_node_kind_of(n) != TJ_NODE_CONSTANT) return false;
    const tj_tensor *t = tj_node_tensor(n);
    if (!t || !on_cpu(t) || tj_numel(t) > TJP_VALUE_COMPARE_MAX) return false;
    all_ctx c = {tj_tensor_dtype(t), v, true};
    for_elements(t, TJP_VALUE_COMPARE_MAX, all_elem, &c);
    return c.all;
}

/* ---- attributes ------------------------------------------------------------------------------ */

static char *subgraph_text(const tj_node *n) {
    tj_graph *sub = tj_node_subgraph(n);
    return sub ? tj_graph_to_string(sub, TJ_PRINT_CANONICAL) : NULL;
}

static uint64_t hash_type(uint64_t h, const tj_type *t) {
    h = tjp_hash_u64(h, (uint64_t)t->kind);
    if (t->kind != TJ_TYPE_TENSOR) return h;
    h = tjp_hash_u64(tjp_hash_u64(h, (uint64_t)t->dtype), (uint64_t)t->ndim);
    for (int d = 0; d < t->ndim && d < TJ_MAX_DIMS; d++) h = tjp_hash_u64(h, (uint64_t)t->sizes[d]);
    return h;
}

/* A subgraph's structure (ops, attributes, wiring by position, types), equal
 * for subgraphs whose canonical text is equal, computed without printing
 * it: canonicalize and CSE hash every fusion group. Each value's hash goes
 * in its scratch word (the subgraph's values are no pass's but this one's
 * while it runs). */
static uint64_t hash_graph(uint64_t h, tj_graph *sub) {
    tj_block *b = tj_graph_block(sub);
    h = tjp_hash_u64(h, (uint64_t)tj_block_num_inputs(b));
    for (int i = 0; i < tj_block_num_inputs(b); i++) {
        tj_value *v = tj_block_input(b, i);
        tj_value_set_scratch(v, (int64_t)hash_type(tjp_hash_u64(7, (uint64_t)i), tj_value_type(v)));
    }
    for (tj_node *n = tj_block_first(b); n; n = tj_node_next(n)) {
        uint64_t nh = tjp_hash_u64(tjp_hash_str(0, tj_node_name(n)), (uint64_t)tj_node_num_inputs(n));
        for (int i = 0; i < tj_node_num_inputs(n); i++)
            nh = tjp_hash_u64(nh, (uint64_t)tj_value_scratch(tj_node_input(n, i)));
        nh = tjp_hash_attrs(nh, n);
        for (int i = 0; i < tj_node_num_outputs(n); i++) {
            tj_value *v = tj_node_output(n, i);
            tj_value_set_scratch(v, (int64_t)hash_type(tjp_hash_u64(nh, (uint64_t)i), tj_value_type(v)));
        }
    }
    for (int i = 0; i < tj_block_num_outputs(b); i++)
        h = tjp_hash_u64(h, (uint64_t)tj_value_scratch(tj_block_output(b, i)));
    return h;
}

uint64_t tjp_hash_attrs(uint64_t h, const tj_node *n) {
    int na = tj_node_num_attrs(n);
    h = tjp_hash_u64(h, (uint64_t)na);
    for (int i = 0; i < na; i++) {
        tj_attr_kind k = tj_node_attr_kind(n, i);
        const tj_attr *a = tj_node_attr(n, i);
        h = tjp_hash_u64(h, (uint64_t)k);
        h = tjp_hash_str(h, tj_node_attr_name(n, i));
        switch (k) {
        case TJ_ATTR_INT: h = tjp_hash_u64(h, (uint64_t)a->i); break;
        case TJ_ATTR_FLOAT: h = tjp_hash_bytes(h, &a->f, sizeof a->f); break;
        case TJ_ATTR_BOOL: h = tjp_hash_u64(h, a->b); break;
        case TJ_ATTR_SCALAR:
            h = tjp_hash_u64(h, (uint64_t)a->scalar.kind);
            h = tjp_hash_bytes(h, &a->scalar.f, sizeof a->scalar.f);
            h = tjp_hash_u64(h, (uint64_t)a->scalar.i);
            break;
        case TJ_ATTR_STR: h = tjp_hash_str(h, a->s); break;
        case TJ_ATTR_INTS:
            h = tjp_hash_bytes(h, a->ints.data, sizeof(int64_t) * (size_t)a->ints.n);
            break;
        case TJ_ATTR_FLOATS:
            h = tjp_hash_bytes(h, a->floats.data, sizeof(double) * (size_t)a->floats.n);
            break;
        case TJ_ATTR_DTYPE: h = tjp_hash_u64(h, (uint64_t)a->dtype); break;
        case TJ_ATTR_TENSOR: h = tjp_hash_tensor(h, tj_node_tensor(n)); break;
        case TJ_ATTR_GRAPH:
            if (tj_node_subgraph(n)) h = hash_graph(h, tj_node_subgraph(n));
            break;
        default: break; /* None; a generator compares by identity, hashes alike */
        }
    }
    return h;
}

static bool attr_equal(const tj_node *x, const tj_node *y, int i) {
    tj_attr_kind k = tj_node_attr_kind(x, i);
    const tj_attr *a = tj_node_attr(x, i), *b = tj_node_attr(y, i);
    if (k != tj_node_attr_kind(y, i)) return false;
    const char *na = tj_node_attr_name(x, i), *nb = tj_node_attr_name(y, i);
    if ((na == NULL) != (nb == NULL) || (na && strcmp(na, nb) != 0)) return false;
    switch (k) {
    case TJ_ATTR_INT: return a->i == b->i;
    case TJ_ATTR_FLOAT: return memcmp(&a->f, &b->f, sizeof a->f) == 0;
    case TJ_ATTR_BOOL: return a->b == b->b;
    case TJ_ATTR_SCALAR: /* stored normalised (tjir_store_attr) */
        return a->scalar.kind == b->scalar.kind && a->scalar.i == b->scalar.i &&
               memcmp(&a->scalar.f, &b->scalar.f, sizeof a->scalar.f) == 0;
    case TJ_ATTR_STR: return a->s && b->s ? strcmp(a->s, b->s) == 0 : a->s == b->s;
    case TJ_ATTR_INTS:
        return a->ints.n == b->ints.n &&
               (a->ints.n == 0 ||
                memcmp(a->ints.data, b->ints.data, sizeof(int64_t) * (size_t)a->ints.n) == 0);
    case TJ_ATTR_FLOATS:
        return a->floats.n == b->floats.n &&
               (a->floats.n == 0 ||
                memcmp(a->floats.data, b->floats.data, sizeof(double) * (size_t)a->floats.n) == 0);
    case TJ_ATTR_DTYPE: return a->dtype == b->dtype;
    case TJ_ATTR_NONE: return true;
    case TJ_ATTR_GENERATOR: return a->gen == b->gen;
    case TJ_ATTR_TENSOR: return tjp_tensor_equal(tj_node_tensor(x), tj_node_tensor(y));
    case TJ_ATTR_GRAPH: {
        char *ta = subgraph_text(x), *tb = subgraph_text(y);
        bool eq = ta && tb && strcmp(ta, tb) == 0;
        tjc_free(ta);
        tjc_free(tb);
        return eq;
    }
    default: return true; /* unset on both */
    }
}

bool tjp_attrs_equal(const tj_node *a, const tj_node *b) {
    if (tj_node_num_attrs(a) != tj_node_num_attrs(b)) return false;
    for (int i = 0; i < tj_node_num_attrs(a); i++)
        if (!attr_equal(a, b, i)) return false;
    return true;
}

/* ---- editing ------------------------------------------------------------------------------- */

static bool unused(const tj_node *n) {
    for (int i = 0; i < tj_node_num_outputs(n); i++)
        if (tj_value_num_uses(tj_node_output(n, i))) return false;
    return true;
}

int tjp_remove_if_dead(tj_node *n) {
    /* a worklist instead of recursion: chains of dead nodes can be long */
    int cap = 16, top = 0, removed = 0;
    tj_node **stack = tjc_malloc(sizeof *stack * (size_t)cap);
    if (!stack) return 0;
    stack[top++] = n;
    while (top) {
        tj_node *m = stack[--top];
        tj_node_kind k = tj_node_kind_of(m);
        if (!tj_node_block(m) || k == TJ_NODE_PARAM || k == TJ_NODE_RETURN || !unused(m) ||
            tjp_has_effect(m))
            continue;
        int ni = tj_node_num_inputs(m);
        if (top + ni > cap) {
            int grown = 2 * (top + ni);
            tj_node **s = tjc_realloc(stack, sizeof *s * (size_t)grown);
            if (!s) break;
            stack = s;
            cap = grown;
        }
        /* collect the definers first: destroying m drops its uses of them */
        int base = top;
        for (int i = 0; i < ni; i++) {
            tj_node *d = tj_value_node(tj_node_input(m, i));
            bool seen = false;
            for (int j = base; j < top && !seen; j++) seen = stack[j] == d;
            if (!seen) stack[top++] = d;
        }
        if (tj_node_destroy(m) != TJ_OK) {
            top = base;
            continue;
        }
        removed++;
    }
    tjc_free(stack);
    return removed;
}

tj_status tjp_for_subgraphs(tj_graph *g, tj_pass_fn pass) {
    for (tj_node *n = tj_block_first(tj_graph_block(g)); n; n = tj_node_next(n)) {
        if (tj_node_kind_of(n) != TJ_NODE_FUSION_GROUP || !tj_node_subgraph(n)) continue;
        tj_status st = pass(tj_node_subgraph(n));
        if (st) return st;
    }
    return TJ_OK;
}

int tjp_emit_n_before(tj_node *pos, int op_id, tj_value *const *inputs, int n_inputs,
                      const tj_attr *attrs, tj_value **outs, int n_outs) {
    const tj_op_info *op = tjc_op(op_id);
    tj_graph *g = tj_node_graph(pos);
    tj_value *in[TJ_MAX_ARGS];
    const tj_type *types[TJ_MAX_ARGS];
    enum { MAX_EMITTED = 4 };
    if (n_inputs > TJ_MAX_ARGS || n_outs > MAX_EMITTED || (!attrs && op->schema.n_attrs))
        return tjc_error(TJ_ERR_INTERNAL, "%s: cannot emit it with these arguments", op->name), -1;
    tj_type out_types[MAX_EMITTED];
    for (int i = 0; i < n_inputs; i++)
        types[i] = inputs[i] && !tjp_is_none(inputs[i]) ? tj_value_type(inputs[i]) : NULL;
    int made = 0;
    /* typed first: a failure leaves the graph as it was */
    if (tjg_infer_types(op, types, n_inputs, attrs, out_types, n_outs, &made) != TJ_OK) return -1;
    if (made != n_outs)
        return tjc_error(TJ_ERR_INTERNAL, "%s: %d outputs to emit, not %d", op->name, made, n_outs), -1;
    for (int i = 0; i < n_inputs; i++) {
        in[i] = inputs[i];
        if (in[i]) continue;
        tj_node *none = tj_node_create(g, TJ_NODE_NONE, NULL, 0, 1);
        if (!none || tj_node_insert_before(none, pos) != TJ_OK) return -1;
        in[i] = tj_node_output(none, 0);
    }
    tj_node *n = tj_node_create_op(g, op, in, n_inputs, attrs, op->schema.n_attrs, n_outs);
    if (!n || tj_node_insert_before(n, pos) != TJ_OK) return -1;
    for (int k = 0; k < n_outs; k++) {
        outs[k] = tj_node_output(n, k);
        if (tj_value_set_type(outs[k], &out_types[k]) != TJ_OK) return -1;
    }
    return n_outs;
}

tj_value *tjp_emit_before(tj_node *pos, int op_id, tj_value *const *inputs, int n_inputs,
                          const tj_attr *attrs) {
    tj_value *out;
    return tjp_emit_n_before(pos, op_id, inputs, n_inputs, attrs, &out, 1) == 1 ? out : NULL;
}

tj_status tjp_replace_value(tj_value *old, tj_value *now) {
    if (tj_value_name(old)) { /* the name moves to the value that now stands for it */
        char *name = tjc_strdup(tj_value_name(old));
        if (!name) return tjc_error(TJ_ERR_MEMORY, "out of memory moving a value's name");
        tj_status st = tj_value_set_name(old, NULL);
        if (!st) st = tj_value_set_name(now, name);
        tjc_free(name);
        if (st) return st;
    }
    return tj_value_replace_uses(old, now);
}

tj_status tjp_destroy_with_nones(tj_node *n) {
    /* by hand: dce would keep a node for its Tensor(b!) arguments */
    tj_node *nones[TJ_MAX_ARGS];
    int n_nones = 0;
    for (int i = 0; i < tj_node_num_inputs(n) && n_nones < TJ_MAX_ARGS; i++) {
        tj_node *d = tj_value_node(tj_node_input(n, i));
        bool seen = false;
        for (int k = 0; k < n_nones; k++) seen |= nones[k] == d;
        if (tj_node_kind_of(d) == TJ_NODE_NONE && !seen) nones[n_nones++] = d;
    }
    tj_status st = tj_node_destroy(n);
    for (int k = 0; k < n_nones && !st; k++)
        if (!tj_value_num_uses(tj_node_output(nones[k], 0))) st = tj_node_destroy(nones[k]);
    return st;
}

bool tjp_known_sizes(const tj_type *t) {
    if (t->kind != TJ_TYPE_TENSOR || t->ndim == TJ_UNKNOWN) return false;
    for (int d = 0; d < t->ndim; d++)
        if (t->sizes[d] == TJ_UNKNOWN_DIM) return false;
    return true;
}

bool tjp_channel_vector(const tj_value *v, int dtype, int64_t c, bool optional) {
    if (tjp_is_none(v)) return optional;
    const tj_type *t = tj_value_type(v);
    return t->kind == TJ_TYPE_TENSOR && t->dtype == dtype && t->ndim == 1 && t->sizes[0] == c &&
           t->device_type == TJ_CPU;
}

bool tjp_is_none(const tj_value *v) { return tj_node_kind_of(tj_value_node(v)) == TJ_NODE_NONE; }
