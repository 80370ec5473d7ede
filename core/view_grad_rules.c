/* view_grad_rules.c — shape rules of the ops that gradients of views need
 * (rows at the end of ops_view.def): select_backward and slice_backward (a
 * zero tensor of the viewed input's sizes with the gradient written where the
 * view looked, PyTorch's ops of those names) and new_zeros (zeros for the
 * missing gradients of chunk, split and unbind). Messages name the op, the
 * argument and the sizes. */
#include <string.h>

#include "view_grad.h"

#define SIZES(buf, s, n) tjc_fmt_sizes(buf, sizeof buf, s, n)

void tjc_slice_range(int64_t n, int64_t start, int64_t end, int64_t step, int64_t *first,
                     int64_t *len) {
    /* the normalisation of slice's rule (view_rules.c), so the two agree */
    if (start < 0) start += n;
    if (end < 0) end += n;
    start = start < 0 ? 0 : start > n ? n : start;
    end = end < start ? start : end > n ? n : end;
    *first = start;
    *len = end == start ? 0 : (end - start - 1) / step + 1;
}

/* A list of sizes for a new tensor: at most TJ_MAX_DIMS entries, none
 * negative, a product that fits int64. */
static tj_status check_sizes(const tjc_call *c, const char *arg, const tj_attr *a, int min_ndim) {
    char bs[TJC_SIZES_BUF];
    int n = a->ints.n;
    if (n < min_ndim || n > TJ_MAX_DIMS)
        return tjc_error(TJ_ERR_ARG, "%s: argument '%s' %s has %d entries; it needs %d to %d",
                         c->op->name, arg, SIZES(bs, a->ints.data, n), n, min_ndim, TJ_MAX_DIMS);
    int64_t numel = 1;
    for (int i = 0; i < n; i++) {
        if (a->ints.data[i] < 0)
            return tjc_error(TJ_ERR_ARG, "%s: argument '%s' %s has the negative size %lld at "
                             "dim %d", c->op->name, arg, SIZES(bs, a->ints.data, n),
                             (long long)a->ints.data[i], i);
        if (__builtin_mul_overflow(numel, a->ints.data[i], &numel))
            return tjc_error(TJ_ERR_ARG, "%s: argument '%s' %s has too many elements",
                             c->op->name, arg, SIZES(bs, a->ints.data, n));
    }
    return TJ_OK;
}

/* The gradient must have the sizes of the view it is the gradient of. */
static tj_status check_grad(const tjc_call *c, const int64_t *want, int ndim) {
    const tj_tensor *g = c->in[0];
    if (g->ndim == ndim && (ndim == 0 || !memcmp(g->sizes, want, sizeof(int64_t) * (size_t)ndim)))
        return TJ_OK;
    char bg[TJC_SIZES_BUF], bw[TJC_SIZES_BUF];
    return tjc_error(TJ_ERR_SHAPE, "%s: grad_output has sizes %s, but the view it is the "
                     "gradient of has sizes %s", c->op->name, SIZES(bg, g->sizes, g->ndim),
                     SIZES(bw, want, ndim));
}

/* in: grad_output; attrs: input_sizes, dim, index. */
tj_status tjc_infer_select_backward(const tjc_call *c, int *n_out) {
    const tj_attr *sizes = &c->attr[0];
    int n = sizes->ints.n, d;
    tj_status st = check_sizes(c, "input_sizes", sizes, 1);
    if (!st) st = tjc_wrap_dim(c->op->name, c->attr[1].i, n, &d);
    if (st) return st;
    int64_t size = sizes->ints.data[d], index = c->attr[2].i;
    if (index < -size || index >= size) {
        char bs[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_ARG, "%s: index %lld is out of range for dim %d of size %lld "
                         "(input_sizes %s)", c->op->name, (long long)index, d, (long long)size,
                         SIZES(bs, sizes->ints.data, n));
    }
    int64_t view[TJ_MAX_DIMS];
    for (int k = 0, j = 0; k < n; k++)
        if (k != d) view[j++] = sizes->ints.data[k];
    if ((st = check_grad(c, view, n - 1))) return st;
    *n_out = 1;
    tjc_meta_new(&c->meta[0], c->in[0]->dtype, sizes->ints.data, n);
    return TJ_OK;
}

/* in: grad_output; attrs: input_sizes, dim, start, end, step. */
tj_status tjc_infer_slice_backward(const tjc_call *c, int *n_out) {
    const tj_attr *sizes = &c->attr[0];
    int n = sizes->ints.n, d;
    tj_status st = check_sizes(c, "input_sizes", sizes, 1);
    if (!st) st = tjc_wrap_dim(c->op->name, c->attr[1].i, n, &d);
    if (st) return st;
    int64_t step = c->attr[4].i, first, len;
    if (step <= 0)
        return tjc_error(TJ_ERR_ARG, "%s: step must be positive, got %lld", c->op->name,
                         (long long)step);
    tjc_slice_range(sizes->ints.data[d], c->attr[2].i, c->attr[3].i, step, &first, &len);
    int64_t view[TJ_MAX_DIMS];
    memcpy(view, sizes->ints.data, sizeof(int64_t) * (size_t)n);
    view[d] = len;
    if ((st = check_grad(c, view, n))) return st;
    *n_out = 1;
    tjc_meta_new(&c->meta[0], c->in[0]->dtype, sizes->ints.data, n);
    return TJ_OK;
}

/* in: self (its dtype only); attrs: size. */
tj_status tjc_infer_new_zeros(const tjc_call *c, int *n_out) {
    tj_status st = check_sizes(c, "size", &c->attr[0], 0);
    if (st) return st;
    *n_out = 1;
    tjc_meta_new(&c->meta[0], c->in[0]->dtype, c->attr[0].ints.data, c->attr[0].ints.n);
    return TJ_OK;
}
