/* import_nn.c — import rules of ONNX's neural-network ops: Softmax,
 * LogSoftmax, Hardmax, OneHot, MatMul, Gemm, Conv (1-D, 2-D), ConvTranspose (2-D), MaxPool,
 * AveragePool (1-D and 2-D), the global pools, BatchNormalization (inference),
 * LayerNormalization, InstanceNormalization, MeanVarianceNormalization and
 * the NLL and softmax cross-entropy losses. Padding must be symmetric (tjit's
 * convolutions and pools pad both sides alike); other cases are refused. */
#include <stdint.h>
#include <string.h>

#include "tjo.h"


static tjo_val *opt_in(tjo_importer *im, int i) { return tjo_has_input(im, i) ? im->in[i] : NULL; }

/* ---- softmax ----------------------------------------------------------------------- */

static tj_status import_softmax(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 1);
    if (st) return st;
    tjo_val *x = im->in[0];
    int r = x->type.ndim, ax;
    int64_t axis;
    bool old = im->opset < 13; /* the input seen as 2-D [prod(:axis), prod(axis:)] */
    if (!tjo_attr_int(im, "axis", old ? 1 : -1, &axis) || !tjo_axis(im, axis, r, "axis", &ax)) TJO_FAIL();
    int op = im->node->op_type[0] == 'L' ? TJ_OP_log_softmax : TJ_OP_softmax;
    if (x->type.dtype != TJ_F32 && x->type.dtype != TJ_F64) return tjo_unsupported(im, "a non-float input");
    tjo_val *y = x;
    int64_t flat[2] = {1, 1};
    if (old && r > 0) {
        for (int d = 0; d < r; d++) flat[d >= ax] *= x->type.sizes[d];
        TJO_NEED(y = tjo_reshape(im, x, flat, 2));
        ax = 1;
    }
    tj_attr a = {.i = ax};
    tjo_val *in[1] = {y};
    TJO_NEED(y = tjo_emit1(im, op, in, 1, &a));
    out[0] = old && r > 0 ? tjo_reshape(im, y, x->type.sizes, r) : y;
    return out[0] ? TJ_OK : tj_last_status();
}

/* Hardmax: 1 at the first maximum along axis: argmax, one_hot, the class dim moved back. */
static tj_status import_hardmax(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 1);
    if (st) return st;
    tjo_val *x = im->in[0];
    int r = x->type.ndim, ax;
    int64_t axis;
    if (!tjo_attr_int(im, "axis", im->opset < 13 ? 1 : -1, &axis) || !tjo_axis(im, axis, r, "axis", &ax)) TJO_FAIL();
    if (im->opset < 13 && ax != r - 1)
        return tjo_unsupported(im, "attribute 'axis' %d before opset 13 (a 2-D view of the input)", ax);
    if (r == 0 || (x->type.dtype != TJ_F32 && x->type.dtype != TJ_F64)) return tjo_unsupported(im, "a non-float or 0-dim input");
    int64_t dim = ax, perm[TJ_MAX_DIMS];
    tj_attr am[2] = {{.ints = {&dim, 1}}, {.b = false}}, oh = {.i = x->type.sizes[ax]};
    tjo_val *in[1] = {x};
    tjo_val *idx = tjo_emit1(im, TJ_OP_argmax, in, 1, am);
    tjo_val *in2[1] = {idx};
    tjo_val *hot = idx ? tjo_emit1(im, TJ_OP_one_hot, in2, 1, &oh) : NULL;
    for (int d = 0, k = 0; d < r; d++) perm[d] = d == ax ? r - 1 : k++;
    tj_attr p = {.ints = {perm, r}};
    tjo_val *in3[1] = {hot};
    tjo_val *moved = hot ? tjo_emit1(im, TJ_OP_permute, in3, 1, &p) : NULL;
    out[0] = tjo_cast(im, moved, (tj_dtype)x->type.dtype);
    return out[0] ? TJ_OK : tj_last_status();
}

/* OneHot: depth and values constants; one_hot (indices wrapped), the class
 * dim moved to axis, then off and on values. */
static tj_status import_one_hot(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 3, 3);
    if (st) return st;
    tjo_val *idx = im->in[0], *depth = im->in[1], *values = im->in[2];
    if (idx->type.dtype != TJ_I64) return tjo_unsupported(im, "indices of dtype %s: tjit takes int64",
                                                           tj_dtype_name((tj_dtype)idx->type.dtype));
    double k, off, on;
    if (!depth->t || depth->param || !values->t || values->param)
        return tjo_unsupported(im, "depth and values are computed at run time; tjit needs them constant");
    if (tj_item(depth->t, &k) != TJ_OK || tj_numel(values->t) != 2 || tj_ndim(values->t) != 1)
        return tjo_node_error(im, TJ_ERR_PARSE, "depth must hold one value and values two");
    if (!(k >= 1 && k <= (1 << 24))) return tjo_unsupported(im, "depth %g", k);
    int64_t zero = 0, one = 1;
    off = tj_get(values->t, &zero);
    on = tj_get(values->t, &one);
    int r = idx->type.ndim + 1, ax;
    int64_t axis;
    if (r > TJ_MAX_DIMS) return tjo_unsupported(im, "the result has %d dims", r);
    if (!tjo_attr_int(im, "axis", -1, &axis) || !tjo_axis(im, axis, r, "axis", &ax)) TJO_FAIL();
    tjo_val *size = tjo_scalar(im, k, TJ_I64);
    tjo_val *w[3] = {tjo_binary(im, TJ_OP_lt, idx, tjo_scalar(im, 0, TJ_I64)),
                     size ? tjo_binary(im, TJ_OP_add, idx, size) : NULL, idx};
    tjo_val *wrapped = tjo_emit1(im, TJ_OP_where, w, 3, NULL);
    tj_attr oh = {.i = (int64_t)k};
    tjo_val *in[1] = {wrapped};
    tjo_val *hot = wrapped ? tjo_emit1(im, TJ_OP_one_hot, in, 1, &oh) : NULL;
    if (hot && ax != r - 1) {
        int64_t perm[TJ_MAX_DIMS];
        for (int d = 0, j = 0; d < r; d++) perm[d] = d == ax ? r - 1 : j++;
        tj_attr p = {.ints = {perm, r}};
        tjo_val *in2[1] = {hot};
        hot = tjo_emit1(im, TJ_OP_permute, in2, 1, &p);
    }
    tj_dtype dt = (tj_dtype)values->type.dtype;
    if (hot && !(off == 0 && on == 1 && dt == TJ_I64)) { /* off + (on - off) * hot, in values' dtype */
        tjo_val *sel[3] = {tjo_cast(im, hot, TJ_BOOL), tjo_scalar(im, on, dt), tjo_scalar(im, off, dt)};
        hot = tjo_emit1(im, TJ_OP_where, sel, 3, NULL);
    }
    out[0] = hot;
    return out[0] ? TJ_OK : tj_last_status();
}

/* ---- matrix products ------------------------------------------------------------------ */

static tj_status import_matmul(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 2, 2);
    if (st) return st;
    if (im->in[0]->type.dtype == TJ_BOOL) return tjo_unsupported(im, "bool inputs");
    out[0] = tjo_binary(im, TJ_OP_matmul, im->in[0], im->in[1]);
    return out[0] ? TJ_OK : tj_last_status();
}

static tjo_val *scale(tjo_importer *im, tjo_val *x, double s) {
    if (!x || s == 1.0) return x;
    tj_attr a = {.scalar = tjo_scalar_for(x, s)};
    tjo_val *in[1] = {x};
    return tjo_emit1(im, TJ_OP_mul_scalar, in, 1, &a);
}

static tj_status import_gemm(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 2, 3);
    if (st) return st;
    int64_t ta, tb;
    double alpha, beta;
    if (!tjo_attr_int(im, "transA", 0, &ta) || !tjo_attr_int(im, "transB", 0, &tb) ||
        !tjo_attr_float(im, "alpha", 1.0, &alpha) || !tjo_attr_float(im, "beta", 1.0, &beta))
        TJO_FAIL();
    tjo_val *a = im->in[0], *b = im->in[1], *c = opt_in(im, 2);
    if (a->type.ndim != 2 || b->type.ndim != 2) return tjo_node_error(im, TJ_ERR_SHAPE, "A and B must be 2-D");
    if (a->type.dtype == TJ_BOOL) return tjo_unsupported(im, "bool inputs");
    if (!ta && tb && alpha == 1.0 && beta == 1.0 && (!c || c->type.ndim == 1)) {
        tjo_val *in[3] = {a, b, c}; /* A B^T + c: a linear layer */
        out[0] = tjo_emit1(im, TJ_OP_linear, in, 3, NULL);
        return out[0] ? TJ_OK : tj_last_status();
    }
    if (ta) a = tjo_unary(im, TJ_OP_t, a);
    if (tb) b = tjo_unary(im, TJ_OP_t, b);
    tjo_val *y = scale(im, tjo_binary(im, TJ_OP_mm, a, b), alpha);
    if (c) y = tjo_binary(im, TJ_OP_add, y, scale(im, c, beta));
    out[0] = y;
    return y ? TJ_OK : tj_last_status();
}

/* ---- windows: kernel, strides, pads, dilations ---------------------------------------------- */

typedef struct window {
    int nd; /* spatial dims */
    int64_t k[2], s[2], p[2], d[2];
} window;

/* Reads the window attributes for nd spatial dims of input sizes in[]. */
static bool read_window(tjo_importer *im, int nd, const int64_t *in, const int64_t *kernel,
                        window *w) {
    const int64_t *v;
    int n;
    w->nd = nd;
    for (int i = 0; i < nd; i++) w->k[i] = kernel[i], w->s[i] = 1, w->p[i] = 0, w->d[i] = 1;
    if (!tjo_attr_ints(im, "strides", &v, &n)) return false;
    if (v && n != nd) return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'strides': %d values for %d dims", n, nd), false;
    for (int i = 0; v && i < nd; i++) w->s[i] = v[i];
    if (!tjo_attr_ints(im, "dilations", &v, &n)) return false;
    if (v && n != nd) return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'dilations': %d values for %d dims", n, nd), false;
    for (int i = 0; v && i < nd; i++) w->d[i] = v[i];
    for (int i = 0; i < nd; i++)
        if (w->s[i] <= 0 || w->d[i] <= 0 || w->k[i] <= 0)
            return tjo_node_error(im, TJ_ERR_PARSE, "kernel, strides and dilations must be positive"), false;
    const char *autopad;
    if (!tjo_attr_str(im, "auto_pad", "NOTSET", &autopad)) return false;
    if (!strcmp(autopad, "SAME_UPPER") || !strcmp(autopad, "SAME_LOWER")) {
        for (int i = 0; i < nd; i++) {
            int64_t outl = (in[i] + w->s[i] - 1) / w->s[i];
            int64_t total = (outl - 1) * w->s[i] + (w->k[i] - 1) * w->d[i] + 1 - in[i];
            if (total < 0) total = 0;
            if (total % 2)
                return tjo_unsupported(im, "attribute 'auto_pad' %s needs padding %lld on dim %d, "
                                       "which is not symmetric", autopad, (long long)total, i), false;
            w->p[i] = total / 2;
        }
        return true;
    }
    if (strcmp(autopad, "NOTSET") && strcmp(autopad, "VALID"))
        return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'auto_pad' \"%s\"", autopad), false;
    if (!tjo_attr_ints(im, "pads", &v, &n)) return false;
    if (v && !strcmp(autopad, "NOTSET")) {
        if (n != 2 * nd) return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'pads': %d values for %d dims", n, nd), false;
        for (int i = 0; i < nd; i++) {
            if (v[i] != v[i + nd])
                return tjo_unsupported(im, "attribute 'pads': begin %lld and end %lld differ on dim %d",
                                       (long long)v[i], (long long)v[i + nd], i), false;
            if (v[i] < 0) return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'pads' is negative"), false;
            w->p[i] = v[i];
        }
    }
    return true;
}

static bool kernel_of(tjo_importer *im, int nd, int64_t *k, bool required) {
    const int64_t *v;
    int n;
    if (!tjo_attr_ints(im, "kernel_shape", &v, &n)) return false;
    if (!v) {
        if (required) return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'kernel_shape' is required"), false;
        return true;
    }
    if (n != nd) return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'kernel_shape': %d values for %d dims", n, nd), false;
    memcpy(k, v, sizeof *v * (size_t)nd);
    return true;
}

static tj_status spatial_dims(tjo_importer *im, const tjo_val *x, int lo, int hi, int *nd) {
    *nd = x->type.ndim - 2;
    if (*nd < lo || *nd > hi)
        return tjo_unsupported(im, "%d spatial dims: tjit has the %d-D form%s", *nd, hi,
                               lo < hi ? " and the 1-D one" : "");
    if (x->type.dtype != TJ_F32 && x->type.dtype != TJ_F64) return tjo_unsupported(im, "a non-float input");
    return TJ_OK;
}

static tj_status import_conv(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    bool transposed = im->node->op_type[4] == 'T';
    tj_status st = tjo_need_inputs(im, 2, 3);
    if (st) return st;
    tjo_val *x = im->in[0], *wt = im->in[1], *b = opt_in(im, 2);
    int nd;
    if ((st = spatial_dims(im, x, transposed ? 2 : 1, 2, &nd))) return st;
    if (wt->type.ndim != nd + 2) return tjo_node_error(im, TJ_ERR_SHAPE, "W has rank %d", wt->type.ndim);
    int64_t k[2] = {wt->type.sizes[2], nd > 1 ? wt->type.sizes[3] : 1}, group;
    window w;
    if (!kernel_of(im, nd, k, false) || !read_window(im, nd, x->type.sizes + 2, k, &w) ||
        !tjo_attr_int(im, "group", 1, &group))
        TJO_FAIL();
    tj_attr a[5];
    tjo_val *in[3] = {x, wt, b};
    if (!transposed) {
        a[0].ints.data = w.s, a[0].ints.n = nd;
        a[1].ints.data = w.p, a[1].ints.n = nd;
        a[2].ints.data = w.d, a[2].ints.n = nd;
        a[3].i = group;
        out[0] = tjo_emit1(im, nd == 1 ? TJ_OP_conv1d : TJ_OP_conv2d, in, 3, a);
        return out[0] ? TJ_OK : tj_last_status();
    }
    const int64_t *v;
    int n;
    int64_t op[2] = {0, 0};
    const char *autopad;
    if (!tjo_attr_str(im, "auto_pad", "NOTSET", &autopad)) TJO_FAIL();
    if (strcmp(autopad, "NOTSET") && strcmp(autopad, "VALID"))
        return tjo_unsupported(im, "attribute 'auto_pad' %s of a transposed convolution", autopad);
    if (!tjo_attr_ints(im, "output_padding", &v, &n)) TJO_FAIL();
    for (int i = 0; v && i < nd && i < n; i++) op[i] = v[i];
    if (!tjo_attr_ints(im, "output_shape", &v, &n)) TJO_FAIL();
    if (v) { /* the padding that gives this output size */
        if (n != nd) return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'output_shape': %d values", n);
        for (int i = 0; i < nd; i++) {
            int64_t total = w.s[i] * (x->type.sizes[2 + i] - 1) + op[i] + (w.k[i] - 1) * w.d[i] + 1 - v[i];
            if (total < 0 || total % 2)
                return tjo_unsupported(im, "attribute 'output_shape' needs padding %lld on dim %d, "
                                       "which is not symmetric", (long long)total, i);
            w.p[i] = total / 2;
        }
    }
    a[0].ints.data = w.s, a[0].ints.n = nd;
    a[1].ints.data = w.p, a[1].ints.n = nd;
    a[2].ints.data = op, a[2].ints.n = nd;
    a[3].i = group;
    a[4].ints.data = w.d, a[4].ints.n = nd;
    out[0] = tjo_emit1(im, TJ_OP_conv_transpose2d, in, 3, a);
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status import_pool(tjo_importer *im, tjo_val **out, int n_out) {
    bool is_max = im->node->op_type[0] == 'M';
    tj_status st = tjo_need_inputs(im, 1, 1);
    if (st) return st;
    if (n_out > 1 && im->node->output[1][0])
        return tjo_unsupported(im, "output Indices: ONNX's flat indices differ from tjit's");
    tjo_val *x = im->in[0];
    int nd;
    if ((st = spatial_dims(im, x, 1, 2, &nd))) return st;
    int64_t k[2], ceil, storage = 0, include = 0;
    window w;
    if (!kernel_of(im, nd, k, true) || !read_window(im, nd, x->type.sizes + 2, k, &w) ||
        !tjo_attr_int(im, "ceil_mode", 0, &ceil) || !tjo_attr_int(im, "storage_order", 0, &storage) ||
        !tjo_attr_int(im, "count_include_pad", 0, &include))
        TJO_FAIL();
    if (storage) return tjo_unsupported(im, "attribute 'storage_order' 1");
    for (int i = 0; i < nd; i++)
        if (2 * w.p[i] > w.k[i])
            return tjo_unsupported(im, "padding %lld is more than half the kernel %lld (tjit pools as "
                                   "PyTorch does)", (long long)w.p[i], (long long)w.k[i]);
    if (nd == 1) { /* [N, C, L] pooled as [N, C, 1, L] with a window of height 1 */
        int64_t two = 2;
        w.k[1] = w.k[0], w.s[1] = w.s[0], w.p[1] = w.p[0], w.d[1] = w.d[0];
        w.k[0] = w.s[0] = w.d[0] = 1, w.p[0] = 0;
        tj_attr u = {.i = two};
        tjo_val *in[1] = {x};
        if (!(x = tjo_emit1(im, TJ_OP_unsqueeze, in, 1, &u))) TJO_FAIL();
    }
    tj_attr a[6];
    a[0].ints.data = w.k, a[0].ints.n = 2;
    a[1].ints.data = w.s, a[1].ints.n = 2;
    a[2].ints.data = w.p, a[2].ints.n = 2;
    if (is_max) {
        a[3].ints.data = w.d, a[3].ints.n = 2;
        a[4].b = ceil != 0;
    } else {
        if (w.d[0] != 1 || w.d[1] != 1) return tjo_unsupported(im, "dilated average pooling");
        a[3].b = ceil != 0;
        a[4].b = include != 0;
    }
    tjo_val *in[1] = {x};
    tjo_val *y = tjo_emit1(im, is_max ? TJ_OP_max_pool2d : TJ_OP_avg_pool2d, in, 1, a);
    if (y && nd == 1) {
        tj_attr sq = {.i = 2};
        tjo_val *in2[1] = {y};
        y = tjo_emit1(im, TJ_OP_squeeze_dim, in2, 1, &sq);
    }
    out[0] = y;
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status import_global_pool(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 1);
    if (st) return st;
    tjo_val *x = im->in[0];
    int r = x->type.ndim;
    if (r < 3) return tjo_node_error(im, TJ_ERR_SHAPE, "input of rank %d", r);
    if (x->type.dtype != TJ_F32 && x->type.dtype != TJ_F64) return tjo_unsupported(im, "a non-float input");
    int64_t dims[TJ_MAX_DIMS];
    for (int d = 2; d < r; d++) dims[d - 2] = d;
    tj_attr a[2] = {{.ints = {dims, r - 2}}, {.b = true}};
    tjo_val *in[1] = {x};
    out[0] = tjo_emit1(im, im->node->op_type[6] == 'M' ? TJ_OP_amax : TJ_OP_mean, in, 1, a);
    return out[0] ? TJ_OK : tj_last_status();
}

/* ---- normalisation ------------------------------------------------------------------------- */

static tj_status import_batch_norm(tjo_importer *im, tjo_val **out, int n_out) {
    tj_status st = tjo_need_inputs(im, 5, 5);
    if (st) return st;
    double eps, momentum;
    int64_t training;
    if (!tjo_attr_float(im, "epsilon", 1e-5, &eps) || !tjo_attr_float(im, "momentum", 0.9, &momentum) ||
        !tjo_attr_int(im, "training_mode", 0, &training))
        TJO_FAIL();
    int64_t is_test, spatial;
    if (!tjo_attr_int(im, "is_test", im->opset < 7 ? 0 : 1, &is_test) ||
        !tjo_attr_int(im, "spatial", 1, &spatial))
        TJO_FAIL();
    if (!spatial) return tjo_unsupported(im, "attribute 'spatial' 0: per-activation statistics");
    if (!is_test) training = 1;
    if (training || n_out > 1)
        return tjo_unsupported(im, "training mode: ONNX's running statistics follow another convention");
    if (im->in[0]->type.ndim < 2) return tjo_node_error(im, TJ_ERR_SHAPE, "input of rank < 2");
    tj_attr a[3] = {{.b = false}, {.f = 1.0 - momentum}, {.f = eps}};
    tjo_val *in[5] = {im->in[0], im->in[1], im->in[2], im->in[3], im->in[4]};
    out[0] = tjo_emit1(im, TJ_OP_batch_norm, in, 5, a);
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status import_layer_norm(tjo_importer *im, tjo_val **out, int n_out) {
    tj_status st = tjo_need_inputs(im, 2, 3);
    if (st) return st;
    tjo_val *x = im->in[0], *w = im->in[1], *b = opt_in(im, 2);
    int64_t axis, stash;
    int ax, r = x->type.ndim;
    double eps;
    if (!tjo_attr_int(im, "axis", -1, &axis) || !tjo_axis(im, axis, r, "axis", &ax) ||
        !tjo_attr_float(im, "epsilon", 1e-5, &eps) || !tjo_attr_int(im, "stash_type", 1, &stash))
        TJO_FAIL();
    if (x->type.dtype != TJ_F32 && x->type.dtype != TJ_F64) return tjo_unsupported(im, "a non-float input");
    if (stash != 1) return tjo_unsupported(im, "attribute 'stash_type' %lld", (long long)stash);
    const int64_t *shape = x->type.sizes + ax;
    int nn = r - ax;
    for (int k = 0; k < 2; k++) { /* Scale and B broadcast to the normalized shape */
        tjo_val **p = k ? &b : &w;
        if (!*p) continue;
        bool same = (*p)->type.ndim == nn;
        for (int d = 0; same && d < nn; d++) same = (*p)->type.sizes[d] == shape[d];
        if (same) continue;
        tj_attr e = {.ints = {shape, nn}};
        tjo_val *in[1] = {*p};
        TJO_NEED(*p = tjo_emit1(im, TJ_OP_expand, in, 1, &e));
    }
    tjo_val *in[3] = {x, w, b};
    tj_attr a[2] = {{.ints = {shape, nn}}, {.f = eps}};
    if (n_out == 1) {
        out[0] = tjo_emit1(im, TJ_OP_layer_norm, in, 3, a);
        return out[0] ? TJ_OK : tj_last_status();
    }
    /* native_layer_norm's inputs: input, weight, bias; attrs normalized_shape, eps */
    return tjo_emit(im, TJ_OP_native_layer_norm, in, 3, a, out, 3);
}

static tj_status import_instance_norm(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 3, 3);
    if (st) return st;
    double eps;
    if (!tjo_attr_float(im, "epsilon", 1e-5, &eps)) TJO_FAIL();
    tjo_val *x = im->in[0];
    if (x->type.ndim < 3) return tjo_node_error(im, TJ_ERR_SHAPE, "input of rank %d", x->type.ndim);
    tj_attr a[2] = {{.i = x->type.sizes[1]}, {.f = eps}};
    tjo_val *in[3] = {x, im->in[1], im->in[2]};
    out[0] = tjo_emit1(im, TJ_OP_group_norm, in, 3, a);
    return out[0] ? TJ_OK : tj_last_status();
}

/* ONNX's function: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9). */
static tj_status import_mvn(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 1);
    if (st) return st;
    tjo_val *x = im->in[0];
    int64_t def[3] = {0, 2, 3}, axes[TJ_MAX_DIMS];
    const int64_t *v;
    int n;
    if (!tjo_attr_ints(im, "axes", &v, &n)) TJO_FAIL();
    if (!v) v = def, n = 3;
    if (n > TJ_MAX_DIMS) return tjo_node_error(im, TJ_ERR_PARSE, "%d axes", n);
    for (int k = 0; k < n; k++) {
        int a;
        if (!tjo_axis(im, v[k], x->type.ndim, "axes entry", &a)) TJO_FAIL();
        axes[k] = a;
    }
    tj_attr a[2] = {{.ints = {axes, n}}, {.b = true}};
    tjo_val *in1[1] = {x}, *in2[1] = {tjo_binary(im, TJ_OP_mul, x, x)};
    tjo_val *mean = tjo_emit1(im, TJ_OP_mean, in1, 1, a);
    tjo_val *mean_sq = in2[0] ? tjo_emit1(im, TJ_OP_mean, in2, 1, a) : NULL;
    tjo_val *var = tjo_binary(im, TJ_OP_sub, mean_sq, tjo_binary(im, TJ_OP_mul, mean, mean));
    tj_attr e[2] = {{.scalar = tj_scalar_float(1e-9)}, {.scalar = tj_scalar_int(1)}};
    tjo_val *in3[1] = {tjo_unary(im, TJ_OP_sqrt, var)};
    tjo_val *den = in3[0] ? tjo_emit1(im, TJ_OP_add_scalar, in3, 1, e) : NULL;
    out[0] = tjo_binary(im, TJ_OP_div, tjo_binary(im, TJ_OP_sub, x, mean), den);
    return out[0] ? TJ_OK : tj_last_status();
}

/* ---- losses ------------------------------------------------------------------------------ */

static tj_status reduction_of(tjo_importer *im, const char **red) {
    const char *r;
    if (!tjo_attr_str(im, "reduction", "mean", &r)) TJO_FAIL();
    *red = !strcmp(r, "none") ? "none" : !strcmp(r, "sum") ? "sum" : !strcmp(r, "mean") ? "mean" : NULL;
    if (!*red) return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'reduction' \"%s\"", r);
    return TJ_OK;
}

static tj_status import_nll(tjo_importer *im, tjo_val **out, int n_out) {
    bool softmax = im->node->op_type[0] == 'S';
    tj_status st = tjo_need_inputs(im, 2, 3);
    if (st) return st;
    const char *red;
    int64_t ignore;
    if ((st = reduction_of(im, &red))) return st;
    if (!tjo_attr_int(im, "ignore_index", INT64_MIN, &ignore)) TJO_FAIL();
    tjo_val *x = im->in[0], *target = im->in[1], *w = opt_in(im, 2);
    if (x->type.ndim < 2) return tjo_node_error(im, TJ_ERR_SHAPE, "input of rank %d", x->type.ndim);
    if (target->type.dtype != TJ_I64) return tjo_unsupported(im, "targets of dtype %s: tjit takes int64",
                                                              tj_dtype_name((tj_dtype)target->type.dtype));
    if (x->type.dtype != TJ_F32 && x->type.dtype != TJ_F64) return tjo_unsupported(im, "a non-float input");
    tjo_val *logp = x;
    if (softmax) {
        tj_attr a = {.i = 1};
        tjo_val *in[1] = {x};
        TJO_NEED(logp = tjo_emit1(im, TJ_OP_log_softmax, in, 1, &a));
    }
    tj_attr a[2] = {{.s = red}, {.i = ignore}};
    tjo_val *in[3] = {logp, target, w};
    TJO_NEED(out[0] = tjo_emit1(im, TJ_OP_nll_loss, in, 3, a));
    if (n_out > 1) out[1] = softmax ? logp : NULL;
    return TJ_OK;
}

const tjo_import_rule tjo_rules_nn[] = {
    {"Softmax", "axis", import_softmax},
    {"LogSoftmax", "axis", import_softmax},
    {"Hardmax", "axis", import_hardmax},
    {"OneHot", "axis", import_one_hot},
    {"MatMul", "", import_matmul},
    {"Gemm", "alpha|beta|transA|transB|broadcast", import_gemm},
    {"Conv", "auto_pad|dilations|group|kernel_shape|pads|strides", import_conv},
    {"ConvTranspose", "auto_pad|dilations|group|kernel_shape|output_padding|output_shape|pads|strides",
     import_conv},
    {"MaxPool", "auto_pad|ceil_mode|dilations|kernel_shape|pads|storage_order|strides", import_pool},
    {"AveragePool", "auto_pad|ceil_mode|count_include_pad|kernel_shape|pads|strides", import_pool},
    {"GlobalAveragePool", "", import_global_pool},
    {"GlobalMaxPool", "", import_global_pool},
    {"BatchNormalization", "epsilon|momentum|training_mode|is_test|spatial", import_batch_norm},
    {"LayerNormalization", "axis|epsilon|stash_type", import_layer_norm},
    {"InstanceNormalization", "epsilon", import_instance_norm},
    {"MeanVarianceNormalization", "axes", import_mvn},
    {"NegativeLogLikelihoodLoss", "ignore_index|reduction", import_nll},
    {"SoftmaxCrossEntropyLoss", "ignore_index|reduction", import_nll},
    {NULL, NULL, NULL},
};
