/* view_grad.c — CPU kernels of select_backward and slice_backward (rows of
 * core/ops_view.def, rules in core/view_grad_rules.c): the fresh output is
 * zeroed, then the gradient is copied into the view of it that select or
 * slice would have made. The scatters (rule in core/scatter_rules.c) copy
 * self instead of zeroing; as_strided_copy gathers from a strided view.
 * new_zeros uses tjcpu_zeros_kernel (copy.c). */
#include <string.h>

#include "core/scatter.h"
#include "core/view_grad.h"
#include "cpu.h"

static void zero(tj_tensor *out) { /* fresh and contiguous; all-zero bytes are 0 in every dtype */
    int64_t n = tjc_numel(out->sizes, out->ndim);
    if (n) memset(tjc_data_ptr(out), 0, (size_t)n * tj_dtype_size(out->dtype));
}

/* Copies grad into the view of out with sizes/strides/offset. */
static tj_status place(tj_tensor *out, tj_tensor *grad, const int64_t *sizes,
                       const int64_t *strides, int ndim, int64_t offset) {
    if (tjc_numel(grad->sizes, grad->ndim) == 0) return TJ_OK;
    tj_tensor v;
    tjc_view_on_stack(&v, out, sizes, strides, ndim, offset);
    return tjcpu_copy(&v, grad);
}

tj_status tjcpu_select_backward(const tjc_call *c) {
    tj_tensor *out = c->out[0], *grad = c->in[0];
    int d;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[1].i, out->ndim, &d);
    if (st) return st;
    zero(out);
    int64_t index = c->attr[2].i;
    if (index < 0) index += out->sizes[d];
    int64_t sizes[TJ_MAX_DIMS], strides[TJ_MAX_DIMS];
    for (int k = 0, j = 0; k < out->ndim; k++)
        if (k != d) sizes[j] = out->sizes[k], strides[j++] = out->strides[k];
    return place(out, grad, sizes, strides, out->ndim - 1, out->offset + index * out->strides[d]);
}

tj_status tjcpu_slice_backward(const tjc_call *c) {
    tj_tensor *out = c->out[0], *grad = c->in[0];
    int d;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[1].i, out->ndim, &d);
    if (st) return st;
    zero(out);
    int64_t step = c->attr[4].i, first, len;
    tjc_slice_range(out->sizes[d], c->attr[2].i, c->attr[3].i, step, &first, &len);
    int64_t sizes[TJ_MAX_DIMS], strides[TJ_MAX_DIMS];
    memcpy(sizes, out->sizes, sizeof sizes);
    memcpy(strides, out->strides, sizeof strides);
    sizes[d] = len;
    if (len > 1) strides[d] *= step; /* len > 1 bounds step by the dim's size */
    return place(out, grad, sizes, strides, out->ndim, out->offset + first * out->strides[d]);
}

tj_status tjcpu_scatter(const tjc_call *c) {
    tj_tensor *out = c->out[0];
    tjc_meta view;
    tj_status st = tjc_scatter_view(c, out, &view);
    if (st || (st = tjcpu_copy(out, c->in[0]))) return st;
    return place(out, c->in[1], view.sizes, view.strides, view.ndim, view.offset);
}

/* out = the elements size, stride and storage_offset pick from self laid
 * out row-major (a contiguous copy of self first when it is not). */
tj_status tjcpu_as_strided_copy(const tjc_call *c) {
    tj_tensor *self = c->in[0], *dense = self;
    if (!tj_is_contiguous(self)) {
        dense = tjc_alloc(self->sizes, self->ndim, self->dtype);
        tj_status st = dense ? tjcpu_copy(dense, self) : tj_last_status();
        if (st) {
            tj_release(dense);
            return st;
        }
    }
    tjc_meta pick;
    tj_status st = tjc_strided_pick(c, c->attr, tjc_numel(self->sizes, self->ndim), false, dense, &pick);
    if (!st && tjc_numel(pick.sizes, pick.ndim)) {
        tj_tensor v;
        tjc_view_on_stack(&v, dense, pick.sizes, pick.strides, pick.ndim, pick.offset);
        st = tjcpu_copy(c->out[0], &v);
    }
    if (dense != self) tj_release(dense);
    return st;
}
