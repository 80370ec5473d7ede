/* shape_rules.c — shape and dtype rules of cat and stack, the ops that join a
 * list of tensors into a new one. Inputs are promoted like PyTorch's
 * (bool < integer < float); the kernels (backends/cpu/shape.c) convert while
 * they copy. */
#include <string.h>

#include "core.h"

#define SIZES(buf, s, n) tjc_fmt_sizes(buf, sizeof buf, s, n)

static tj_dtype promote_all(const tjc_call *c) {
    tj_dtype d = c->in[0]->dtype;
    for (int i = 1; i < c->n_in; i++) d = tjc_promote(d, c->in[i]->dtype);
    return d;
}

/* cat accepts 1-D empty tensors beside tensors of any rank and skips them,
 * as PyTorch does for code written before empty tensors had shapes. */
static bool legacy_empty(const tj_tensor *t) { return t->ndim == 1 && t->sizes[0] == 0; }

tj_status tjc_infer_cat(const tjc_call *c, int *n_out) {
    const char *op = c->op->name;
    if (c->n_in == 0)
        return tjc_error(TJ_ERR_ARG, "%s: expected a non-empty list of tensors", op);
    int ref = -1;
    for (int i = 0; i < c->n_in; i++) {
        const tj_tensor *t = c->in[i];
        if (t->ndim == 0)
            return tjc_error(TJ_ERR_SHAPE, "%s: zero-dimensional tensor (at position %d) cannot "
                             "be concatenated", op, i);
        if (ref < 0 && !legacy_empty(t)) ref = i;
    }
    *n_out = 1;
    tj_dtype dtype = promote_all(c);
    if (ref < 0) { /* only legacy empties: the result is one too */
        int64_t zero = 0;
        tjc_meta_new(&c->meta[0], dtype, &zero, 1);
        return TJ_OK;
    }
    const tj_tensor *r = c->in[ref];
    int dim;
    tj_status st = tjc_wrap_dim(op, c->attr[0].i, r->ndim, &dim);
    if (st) return st;
    int64_t sizes[TJ_MAX_DIMS];
    memcpy(sizes, r->sizes, sizeof sizes);
    sizes[dim] = 0;
    for (int i = 0; i < c->n_in; i++) {
        const tj_tensor *t = c->in[i];
        char br[TJC_SIZES_BUF], bt[TJC_SIZES_BUF];
        if (legacy_empty(t) && r->ndim != 1) continue;
        if (t->ndim != r->ndim)
            return tjc_error(TJ_ERR_SHAPE, "%s: tensors must have the same number of dims: "
                             "tensor %d has %d (sizes %s) but tensor %d has %d (sizes %s)", op,
                             ref, r->ndim, SIZES(br, r->sizes, r->ndim), i, t->ndim,
                             SIZES(bt, t->sizes, t->ndim));
        for (int d = 0; d < r->ndim; d++)
            if (d != dim && t->sizes[d] != r->sizes[d])
                return tjc_error(TJ_ERR_SHAPE, "%s: sizes of tensors must match except in dim "
                                 "%d: expected size %lld but got size %lld at dim %d for tensor "
                                 "number %d in the list (sizes %s and %s)", op, dim,
                                 (long long)r->sizes[d], (long long)t->sizes[d], d, i,
                                 SIZES(br, r->sizes, r->ndim), SIZES(bt, t->sizes, t->ndim));
        if (__builtin_add_overflow(sizes[dim], t->sizes[dim], &sizes[dim]))
            return tjc_error(TJ_ERR_SHAPE, "%s: the result's dim %d is too large", op, dim);
    }
    tjc_meta_new(&c->meta[0], dtype, sizes, r->ndim);
    return TJ_OK;
}

tj_status tjc_infer_stack(const tjc_call *c, int *n_out) {
    const char *op = c->op->name;
    if (c->n_in == 0)
        return tjc_error(TJ_ERR_ARG, "%s: expected a non-empty list of tensors", op);
    const tj_tensor *r = c->in[0];
    int dim;
    tj_status st = tjc_wrap_dim(op, c->attr[0].i, r->ndim + 1, &dim);
    if (st) return st;
    if (r->ndim == TJ_MAX_DIMS)
        return tjc_error(TJ_ERR_ARG, "%s: the result would have %d dims; tjit supports at most "
                         "%d", op, r->ndim + 1, TJ_MAX_DIMS);
    for (int i = 1; i < c->n_in; i++) {
        const tj_tensor *t = c->in[i];
        if (t->ndim != r->ndim ||
            memcmp(t->sizes, r->sizes, sizeof(int64_t) * (size_t)r->ndim) != 0) {
            char br[TJC_SIZES_BUF], bt[TJC_SIZES_BUF];
            return tjc_error(TJ_ERR_SHAPE, "%s: expects each tensor to be equal size, but got "
                             "%s at entry 0 and %s at entry %d", op, SIZES(br, r->sizes, r->ndim),
                             SIZES(bt, t->sizes, t->ndim), i);
        }
    }
    int64_t sizes[TJ_MAX_DIMS];
    for (int d = 0, k = 0; d <= r->ndim; d++) sizes[d] = d == dim ? c->n_in : r->sizes[k++];
    *n_out = 1;
    tjc_meta_new(&c->meta[0], promote_all(c), sizes, r->ndim + 1);
    return TJ_OK;
}
