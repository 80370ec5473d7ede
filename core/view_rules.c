/* view_rules.c — shape rules of view ops: each computes the view's sizes,
 * strides and storage offset from its input's. */
#include <string.h>

#include "core.h"

static void view_meta(tjc_meta *m, const tj_tensor *t) {
    m->kind = TJC_OUT_VIEW;
    m->dtype = t->dtype;
    m->ndim = t->ndim;
    memcpy(m->sizes, t->sizes, sizeof t->sizes);
    memcpy(m->strides, t->strides, sizeof t->strides);
    m->offset = t->offset;
}

tj_status tjc_infer_slice(const tjc_call *c, int *n_out) {
    const tj_tensor *t = c->in[0];
    int dim;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, t->ndim, &dim);
    if (st) return st;
    if (t->ndim == 0)
        return tjc_error(TJ_ERR_ARG, "%s: cannot slice a 0-dim tensor", c->op->name);
    int64_t start = c->attr[1].i, end = c->attr[2].i, step = c->attr[3].i;
    if (step <= 0)
        return tjc_error(TJ_ERR_ARG, "%s: step must be positive, got %lld", c->op->name,
                         (long long)step);
    int64_t n = t->sizes[dim];
    if (start < 0) start += n;
    if (end < 0) end += n;
    start = start < 0 ? 0 : start > n ? n : start;
    end = end < start ? start : end > n ? n : end;
    *n_out = 1;
    tjc_meta *m = &c->meta[0];
    view_meta(m, t);
    m->offset += start * t->strides[dim];
    m->sizes[dim] = (end - start + step - 1) / step;
    m->strides[dim] *= step;
    return TJ_OK;
}
