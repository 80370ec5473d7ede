/* op_shape.c — the CUDA kernels of core/ops_view.def. Views touch no data
 * (tjc_view_kernel: the dispatcher made them from the shape rule); the ops
 * that move data do what backends/cpu/shape.c and view_grad.c do, with
 * tjcu_copy (the generated conversion kernels: strides, broadcasting and
 * dtype conversion in one pass, or one device-to-device copy when both sides
 * are contiguous in one dtype) writing into views of the fresh output. */
#include <string.h>

#include "backends/cuda/cuda.h"
#include "backends/cuda/pointwise.h"
#include "core/scatter.h"
#include "core/view_grad.h"

/* Copies src into the view of out with sizes, strides and offset (elements). */
static tj_status place(const char *what, tj_tensor *out, tj_tensor *src, const int64_t *sizes,
                       const int64_t *strides, int ndim, int64_t offset) {
    if (tjc_numel(src->sizes, src->ndim) == 0) return TJ_OK;
    tj_tensor *v = tjc_make_view(out, sizes, strides, ndim, offset);
    if (!v) return tj_last_status();
    tj_status st = tjcu_copy(what, v, src);
    tj_release(v);
    return st;
}

/* reshape, flatten, contiguous: nothing to do when the rule chose a view;
 * else out is fresh and contiguous with the input's numel, so the input's
 * elements in row-major order are out's. */
static tj_status reshape_copy(const tjc_call *c) {
    tj_tensor *out = c->out[0], *in = c->in[0];
    if (out->storage == in->storage) return TJ_OK;
    int64_t strides[TJ_MAX_DIMS];
    tjc_contiguous_strides(in->sizes, in->ndim, strides);
    return place(c->op->name, out, in, in->sizes, strides, in->ndim, out->offset);
}

/* src into out[..., at : at + src->sizes[dim], ...] (src has out's ndim) */
static tj_status place_block(const char *what, tj_tensor *out, int dim, int64_t at,
                             tj_tensor *src) {
    int64_t sizes[TJ_MAX_DIMS];
    memcpy(sizes, out->sizes, sizeof sizes);
    sizes[dim] = src->sizes[dim];
    return place(what, out, src, sizes, out->strides, out->ndim,
                 out->offset + at * out->strides[dim]);
}

static tj_status cat(const tjc_call *c) {
    tj_tensor *out = c->out[0];
    if (tjc_numel(out->sizes, out->ndim) == 0) return TJ_OK;
    int dim;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, out->ndim, &dim);
    int64_t at = 0;
    /* empty inputs (legacy 1-D ones included) add nothing */
    for (int i = 0; st == TJ_OK && i < c->n_in; i++) {
        tj_tensor *t = c->in[i];
        if (tjc_numel(t->sizes, t->ndim) == 0) continue;
        st = place_block(c->op->name, out, dim, at, t);
        at += t->sizes[dim];
    }
    return st;
}

static tj_status stack(const tjc_call *c) {
    tj_tensor *out = c->out[0];
    int dim;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, out->ndim, &dim);
    for (int i = 0; st == TJ_OK && i < c->n_in; i++) {
        tj_tensor *t = c->in[i];
        int64_t sizes[TJ_MAX_DIMS], strides[TJ_MAX_DIMS];
        for (int d = 0, k = 0; d < out->ndim; d++) {
            bool added = d == dim;
            sizes[d] = added ? 1 : t->sizes[k];
            strides[d] = added ? 1 : t->strides[k];
            k += !added;
        }
        tj_tensor *u = tjc_make_view(t, sizes, strides, out->ndim, t->offset);
        if (!u) return tj_last_status();
        st = place_block(c->op->name, out, dim, i, u);
        tj_release(u);
    }
    return st;
}

static tj_status select_backward(const tjc_call *c) {
    tj_tensor *out = c->out[0], *grad = c->in[0];
    int d;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[1].i, out->ndim, &d);
    if (st || (st = tjcu_zero(c->op->name, out))) return st;
    int64_t index = c->attr[2].i;
    if (index < 0) index += out->sizes[d];
    int64_t sizes[TJ_MAX_DIMS], strides[TJ_MAX_DIMS];
    for (int k = 0, j = 0; k < out->ndim; k++)
        if (k != d) sizes[j] = out->sizes[k], strides[j++] = out->strides[k];
    return place(c->op->name, out, grad, sizes, strides, out->ndim - 1,
                 out->offset + index * out->strides[d]);
}

static tj_status slice_backward(const tjc_call *c) {
    tj_tensor *out = c->out[0], *grad = c->in[0];
    int d;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[1].i, out->ndim, &d);
    if (st || (st = tjcu_zero(c->op->name, out))) return st;
    int64_t step = c->attr[4].i, first, len;
    tjc_slice_range(out->sizes[d], c->attr[2].i, c->attr[3].i, step, &first, &len);
    int64_t sizes[TJ_MAX_DIMS], strides[TJ_MAX_DIMS];
    memcpy(sizes, out->sizes, sizeof sizes);
    memcpy(strides, out->strides, sizeof strides);
    sizes[d] = len;
    if (len > 1) strides[d] *= step; /* len > 1 bounds step by the dim's size */
    return place(c->op->name, out, grad, sizes, strides, out->ndim,
                 out->offset + first * out->strides[d]);
}

/* select_scatter, slice_scatter, diagonal_scatter: self, then src into the view */
static tj_status scatter(const tjc_call *c) {
    tj_tensor *out = c->out[0];
    tjc_meta view;
    tj_status st = tjc_scatter_view(c, out, &view);
    if (st || (st = tjcu_copy(c->op->name, out, c->in[0]))) return st;
    return place(c->op->name, out, c->in[1], view.sizes, view.strides, view.ndim, view.offset);
}

/* as_strided_copy: from a strided view of self (of a contiguous copy of
 * self on the device when it is not contiguous) */
static tj_status as_strided_copy(const tjc_call *c) {
    tj_tensor *self = c->in[0], *dense = self;
    tj_status st = TJ_OK;
    if (!tj_is_contiguous(self)) {
        dense = tjc_alloc_on(tj_tensor_device(self), self->sizes, self->ndim, self->dtype);
        st = dense ? tjcu_copy(c->op->name, dense, self) : tj_last_status();
    }
    tjc_meta pick;
    if (!st) st = tjc_strided_pick(c, c->attr, tjc_numel(self->sizes, self->ndim), false, dense, &pick);
    tj_tensor *v = NULL;
    if (!st && tjc_numel(pick.sizes, pick.ndim)) {
        v = tjc_make_view(dense, pick.sizes, pick.strides, pick.ndim, pick.offset);
        st = v ? tjcu_copy(c->op->name, c->out[0], v) : tj_last_status();
    }
    tj_release(v);
    if (dense != self) tj_release(dense);
    return st;
}

static tj_status new_zeros(const tjc_call *c) { return tjcu_zero(c->op->name, c->out[0]); }

void tjcu_register_shape(tjc_kernel_fn *kernels) {
#define TJ_OP(id, name, schema, kind, infer, cpu) \
    if (kind == TJ_KIND_VIEW) kernels[TJ_OP_##id] = tjc_view_kernel;
#include "core/ops_view.def"
#undef TJ_OP
    kernels[TJ_OP_reshape] = reshape_copy;
    kernels[TJ_OP_flatten] = reshape_copy;
    kernels[TJ_OP_contiguous] = reshape_copy;
    kernels[TJ_OP_cat] = cat;
    kernels[TJ_OP_stack] = stack;
    kernels[TJ_OP_select_backward] = select_backward;
    kernels[TJ_OP_slice_backward] = slice_backward;
    kernels[TJ_OP_select_scatter] = scatter;
    kernels[TJ_OP_slice_scatter] = scatter;
    kernels[TJ_OP_diagonal_scatter] = scatter;
    kernels[TJ_OP_as_strided_scatter] = scatter;
    kernels[TJ_OP_as_strided_copy] = as_strided_copy;
    kernels[TJ_OP_new_zeros] = new_zeros;
}
