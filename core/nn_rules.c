/* nn_rules.c — shape and dtype rules of the nn family's normalisation,
 * softmax and dropout rows (ops_nn.def), and the checks every nn rule shares
 * (nn_rules.h). Losses and indexing are in nn_rules_loss.c. */
#include <string.h>

#include "nn_rules.h"

/* ---- shared checks ------------------------------------------------------------------ */

tj_status tjc_nn_require_float(const tjc_call *c, int i) {
    if (tj_dtype_is_float(c->in[i]->dtype)) return TJ_OK;
    return tjc_error(TJ_ERR_DTYPE, "%s: argument '%s' must be a floating tensor (f32 or f64), "
                     "got %s", c->op->name, TJC_NN_ARG(c, i), tj_dtype_name(c->in[i]->dtype));
}

tj_status tjc_nn_require_index(const tjc_call *c, int i) {
    if (c->in[i]->dtype == TJ_I64) return TJ_OK;
    return tjc_error(TJ_ERR_DTYPE, "%s: argument '%s' must be an i64 tensor of indices, got %s",
                     c->op->name, TJC_NN_ARG(c, i), tj_dtype_name(c->in[i]->dtype));
}

tj_status tjc_nn_check_vector(const tjc_call *c, int i, int64_t n, const char *what) {
    const tj_tensor *t = c->in[i];
    if (!t) return TJ_OK;
    if (t->ndim != 1 || t->sizes[0] != n) {
        char b[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_SHAPE, "%s: argument '%s' must have sizes [%lld] (%s), got %s",
                         c->op->name, TJC_NN_ARG(c, i), (long long)n, what,
                         tjc_fmt_sizes(b, sizeof b, t->sizes, t->ndim));
    }
    return tjc_nn_require_float(c, i);
}

tj_status tjc_nn_check_sizes(const tjc_call *c, int i, const int64_t *sizes, int ndim) {
    const tj_tensor *t = c->in[i];
    bool same = t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->sizes[d] == sizes[d];
    if (same) return TJ_OK;
    char a[TJC_SIZES_BUF], b[TJC_SIZES_BUF];
    return tjc_error(TJ_ERR_SHAPE, "%s: argument '%s' must have sizes %s, got %s", c->op->name,
                     TJC_NN_ARG(c, i), tjc_fmt_sizes(a, sizeof a, sizes, ndim),
                     tjc_fmt_sizes(b, sizeof b, t->sizes, t->ndim));
}

tj_status tjc_nn_same_dtype(const tjc_call *c, int from, int to) {
    for (int i = from; i <= to && i < c->n_in; i++)
        if (c->in[i] && c->in[i]->dtype != c->in[0]->dtype)
            return tjc_error(TJ_ERR_DTYPE, "%s: argument '%s' is %s but '%s' is %s; they must have "
                             "the same dtype (as in PyTorch)", c->op->name, TJC_NN_ARG(c, i),
                             tj_dtype_name(c->in[i]->dtype), TJC_NN_ARG(c, 0),
                             tj_dtype_name(c->in[0]->dtype));
    return TJ_OK;
}

tj_status tjc_nn_same_sizes(const tjc_call *c, int i, int j) {
    const tj_tensor *a = c->in[i], *b = c->in[j];
    bool same = a->ndim == b->ndim;
    for (int d = 0; same && d < a->ndim; d++) same = a->sizes[d] == b->sizes[d];
    if (same) return TJ_OK;
    char ba[TJC_SIZES_BUF], bb[TJC_SIZES_BUF];
    return tjc_error(TJ_ERR_SHAPE, "%s: argument '%s' has sizes %s but '%s' has sizes %s; they "
                     "must be equal", c->op->name, TJC_NN_ARG(c, i),
                     tjc_fmt_sizes(ba, sizeof ba, a->sizes, a->ndim), TJC_NN_ARG(c, j),
                     tjc_fmt_sizes(bb, sizeof bb, b->sizes, b->ndim));
}

int tjc_nn_reduction(const tjc_call *c, int k) {
    const tj_schema *s = &c->op->schema;
    return tjc_choice_index(&s->args[s->attr_pos[k]], c->attr[k].s);
}

/* n_out for an op with 1 or 3 outputs: the composite forms take only the first. */
static int outputs_of(const tjc_call *c) { return c->op->schema.n_outputs; }

/* ---- batch norm ----------------------------------------------------------------------
 * in: input, weight, bias, running_mean, running_var; attrs: training, momentum, eps */

static tj_status check_bn_input(const tjc_call *c, const tj_tensor *x) {
    if (x->ndim < 2) {
        char b[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_SHAPE, "%s: argument '%s' must have at least 2 dims [N, C, *], "
                         "got sizes %s", c->op->name, TJC_NN_ARG(c, 0),
                         tjc_fmt_sizes(b, sizeof b, x->sizes, x->ndim));
    }
    return tjc_nn_require_float(c, 0);
}

/* The arguments of batch norm's forward ops (input, weight, bias, running_mean,
 * running_var), in training or eval mode. */
static tj_status check_bn(const tjc_call *c, bool training) {
    const tj_tensor *x = c->in[0];
    tj_status st = check_bn_input(c, x);
    if (st) return st;
    int64_t C = x->sizes[1];
    for (int i = 1; i <= 4; i++)
        if ((st = tjc_nn_check_vector(c, i, C, "one per channel"))) return st;
    if ((st = tjc_nn_same_dtype(c, 1, 4))) return st;
    if (!c->in[3] != !c->in[4])
        return tjc_error(TJ_ERR_ARG, "%s: running_mean and running_var must be given together",
                         c->op->name);
    if (!training && !c->in[3])
        return tjc_error(TJ_ERR_ARG, "%s: running_mean and running_var are required when "
                         "training is false", c->op->name);
    /* one value per channel is computed, as aten's op does; none has no statistics (PyTorch
     * 1.13 dies of a division by zero there) */
    if (training && C && tjc_numel(x->sizes, x->ndim) == 0) {
        char b[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_SHAPE, "%s: training needs at least 1 value per channel, got "
                         "input sizes %s", c->op->name, tjc_fmt_sizes(b, sizeof b, x->sizes,
                                                                      x->ndim));
    }
    for (int i = 3; i <= 4; i++)
        if (c->in[i] && tjc_has_internal_overlap(c->in[i]))
            return tjc_error(TJ_ERR_ARG, "%s: argument '%s' is written in place and must not "
                             "have overlapping elements", c->op->name, TJC_NN_ARG(c, i));
    return TJ_OK;
}

tj_status tjc_infer_native_batch_norm(const tjc_call *c, int *n_out) {
    const tj_tensor *x = c->in[0];
    bool training = c->attr[0].b;
    tj_status st = check_bn(c, training);
    if (st) return st;
    *n_out = outputs_of(c);
    if (c->meta_cap < *n_out) return TJ_OK;
    tjc_meta_new(&c->meta[0], x->dtype, x->sizes, x->ndim);
    /* save_mean and save_invstd are empty in eval mode, as PyTorch's: the
     * backward then reads running_mean and running_var */
    int64_t saved = training ? x->sizes[1] : 0;
    for (int k = 1; k < *n_out; k++) tjc_meta_new(&c->meta[k], x->dtype, &saved, 1);
    return TJ_OK;
}

tj_status tjc_infer_batch_norm(const tjc_call *c, int *n_out) {
    return tjc_infer_native_batch_norm(c, n_out);
}

/* in: input, weight, bias, running_mean, running_var; attrs: momentum, eps */
tj_status tjc_infer_batch_norm_stats(const tjc_call *c, int *n_out) {
    tj_status st = check_bn(c, true);
    if (st) return st;
    *n_out = 4;
    if (c->meta_cap < *n_out) return TJ_OK;
    for (int k = 0; k < 4; k++) tjc_meta_new(&c->meta[k], c->in[0]->dtype, &c->in[0]->sizes[1], 1);
    return TJ_OK;
}

/* in: grad_out, input, weight, running_mean, running_var, save_mean, save_invstd;
 * attrs: train, eps */
tj_status tjc_infer_native_batch_norm_backward(const tjc_call *c, int *n_out) {
    const tj_tensor *x = c->in[1];
    tj_status st;
    if ((st = tjc_nn_require_float(c, 0)) || (st = tjc_nn_require_float(c, 1))) return st;
    if (x->ndim < 2) {
        char b[TJC_SIZES_BUF];
        return tjc_error(TJ_ERR_SHAPE, "%s: argument 'input' must have at least 2 dims [N, C, *], "
                         "got sizes %s", c->op->name,
                         tjc_fmt_sizes(b, sizeof b, x->sizes, x->ndim));
    }
    if ((st = tjc_nn_same_sizes(c, 0, 1))) return st;
    int64_t C = x->sizes[1];
    bool train = c->attr[0].b;
    for (int i = 2; i <= (train ? 6 : 4); i++) /* eval ignores save_mean and save_invstd */
        if ((st = tjc_nn_check_vector(c, i, C, "one per channel"))) return st;
    if (train && (!c->in[5] || !c->in[6]))
        return tjc_error(TJ_ERR_ARG, "%s: save_mean and save_invstd are required when train is "
                         "true", c->op->name);
    if (!train && (!c->in[3] || !c->in[4]))
        return tjc_error(TJ_ERR_ARG, "%s: running_mean and running_var are required when train "
                         "is false", c->op->name);
    *n_out = 3;
    tjc_meta_new(&c->meta[0], x->dtype, x->sizes, x->ndim);
    tjc_meta_new(&c->meta[1], x->dtype, &C, 1);
    tjc_meta_new(&c->meta[2], x->dtype, &C, 1);
    return TJ_OK;
}

/* ---- layer norm --------------------------------------------------------------------- */

/* Checks input i against normalized_shape (attr k) and writes the sizes of
 * mean and rstd: input's leading sizes, then ones. */
static tj_status check_layer_norm(const tjc_call *c, int i, int k, int64_t *stat_sizes) {
    const tj_tensor *x = c->in[i];
    const tj_attr *ns = &c->attr[k];
    char a[TJC_SIZES_BUF], b[TJC_SIZES_BUF];
    if (ns->ints.n < 1)
        return tjc_error(TJ_ERR_ARG, "%s: normalized_shape must have at least 1 dim",
                         c->op->name);
    bool fits = ns->ints.n <= x->ndim;
    int axis = x->ndim - ns->ints.n;
    for (int d = 0; fits && d < ns->ints.n; d++) fits = x->sizes[axis + d] == ns->ints.data[d];
    if (!fits)
        return tjc_error(TJ_ERR_SHAPE, "%s: normalized_shape %s does not match the trailing "
                         "sizes of argument '%s' %s", c->op->name,
                         tjc_fmt_sizes(a, sizeof a, ns->ints.data, ns->ints.n), TJC_NN_ARG(c, i),
                         tjc_fmt_sizes(b, sizeof b, x->sizes, x->ndim));
    for (int d = 0; d < x->ndim; d++) stat_sizes[d] = d < axis ? x->sizes[d] : 1;
    return tjc_nn_require_float(c, i);
}

/* Optional inputs from..to, when given, have sizes normalized_shape. */
static tj_status check_affine(const tjc_call *c, int from, int to, const tj_attr *ns) {
    for (int i = from; i <= to; i++) {
        if (!c->in[i]) continue;
        tj_status st = tjc_nn_check_sizes(c, i, ns->ints.data, ns->ints.n);
        if (!st) st = tjc_nn_require_float(c, i);
        if (st) return st;
    }
    return TJ_OK;
}

/* in: input, weight, bias; attrs: normalized_shape, eps */
tj_status tjc_infer_native_layer_norm(const tjc_call *c, int *n_out) {
    const tj_tensor *x = c->in[0];
    int64_t stat[TJ_MAX_DIMS];
    tj_status st = check_layer_norm(c, 0, 0, stat);
    if (!st) st = check_affine(c, 1, 2, &c->attr[0]);
    if (!st) st = tjc_nn_same_dtype(c, 1, 2);
    if (st) return st;
    *n_out = outputs_of(c);
    if (c->meta_cap < *n_out) return TJ_OK;
    tjc_meta_new(&c->meta[0], x->dtype, x->sizes, x->ndim);
    for (int k = 1; k < *n_out; k++) tjc_meta_new(&c->meta[k], x->dtype, stat, x->ndim);
    return TJ_OK;
}

tj_status tjc_infer_layer_norm(const tjc_call *c, int *n_out) {
    return tjc_infer_native_layer_norm(c, n_out);
}

/* in: grad_out, input, mean, rstd, weight, bias; attrs: normalized_shape */
tj_status tjc_infer_native_layer_norm_backward(const tjc_call *c, int *n_out) {
    const tj_tensor *x = c->in[1];
    const tj_attr *ns = &c->attr[0];
    int64_t stat[TJ_MAX_DIMS];
    tj_status st = check_layer_norm(c, 1, 0, stat);
    if (!st) st = tjc_nn_require_float(c, 0);
    if (!st) st = tjc_nn_same_sizes(c, 0, 1);
    for (int i = 2; !st && i <= 3; i++) {
        int64_t want = tjc_numel(stat, x->ndim);
        if (tjc_numel(c->in[i]->sizes, c->in[i]->ndim) != want)
            st = tjc_nn_check_sizes(c, i, stat, x->ndim);
        if (!st) st = tjc_nn_require_float(c, i);
    }
    if (!st) st = check_affine(c, 4, 5, ns);
    if (st) return st;
    *n_out = 3;
    tjc_meta_new(&c->meta[0], x->dtype, x->sizes, x->ndim);
    tjc_meta_new(&c->meta[1], x->dtype, ns->ints.data, ns->ints.n);
    tjc_meta_new(&c->meta[2], x->dtype, ns->ints.data, ns->ints.n);
    return TJ_OK;
}

/* ---- group norm --------------------------------------------------------------------- */

/* input i against [N, C, *] with HxW elements per channel and G groups. */
static tj_status check_group_norm(const tjc_call *c, int i, int64_t N, int64_t C, int64_t HxW,
                                  int64_t G) {
    const tj_tensor *x = c->in[i];
    char b[TJC_SIZES_BUF];
    tjc_fmt_sizes(b, sizeof b, x->sizes, x->ndim);
    if (x->ndim < 2)
        return tjc_error(TJ_ERR_SHAPE, "%s: argument '%s' must have at least 2 dims [N, C, *], "
                         "got sizes %s", c->op->name, TJC_NN_ARG(c, i), b);
    if (x->sizes[0] != N || x->sizes[1] != C || tjc_numel(x->sizes, x->ndim) != N * C * HxW)
        return tjc_error(TJ_ERR_SHAPE, "%s: N=%lld, C=%lld, HxW=%lld do not describe argument "
                         "'%s' of sizes %s", c->op->name, (long long)N, (long long)C,
                         (long long)HxW, TJC_NN_ARG(c, i), b);
    if (G <= 0 || C % G != 0)
        return tjc_error(TJ_ERR_ARG, "%s: the number of groups %lld must be positive and divide "
                         "the number of channels %lld (input sizes %s)", c->op->name,
                         (long long)G, (long long)C, b);
    return tjc_nn_require_float(c, i);
}

static int64_t hxw_of(const tj_tensor *x) {
    int64_t n = 1;
    for (int d = 2; d < x->ndim; d++) n *= x->sizes[d];
    return n;
}

static tj_status group_norm_metas(const tjc_call *c, int *n_out, int64_t N, int64_t G) {
    const tj_tensor *x = c->in[0];
    *n_out = outputs_of(c);
    if (c->meta_cap < *n_out) return TJ_OK;
    int64_t stat[2] = {N, G};
    tjc_meta_new(&c->meta[0], x->dtype, x->sizes, x->ndim);
    for (int k = 1; k < *n_out; k++) tjc_meta_new(&c->meta[k], x->dtype, stat, 2);
    return TJ_OK;
}

/* in: input, weight, bias; attrs: N, C, HxW, group, eps */
tj_status tjc_infer_native_group_norm(const tjc_call *c, int *n_out) {
    int64_t N = c->attr[0].i, C = c->attr[1].i, HxW = c->attr[2].i, G = c->attr[3].i;
    tj_status st = check_group_norm(c, 0, N, C, HxW, G);
    for (int i = 1; !st && i <= 2; i++) st = tjc_nn_check_vector(c, i, C, "one per channel");
    if (!st) st = tjc_nn_same_dtype(c, 1, 2);
    return st ? st : group_norm_metas(c, n_out, N, G);
}

/* in: input, weight, bias; attrs: num_groups, eps */
tj_status tjc_infer_group_norm(const tjc_call *c, int *n_out) {
    const tj_tensor *x = c->in[0];
    if (x->ndim < 2) return check_group_norm(c, 0, 0, 0, 0, 0);
    int64_t N = x->sizes[0], C = x->sizes[1], G = c->attr[0].i;
    tj_status st = check_group_norm(c, 0, N, C, hxw_of(x), G);
    for (int i = 1; !st && i <= 2; i++) st = tjc_nn_check_vector(c, i, C, "one per channel");
    if (!st) st = tjc_nn_same_dtype(c, 1, 2);
    return st ? st : group_norm_metas(c, n_out, N, G);
}

/* in: grad_out, input, mean, rstd, weight; attrs: N, C, HxW, group */
tj_status tjc_infer_native_group_norm_backward(const tjc_call *c, int *n_out) {
    int64_t N = c->attr[0].i, C = c->attr[1].i, HxW = c->attr[2].i, G = c->attr[3].i;
    const tj_tensor *x = c->in[1];
    tj_status st = check_group_norm(c, 1, N, C, HxW, G);
    if (!st) st = tjc_nn_require_float(c, 0);
    if (!st) st = tjc_nn_same_sizes(c, 0, 1);
    int64_t stat[2] = {N, G};
    for (int i = 2; !st && i <= 3; i++) {
        if (tjc_numel(c->in[i]->sizes, c->in[i]->ndim) != N * G)
            st = tjc_nn_check_sizes(c, i, stat, 2);
        if (!st) st = tjc_nn_require_float(c, i);
    }
    if (!st) st = tjc_nn_check_vector(c, 4, C, "one per channel");
    if (st) return st;
    *n_out = 3;
    tjc_meta_new(&c->meta[0], x->dtype, x->sizes, x->ndim);
    tjc_meta_new(&c->meta[1], x->dtype, &C, 1);
    tjc_meta_new(&c->meta[2], x->dtype, &C, 1);
    return TJ_OK;
}

/* ---- softmax ------------------------------------------------------------------------ */

/* in: self; attrs: dim */
tj_status tjc_infer_softmax(const tjc_call *c, int *n_out) {
    const tj_tensor *x = c->in[0];
    int dim;
    tj_status st = tjc_nn_require_float(c, 0);
    if (!st) st = tjc_wrap_dim(c->op->name, c->attr[0].i, x->ndim, &dim);
    if (st) return st;
    *n_out = 1;
    tjc_meta_new(&c->meta[0], x->dtype, x->sizes, x->ndim);
    return TJ_OK;
}

/* in: grad_output, output; attrs: dim, input_dtype */
tj_status tjc_infer_softmax_backward_data(const tjc_call *c, int *n_out) {
    const tj_tensor *y = c->in[1];
    int dim;
    tj_status st = tjc_nn_require_float(c, 0);
    if (!st) st = tjc_nn_require_float(c, 1);
    if (!st) st = tjc_nn_same_sizes(c, 0, 1);
    if (!st) st = tjc_wrap_dim(c->op->name, c->attr[0].i, y->ndim, &dim);
    if (st) return st;
    if (c->in[0]->dtype != y->dtype)
        return tjc_error(TJ_ERR_DTYPE, "%s: grad_output (%s) and output (%s) must have the same "
                         "dtype", c->op->name, tj_dtype_name(c->in[0]->dtype),
                         tj_dtype_name(y->dtype));
    if (!tj_dtype_is_float(c->attr[1].dtype))
        return tjc_error(TJ_ERR_DTYPE, "%s: input_dtype must be f32 or f64, got %s", c->op->name,
                         tj_dtype_name(c->attr[1].dtype));
    *n_out = 1; /* in the gradient's dtype, as PyTorch's (input_dtype only checks) */
    tjc_meta_new(&c->meta[0], c->in[0]->dtype, y->sizes, y->ndim);
    return TJ_OK;
}

/* ---- dropout ------------------------------------------------------------------------ */

/* in: input; attrs: p, train, generator */
tj_status tjc_infer_native_dropout(const tjc_call *c, int *n_out) {
    const tj_tensor *x = c->in[0];
    /* in eval mode the identity, of any dtype (PyTorch); training scales, so floats only */
    tj_status st = c->attr[1].b ? tjc_nn_require_float(c, 0) : TJ_OK;
    if (st) return st;
    double p = c->attr[0].f;
    if (!(p >= 0 && p <= 1))
        return tjc_error(TJ_ERR_ARG, "%s: dropout probability p must be in [0, 1], got %g",
                         c->op->name, p);
    *n_out = outputs_of(c);
    tjc_meta_new(&c->meta[0], x->dtype, x->sizes, x->ndim);
    if (*n_out > 1) tjc_meta_new(&c->meta[1], TJ_BOOL, x->sizes, x->ndim);
    return TJ_OK;
}

/* in: grad_output, mask; attrs: scale */
tj_status tjc_infer_native_dropout_backward(const tjc_call *c, int *n_out) {
    const tj_tensor *g = c->in[0];
    tj_status st = tjc_nn_require_float(c, 0);
    if (!st) st = tjc_nn_same_sizes(c, 1, 0);
    if (st) return st;
    if (c->in[1]->dtype != TJ_BOOL)
        return tjc_error(TJ_ERR_DTYPE, "%s: argument 'mask' must be bool, got %s", c->op->name,
                         tj_dtype_name(c->in[1]->dtype));
    *n_out = 1;
    tjc_meta_new(&c->meta[0], g->dtype, g->sizes, g->ndim);
    return TJ_OK;
}
