/* nn_rules_loss.c — shape and dtype rules of the nn family's losses, their
 * backward ops and the indexing ops (rows of ops_nn.def). A backward op's
 * rule runs its forward op's checks on the inputs after grad_output, so both
 * refuse the same calls with messages naming the backward op. */
#include "nn_rules.h"

static void scalar_meta(tjc_meta *m, tj_dtype dtype) { tjc_meta_new(m, dtype, NULL, 0); }

/* Output sizes of a loss: the elementwise sizes for reduction none, else 0-dim. */
static void loss_meta(const tjc_call *c, int red, tj_dtype dtype, const tj_tensor *shape_of) {
    if (red == TJC_RED_NONE) tjc_meta_new(&c->meta[0], dtype, shape_of->sizes, shape_of->ndim);
    else scalar_meta(&c->meta[0], dtype);
}

/* Optional input i broadcasts to input j's sizes without growing them. */
static tj_status check_fits(const tjc_call *c, int i, int j) {
    const tj_tensor *t = c->in[i], *x = c->in[j];
    if (!t) return TJ_OK;
    bool ok = t->ndim <= x->ndim;
    for (int d = 0; ok && d < t->ndim; d++) {
        int64_t s = t->sizes[d], xs = x->sizes[x->ndim - t->ndim + d];
        ok = s == 1 || s == xs;
    }
    if (ok) return TJ_OK;
    char a[TJC_SIZES_BUF], b[TJC_SIZES_BUF];
    return tjc_error(TJ_ERR_SHAPE, "%s: argument '%s' of sizes %s does not broadcast to the sizes "
                     "of '%s' %s", c->op->name, TJC_NN_ARG(c, i),
                     tjc_fmt_sizes(a, sizeof a, t->sizes, t->ndim), TJC_NN_ARG(c, j),
                     tjc_fmt_sizes(b, sizeof b, x->sizes, x->ndim));
}

/* Optional input i is a float tensor that broadcasts to input j's sizes. */
static tj_status check_broadcasts_to(const tjc_call *c, int i, int j) {
    tj_status st = c->in[i] ? tjc_nn_require_float(c, i) : TJ_OK;
    return st ? st : check_fits(c, i, j);
}

/* grad_output (input 0) of a loss's backward: the forward output's sizes. */
static tj_status check_grad_output(const tjc_call *c, int red, const tj_tensor *shape_of) {
    tj_status st = tjc_nn_require_float(c, 0);
    if (st) return st;
    if (red == TJC_RED_NONE) return tjc_nn_check_sizes(c, 0, shape_of->sizes, shape_of->ndim);
    if (tjc_numel(c->in[0]->sizes, c->in[0]->ndim) != 1) return tjc_nn_check_sizes(c, 0, NULL, 0);
    return TJ_OK;
}

/* ---- mse_loss ----------------------------------------------------------------------- */

/* self and target at inputs o, o+1: any dtypes whose promotion is a float
 * one (PyTorch's rule: mse_loss(i64, f32) is f32), into *dtype. */
static tj_status check_mse(const tjc_call *c, int o, tj_dtype *dtype) {
    const tj_tensor *x = c->in[o], *t = c->in[o + 1];
    *dtype = tjc_promote(x->dtype, t->dtype);
    if (!tj_dtype_is_float(*dtype))
        return tjc_error(TJ_ERR_DTYPE, "%s: 'self' (%s) and 'target' (%s) promote to %s; the "
                         "loss needs a floating-point result", c->op->name,
                         tj_dtype_name(x->dtype), tj_dtype_name(t->dtype), tj_dtype_name(*dtype));
    return TJ_OK;
}

/* self and target broadcast; the loss per element has the broadcast sizes */
tj_status tjc_infer_mse_loss(const tjc_call *c, int *n_out) {
    tj_dtype dt;
    tj_status st = check_mse(c, 0, &dt);
    if (st) return st;
    const tj_tensor *x = c->in[0], *t = c->in[1];
    int64_t sizes[TJ_MAX_DIMS];
    int nd;
    if ((st = tjc_broadcast_shapes(c->op->name, x->sizes, x->ndim, t->sizes, t->ndim, sizes, &nd)))
        return st;
    *n_out = 1;
    if (tjc_nn_reduction(c, 0) == TJC_RED_NONE) tjc_meta_new(&c->meta[0], dt, sizes, nd);
    else scalar_meta(&c->meta[0], dt);
    return TJ_OK;
}

/* in: grad_output, self, target; attrs: reduction. target broadcasts to self
 * (autodiff expands self to the forward's broadcast sizes first). */
tj_status tjc_infer_mse_loss_backward(const tjc_call *c, int *n_out) {
    tj_dtype dt;
    const tj_tensor *x = c->in[1];
    tj_status st = check_mse(c, 1, &dt);
    if (!st) st = check_grad_output(c, tjc_nn_reduction(c, 0), x);
    if (!st) st = check_fits(c, 2, 1);
    if (st) return st;
    *n_out = 1;
    tjc_meta_new(&c->meta[0], dt, x->sizes, x->ndim);
    return TJ_OK;
}

/* ---- nll_loss and cross_entropy_loss ------------------------------------------------ */

/* self, target, weight at inputs o, o+1, o+2: self [C] with target [], or
 * self [N, C, *] with target [N, *]. */
static tj_status check_nll(const tjc_call *c, int o) {
    const tj_tensor *x = c->in[o], *t = c->in[o + 1];
    tj_status st = tjc_nn_require_float(c, o);
    if (!st) st = tjc_nn_require_index(c, o + 1);
    if (st) return st;
    char a[TJC_SIZES_BUF], b[TJC_SIZES_BUF], tb[TJC_SIZES_BUF];
    if (x->ndim < 1)
        return tjc_error(TJ_ERR_SHAPE, "%s: argument '%s' must be [C] or [N, C, *], got a 0-dim "
                         "tensor", c->op->name, TJC_NN_ARG(c, o));
    int64_t want[TJ_MAX_DIMS];
    int nw = 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != (x->ndim == 1 ? 0 : 1)) want[nw++] = x->sizes[d];
    bool ok = t->ndim == nw;
    for (int d = 0; ok && d < nw; d++) ok = t->sizes[d] == want[d];
    if (!ok)
        return tjc_error(TJ_ERR_SHAPE, "%s: argument '%s' must have sizes %s to match '%s' of "
                         "sizes %s (classes in dim %d), got %s", c->op->name, TJC_NN_ARG(c, o + 1),
                         tjc_fmt_sizes(a, sizeof a, want, nw), TJC_NN_ARG(c, o),
                         tjc_fmt_sizes(b, sizeof b, x->sizes, x->ndim), x->ndim == 1 ? 0 : 1,
                         tjc_fmt_sizes(tb, sizeof tb, t->sizes, t->ndim));
    int64_t C = x->sizes[x->ndim == 1 ? 0 : 1];
    return tjc_nn_check_vector(c, o + 2, C, "one per class");
}

/* in: self, target, weight; attrs: reduction, ignore_index */
tj_status tjc_infer_nll_loss(const tjc_call *c, int *n_out) {
    tj_status st = check_nll(c, 0);
    if (st) return st;
    *n_out = 1;
    loss_meta(c, tjc_nn_reduction(c, 0), c->in[0]->dtype, c->in[1]);
    return TJ_OK;
}

/* in: grad_output, self, target, weight; attrs: reduction, ignore_index */
tj_status tjc_infer_nll_loss_backward(const tjc_call *c, int *n_out) {
    tj_status st = check_nll(c, 1);
    if (!st) st = check_grad_output(c, tjc_nn_reduction(c, 0), c->in[2]);
    if (st) return st;
    *n_out = 1;
    tjc_meta_new(&c->meta[0], c->in[1]->dtype, c->in[1]->sizes, c->in[1]->ndim);
    return TJ_OK;
}

/* in: self, target, weight; attrs: reduction, ignore_index, label_smoothing */
tj_status tjc_infer_cross_entropy_loss(const tjc_call *c, int *n_out) {
    tj_status st = check_nll(c, 0);
    if (st) return st;
    double e = c->attr[2].f; /* PyTorch checks only the upper bound; below 0 is no smoothing */
    if (!(e <= 1))
        return tjc_error(TJ_ERR_ARG, "%s: label_smoothing must be between 0.0 and 1.0; got %g",
                         c->op->name, e);
    *n_out = 1;
    loss_meta(c, tjc_nn_reduction(c, 0), c->in[0]->dtype, c->in[1]);
    return TJ_OK;
}

/* ---- binary_cross_entropy_with_logits ----------------------------------------------- */

/* self, target, weight, pos_weight at inputs o..o+3 */
static tj_status check_bce(const tjc_call *c, int o) {
    tj_status st = tjc_nn_require_float(c, o);
    if (!st) st = tjc_nn_require_float(c, o + 1);
    if (!st) st = tjc_nn_same_sizes(c, o + 1, o);
    if (!st) st = check_broadcasts_to(c, o + 2, o);
    if (!st) st = check_broadcasts_to(c, o + 3, o);
    return st;
}

/* in: self, target, weight, pos_weight; attrs: reduction */
tj_status tjc_infer_bce_with_logits(const tjc_call *c, int *n_out) {
    tj_status st = check_bce(c, 0);
    if (st) return st;
    *n_out = 1; /* self and target promote, as in PyTorch */
    loss_meta(c, tjc_nn_reduction(c, 0), tjc_promote(c->in[0]->dtype, c->in[1]->dtype), c->in[0]);
    return TJ_OK;
}

/* in: grad_output, self, target, weight, pos_weight; attrs: reduction */
tj_status tjc_infer_bce_with_logits_backward(const tjc_call *c, int *n_out) {
    tj_status st = check_bce(c, 1);
    if (!st) st = check_grad_output(c, tjc_nn_reduction(c, 0), c->in[1]);
    if (st) return st;
    *n_out = 1;
    tjc_meta_new(&c->meta[0], c->in[1]->dtype, c->in[1]->sizes, c->in[1]->ndim);
    return TJ_OK;
}

/* ---- embedding ---------------------------------------------------------------------- */

static tj_status check_room_for_dim(const tjc_call *c, int i) {
    if (c->in[i]->ndim < TJ_MAX_DIMS) return TJ_OK;
    return tjc_error(TJ_ERR_SHAPE, "%s: argument '%s' has %d dims; the result would have more "
                     "than %d", c->op->name, TJC_NN_ARG(c, i), c->in[i]->ndim, TJ_MAX_DIMS);
}

/* in: weight, indices; attrs: padding_idx, scale_grad_by_freq */
tj_status tjc_infer_embedding(const tjc_call *c, int *n_out) {
    const tj_tensor *w = c->in[0], *idx = c->in[1];
    char b[TJC_SIZES_BUF];
    if (w->ndim != 2)
        return tjc_error(TJ_ERR_SHAPE, "%s: argument 'weight' must be 2-D [num_embeddings, "
                         "embedding_dim], got sizes %s", c->op->name,
                         tjc_fmt_sizes(b, sizeof b, w->sizes, w->ndim));
    tj_status st = tjc_nn_require_index(c, 1);
    if (!st) st = check_room_for_dim(c, 1);
    if (st) return st;
    int64_t sizes[TJ_MAX_DIMS];
    for (int d = 0; d < idx->ndim; d++) sizes[d] = idx->sizes[d];
    sizes[idx->ndim] = w->sizes[1];
    *n_out = 1;
    tjc_meta_new(&c->meta[0], w->dtype, sizes, idx->ndim + 1);
    return TJ_OK;
}

/* in: grad_output, indices; attrs: num_weights, padding_idx, scale_grad_by_freq */
tj_status tjc_infer_embedding_dense_backward(const tjc_call *c, int *n_out) {
    const tj_tensor *g = c->in[0], *idx = c->in[1];
    tj_status st = tjc_nn_require_float(c, 0);
    if (!st) st = tjc_nn_require_index(c, 1);
    if (st) return st;
    bool ok = g->ndim == idx->ndim + 1;
    for (int d = 0; ok && d < idx->ndim; d++) ok = g->sizes[d] == idx->sizes[d];
    if (!ok) {
        char a[TJC_SIZES_BUF], b[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_SHAPE, "%s: argument 'grad_output' of sizes %s must be the sizes "
                         "of 'indices' %s followed by the embedding dim", c->op->name,
                         tjc_fmt_sizes(a, sizeof a, g->sizes, g->ndim),
                         tjc_fmt_sizes(b, sizeof b, idx->sizes, idx->ndim));
    }
    int64_t nw = c->attr[0].i;
    if (nw < 0)
        return tjc_error(TJ_ERR_ARG, "%s: num_weights must be non-negative, got %lld", c->op->name,
                         (long long)nw);
    int64_t sizes[2] = {nw, g->sizes[g->ndim - 1]};
    *n_out = 1;
    tjc_meta_new(&c->meta[0], g->dtype, sizes, 2);
    return TJ_OK;
}

/* ---- index_select, gather, scatter_add ---------------------------------------------- */

/* in: self, index; attrs: dim */
tj_status tjc_infer_index_select(const tjc_call *c, int *n_out) {
    const tj_tensor *x = c->in[0], *idx = c->in[1];
    int dim;
    tj_status st = tjc_nn_require_index(c, 1);
    if (st) return st;
    /* a 0-dim self is one element along dim 0 (PyTorch): index picks it once, the result is 0-dim */
    if ((st = tjc_wrap_dim(c->op->name, c->attr[0].i, x->ndim, &dim))) return st;
    if (x->ndim == 0 && tjc_numel(idx->sizes, idx->ndim) != 1)
        return tjc_error(TJ_ERR_SHAPE, "%s: a 0-dim 'self' takes an index of one element, got %lld",
                         c->op->name, (long long)tjc_numel(idx->sizes, idx->ndim));
    if (idx->ndim > 1) {
        char b[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_SHAPE, "%s: argument 'index' must be 0-D or 1-D, got sizes %s",
                         c->op->name, tjc_fmt_sizes(b, sizeof b, idx->sizes, idx->ndim));
    }
    int64_t sizes[TJ_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) sizes[d] = x->sizes[d];
    sizes[dim] = tjc_numel(idx->sizes, idx->ndim);
    *n_out = 1;
    tjc_meta_new(&c->meta[0], x->dtype, sizes, x->ndim);
    return TJ_OK;
}

/* index (input i) has self's ndim and fits in src (input s, every dim) and
 * in self (input 0, every dim but dim). */
static tj_status check_index_fits(const tjc_call *c, int i, int s, int dim) {
    const tj_tensor *x = c->in[0], *idx = c->in[i], *src = s >= 0 ? c->in[s] : NULL;
    char a[TJC_SIZES_BUF], b[TJC_SIZES_BUF];
    if (idx->ndim != x->ndim || (src && src->ndim != x->ndim))
        return tjc_error(TJ_ERR_SHAPE, "%s: argument 'index' (%d dims)%s must have as many dims "
                         "as 'self' (%d)", c->op->name, idx->ndim, src ? " and 'src'" : "",
                         x->ndim);
    for (int d = 0; d < x->ndim; d++) {
        if (d != dim && idx->sizes[d] > x->sizes[d])
            return tjc_error(TJ_ERR_SHAPE, "%s: argument 'index' of sizes %s is larger than "
                             "'self' of sizes %s in dim %d", c->op->name,
                             tjc_fmt_sizes(a, sizeof a, idx->sizes, idx->ndim),
                             tjc_fmt_sizes(b, sizeof b, x->sizes, x->ndim), d);
        if (src && idx->sizes[d] > src->sizes[d])
            return tjc_error(TJ_ERR_SHAPE, "%s: argument 'index' of sizes %s is larger than "
                             "'src' of sizes %s in dim %d", c->op->name,
                             tjc_fmt_sizes(a, sizeof a, idx->sizes, idx->ndim),
                             tjc_fmt_sizes(b, sizeof b, src->sizes, src->ndim), d);
    }
    return TJ_OK;
}

/* in: self, index; attrs: dim */
tj_status tjc_infer_gather(const tjc_call *c, int *n_out) {
    const tj_tensor *x = c->in[0], *idx = c->in[1];
    int dim;
    tj_status st = tjc_nn_require_index(c, 1);
    if (!st) st = tjc_wrap_dim(c->op->name, c->attr[0].i, x->ndim, &dim);
    if (!st) st = check_index_fits(c, 1, -1, dim);
    if (st) return st;
    *n_out = 1;
    tjc_meta_new(&c->meta[0], x->dtype, idx->sizes, idx->ndim);
    return TJ_OK;
}

/* in: self, index, src; attrs: dim */
tj_status tjc_infer_scatter_add(const tjc_call *c, int *n_out) {
    const tj_tensor *x = c->in[0], *src = c->in[2];
    int dim;
    tj_status st = tjc_nn_require_index(c, 1);
    if (!st) st = tjc_wrap_dim(c->op->name, c->attr[0].i, x->ndim, &dim);
    if (!st) st = check_index_fits(c, 1, 2, dim);
    if (st) return st;
    if (src->dtype != x->dtype)
        return tjc_error(TJ_ERR_DTYPE, "%s: argument 'src' (%s) must have the dtype of 'self' "
                         "(%s)", c->op->name, tj_dtype_name(src->dtype), tj_dtype_name(x->dtype));
    *n_out = 1;
    tjc_meta_new(&c->meta[0], x->dtype, x->sizes, x->ndim);
    return TJ_OK;
}

/* ---- one_hot ------------------------------------------------------------------------ */

/* The largest element of an i64 tensor (any strides); false when empty. */
static bool max_index(const tj_tensor *t, int64_t *out) {
    int64_t n = tjc_numel(t->sizes, t->ndim), idx[TJ_MAX_DIMS] = {0};
    if (n == 0) return false;
    const int64_t *p = (const int64_t *)tjc_data_ptr(t);
    int64_t best = INT64_MIN;
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int d = 0; d < t->ndim; d++) off += idx[d] * t->strides[d];
        if (p[off] > best) best = p[off];
        for (int d = t->ndim - 1; d >= 0 && ++idx[d] == t->sizes[d]; d--) idx[d] = 0;
    }
    *out = best;
    return true;
}

/* t, or for a tensor on a device a host copy of the bytes its view spans,
 * viewed with t's strides: the data decides a size here, and a shape rule
 * runs no kernel. (Strides are never negative.) */
static tj_tensor *host_readable(tj_tensor *t) {
    int64_t span = 1, one = 1;
    if (t->storage->device.type == TJ_CPU || tjc_numel(t->sizes, t->ndim) == 0) return tj_retain(t);
    for (int d = 0; d < t->ndim; d++) span += (t->sizes[d] - 1) * t->strides[d];
    tj_tensor *flat = tjc_make_view(t, &span, &one, 1, t->offset);
    tj_tensor *host = flat ? tjc_to_device(flat, TJ_DEVICE_CPU) : NULL;
    tj_tensor *view = host ? tjc_make_view(host, t->sizes, t->strides, t->ndim, 0) : NULL;
    tj_release(flat);
    tj_release(host);
    return view;
}

/* in: self; attrs: num_classes. With num_classes -1 the size comes from the
 * data, which a trace records as a constant. */
tj_status tjc_infer_one_hot(const tjc_call *c, int *n_out) {
    const tj_tensor *x = c->in[0];
    tj_status st = tjc_nn_require_index(c, 0);
    if (!st) st = check_room_for_dim(c, 0);
    if (st) return st;
    int64_t classes = c->attr[0].i;
    if (classes < -1)
        return tjc_error(TJ_ERR_ARG, "%s: num_classes must be -1 (infer) or non-negative, got %lld",
                         c->op->name, (long long)classes);
    if (classes == -1) {
        tj_tensor *host = host_readable(c->in[0]);
        if (!host) return tj_last_status();
        int64_t top;
        bool any = max_index(host, &top);
        tj_release(host);
        if (!any)
            return tjc_error(TJ_ERR_ARG, "%s: cannot infer num_classes from an empty tensor; "
                             "pass num_classes", c->op->name);
        if (top < 0)
            return tjc_error(TJ_ERR_ARG, "%s: class values must be non-negative, got %lld",
                             c->op->name, (long long)top);
        classes = top + 1;
    }
    int64_t sizes[TJ_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) sizes[d] = x->sizes[d];
    sizes[x->ndim] = classes;
    *n_out = 1;
    tjc_meta_new(&c->meta[0], TJ_I64, sizes, x->ndim + 1);
    return TJ_OK;
}
