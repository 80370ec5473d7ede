/* grad_view.c — derivative rules of the view and shape family (grad.h,
 * core/ops_view.def), after PyTorch's derivatives.yaml.
 *
 * g is the output's gradient, x the input. Views that only relabel elements
 * (view, reshape, flatten, squeeze) reshape g back to x's sizes; reorderings
 * apply their inverse; expand sums back with sum_to_size. Views that pick
 * part of x put g into zeros of x's sizes with select_backward or
 * slice_backward, whose own gradients are select and slice again. Ops with
 * several outputs (chunk, split, split_with_sizes, unbind) join their
 * outputs' gradients with cat or stack, filling the pieces nobody
 * differentiated with new_zeros, and write a lone gradient straight into
 * zeros with slice_backward or select_backward. cat and stack hand each
 * input its part of g, converted to the input's dtype. diagonal writes g
 * into zeros with diagonal_scatter; a scatter hands src the part of g its
 * view picks and self g with that part zeroed (a scatter of zeros);
 * as_strided_copy writes g back with as_strided_scatter.
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/scatter.h"
#include "grad.h"

#define G (c->grad_out[0])

/* The graph emitter types at most this many outputs of one node, and its
 * nodes take at most MAX_INPUTS operands. */
enum { MAX_OUTPUTS = 16, MAX_INPUTS = 64 };

/* The type of forward input i. In a graph this reads (so saves) the input;
 * every use for sizes alone goes through here. */
/* sizes and dtype only: the input itself is not saved for backward */
static tj_type in_type(tjg_ctx *c, int i) { return tjg_input_type(c, i); }

static tj_attr ints(const int64_t *v, int n) { return (tj_attr){.ints = {v, n}}; }
static tj_attr int1(int64_t v) { return (tj_attr){.i = v}; }

static tjg_val reshape_to(tjg_ctx *c, tjg_val g, const tj_type *t) {
    tj_attr shape = ints(t->sizes, t->ndim);
    return g ? tjg_op(c, TJ_OP_reshape, &g, 1, &shape) : NULL;
}

/* A dim of an ndim tensor, or -1 with c->status set. */
static int wrap(tjg_ctx *c, int64_t dim, int ndim) {
    int d = -1;
    if (!c->status) c->status = tjc_wrap_dim(c->op->name, dim, ndim, &d);
    return c->status ? -1 : d;
}

/* select_backward(g, sizes, dim, index) */
static tjg_val select_back(tjg_ctx *c, tjg_val g, const tj_type *t, int64_t dim, int64_t index) {
    tj_attr a[3] = {ints(t->sizes, t->ndim), int1(dim), int1(index)};
    return g ? tjg_op(c, TJ_OP_select_backward, &g, 1, a) : NULL;
}

/* slice_backward(g, sizes, dim, start, end, step) */
static tjg_val slice_back(tjg_ctx *c, tjg_val g, const tj_type *t, int64_t dim, int64_t start,
                          int64_t end, int64_t step) {
    tj_attr a[5] = {ints(t->sizes, t->ndim), int1(dim), int1(start), int1(end), int1(step)};
    return g ? tjg_op(c, TJ_OP_slice_backward, &g, 1, a) : NULL;
}

/* ---- relabelling and reordering ------------------------------------------------------ */

static tj_status d_reshape(tjg_ctx *c) { /* view, reshape, flatten, squeeze, squeeze.dim */
    if (!c->needs[0]) return TJ_OK;
    tj_type t = in_type(c, 0);
    c->grad_in[0] = reshape_to(c, G, &t);
    return TJ_OK;
}

static tj_status d_unsqueeze(tjg_ctx *c) { /* g's dim is 1 where unsqueeze added it */
    if (c->needs[0]) c->grad_in[0] = tjg_op(c, TJ_OP_squeeze_dim, &c->grad_out[0], 1, &c->attrs[0]);
    return TJ_OK;
}

static tj_status d_identity(tjg_ctx *c) { /* contiguous */
    if (c->needs[0]) c->grad_in[0] = G;
    return TJ_OK;
}

static tj_status d_transpose(tjg_ctx *c) { /* its own inverse, like t */
    if (c->needs[0]) c->grad_in[0] = tjg_op(c, c->op->id, &c->grad_out[0], 1, c->attrs);
    return TJ_OK;
}

static tj_status d_permute(tjg_ctx *c) {
    if (!c->needs[0] || !G) return TJ_OK;
    const tj_attr *dims = &c->attrs[0];
    int64_t inverse[TJ_MAX_DIMS];
    int nd = tjg_type(c, G).ndim;
    for (int k = 0; k < dims->ints.n && k < nd; k++) {
        int d = wrap(c, dims->ints.data[k], nd);
        if (d < 0) return c->status;
        inverse[d] = k;
    }
    tj_attr a = ints(inverse, nd);
    c->grad_in[0] = tjg_op(c, TJ_OP_permute, &c->grad_out[0], 1, &a);
    return TJ_OK;
}

static tj_status d_expand(tjg_ctx *c) {
    if (c->needs[0]) c->grad_in[0] = tjg_sum_to(c, G, tjg_input(c, 0));
    return TJ_OK;
}

/* ---- parts of one dim ---------------------------------------------------------------- */

static tj_status d_select(tjg_ctx *c) {
    if (!c->needs[0]) return TJ_OK;
    tj_type t = in_type(c, 0);
    c->grad_in[0] = select_back(c, G, &t, c->attrs[0].i, c->attrs[1].i);
    return TJ_OK;
}

static tj_status d_narrow(tjg_ctx *c) {
    if (!c->needs[0]) return TJ_OK;
    tj_type t = in_type(c, 0);
    int d = wrap(c, c->attrs[0].i, t.ndim);
    if (d < 0) return c->status;
    int64_t start = c->attrs[1].i, length = c->attrs[2].i;
    if (start < 0) start += t.sizes[d];
    c->grad_in[0] = slice_back(c, G, &t, d, start, start + length, 1);
    return TJ_OK;
}

static tj_status d_slice(tjg_ctx *c) {
    if (!c->needs[0]) return TJ_OK;
    tj_type t = in_type(c, 0);
    const tj_attr *a = c->attrs;
    c->grad_in[0] = slice_back(c, G, &t, a[0].i, a[1].i, a[2].i, a[3].i);
    return TJ_OK;
}

static tjg_val zeros_of(tjg_ctx *c, tjg_val g, const tj_type *t) {
    tj_attr size = ints(t->sizes, t->ndim);
    return g ? tjg_op(c, TJ_OP_new_zeros, &g, 1, &size) : NULL;
}

static tj_status d_diagonal(tjg_ctx *c) { /* attrs: offset, dim1, dim2 */
    if (!c->needs[0] || !G) return TJ_OK;
    tj_type t = in_type(c, 0);
    tjg_val in[2] = {zeros_of(c, G, &t), G};
    c->grad_in[0] = in[0] ? tjg_op(c, TJ_OP_diagonal_scatter, in, 2, c->attrs) : NULL;
    return TJ_OK;
}

static tj_status d_scatter(tjg_ctx *c) { /* self, src; attrs: the view's */
    if (!G) return TJ_OK;
    if (c->needs[1]) {
        tjg_val part = tjg_op(c, tjc_scatter_view_op(c->op->id), &c->grad_out[0], 1, c->attrs);
        c->grad_in[1] = part ? tjg_sum_to_input(c, part, 1) : NULL; /* in src's dtype */
    }
    if (c->needs[0]) {
        tj_type src = in_type(c, 1);
        tjg_val in[2] = {G, zeros_of(c, G, &src)};
        c->grad_in[0] = in[1] ? tjg_op(c, c->op->id, in, 2, c->attrs) : NULL;
    }
    return TJ_OK;
}

/* as_strided_copy: g written back where it was read; elements read more than
 * once would need their gradients summed, which a scatter does not do */
static tj_status d_as_strided_copy(tjg_ctx *c) { /* attrs: size, stride, storage_offset */
    if (!c->needs[0] || !G) return TJ_OK;
    const tj_attr *a = c->attrs;
    if (tjc_strided_overlaps(a[0].ints.data, a[1].ints.data, a[0].ints.n))
        return c->status = tjc_error(TJ_ERR_UNSUPPORTED, "%s reads some element of self more than "
                                     "once (size and stride overlap); its derivative, which would "
                                     "sum their gradients, is not supported", c->op->name);
    tj_type t = in_type(c, 0);
    tjg_val in[2] = {zeros_of(c, G, &t), G};
    c->grad_in[0] = in[0] ? tjg_op(c, TJ_OP_as_strided_scatter, in, 2, c->attrs) : NULL;
    return TJ_OK;
}

/* ---- several outputs: the gradients joined back ------------------------------------- */

/* cat (or stack) of n values along dim, in groups when n is more than one
 * node may take; stacked groups are joined with cat. */
static tjg_val join(tjg_ctx *c, tjg_val *v, int n, int dim, bool stack) {
    tj_attr d = int1(dim);
    if (n <= MAX_INPUTS) return tjg_op(c, stack ? TJ_OP_stack : TJ_OP_cat, v, n, &d);
    int groups = (n + MAX_INPUTS - 1) / MAX_INPUTS;
    tjg_val *parts = tjc_calloc((size_t)groups, sizeof *parts);
    if (!parts) {
        c->status = tjc_error(TJ_ERR_MEMORY, "the derivative of %s: out of memory", c->op->name);
        return NULL;
    }
    for (int k = 0; k < groups; k++) {
        int at = k * MAX_INPUTS, m = n - at < MAX_INPUTS ? n - at : MAX_INPUTS;
        parts[k] = join(c, v + at, m, dim, stack);
    }
    tjg_val out = join(c, parts, groups, dim, false);
    tjc_free(parts);
    return out;
}

/* The gradient of x from the gradients of its pieces along dim d, piece k
 * starting at start[k] with length len[k] (stack: pieces are single indices
 * with the dim dropped). */
static tj_status join_pieces(tjg_ctx *c, int d, const int64_t *start, const int64_t *len,
                             bool stack) {
    int n = c->n_out, present = 0, last = -1;
    for (int k = 0; k < n; k++)
        if (c->grad_out[k]) present++, last = k;
    if (!c->needs[0] || present == 0) return TJ_OK;
    tj_type t = in_type(c, 0);
    if (c->status) return c->status;
    if (n == 1 && !stack) { /* the piece is all of x */
        c->grad_in[0] = c->grad_out[0];
        return TJ_OK;
    }
    if (present == 1 && n > 1) { /* one piece: straight into zeros */
        c->grad_in[0] = stack ? select_back(c, c->grad_out[last], &t, d, last)
                              : slice_back(c, c->grad_out[last], &t, d, start[last],
                                           start[last] + len[last], 1);
        return TJ_OK;
    }
    tjg_val *v = tjc_calloc((size_t)n, sizeof *v);
    if (!v) return c->status = tjc_error(TJ_ERR_MEMORY, "the derivative of %s: out of memory",
                                         c->op->name);
    for (int k = 0; k < n; k++) {
        v[k] = c->grad_out[k];
        if (v[k]) continue;
        int64_t sizes[TJ_MAX_DIMS];
        int nd = 0;
        for (int e = 0; e < t.ndim; e++)
            if (e != d || !stack) sizes[nd++] = e == d ? len[k] : t.sizes[e];
        tj_attr a = ints(sizes, nd);
        v[k] = tjg_op(c, TJ_OP_new_zeros, &c->grad_out[last], 1, &a);
    }
    c->grad_in[0] = join(c, v, n, d, stack);
    tjc_free(v);
    return TJ_OK;
}

/* chunk, split, split_with_sizes: the pieces' lengths as the shape rules
 * (core/view_rules.c) cut them. */
static tj_status d_split(tjg_ctx *c) {
    if (!c->needs[0]) return TJ_OK;
    tj_type t = in_type(c, 0);
    int id = c->op->id;
    int d = wrap(c, c->attrs[1].i, t.ndim);
    if (d < 0) return c->status;
    int n = c->n_out;
    int64_t *start = tjc_calloc((size_t)n, sizeof *start), *len = tjc_calloc((size_t)n, sizeof *len);
    if (!start || !len) {
        tjc_free(start);
        tjc_free(len);
        return c->status = tjc_error(TJ_ERR_MEMORY, "the derivative of %s: out of memory",
                                     c->op->name);
    }
    int64_t size = t.sizes[d], each;
    if (id == TJ_OP_chunk) {
        int64_t chunks = c->attrs[0].i;
        each = size / chunks + (size % chunks != 0);
    } else {
        each = c->attrs[0].i;
    }
    int64_t at = 0;
    for (int k = 0; k < n; k++) {
        start[k] = at;
        if (id == TJ_OP_split_with_sizes) len[k] = c->attrs[0].ints.data[k];
        else len[k] = each < size - at ? each : size - at;
        at += len[k];
    }
    tj_status st = join_pieces(c, d, start, len, false);
    tjc_free(start);
    tjc_free(len);
    return st;
}

static tj_status d_unbind(tjg_ctx *c) {
    if (!c->needs[0]) return TJ_OK;
    tj_type t = in_type(c, 0);
    int d = wrap(c, c->attrs[0].i, t.ndim);
    if (d < 0) return c->status;
    return join_pieces(c, d, NULL, NULL, true);
}

/* ---- joining several inputs ------------------------------------------------------------ */

/* cat: each input gets its part of g along dim. Legacy empty 1-D inputs
 * (which cat skips) and inputs that want no gradient get none. */
static tj_status d_cat(tjg_ctx *c) {
    if (!G) return TJ_OK;
    int n = c->n_in, ref = -1;
    tj_type *types = tjc_calloc((size_t)n, sizeof *types);
    int *which = tjc_calloc((size_t)n, sizeof *which);
    int64_t *sizes = tjc_calloc((size_t)n, sizeof *sizes);
    tjg_val *parts = tjc_calloc((size_t)n, sizeof *parts);
    if (!types || !which || !sizes || !parts) {
        c->status = tjc_error(TJ_ERR_MEMORY, "the derivative of %s: out of memory", c->op->name);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        types[i] = in_type(c, i);
        if (ref < 0 && !(types[i].ndim == 1 && types[i].sizes[0] == 0)) ref = i;
    }
    if (ref < 0 || c->status) goto done; /* only legacy empties: nothing to hand back */
    int d = wrap(c, c->attrs[0].i, types[ref].ndim), m = 0;
    if (d < 0) goto done;
    for (int i = 0; i < n; i++) {
        bool legacy = types[i].ndim != types[ref].ndim;
        which[i] = legacy ? -1 : m;
        if (!legacy) sizes[m++] = types[i].sizes[d];
    }
    if (m == 1) {
        parts[0] = G;
    } else if (m <= MAX_OUTPUTS) {
        tj_attr a[2] = {ints(sizes, m), int1(d)};
        tjg_op_n(c, TJ_OP_split_with_sizes, &c->grad_out[0], 1, a, parts, m);
    } else {
        int64_t at = 0;
        for (int k = 0; k < m; at += sizes[k], k++) {
            tj_attr a[3] = {int1(d), int1(at), int1(sizes[k])};
            parts[k] = tjg_op(c, TJ_OP_narrow, &c->grad_out[0], 1, a);
        }
    }
    for (int i = 0; i < n && !c->status; i++)
        if (c->needs[i] && which[i] >= 0) c->grad_in[i] = tjg_sum_to(c, parts[which[i]], tjg_input(c, i));
done:
    tjc_free(types);
    tjc_free(which);
    tjc_free(sizes);
    tjc_free(parts);
    return c->status;
}

/* stack: input i gets g's index i along dim. */
static tj_status d_stack(tjg_ctx *c) {
    if (!G) return TJ_OK;
    int n = c->n_in;
    int d = wrap(c, c->attrs[0].i, tjg_type(c, G).ndim);
    if (d < 0) return c->status;
    tjg_val *parts = tjc_calloc((size_t)n, sizeof *parts);
    if (!parts) return c->status = tjc_error(TJ_ERR_MEMORY, "the derivative of %s: out of memory",
                                             c->op->name);
    tj_attr dim = int1(d);
    if (n <= MAX_OUTPUTS) {
        tjg_op_n(c, TJ_OP_unbind, &c->grad_out[0], 1, &dim, parts, n);
    } else {
        for (int i = 0; i < n; i++) {
            tj_attr a[2] = {dim, int1(i)};
            parts[i] = tjg_op(c, TJ_OP_select, &c->grad_out[0], 1, a);
        }
    }
    for (int i = 0; i < n && !c->status; i++)
        if (c->needs[i]) c->grad_in[i] = tjg_sum_to(c, parts[i], tjg_input(c, i));
    tjc_free(parts);
    return c->status;
}

/* ---- the gradient ops' own gradients ---------------------------------------------------- */

static tj_status d_select_backward(tjg_ctx *c) { /* attrs: input_sizes, dim, index */
    tj_attr a[2] = {c->attrs[1], c->attrs[2]};
    if (c->needs[0] && G) c->grad_in[0] = tjg_op(c, TJ_OP_select, &c->grad_out[0], 1, a);
    return TJ_OK;
}

static tj_status d_slice_backward(tjg_ctx *c) { /* attrs: input_sizes, dim, start, end, step */
    if (c->needs[0] && G) c->grad_in[0] = tjg_op(c, TJ_OP_slice, &c->grad_out[0], 1, c->attrs + 1);
    return TJ_OK;
}

const tjg_rule_entry tjg_rules_view[] = {
    {TJ_OP_view, d_reshape, NULL},
    {TJ_OP_squeeze, d_reshape, NULL},
    {TJ_OP_squeeze_dim, d_reshape, NULL},
    {TJ_OP_unsqueeze, d_unsqueeze, NULL},
    {TJ_OP_transpose, d_transpose, NULL},
    {TJ_OP_t, d_transpose, NULL},
    {TJ_OP_permute, d_permute, NULL},
    {TJ_OP_expand, d_expand, NULL},
    {TJ_OP_select, d_select, NULL},
    {TJ_OP_narrow, d_narrow, NULL},
    {TJ_OP_slice, d_slice, NULL},
    {TJ_OP_chunk, d_split, NULL},
    {TJ_OP_split, d_split, NULL},
    {TJ_OP_split_with_sizes, d_split, NULL},
    {TJ_OP_unbind, d_unbind, NULL},
    {TJ_OP_diagonal, d_diagonal, NULL},
    {TJ_OP_select_scatter, d_scatter, NULL},
    {TJ_OP_slice_scatter, d_scatter, NULL},
    {TJ_OP_diagonal_scatter, d_scatter, NULL},
    {TJ_OP_as_strided_scatter, d_scatter, NULL},
    {TJ_OP_as_strided_copy, d_as_strided_copy, NULL},
    {TJ_OP_reshape, d_reshape, NULL},
    {TJ_OP_flatten, d_reshape, NULL},
    {TJ_OP_contiguous, d_identity, NULL},
    {TJ_OP_cat, d_cat, NULL},
    {TJ_OP_stack, d_stack, NULL},
    {TJ_OP_select_backward, d_select_backward, NULL},
    {TJ_OP_slice_backward, d_slice_backward, NULL},
    {TJ_OP_new_zeros, NULL, "its result does not depend on its input's values"},
    {-1, NULL, NULL},
};
