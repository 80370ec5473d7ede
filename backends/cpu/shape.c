/* shape.c — CPU kernels of the shape ops that move data: the copying case of
 * reshape, flatten and contiguous, and cat and stack. Each places a source
 * into a block of a fresh contiguous output: a memcpy per row when the source
 * is contiguous and of the output's dtype, else tjcpu_copy (strides and dtype
 * conversion) into a view of the block. */
#include <string.h>

#include "cpu.h"

/* Copies src into out[..., at : at + src->sizes[dim], ...]; src has out's
 * ndim and out's sizes except at dim; out is contiguous. */
static tj_status place(tj_tensor *out, int dim, int64_t at, tj_tensor *src) {
    int64_t n = tjc_numel(src->sizes, src->ndim);
    if (n == 0) return TJ_OK;
    if (src->dtype == out->dtype && tj_is_contiguous(src)) {
        int64_t outer = tjc_numel(out->sizes, dim);
        int64_t inner = tjc_numel(out->sizes + dim + 1, out->ndim - dim - 1);
        size_t es = tj_dtype_size(out->dtype);
        size_t block = (size_t)(src->sizes[dim] * inner) * es;
        size_t row = (size_t)(out->sizes[dim] * inner) * es;
        char *dst = tjc_data_ptr(out) + (size_t)(at * inner) * es;
        const char *s = tjc_data_ptr(src);
        int nt = tjcpu_threads_for(n);
#pragma omp parallel for num_threads(nt) if (nt > 1 && outer > 1)
        for (int64_t o = 0; o < outer; o++) memcpy(dst + (size_t)o * row, s + (size_t)o * block, block);
        return TJ_OK;
    }
    int64_t sizes[TJ_MAX_DIMS];
    memcpy(sizes, out->sizes, sizeof sizes);
    sizes[dim] = src->sizes[dim];
    tj_tensor v;
    tjc_view_on_stack(&v, out, sizes, out->strides, out->ndim, out->offset + at * out->strides[dim]);
    return tjcpu_copy(&v, src);
}

/* reshape, flatten, contiguous: nothing to do when the rule chose a view;
 * else out is fresh and contiguous with the input's numel, so the input's
 * elements in row-major order are out's. */
tj_status tjcpu_reshape_copy(const tjc_call *c) {
    tj_tensor *out = c->out[0], *in = c->in[0];
    if (out->storage == in->storage) return TJ_OK;
    int64_t strides[TJ_MAX_DIMS];
    tjc_contiguous_strides(in->sizes, in->ndim, strides);
    tj_tensor v;
    tjc_view_on_stack(&v, out, in->sizes, strides, in->ndim, out->offset);
    return tjcpu_copy(&v, in);
}

tj_status tjcpu_cat(const tjc_call *c) {
    tj_tensor *out = c->out[0];
    if (tjc_numel(out->sizes, out->ndim) == 0) return TJ_OK;
    int dim;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, out->ndim, &dim);
    int64_t at = 0;
    /* empty inputs (legacy 1-D ones included) add nothing: a non-empty
     * output means their size at dim is 0 */
    for (int i = 0; st == TJ_OK && i < c->n_in; i++) {
        tj_tensor *t = c->in[i];
        if (tjc_numel(t->sizes, t->ndim) == 0) continue;
        st = place(out, dim, at, t);
        at += t->sizes[dim];
    }
    return st;
}

tj_status tjcpu_stack(const tjc_call *c) {
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
        tj_tensor u;
        tjc_view_on_stack(&u, t, sizes, strides, out->ndim, t->offset);
        st = place(out, dim, i, &u);
    }
    return st;
}
