/* scatter_rules.c — the shape rules of the scatter ops (select_scatter,
 * slice_scatter, diagonal_scatter, as_strided_scatter; rows of
 * ops_view.def): a copy of self with src written into the view of it that
 * the matching view op would make. The view op's own shape rule says where
 * that view lies, so a scatter and its view cannot disagree; the elements
 * as_strided_scatter writes are those as_strided_copy (ruled here too)
 * reads. Kernels: backends/cpu/view_grad.c and
 * backends/cuda/op_shape.c. */
#include <string.h>

#include "scatter.h"

#define SIZES(buf, s, n) tjc_fmt_sizes(buf, sizeof buf, s, n)

int tjc_scatter_view_op(int scatter_id) {
    switch (scatter_id) {
    case TJ_OP_select_scatter: return TJ_OP_select;
    case TJ_OP_slice_scatter: return TJ_OP_slice;
    case TJ_OP_diagonal_scatter: return TJ_OP_diagonal;
    case TJ_OP_as_strided_scatter: return TJ_OP_as_strided_copy;
    default: return -1;
    }
}

bool tjc_strided_overlaps(const int64_t *size, const int64_t *stride, int ndim) {
    /* dims by stride, smallest first: each stride must pass the span of the
     * smaller ones (sufficient, and exact for the layouts views make) */
    int order[TJ_MAX_DIMS], n = 0;
    for (int d = 0; d < ndim; d++) {
        if (size[d] == 0) return false; /* nothing picked */
        if (size[d] == 1) continue;
        int k = n++;
        while (k > 0 && stride[order[k - 1]] > stride[d]) order[k] = order[k - 1], k--;
        order[k] = d;
    }
    int64_t span = 0;
    for (int i = 0; i < n; i++) {
        if (stride[order[i]] <= span) return true;
        span += (size[order[i]] - 1) * stride[order[i]];
    }
    return false;
}

tj_status tjc_strided_pick(const tjc_call *c, const tj_attr *attrs, int64_t n, bool writes,
                           const tj_tensor *base, tjc_meta *view) {
    const char *op = c->op->name;
    const tj_attr *size = &attrs[0], *stride = &attrs[1];
    int64_t offset = attrs[2].i;
    char bs[TJC_SIZES_BUF], bt[TJC_SIZES_BUF];
    int nd = size->ints.n;
    SIZES(bs, size->ints.data, nd);
    SIZES(bt, stride->ints.data, stride->ints.n);
    if (nd != stride->ints.n || nd > TJ_MAX_DIMS)
        return tjc_error(TJ_ERR_ARG, "%s: size %s and stride %s must have the same number of "
                         "entries, at most %d", op, bs, bt, TJ_MAX_DIMS);
    if (offset < 0)
        return tjc_error(TJ_ERR_ARG, "%s: storage_offset %lld is negative", op, (long long)offset);
    int64_t last = offset, count = 1;
    for (int d = 0; d < nd; d++) {
        int64_t sz = size->ints.data[d], st = stride->ints.data[d];
        if (sz < 0 || st < 0)
            return tjc_error(TJ_ERR_ARG, "%s: size %s and stride %s must not be negative", op, bs, bt);
        int64_t reach;
        if (__builtin_mul_overflow(count, sz, &count) || __builtin_mul_overflow(sz ? sz - 1 : 0, st, &reach) ||
            __builtin_add_overflow(last, reach, &last))
            return tjc_error(TJ_ERR_ARG, "%s: size %s and stride %s are too large", op, bs, bt);
    }
    if (count && last >= n)
        return tjc_error(TJ_ERR_ARG, "%s: size %s, stride %s and storage_offset %lld reach element "
                         "%lld of self, which has %lld", op, bs, bt, (long long)offset,
                         (long long)last, (long long)n);
    if (writes && tjc_strided_overlaps(size->ints.data, stride->ints.data, nd))
        return tjc_error(TJ_ERR_ARG, "%s: size %s and stride %s pick some element more than once; "
                         "more than one element of the written-to tensor would refer to a single "
                         "memory location", op, bs, bt);
    view->kind = TJC_OUT_VIEW;
    view->dtype = base->dtype;
    view->ndim = nd;
    for (int d = 0; d < nd; d++) view->sizes[d] = size->ints.data[d], view->strides[d] = stride->ints.data[d];
    view->offset = base->offset + offset;
    return TJ_OK;
}

tj_status tjc_scatter_view(const tjc_call *c, tj_tensor *base, tjc_meta *view) {
    if (c->op->id == TJ_OP_as_strided_scatter)
        return tjc_strided_pick(c, c->attr, tjc_numel(base->sizes, base->ndim), true, base, view);
    tj_tensor *in[1] = {base};
    /* the view's attributes are the scatter's; messages keep the scatter's name */
    tjc_call vc = {.op = c->op, .device = c->device, .in = in, .n_in = 1, .attr = c->attr,
                   .n_attr = c->n_attr, .meta = view, .meta_cap = 1};
    int n_out = 0;
    return tjc_op(tjc_scatter_view_op(c->op->id))->infer(&vc, &n_out);
}

/* in: self, src; attrs: the view's. */
tj_status tjc_infer_scatter(const tjc_call *c, int *n_out) {
    tj_tensor *self = c->in[0], *src = c->in[1];
    tjc_meta view;
    tj_status st = tjc_scatter_view(c, self, &view);
    if (st) return st;
    if (src->ndim != view.ndim ||
        (view.ndim && memcmp(src->sizes, view.sizes, sizeof(int64_t) * (size_t)view.ndim))) {
        char bs[TJC_SIZES_BUF], bv[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_SHAPE, "%s: expected src to have a size equal to the slice of "
                         "self: src has sizes %s, the slice %s", c->op->name,
                         SIZES(bs, src->sizes, src->ndim), SIZES(bv, view.sizes, view.ndim));
    }
    *n_out = 1;
    tjc_meta_new(&c->meta[0], self->dtype, self->sizes, self->ndim);
    return TJ_OK;
}

/* in: self; attrs: size, stride, storage_offset. A fresh tensor of size. */
tj_status tjc_infer_as_strided_copy(const tjc_call *c, int *n_out) {
    tjc_meta view;
    const tj_tensor *self = c->in[0];
    tj_status st = tjc_strided_pick(c, c->attr, tjc_numel(self->sizes, self->ndim), false, self, &view);
    if (st) return st;
    *n_out = 1;
    tjc_meta_new(&c->meta[0], self->dtype, view.sizes, view.ndim);
    return TJ_OK;
}
