/* views.c — writes through views, traced as PyTorch's functionalization
 * traces them.
 *
 * The tracer remembers how each view was made from its parent (a link: the
 * view op and its arguments; a piece of chunk, split or split_with_sizes is
 * remembered as the slice it is, a piece of unbind as the select). A write
 * in place into a view v of a tensor made while tracing then becomes:
 *
 *   y  = the write's out-of-place form (mul for mul_; for copy_, src
 *        broadcast to v's sizes), converted to v's dtype;
 *   p' = the inverse of each link from v up to its base b, innermost first:
 *        a scatter of y into the parent's current value for select, slice
 *        and diagonal (select_scatter, slice_scatter, diagonal_scatter), the
 *        inverse reordering for transpose, t and permute, a reshape back to
 *        the parent's sizes for view, reshape, flatten, squeeze, unsqueeze
 *        and contiguous;
 *
 * and b's storage gets a new version whose value is the last p'. Every other
 * tensor of that storage (v itself, the parents on the way, other views) is
 * made again from b's new value when it is next read (tjt_view_again), by
 * replaying its links. The graph holds no write into such values, so the
 * passes and autodiff see a pure graph (a scatter has a derivative rule).
 *
 * A graph input (or parameter) written through a view is functionalized the
 * same way, and at the end of the trace its final value is copied into it
 * with one aten::copy_, so each replay updates the caller's tensor once. A
 * write that is not the in-place form of another op stays a write. Writing
 * through an expanded view whose elements share memory is refused, as
 * PyTorch refuses it. */
#include <string.h>

#include "core/alloc.h"
#include "tracer_internal.h"

enum { MAX_VIEW_ATTRS = 6 };

typedef struct tjt_view_link {
    tj_tensor *parent;
    const tj_op_info *op; /* one output: pieces of chunk, split, unbind are slices and selects */
    tj_attr attrs[MAX_VIEW_ATTRS];
    int n_attrs;
    int64_t lists[MAX_VIEW_ATTRS][TJ_MAX_DIMS]; /* the int[] arguments' copies */
} tjt_view_link;

static const tjt_view_link *link_of(tracer *tr, const tj_tensor *t) {
    return tjc_ptrmap_get(&tr->link_of, t);
}

static int attr_named(const tj_op_info *op, const char *name) {
    const tj_schema *s = tj_op_schema(op);
    for (int i = 0; i < s->n_attrs; i++)
        if (!strcmp(s->args[s->attr_pos[i]].name, name)) return i;
    return -1;
}

static int wrap(int64_t d, int ndim) { return (int)(d < 0 ? d + (ndim ? ndim : 1) : d); }

/* The link of a piece of chunk, split, split_with_sizes (a slice) or unbind
 * (a select) along dim, or of narrow (a slice): out[piece] starts where the
 * pieces before it end. */
static void as_slice(tjt_view_link *l, tj_tensor *parent, tj_tensor *const *out, int piece,
                     const tj_attr *attrs) {
    int id = l->op->id;
    int d = wrap(attrs[attr_named(l->op, "dim")].i, parent->ndim);
    int64_t start = 0;
    if (id == TJ_OP_narrow) {
        start = attrs[1].i < 0 ? attrs[1].i + parent->sizes[d] : attrs[1].i;
    } else {
        for (int k = 0; k < piece; k++) start += id == TJ_OP_unbind ? 1 : out[k]->sizes[d];
    }
    l->attrs[0].i = d;
    l->attrs[1].i = start;
    if (id == TJ_OP_unbind) {
        l->op = tjc_op(TJ_OP_select);
        l->n_attrs = 2;
        return;
    }
    l->op = tjc_op(TJ_OP_slice);
    l->attrs[2].i = start + out[piece]->sizes[d];
    l->attrs[3].i = 1;
    l->n_attrs = 4;
}

void tjt_record_view(tracer *tr, tj_tensor *parent, tj_tensor *const *out, int piece,
                     const tj_op_info *op, const tj_attr *attrs, int n_attrs) {
    if (tr->n_links == tr->cap_links) {
        int cap = tr->cap_links ? 2 * tr->cap_links : 16;
        tjt_view_link **links = tjc_realloc(tr->links, sizeof *links * (size_t)cap);
        if (!links) return tjt_fail(tr, TJ_ERR_MEMORY, "out of memory");
        tr->links = links;
        tr->cap_links = cap;
    }
    tjt_view_link *l = tjc_calloc(1, sizeof *l);
    if (!l) return tjt_fail(tr, TJ_ERR_MEMORY, "out of memory");
    tr->links[tr->n_links++] = l;
    l->parent = parent;
    l->op = op;
    int id = op->id;
    if (id == TJ_OP_chunk || id == TJ_OP_split || id == TJ_OP_split_with_sizes ||
        id == TJ_OP_unbind || id == TJ_OP_narrow) {
        as_slice(l, parent, out, piece, attrs);
    } else {
        const tj_schema *s = tj_op_schema(op);
        l->n_attrs = n_attrs < MAX_VIEW_ATTRS ? n_attrs : MAX_VIEW_ATTRS;
        for (int i = 0; i < l->n_attrs; i++) {
            l->attrs[i] = attrs[i];
            if (s->args[s->attr_pos[i]].type != TJ_ARG_INTS) continue;
            int n = attrs[i].ints.n < TJ_MAX_DIMS ? attrs[i].ints.n : TJ_MAX_DIMS;
            if (n) memcpy(l->lists[i], attrs[i].ints.data, sizeof(int64_t) * (size_t)n);
            l->attrs[i].ints.data = l->lists[i];
            l->attrs[i].ints.n = n;
        }
    }
    if (!tjc_ptrmap_put(&tr->link_of, out[piece], l)) tjt_fail(tr, TJ_ERR_MEMORY, "out of memory");
}

void tjt_views_free(tracer *tr) {
    for (int i = 0; i < tr->n_links; i++) tjc_free(tr->links[i]);
    tjc_free(tr->links);
    tjc_ptrmap_free(&tr->link_of);
    tjc_ptrmap_free(&tr->param_of);
    tjc_free(tr->written_params);
}

/* ---- values ------------------------------------------------------------------------ */

/* A value of t's dtype, sizes and device; contiguous strides when fresh (a
 * scatter's output), else unknown (a view made again of a value whose
 * layout may differ from the eager base's). */
static tj_type type_of(const tj_tensor *t, tj_dtype dtype, bool fresh) {
    tj_type ty = fresh ? tj_type_contiguous(dtype, t->sizes, t->ndim)
                       : tj_type_tensor_of(dtype, t->sizes, t->ndim);
    tj_device dev = tj_tensor_device(t);
    ty.device_type = dev.type;
    ty.device_index = dev.type == TJ_CPU ? 0 : dev.index;
    return ty;
}

/* op(in, attrs) appended, its one output typed. */
static tj_value *emit(tracer *tr, int op, tj_value **in, int n_in, const tj_attr *attrs,
                      int n_attrs, const tj_type *type) {
    tj_node *n = tj_node_create_op(tr->g, tjc_op(op), in, n_in, attrs, n_attrs, 1);
    tj_value *v = tjt_append_node(tr, n);
    if (v && tj_value_set_type(v, type) != TJ_OK) {
        tjt_fail(tr, TJ_ERR_MEMORY, "out of memory");
        return NULL;
    }
    return v;
}

/* t's value as of its storage's current version, made again when stale. */
static tj_value *current_value(tracer *tr, tj_tensor *t) {
    tj_value *v = tjc_ptrmap_get(&tr->value_of, t);
    if (v && (uintptr_t)tjc_ptrmap_get(&tr->stamp, t) - 1 == tjt_version_of(tr, t)) return v;
    return tjt_view_again(tr, t);
}

tj_value *tjt_view_again(tracer *tr, tj_tensor *v) {
    const tjt_view_link *l = link_of(tr, v);
    tj_value *parent = l ? current_value(tr, l->parent) : NULL;
    if (!parent) return NULL;
    tj_type ty = type_of(v, v->dtype, false);
    tj_value *made = emit(tr, l->op->id, &parent, 1, l->attrs, l->n_attrs, &ty);
    if (made) tjt_map(tr, v, made);
    return made;
}

/* The parent's new value, given the new value y of child, the view link l
 * made of it. */
static tj_value *put_back(tracer *tr, const tjt_view_link *l, tj_tensor *child, tj_value *parent,
                          tj_value *y) {
    tj_tensor *p = l->parent;
    tj_type fresh = type_of(p, p->dtype, true), same = type_of(p, p->dtype, false);
    tj_value *two[2] = {parent, y};
    switch (l->op->id) {
    case TJ_OP_select: return emit(tr, TJ_OP_select_scatter, two, 2, l->attrs, 2, &fresh);
    case TJ_OP_slice: return emit(tr, TJ_OP_slice_scatter, two, 2, l->attrs, 4, &fresh);
    case TJ_OP_diagonal: return emit(tr, TJ_OP_diagonal_scatter, two, 2, l->attrs, 3, &fresh);
    case TJ_OP_transpose: return emit(tr, TJ_OP_transpose, &y, 1, l->attrs, 2, &same);
    case TJ_OP_t: return emit(tr, TJ_OP_t, &y, 1, NULL, 0, &same);
    case TJ_OP_permute: {
        int64_t inverse[TJ_MAX_DIMS];
        for (int k = 0; k < l->attrs[0].ints.n; k++) inverse[wrap(l->attrs[0].ints.data[k], p->ndim)] = k;
        tj_attr dims = {.ints = {inverse, p->ndim}};
        return emit(tr, TJ_OP_permute, &y, 1, &dims, 1, &same);
    }
    default: { /* view, reshape, flatten, squeeze, unsqueeze, contiguous: the same elements */
        /* an expand that broadcast nothing relabels too; one that did would
         * write one element from several */
        if (l->op->id == TJ_OP_expand &&
            tjc_numel(child->sizes, child->ndim) != tjc_numel(p->sizes, p->ndim)) {
            tjt_fail(tr, TJ_ERR_UNSUPPORTED, "unsupported operation: more than one element of "
                     "the written-to tensor refers to a single memory location (a write into an "
                     "expanded view); clone the tensor before writing into it");
            return NULL;
        }
        tj_attr shape = {.ints = {p->sizes, p->ndim}};
        return emit(tr, TJ_OP_reshape, &y, 1, &shape, 1, &same);
    }
    }
}

/* The value written into t: the out-of-place form of the write, in t's dtype. */
static tj_value *written_value(tracer *tr, const pending *pd) {
    tj_tensor *t = pd->tensors[0];
    tj_value *y;
    tj_dtype dtype;
    if (pd->op->id == TJ_OP_copy_) {
        tj_tensor *src = pd->tensors[1];
        y = pd->values[1];
        dtype = src->dtype;
        if (src->ndim != t->ndim || memcmp(src->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim)) {
            tj_attr size = {.ints = {t->sizes, t->ndim}};
            tj_type ty = type_of(t, dtype, false);
            y = emit(tr, TJ_OP_expand, &y, 1, &size, 1, &ty);
        }
    } else {
        /* its result's dtype and sizes from the op's shape rule (no kernel runs) */
        const tj_op_info *pure = tjc_op(pd->op->inplace_of);
        tjc_prepared prep;
        if (tjc_prepare_call(pure, pd->tensors, pd->n_in, pd->attrs, &prep) != TJ_OK) {
            tjt_fail(tr, tj_last_status(), "cannot record %s as %s: %s", pd->op->name, pure->name,
                     tj_last_error());
            return NULL;
        }
        dtype = prep.meta[0].dtype;
        tj_type ty = type_of(t, dtype, true); /* fresh, of self's sizes: the write broadcast to them */
        tjc_free(prep.meta);
        y = emit(tr, pure->id, pd->values, pd->n_in, pd->attrs, pd->n_attrs, &ty);
    }
    if (y && dtype != t->dtype) {
        tj_attr to = {.dtype = t->dtype};
        tj_type ty = type_of(t, t->dtype, true);
        y = emit(tr, TJ_OP_to_dtype, &y, 1, &to, 1, &ty);
    }
    return y;
}

/* Remembers that graph input t is written (once); false when the tracer failed. */
static bool note_written_param(tracer *tr, tj_tensor *t) {
    for (int i = 0; i < tr->n_written; i++)
        if (tr->written_params[i] == t) return true;
    if (tr->n_written == tr->cap_written) {
        int cap = tr->cap_written ? 2 * tr->cap_written : 8;
        tj_tensor **w = tjc_realloc(tr->written_params, sizeof *w * (size_t)cap);
        if (!w) {
            tjt_fail(tr, TJ_ERR_MEMORY, "out of memory");
            return false;
        }
        tr->written_params = w;
        tr->cap_written = cap;
    }
    tr->written_params[tr->n_written++] = t;
    return true;
}

void tjt_copy_back_params(tracer *tr) {
    for (int i = 0; i < tr->n_written && !tr->failed; i++) {
        tj_tensor *t = tr->written_params[i];
        tj_value *in[2] = {tjc_ptrmap_get(&tr->param_of, t), current_value(tr, t)};
        if (!in[1]) return;
        tj_type ty = tj_value_type(in[0]) ? *tj_value_type(in[0]) : tj_type_of_tensor(t);
        emit(tr, TJ_OP_copy_, in, 2, NULL, 0, &ty);
    }
}

bool tjt_write_through_view(tracer *tr, const pending *pd) {
    const tj_op_info *op = pd->op;
    const tj_schema *s = tj_op_schema(op);
    if (s->has_tensor_list || pd->n_in < 1 || !pd->tensors[0] || !link_of(tr, pd->tensors[0]))
        return false;
    if (op->id != TJ_OP_copy_ && op->inplace_of < 0) return false;
    for (int k = 1; k < pd->n_in; k++)
        if (s->args[s->tensor_pos[k]].mutated) return false;
    tj_tensor *base = pd->tensors[0];
    while (link_of(tr, base)) base = link_of(tr, base)->parent;
    if (!current_value(tr, base)) return false; /* written before as it was: stays so */
    if (tjc_ptrmap_has(&tr->param_of, base) && !note_written_param(tr, base)) return true;
    tj_tensor *child = pd->tensors[0];
    tj_value *y = written_value(tr, pd);
    for (const tjt_view_link *l = link_of(tr, child); y && l; l = link_of(tr, child)) {
        tj_value *parent = current_value(tr, l->parent);
        y = parent ? put_back(tr, l, child, parent, y) : NULL;
        child = l->parent;
    }
    if (!y) {
        if (!tr->failed) tjt_fail(tr, TJ_ERR_INTERNAL, "cannot record the write of %s", op->name);
        return true;
    }
    tjt_bump_version(tr, base);
    tjt_map(tr, base, y);
    return true;
}
