/* scatter_rules.c — the shape rule of the scatter ops (select_scatter,
 * slice_scatter, diagonal_scatter; rows of ops_view.def): a copy of self
 * with src written into the view of it that the matching view op would make.
 * The view op's own shape rule says where that view lies, so a scatter and
 * its view cannot disagree. Kernels: backends/cpu/view_grad.c and
 * backends/cuda/op_shape.c. */
#include <string.h>

#include "scatter.h"

#define SIZES(buf, s, n) tjc_fmt_sizes(buf, sizeof buf, s, n)

int tjc_scatter_view_op(int scatter_id) {
    switch (scatter_id) {
    case TJ_OP_select_scatter: return TJ_OP_select;
    case TJ_OP_slice_scatter: return TJ_OP_slice;
    case TJ_OP_diagonal_scatter: return TJ_OP_diagonal;
    default: return -1;
    }
}

tj_status tjc_scatter_view(const tjc_call *c, tj_tensor *base, tjc_meta *view) {
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
