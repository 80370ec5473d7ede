/* peephole.c — local rewrites, each a named rule of the table below, applied
 * until none matches (so the pass is idempotent). Every rule keeps the
 * rewritten value's dtype and sizes, and none fires on types it cannot read.
 *
 * Two kinds of rule:
 *  - forwarding a fresh result r to an existing value x (x*1, x+0, x-0, x/1,
 *    to(x, x's dtype), clone(x)). r and x then share memory, so the rule
 *    needs: neither alias class written in place anywhere; no graph output
 *    made to alias a graph input, a constant or another output that it did
 *    not alias before; and x contiguous at every replay, unless every user
 *    of r makes a fresh tensor (r was contiguous, x need not be).
 *  - removing or shortening a chain of views (t(t(x)), permute of permute,
 *    view of view, expand to the same shape, contiguous of a contiguous
 *    value). The result has the same geometry as before, so only identity
 *    changes; the rule is skipped when a user of the result writes into it.
 *
 * A constant operand of x*c, x+c, x-c, x/c must have every size 1, so that
 * it cannot broadcast x to a larger shape whatever sizes x has at replay.
 * "expand to the same shape" reads the traced sizes (docs/passes.md). */
#include <math.h>
#include <stdlib.h>

#include "passes/passes_internal.h"

typedef struct ctx {
    tj_graph *g;
    tjp_alias al; /* built at a walk's first question, kept up to date by redirect */
    bool have_al;
    tj_status al_status;
} ctx;

/* The alias analysis, built when a rule first asks (most graphs match no
 * rule, and building it hashes every value); NULL when out of memory. */
static tjp_alias *alias(ctx *c) {
    if (!c->have_al && !c->al_status) {
        c->al_status = tjp_alias_build(&c->al, c->g);
        c->have_al = c->al_status == TJ_OK;
    }
    return c->have_al ? &c->al : NULL;
}

/* ---- guards ---------------------------------------------------------------------------- */

static bool layout_free_use(tj_use u) {
    tj_node_kind k = tj_node_kind_of(u.user);
    if (k == TJ_NODE_FUSION_GROUP) return true; /* the runner checks strides at run time */
    const tj_op_info *op = tj_node_op(u.user);
    if (!op) return false;
    const tj_schema *s = tj_op_schema(op);
    return !s->aliases_self && !s->mutates_self && !tjp_writes_input(u.user, u.index);
}

static bool can_forward(ctx *c, tj_value *r, tj_value *x) {
    if (!tjp_same_shape_type(tj_value_type(r), tj_value_type(x))) return false;
    tjp_alias *al = alias(c);
    if (!al) return false;
    unsigned fr = tjp_alias_flags(al, r), fx = tjp_alias_flags(al, x);
    if ((fr | fx) & TJP_ALIAS_MUTATED) return false;
    if ((fr & TJP_ALIAS_OUTPUT) && (fx & (TJP_ALIAS_EXTERNAL | TJP_ALIAS_OUTPUT))) return false;
    if (tjp_surely_contiguous(x)) return true;
    for (int i = 0; i < tj_value_num_uses(r); i++)
        if (!layout_free_use(tj_value_use(r, i))) return false;
    return true;
}

static bool can_bypass(tj_value *r, tj_value *x) {
    if (!tjp_same_shape_type(tj_value_type(r), tj_value_type(x))) return false;
    for (int i = 0; i < tj_value_num_uses(r); i++) {
        tj_use u = tj_value_use(r, i);
        if (tj_node_kind_of(u.user) != TJ_NODE_RETURN && tjp_writes_input(u.user, u.index))
            return false;
    }
    return true;
}

/* Makes r's uses use x and removes what that leaves dead. The other rules
 * only re-point a view at its base's base, which aliases it already, so this
 * is the one rewrite that changes what may share memory. */
static bool redirect(ctx *c, tj_value *r, tj_value *x) {
    if (tj_value_replace_uses(r, x) != TJ_OK) return false;
    if (c->have_al) tjp_alias_replaced(&c->al, r, x); /* else built later, from the graph as it is */
    tjp_remove_if_dead(tj_value_node(r));
    return true;
}

static bool forward(ctx *c, tj_node *n, tj_value *x) {
    tj_value *r = tj_node_output(n, 0);
    return can_forward(c, r, x) && redirect(c, r, x);
}

static bool bypass(ctx *c, tj_node *n, tj_value *x) {
    tj_value *r = tj_node_output(n, 0);
    return can_bypass(r, x) && redirect(c, r, x);
}

/* ---- operand facts ------------------------------------------------------------------------ */

/* Whether input i of n is a tensor constant whose sizes are all 1 and whose
 * elements all equal v. */
static bool unit_constant(const tj_node *n, int i, double v) {
    const tj_node *d = tj_value_node(tj_node_input(n, i));
    const tj_tensor *t = tj_node_tensor(d);
    if (tj_node_kind_of(d) != TJ_NODE_CONSTANT || !t) return false;
    for (int k = 0; k < tj_ndim(t); k++)
        if (tj_sizes(t)[k] != 1) return false;
    return tjp_constant_all(d, v);
}

static bool float_attr(const tj_node *n, const char *name, double *v) {
    int k = tj_node_attr_index(n, name);
    tj_attr_kind kind = k < 0 ? TJ_ATTR_NONE : tj_node_attr_kind(n, k);
    if (kind != TJ_ATTR_FLOAT && kind != TJ_ATTR_SCALAR) return false;
    *v = tj_node_attr(n, k)->f;
    return true;
}

static bool attr_is(const tj_node *n, const char *name, double want) {
    double v;
    return float_attr(n, name, &v) && v == want;
}

static bool finite_alpha(const tj_node *n) {
    double v;
    return float_attr(n, "alpha", &v) && isfinite(v);
}

/* ---- arithmetic identities ---------------------------------------------------------------- */

static bool mul_by_one(ctx *c, tj_node *n) {
    if (tjp_is_op(n, TJ_OP_mul_scalar))
        return attr_is(n, "other", 1.0) && forward(c, n, tj_node_input(n, 0));
    if (!tjp_is_op(n, TJ_OP_mul)) return false;
    if (unit_constant(n, 1, 1.0) && forward(c, n, tj_node_input(n, 0))) return true;
    return unit_constant(n, 0, 1.0) && forward(c, n, tj_node_input(n, 1));
}

static bool add_zero(ctx *c, tj_node *n) {
    if (tjp_is_op(n, TJ_OP_add_scalar))
        return attr_is(n, "other", 0.0) && finite_alpha(n) && forward(c, n, tj_node_input(n, 0));
    if (!tjp_is_op(n, TJ_OP_add)) return false;
    if (unit_constant(n, 1, 0.0) && finite_alpha(n) && forward(c, n, tj_node_input(n, 0)))
        return true;
    /* 0 + alpha * x is x only for alpha 1 */
    return unit_constant(n, 0, 0.0) && attr_is(n, "alpha", 1.0) && forward(c, n, tj_node_input(n, 1));
}

static bool sub_zero(ctx *c, tj_node *n) {
    if (tjp_is_op(n, TJ_OP_sub_scalar))
        return attr_is(n, "other", 0.0) && finite_alpha(n) && forward(c, n, tj_node_input(n, 0));
    return tjp_is_op(n, TJ_OP_sub) && unit_constant(n, 1, 0.0) && finite_alpha(n) &&
           forward(c, n, tj_node_input(n, 0));
}

static bool div_by_one(ctx *c, tj_node *n) {
    if (tjp_is_op(n, TJ_OP_div_scalar))
        return attr_is(n, "other", 1.0) && forward(c, n, tj_node_input(n, 0));
    return tjp_is_op(n, TJ_OP_div) && unit_constant(n, 1, 1.0) && forward(c, n, tj_node_input(n, 0));
}

static bool to_same_dtype(ctx *c, tj_node *n) {
    if (!tjp_is_op(n, TJ_OP_to_dtype)) return false;
    int k = tj_node_attr_index(n, "dtype");
    const tj_type *xt = tj_value_type(tj_node_input(n, 0));
    return k >= 0 && xt->kind == TJ_TYPE_TENSOR && xt->dtype != TJ_UNKNOWN &&
           (int)tj_node_attr(n, k)->dtype == xt->dtype && forward(c, n, tj_node_input(n, 0));
}

static bool redundant_clone(ctx *c, tj_node *n) {
    return tjp_is_op(n, TJ_OP_clone) && forward(c, n, tj_node_input(n, 0));
}

/* ---- views ----------------------------------------------------------------------------------- */

/* The permutation a t, transpose.int or permute node applies to the dims of
 * its input (output dim i is input dim perm[i]); false for other nodes or
 * when the rank is unknown. */
static bool perm_of(const tj_node *n, int *perm, int *ndim) {
    const tj_type *t = tj_value_type(tj_node_input(n, 0));
    if (!t || t->kind != TJ_TYPE_TENSOR || t->ndim == TJ_UNKNOWN) return false;
    int nd = t->ndim;
    for (int i = 0; i < nd; i++) perm[i] = i;
    *ndim = nd;
    if (tjp_is_op(n, TJ_OP_t)) {
        if (nd == 2) perm[0] = 1, perm[1] = 0;
        return nd <= 2;
    }
    if (tjp_is_op(n, TJ_OP_transpose)) {
        int d0, d1;
        const tj_attr *a = tj_node_attrs(n);
        if (tj_node_num_attrs(n) != 2 || tjc_wrap_dim("peephole", a[0].i, nd, &d0) != TJ_OK ||
            tjc_wrap_dim("peephole", a[1].i, nd, &d1) != TJ_OK) {
            tj_clear_error();
            return false;
        }
        if (nd == 0) return true;
        perm[d0] = d1;
        perm[d1] = d0;
        return true;
    }
    if (tjp_is_op(n, TJ_OP_permute)) {
        const tj_attr *a = tj_node_attr(n, 0);
        if (tj_node_attr_kind(n, 0) != TJ_ATTR_INTS || a->ints.n != nd) return false;
        bool seen[TJ_MAX_DIMS] = {false};
        for (int i = 0; i < nd; i++) {
            int d;
            if (tjc_wrap_dim("peephole", a->ints.data[i], nd, &d) != TJ_OK || seen[d]) {
                tj_clear_error();
                return false;
            }
            seen[d] = true;
            perm[i] = d;
        }
        return true;
    }
    return false;
}

static bool identity(const int *perm, int nd) {
    for (int i = 0; i < nd; i++)
        if (perm[i] != i) return false;
    return true;
}

/* t(t(x)), transpose(transpose(x)), permute(permute(x)) and identity
 * permutations: the composition, x itself when it is the identity. */
static bool permutations(ctx *c, tj_node *n) {
    (void)c;
    int outer[TJ_MAX_DIMS], inner[TJ_MAX_DIMS], nd, nd_in;
    if (!perm_of(n, outer, &nd)) return false;
    tj_value *x = tj_node_input(n, 0);
    if (identity(outer, nd)) return bypass(c, n, x);
    tj_node *d = tj_value_node(x);
    if (tj_node_kind_of(d) != TJ_NODE_OP || !perm_of(d, inner, &nd_in) || nd_in != nd) return false;
    int64_t composed[TJ_MAX_DIMS];
    int comp[TJ_MAX_DIMS];
    for (int i = 0; i < nd; i++) composed[i] = comp[i] = inner[outer[i]];
    tj_value *src = tj_node_input(d, 0);
    if (identity(comp, nd)) return bypass(c, n, src);
    if (!tjp_is_op(n, TJ_OP_permute)) return false; /* t and transpose cannot say every permutation */
    tj_attr dims = {.ints = {composed, nd}};
    if (tj_node_set_attr(n, "dims", TJ_ATTR_INTS, &dims) != TJ_OK ||
        tj_node_set_input(n, 0, src) != TJ_OK)
        return false;
    tjp_remove_if_dead(d);
    return true;
}

/* view(view(x)), reshape(reshape(x)) and mixes with flatten, for x
 * contiguous at every replay: every step is then a view of x's memory with
 * contiguous strides, so the last one can read x directly. */
static bool view_chain(ctx *c, tj_node *n) {
    (void)c;
    if (!tjp_is_op(n, TJ_OP_view) && !tjp_is_op(n, TJ_OP_reshape)) return false;
    tj_node *d = tj_value_node(tj_node_input(n, 0));
    if (!tjp_is_op(d, TJ_OP_view) && !tjp_is_op(d, TJ_OP_reshape) && !tjp_is_op(d, TJ_OP_flatten))
        return false;
    tj_value *x = tj_node_input(d, 0);
    if (!tjp_surely_contiguous(x) || !tjp_type_contiguous(tj_value_type(tj_node_output(n, 0))))
        return false;
    if (tj_node_set_input(n, 0, x) != TJ_OK) return false;
    tjp_remove_if_dead(d);
    return true;
}

static bool expand_same(ctx *c, tj_node *n) {
    (void)c;
    if (!tjp_is_op(n, TJ_OP_expand)) return false;
    tj_value *x = tj_node_input(n, 0);
    const tj_type *rt = tj_value_type(tj_node_output(n, 0)), *xt = tj_value_type(x);
    /* same sizes: no dim was stretched, so the strides are x's too */
    const tj_attr *size = tj_node_attr(n, 0);
    if (tj_node_attr_kind(n, 0) != TJ_ATTR_INTS || size->ints.n != xt->ndim) return false;
    return tjp_same_shape_type(rt, xt) && bypass(c, n, x);
}

static bool contiguous_noop(ctx *c, tj_node *n) {
    (void)c;
    return tjp_is_op(n, TJ_OP_contiguous) && tjp_surely_contiguous(tj_node_input(n, 0)) &&
           bypass(c, n, tj_node_input(n, 0));
}

/* ---- the rules ---------------------------------------------------------------------------------- */

typedef struct rule {
    const char *name;
    bool (*apply)(ctx *c, tj_node *n);
} rule;

static const rule rules[] = {
    {"mul_by_one", mul_by_one},
    {"add_zero", add_zero},
    {"sub_zero", sub_zero},
    {"div_by_one", div_by_one},
    {"to_same_dtype", to_same_dtype},
    {"redundant_clone", redundant_clone},
    {"permutations", permutations},
    {"view_chain", view_chain},
    {"expand_same", expand_same},
    {"contiguous_noop", contiguous_noop},
};
enum { N_RULES = sizeof rules / sizeof rules[0] };

/* One walk over the block; returns whether a rule fired. The alias analysis
 * is built at most once per walk (rebuilding it after each rewrite made a
 * graph of n rewrites cost n^2) and follows the rewrites through redirect. */
static tj_status walk(ctx *c, bool *changed) {
    *changed = false;
    if (c->have_al) tjp_alias_free(&c->al);
    c->have_al = false;
    for (tj_node *n = tj_block_first(tj_graph_block(c->g)), *next; n; n = next) {
        next = tj_node_next(n);
        if (tj_node_kind_of(n) != TJ_NODE_OP || tj_node_num_outputs(n) != 1) continue;
        for (int r = 0; r < N_RULES; r++) {
            if (!rules[r].apply(c, n)) continue;
            *changed = true;
            break;
        }
        if (c->al_status) return c->al_status;
    }
    return TJ_OK;
}

tj_status tj_pass_peephole(tj_graph *g) {
    if (!g) return tjc_error(TJ_ERR_ARG, "peephole: the graph is NULL");
    ctx c = {.g = g};
    tj_status st = TJ_OK;
    /* every rewrite removes a node or shortens a chain, so this ends; the
     * bound only guards against a rule that would undo another */
    bool changed = true;
    for (int round = 0; !st && changed && round < 1000; round++) st = walk(&c, &changed);
    if (c.have_al) tjp_alias_free(&c.al);
    return st;
}
