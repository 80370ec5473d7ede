/* export_nn.c — export rules of the view and shape ops, the matrix products,
 * convolution and pooling, normalisation, softmax, losses, indexing and
 * dropout, and the reasons the others (gradient ops, random draws) have no
 * ONNX form. Sizes come from the values' types; with allow_size_change,
 * Reshape and Expand keep the input's dims by 0 and 1 entries. */
#include <stdlib.h>
#include <string.h>

#include "tjo.h"
#include "tjo_export.h"

static int rank_in(const tj_node *n) { return tjo_in_type(n, 0)->ndim; }
static int64_t wrap(int64_t d, int r) { return d < 0 ? d + (r ? r : 1) : d; }

static const char *op_ints(tjo_exporter *ex, const char *op, const char *x, const char *attr,
                           const int64_t *v, int k, const char *out) {
    const char *o = out ? out : tjo_tmp(ex, op);
    Onnx__NodeProto *n = x && o ? tjo_node(ex, op, &x, 1, &o, 1) : NULL;
    return n && tjo_set_ints(ex, n, attr, v, k) ? o : NULL;
}

/* ---- views and shapes --------------------------------------------------------------------- */

static tj_status ex_reshape(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    const tj_type *t = tjo_in_type(n, 0), *o = tjo_out_type(n, 0);
    if (tj_op_id(tj_node_op(n)) == TJ_OP_flatten && o->ndim == 2 && t->ndim >= 2 &&
        wrap(tjo_nattr(n, "start_dim")->i, t->ndim) == 1 && wrap(tjo_nattr(n, "end_dim")->i, t->ndim) == t->ndim - 1) {
        const char *x = in[0];
        Onnx__NodeProto *f = tjo_node(ex, "Flatten", &x, 1, out, 1);
        return tjo_done(ex, f && tjo_set_int(ex, f, "axis", 1) ? out[0] : NULL);
    }
    int64_t shape[TJ_MAX_DIMS];
    bool zero = false; /* a size 0 must be kept literally (allowzero), not copied from the input */
    for (int d = 0; d < o->ndim; d++) {
        shape[d] = o->sizes[d];
        zero |= shape[d] == 0;
        if (ex->opts->allow_size_change && d < t->ndim && t->sizes[d] == o->sizes[d]) shape[d] = 0;
    }
    if (zero && (ex->opset < 14 || ex->opts->allow_size_change))
        return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "not exportable: a size 0 needs Reshape's "
                                "allowzero (opset 14 on, fixed sizes)");
    const char *r = tjo_op2(ex, "Reshape", in[0], tjo_x_const_ints(ex, shape, o->ndim), out[0]);
    if (r && zero && !tjo_set_int(ex, ex->nodes[ex->n_nodes - 1], "allowzero", 1)) r = NULL;
    return tjo_done(ex, r);
}

static tj_status ex_squeeze(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    const tj_type *t = tjo_in_type(n, 0);
    int64_t axes[TJ_MAX_DIMS];
    int k = 0;
    if (tj_op_id(tj_node_op(n)) == TJ_OP_squeeze_dim) {
        int64_t d = wrap(tj_node_attr(n, 0)->i, t->ndim);
        if (t->ndim && t->sizes[d] == 1) axes[k++] = d;
    } else {
        for (int d = 0; d < t->ndim; d++)
            if (t->sizes[d] == 1) axes[k++] = d;
    }
    if (!k) return tjo_done(ex, tjo_op1(ex, "Identity", in[0], out[0]));
    return tjo_done(ex, tjo_op2(ex, "Squeeze", in[0], tjo_x_const_ints(ex, axes, k), out[0]));
}

static tj_status ex_unsqueeze(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int64_t d = wrap(tj_node_attr(n, 0)->i, rank_in(n) + 1);
    return tjo_done(ex, tjo_op2(ex, "Unsqueeze", in[0], tjo_x_const_ints(ex, &d, 1), out[0]));
}

static tj_status ex_transpose(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int id = tj_op_id(tj_node_op(n)), r = rank_in(n);
    int64_t perm[TJ_MAX_DIMS];
    for (int d = 0; d < r; d++) perm[d] = d;
    if (id == TJ_OP_permute) {
        for (int d = 0; d < r; d++) perm[d] = wrap(tj_node_attr(n, 0)->ints.data[d], r);
    } else if (id == TJ_OP_t) {
        if (r < 2) return tjo_done(ex, tjo_op1(ex, "Identity", in[0], out[0]));
        perm[0] = 1, perm[1] = 0;
    } else {
        int64_t a = wrap(tj_node_attr(n, 0)->i, r), b = wrap(tj_node_attr(n, 1)->i, r);
        if (r == 0) return tjo_done(ex, tjo_op1(ex, "Identity", in[0], out[0]));
        perm[a] = b, perm[b] = a;
    }
    return tjo_done(ex, op_ints(ex, "Transpose", in[0], "perm", perm, r, out[0]));
}

static tj_status ex_expand(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    const tj_type *t = tjo_in_type(n, 0), *o = tjo_out_type(n, 0);
    int64_t shape[TJ_MAX_DIMS];
    for (int d = 0; d < o->ndim; d++) {
        int di = d - (o->ndim - t->ndim);
        shape[d] = o->sizes[d];
        if (ex->opts->allow_size_change && di >= 0 && t->sizes[di] == o->sizes[d]) shape[d] = 1;
    }
    return tjo_done(ex, tjo_op2(ex, "Expand", in[0], tjo_x_const_ints(ex, shape, o->ndim), out[0]));
}

static tj_status ex_select(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    const tj_type *t = tjo_in_type(n, 0);
    int64_t dim = wrap(tj_node_attr(n, 0)->i, t->ndim), idx = tj_node_attr(n, 1)->i;
    if (idx < 0) idx += t->sizes[dim];
    const char *ins[2] = {in[0], tjo_x_const_scalar(ex, (double)idx, TJ_I64)};
    Onnx__NodeProto *g = ins[1] ? tjo_node(ex, "Gather", ins, 2, out, 1) : NULL;
    return tjo_done(ex, g && tjo_set_int(ex, g, "axis", dim) ? out[0] : NULL);
}

static tj_status ex_slice(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int r = rank_in(n);
    int64_t dim = wrap(tj_node_attr(n, 0)->i, r), start = tj_node_attr(n, 1)->i, end, step = 1;
    if (tj_op_id(tj_node_op(n)) == TJ_OP_narrow) {
        if (start < 0) start += tjo_in_type(n, 0)->sizes[dim];
        end = start + tj_node_attr(n, 2)->i;
    } else {
        end = tj_node_attr(n, 2)->i;
        step = tj_node_attr(n, 3)->i;
    }
    const char *ins[5] = {in[0], tjo_x_const_ints(ex, &start, 1), tjo_x_const_ints(ex, &end, 1),
                          tjo_x_const_ints(ex, &dim, 1), tjo_x_const_ints(ex, &step, 1)};
    for (int i = 1; i < 5; i++)
        if (!ins[i]) return tjo_done(ex, NULL);
    return tjo_done(ex, tjo_node(ex, "Slice", ins, 5, out, 1) ? out[0] : NULL);
}

/* diagonal: dim1 and dim2 moved last and joined into one (Transpose, Reshape),
 * then Gather of the diagonal's positions in it. */
static tj_status ex_diagonal(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    const tj_type *t = tjo_in_type(n, 0);
    int r = t->ndim, d1 = (int)wrap(tj_node_attr(n, 1)->i, r), d2 = (int)wrap(tj_node_attr(n, 2)->i, r);
    int64_t k = tj_node_attr(n, 0)->i, n1 = t->sizes[d1], n2 = t->sizes[d2];
    int64_t perm[TJ_MAX_DIMS], shape[TJ_MAX_DIMS], m = 0;
    for (int d = 0; d < r; d++)
        if (d != d1 && d != d2) perm[m] = d, shape[m++] = 0; /* Reshape's 0 keeps the size */
    perm[r - 2] = d1, perm[r - 1] = d2;
    shape[r - 2] = n1 * n2;
    int64_t len = tjo_out_type(n, 0)->sizes[r - 2], *at = malloc(sizeof(int64_t) * (size_t)(len ? len : 1));
    if (!at) return tjo_done(ex, NULL);
    for (int64_t j = 0; j < len; j++) at[j] = (j + (k < 0 ? -k : 0)) * n2 + j + (k > 0 ? k : 0);
    const char *moved = op_ints(ex, "Transpose", in[0], "perm", perm, r, NULL);
    const char *flat = moved ? tjo_op2(ex, "Reshape", moved, tjo_x_const_ints(ex, shape, r - 1), NULL) : NULL;
    const char *ins[2] = {flat, flat ? tjo_x_const_ints(ex, at, (int)len) : NULL};
    free(at);
    Onnx__NodeProto *g = ins[1] ? tjo_node(ex, "Gather", ins, 2, out, 1) : NULL;
    return tjo_done(ex, g && tjo_set_int(ex, g, "axis", r - 2) ? out[0] : NULL);
}

/* chunk, split, split_with_sizes, unbind and prim::ConstantChunk: Split by the outputs' sizes. */
static tj_status ex_split(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int r = rank_in(n), n_out = tj_node_num_outputs(n);
    bool unbind = tj_node_kind_of(n) == TJ_NODE_OP && tj_op_id(tj_node_op(n)) == TJ_OP_unbind;
    int64_t dim = wrap(tj_node_attr(n, tj_node_attr_index(n, "dim"))->i, r), sizes[256];
    if (n_out > 256) return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "%d pieces", n_out);
    for (int k = 0; k < n_out; k++) sizes[k] = unbind ? 1 : tjo_out_type(n, k)->sizes[dim];
    const char *pieces[256];
    for (int k = 0; k < n_out; k++) pieces[k] = unbind ? tjo_tmp(ex, "piece") : out[k];
    const char *ins[2] = {in[0], tjo_x_const_ints(ex, sizes, n_out)};
    Onnx__NodeProto *s = ins[1] ? tjo_node(ex, "Split", ins, 2, pieces, n_out) : NULL;
    if (!s || !tjo_set_int(ex, s, "axis", dim)) return tjo_done(ex, NULL);
    for (int k = 0; unbind && k < n_out; k++)
        if (!tjo_op2(ex, "Squeeze", pieces[k], tjo_x_const_ints(ex, &dim, 1), out[k])) return tjo_done(ex, NULL);
    return TJ_OK;
}

static tj_status ex_cat(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int m = tj_node_num_inputs(n), dt = tjo_out_type(n, 0)->dtype;
    bool stack = tj_op_id(tj_node_op(n)) == TJ_OP_stack;
    int64_t dim = wrap(tj_node_attr(n, 0)->i, tjo_out_type(n, 0)->ndim);
    const char *ins[64];
    if (m > 64) return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "%d inputs", m);
    for (int i = 0; i < m; i++) {
        ins[i] = tjo_xcast(ex, in[i], tjo_in_type(n, i)->dtype, dt, NULL);
        if (stack) ins[i] = tjo_op2(ex, "Unsqueeze", ins[i], tjo_x_const_ints(ex, &dim, 1), NULL);
        if (!ins[i]) return tjo_done(ex, NULL);
    }
    Onnx__NodeProto *c = tjo_node(ex, "Concat", ins, m, out, 1);
    return tjo_done(ex, c && tjo_set_int(ex, c, "axis", dim) ? out[0] : NULL);
}

/* ---- matrix products ------------------------------------------------------------------------- */

static tj_status ex_matmul(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    (void)n;
    return tjo_done(ex, tjo_op2(ex, "MatMul", in[0], in[1], out[0]));
}

static tj_status ex_addmm(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    const char *ins[3] = {in[1], in[2], in[0]};
    Onnx__NodeProto *g = tjo_node(ex, "Gemm", ins, 3, out, 1);
    return tjo_done(ex, g && tjo_set_float(ex, g, "beta", tj_node_attr(n, 0)->f) &&
                                tjo_set_float(ex, g, "alpha", tj_node_attr(n, 1)->f) ? out[0] : NULL);
}

static tj_status ex_linear(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    bool bias = in[2][0] != '\0';
    if (tjo_in_type(n, 1)->ndim == 1) { /* a vector weight: x @ w */
        const char *y = tjo_op2(ex, "MatMul", in[0], in[1], bias ? NULL : out[0]);
        return tjo_done(ex, bias ? tjo_op2(ex, "Add", y, in[2], out[0]) : y);
    }
    if (rank_in(n) == 2) { /* Gemm: x W^T + b */
        const char *ins[3] = {in[0], in[1], in[2]};
        Onnx__NodeProto *g = tjo_node(ex, "Gemm", ins, bias ? 3 : 2, out, 1);
        return tjo_done(ex, g && tjo_set_int(ex, g, "transB", 1) ? out[0] : NULL);
    }
    const char *wt = tjo_op1(ex, "Transpose", in[1], NULL);
    const char *y = tjo_op2(ex, "MatMul", in[0], wt, bias ? NULL : out[0]);
    return tjo_done(ex, bias ? tjo_op2(ex, "Add", y, in[2], out[0]) : y);
}

/* ---- convolution and pooling ------------------------------------------------------------------- */

/* An int[N] attribute as N values (a list of one stands for all). */
static void ints_n(const tj_attr *a, int nd, int64_t *v) {
    for (int i = 0; i < nd; i++) v[i] = a->ints.n ? tjc_ints_at(a, i) : 0;
}

static bool set_pads(tjo_exporter *ex, Onnx__NodeProto *node, const int64_t *p, int nd) {
    int64_t pads[4];
    for (int i = 0; i < nd; i++) pads[i] = pads[i + nd] = p[i];
    return tjo_set_ints(ex, node, "pads", pads, 2 * nd);
}

static tj_status ex_conv(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    bool transposed = tj_op_id(tj_node_op(n)) == TJ_OP_conv_transpose2d;
    int nd = rank_in(n) - 2;
    const tj_type *w = tjo_in_type(n, 1);
    int64_t stride[2], pad[2], dil[2], opad[2], kernel[2] = {w->sizes[2], nd > 1 ? w->sizes[3] : 1};
    ints_n(tjo_nattr(n, "stride"), nd, stride);
    ints_n(tjo_nattr(n, "padding"), nd, pad);
    ints_n(tjo_nattr(n, "dilation"), nd, dil);
    const char *ins[3] = {in[0], in[1], in[2]};
    Onnx__NodeProto *c = tjo_node(ex, transposed ? "ConvTranspose" : "Conv", ins, in[2][0] ? 3 : 2, out, 1);
    bool ok = c && tjo_set_ints(ex, c, "kernel_shape", kernel, nd) && tjo_set_ints(ex, c, "strides", stride, nd) &&
              set_pads(ex, c, pad, nd) && tjo_set_ints(ex, c, "dilations", dil, nd) &&
              tjo_set_int(ex, c, "group", tjo_nattr(n, "groups")->i);
    if (ok && transposed) {
        ints_n(tjo_nattr(n, "output_padding"), nd, opad);
        ok = tjo_set_ints(ex, c, "output_padding", opad, nd);
    }
    return tjo_done(ex, ok ? out[0] : NULL);
}

static tj_status ex_pool(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int id = tj_op_id(tj_node_op(n));
    bool is_max = id != TJ_OP_avg_pool2d;
    if (id == TJ_OP_max_pool2d_with_indices && tj_value_num_uses(tj_node_output(n, 1)) > 0)
        return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "not exportable: its indices are used, and ONNX's "
                                "MaxPool indices count positions over the whole tensor");
    int64_t k[2], s[2], p[2], d[2] = {1, 1};
    ints_n(tjo_nattr(n, "kernel_size"), 2, k);
    const tj_attr *st = tjo_nattr(n, "stride");
    if (st->ints.n) ints_n(st, 2, s);
    else s[0] = k[0], s[1] = k[1];
    ints_n(tjo_nattr(n, "padding"), 2, p);
    if (is_max) ints_n(tjo_nattr(n, "dilation"), 2, d);
    const char *x = in[0];
    Onnx__NodeProto *c = tjo_node(ex, is_max ? "MaxPool" : "AveragePool", &x, 1, out, 1);
    bool ok = c && tjo_set_ints(ex, c, "kernel_shape", k, 2) && tjo_set_ints(ex, c, "strides", s, 2) &&
              set_pads(ex, c, p, 2) && tjo_set_int(ex, c, "ceil_mode", tjo_nattr(n, "ceil_mode")->b);
    if (ok && is_max) ok = tjo_set_ints(ex, c, "dilations", d, 2);
    if (ok && !is_max) ok = tjo_set_int(ex, c, "count_include_pad", tjo_nattr(n, "count_include_pad")->b);
    return tjo_done(ex, ok ? out[0] : NULL);
}

static tj_status ex_adaptive_avg(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    const tj_type *t = tjo_in_type(n, 0), *o = tjo_out_type(n, 0);
    int r = t->ndim;
    int64_t oh = o->sizes[r - 2], ow = o->sizes[r - 1], h = t->sizes[r - 2], w = t->sizes[r - 1];
    if (oh == 1 && ow == 1) return tjo_done(ex, tjo_op1(ex, "GlobalAveragePool", in[0], out[0]));
    if (h % oh || w % ow)
        return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "not exportable: output %lldx%lld does not divide "
                                "input %lldx%lld, so its windows overlap unevenly", (long long)oh,
                                (long long)ow, (long long)h, (long long)w);
    int64_t k[2] = {h / oh, w / ow};
    const char *x = in[0];
    Onnx__NodeProto *c = tjo_node(ex, "AveragePool", &x, 1, out, 1);
    return tjo_done(ex, c && tjo_set_ints(ex, c, "kernel_shape", k, 2) && tjo_set_ints(ex, c, "strides", k, 2) ? out[0] : NULL);
}

/* ---- normalisation ----------------------------------------------------------------------------- */

/* A constant of value over sizes (for an absent weight or bias). */
static const char *filled(tjo_exporter *ex, const int64_t *sizes, int nd, double value, tj_dtype dt) {
    tj_tensor *t = tjc_alloc(sizes, nd, dt);
    if (!t) return NULL;
    for (int64_t i = 0; i < tj_numel(t); i++) {
        if (dt == TJ_F64) ((double *)tjc_data_ptr(t))[i] = value;
        else ((float *)tjc_data_ptr(t))[i] = (float)value;
    }
    const char *name = tjo_x_const_tensor(ex, t);
    tj_release(t);
    return name;
}

/* [C] as [1, C, 1, ...] against an input of rank r. */
static const char *per_channel(tjo_exporter *ex, const char *v, int64_t c, int r) {
    int64_t shape[TJ_MAX_DIMS];
    for (int d = 0; d < r; d++) shape[d] = d == 1 ? c : 1;
    return tjo_op2(ex, "Reshape", v, tjo_x_const_ints(ex, shape, r), NULL);
}

static tj_status ex_batch_norm(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    const tj_type *t = tjo_in_type(n, 0);
    int64_t c = t->sizes[1];
    double eps = tjo_nattr(n, "eps")->f;
    const char *w = in[1][0] ? in[1] : filled(ex, &c, 1, 1.0, (tj_dtype)t->dtype);
    const char *b = in[2][0] ? in[2] : filled(ex, &c, 1, 0.0, (tj_dtype)t->dtype);
    if (!tjo_nattr(n, "training")->b) {
        const char *ins[5] = {in[0], w, b, in[3], in[4]};
        if (!w || !b || !in[3][0] || !in[4][0])
            return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "not exportable: eval mode without running statistics");
        Onnx__NodeProto *bn = tjo_node(ex, "BatchNormalization", ins, 5, out, 1);
        return tjo_done(ex, bn && tjo_set_float(ex, bn, "epsilon", eps) &&
                                    tjo_set_float(ex, bn, "momentum", 1.0 - tjo_nattr(n, "momentum")->f) ? out[0] : NULL);
    }
    /* training: the batch's statistics (ONNX's training-mode BatchNormalization
     * also updates running statistics, which tjit writes into parameters) */
    int64_t dims[TJ_MAX_DIMS];
    int nd = 0;
    for (int d = 0; d < t->ndim; d++)
        if (d != 1) dims[nd++] = d;
    const char *mean = tjo_reduce(ex, "ReduceMean", in[0], dims, nd, true, NULL);
    const char *dev = tjo_op2(ex, "Sub", in[0], mean, NULL);
    const char *var = tjo_reduce(ex, "ReduceMean", tjo_op2(ex, "Mul", dev, dev, NULL), dims, nd, true, NULL);
    const char *den = tjo_op1(ex, "Sqrt", tjo_op2(ex, "Add", var, tjo_x_const_scalar(ex, eps, (tj_dtype)t->dtype), NULL), NULL);
    const char *y = tjo_op2(ex, "Mul", tjo_op2(ex, "Div", dev, den, NULL), per_channel(ex, w, c, t->ndim), NULL);
    return tjo_done(ex, tjo_op2(ex, "Add", y, per_channel(ex, b, c, t->ndim), out[0]));
}

static tj_status ex_layer_norm(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    bool native = tj_op_id(tj_node_op(n)) == TJ_OP_native_layer_norm;
    const tj_attr *shape = tjo_nattr(n, "normalized_shape");
    const tj_type *t = tjo_in_type(n, 0);
    const char *w = in[1][0] ? in[1] : filled(ex, shape->ints.data, shape->ints.n, 1.0, (tj_dtype)t->dtype);
    const char *ins[3] = {in[0], w, in[2]};
    Onnx__NodeProto *ln = w ? tjo_node(ex, "LayerNormalization", ins, in[2][0] ? 3 : 2, out, native ? 3 : 1) : NULL;
    return tjo_done(ex, ln && tjo_set_int(ex, ln, "axis", -shape->ints.n) &&
                                tjo_set_float(ex, ln, "epsilon", tjo_nattr(n, "eps")->f) ? out[0] : NULL);
}

static tj_status ex_group_norm(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    const tj_type *t = tjo_in_type(n, 0);
    int64_t c = t->sizes[1], groups = tjo_nattr(n, "num_groups")->i, axis = 2;
    double eps = tjo_nattr(n, "eps")->f;
    const char *w = in[1][0] ? in[1] : filled(ex, &c, 1, 1.0, (tj_dtype)t->dtype);
    const char *b = in[2][0] ? in[2] : filled(ex, &c, 1, 0.0, (tj_dtype)t->dtype);
    if (groups == c) {
        const char *ins[3] = {in[0], w, b};
        Onnx__NodeProto *inn = w && b ? tjo_node(ex, "InstanceNormalization", ins, 3, out, 1) : NULL;
        return tjo_done(ex, inn && tjo_set_float(ex, inn, "epsilon", eps) ? out[0] : NULL);
    }
    /* [N, G, rest]: normalise over rest, then the per-channel affine */
    int64_t grouped[3] = {t->sizes[0], groups, -1}, shape[TJ_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) shape[d] = t->sizes[d];
    const char *x = tjo_op2(ex, "Reshape", in[0], tjo_x_const_ints(ex, grouped, 3), NULL);
    const char *mean = tjo_reduce(ex, "ReduceMean", x, &axis, 1, true, NULL);
    const char *dev = tjo_op2(ex, "Sub", x, mean, NULL);
    const char *var = tjo_reduce(ex, "ReduceMean", tjo_op2(ex, "Mul", dev, dev, NULL), &axis, 1, true, NULL);
    const char *den = tjo_op1(ex, "Sqrt", tjo_op2(ex, "Add", var, tjo_x_const_scalar(ex, eps, (tj_dtype)t->dtype), NULL), NULL);
    const char *y = tjo_op2(ex, "Reshape", tjo_op2(ex, "Div", dev, den, NULL), tjo_x_const_ints(ex, shape, t->ndim), NULL);
    y = tjo_op2(ex, "Mul", y, per_channel(ex, w, c, t->ndim), NULL);
    return tjo_done(ex, tjo_op2(ex, "Add", y, per_channel(ex, b, c, t->ndim), out[0]));
}

static tj_status ex_softmax(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    bool log = tj_op_id(tj_node_op(n)) == TJ_OP_log_softmax;
    const char *x = in[0];
    Onnx__NodeProto *s = tjo_node(ex, log ? "LogSoftmax" : "Softmax", &x, 1, out, 1);
    return tjo_done(ex, s && tjo_set_int(ex, s, "axis", wrap(tj_node_attr(n, 0)->i, rank_in(n))) ? out[0] : NULL);
}

/* ---- losses ------------------------------------------------------------------------------------- */

static const char *reduce_loss(tjo_exporter *ex, const char *l, const char *red, const char *out) {
    if (!strcmp(red, "none")) return tjo_op1(ex, "Identity", l, out);
    return tjo_reduce(ex, !strcmp(red, "sum") ? "ReduceSum" : "ReduceMean", l, NULL, 0, false, out);
}

static tj_status ex_mse(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    const char *d = tjo_op2(ex, "Sub", in[0], in[1], NULL);
    return tjo_done(ex, reduce_loss(ex, tjo_op2(ex, "Mul", d, d, NULL), tjo_nattr(n, "reduction")->s, out[0]));
}

static tj_status ex_nll(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    bool ce = tj_op_id(tj_node_op(n)) == TJ_OP_cross_entropy_loss;
    if (ce && tjo_nattr(n, "label_smoothing")->f != 0)
        return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "not exportable: label_smoothing");
    const char *red = tjo_nattr(n, "reduction")->s;
    const char *x = in[0], *target = in[1];
    bool one = rank_in(n) == 1; /* [C] and a 0-dim target: ONNX wants a batch */
    int64_t zero = 0;
    if (one) {
        x = tjo_op2(ex, "Unsqueeze", x, tjo_x_const_ints(ex, &zero, 1), NULL);
        target = tjo_op2(ex, "Unsqueeze", target, tjo_x_const_ints(ex, &zero, 1), NULL);
    }
    const char *ins[3] = {x, target, in[2]};
    const char *res = one && !strcmp(red, "none") ? tjo_tmp(ex, "loss") : out[0];
    Onnx__NodeProto *l = x && target && res ? tjo_node(ex, ce ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss",
                                                       ins, in[2][0] ? 3 : 2, &res, 1) : NULL;
    if (!l || !tjo_set_str(ex, l, "reduction", red) ||
        !tjo_set_int(ex, l, "ignore_index", tjo_nattr(n, "ignore_index")->i))
        return tjo_done(ex, NULL);
    if (res != out[0]) return tjo_done(ex, tjo_op2(ex, "Squeeze", res, tjo_x_const_ints(ex, &zero, 1), out[0]));
    return TJ_OK;
}

/* (1 - y) x + (1 + (pw - 1) y) softplus(-x), softplus(-x) = relu(-x) + log(1 + exp(-|x|)). */
static tj_status ex_bce_logits(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    tj_dtype dt = (tj_dtype)tjo_out_type(n, 0)->dtype;
    const char *x = in[0], *y = in[1], *one = tjo_x_const_scalar(ex, 1, dt);
    const char *sp = tjo_op2(ex, "Add", tjo_op1(ex, "Relu", tjo_op1(ex, "Neg", x, NULL), NULL),
                             tjo_op1(ex, "Log", tjo_op2(ex, "Add", one, tjo_op1(ex, "Exp", tjo_op1(ex, "Neg", tjo_op1(ex, "Abs", x, NULL), NULL), NULL), NULL), NULL), NULL);
    const char *coef = one;
    if (in[3][0]) coef = tjo_op2(ex, "Add", one, tjo_op2(ex, "Mul", tjo_op2(ex, "Sub", in[3], one, NULL), y, NULL), NULL);
    const char *l = tjo_op2(ex, "Add", tjo_op2(ex, "Mul", tjo_op2(ex, "Sub", one, y, NULL), x, NULL),
                            tjo_op2(ex, "Mul", coef, sp, NULL), NULL);
    if (in[2][0]) l = tjo_op2(ex, "Mul", l, in[2], NULL);
    return tjo_done(ex, reduce_loss(ex, l, tjo_nattr(n, "reduction")->s, out[0]));
}

/* ---- indexing and dropout -------------------------------------------------------------------------- */

static tj_status ex_gather(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int id = tj_op_id(tj_node_op(n));
    int64_t axis = 0;
    const char *ins[3] = {in[0], in[1], NULL};
    const char *op = "Gather";
    if (id == TJ_OP_embedding) { /* rows of the weight: Gather on axis 0 */
        axis = 0;
    } else if (id == TJ_OP_index_select) {
        axis = wrap(tj_node_attr(n, 0)->i, rank_in(n));
    } else {
        axis = wrap(tj_node_attr(n, 0)->i, rank_in(n));
        op = id == TJ_OP_gather ? "GatherElements" : "ScatterElements";
        if (id == TJ_OP_scatter_add) {
            if (ex->opset < 16)
                return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "not exportable before opset 16 "
                                        "(ScatterElements' reduction)");
            ins[2] = in[2];
        }
    }
    Onnx__NodeProto *g = tjo_node(ex, op, ins, ins[2] ? 3 : 2, out, 1);
    bool ok = g && tjo_set_int(ex, g, "axis", axis);
    if (ok && ins[2]) ok = tjo_set_str(ex, g, "reduction", "add");
    return tjo_done(ex, ok ? out[0] : NULL);
}

static tj_status ex_one_hot(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    int64_t k = tj_node_attr(n, 0)->i, values[2] = {0, 1};
    if (k < 0)
        return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "not exportable: num_classes -1 makes the size "
                                "depend on the data");
    const char *ins[3] = {in[0], tjo_x_const_ints(ex, &k, 1), tjo_x_const_ints(ex, values, 2)};
    Onnx__NodeProto *o = ins[1] && ins[2] ? tjo_node(ex, "OneHot", ins, 3, out, 1) : NULL;
    return tjo_done(ex, o && tjo_set_int(ex, o, "axis", -1) ? out[0] : NULL);
}

static tj_status ex_dropout(tjo_exporter *ex, const tj_node *n, const char *const *in, const char *const *out) {
    if (tjo_nattr(n, "train")->b)
        return tjo_export_error(ex, TJ_ERR_UNSUPPORTED, "not exportable in training mode: ONNX's Dropout "
                                "cannot draw tjit's Philox mask");
    if (!tjo_op1(ex, "Identity", in[0], out[0])) return tjo_done(ex, NULL);
    if (tj_node_num_outputs(n) < 2) return TJ_OK;
    const char *shape = tjo_op1(ex, "Shape", in[0], NULL);
    tj_tensor *one = tjc_alloc((int64_t[]){1}, 1, TJ_BOOL);
    if (!one || !shape) return tjo_done(ex, NULL);
    *(bool *)tjc_data_ptr(one) = true;
    Onnx__NodeProto *c = tjo_node(ex, "ConstantOfShape", &shape, 1, &out[1], 1);
    bool ok = c && tjo_set_tensor(ex, c, "value", one);
    tj_release(one);
    return tjo_done(ex, ok ? out[1] : NULL);
}

/* zeros of the given sizes and of self's dtype (self only lends its dtype) */
static tj_status ex_new_zeros(tjo_exporter *ex, const tj_node *n, const char *const *in,
                              const char *const *out) {
    (void)in;
    const tj_attr *size = tjo_nattr(n, "size");
    const char *shape = tjo_x_const_ints(ex, size->ints.data, size->ints.n);
    tj_tensor *zero = tjc_alloc((int64_t[]){1}, 1, (tj_dtype)tj_value_type(tj_node_output(n, 0))->dtype);
    if (!zero || !shape) {
        tj_release(zero);
        return tjo_done(ex, NULL);
    }
    memset(tjc_data_ptr(zero), 0, tj_dtype_size(tj_tensor_dtype(zero)));
    Onnx__NodeProto *c = tjo_node(ex, "ConstantOfShape", &shape, 1, out, 1);
    bool ok = c && tjo_set_tensor(ex, c, "value", zero);
    tj_release(zero);
    return tjo_done(ex, ok ? out[0] : NULL);
}

#define GRAD "a gradient op: backward graphs stay in tjit (export the forward graph)"
#define SCATTER "no export rule: ONNX's ScatterND could carry it, but tjit's importer has no " \
                "ScatterND to read it back"
const tjo_export_entry tjo_export_rules_nn[] = {
    {TJ_OP_view, ex_reshape, "Reshape"}, {TJ_OP_reshape, ex_reshape, "Reshape"},
    {TJ_OP_flatten, ex_reshape, "Flatten (start_dim 1 to the end), else Reshape"},
    {TJ_OP_squeeze, ex_squeeze, "Squeeze"}, {TJ_OP_squeeze_dim, ex_squeeze, "Squeeze (Identity when the dim is not 1)"},
    {TJ_OP_unsqueeze, ex_unsqueeze, "Unsqueeze"}, {TJ_OP_transpose, ex_transpose, "Transpose"},
    {TJ_OP_t, ex_transpose, "Transpose"}, {TJ_OP_permute, ex_transpose, "Transpose"},
    {TJ_OP_expand, ex_expand, "Expand"}, {TJ_OP_select, ex_select, "Gather with a 0-dim index"},
    {TJ_OP_narrow, ex_slice, "Slice"}, {TJ_OP_slice, ex_slice, "Slice"},
    {TJ_OP_chunk, ex_split, "Split (also prim::ConstantChunk)"}, {TJ_OP_split, ex_split, "Split"},
    {TJ_OP_split_with_sizes, ex_split, "Split"}, {TJ_OP_unbind, ex_split, "Split and Squeeze"},
    {TJ_OP_cat, ex_cat, "Concat"}, {TJ_OP_stack, ex_cat, "Unsqueeze and Concat"},
    {TJ_OP_diagonal, ex_diagonal, "Transpose, Reshape and Gather"},
    {TJ_OP_select_scatter, NULL, SCATTER}, {TJ_OP_slice_scatter, NULL, SCATTER},
    {TJ_OP_diagonal_scatter, NULL, SCATTER}, {TJ_OP_as_strided_scatter, NULL, SCATTER},
    {TJ_OP_as_strided_copy, NULL, "no export rule: ONNX has no strided view; a Gather of constant "
                                  "positions could carry it, which tjit's importer would read back as a Gather"},
    {TJ_OP_select_backward, NULL, GRAD}, {TJ_OP_slice_backward, NULL, GRAD},
    {TJ_OP_new_zeros, ex_new_zeros, "ConstantOfShape"},
    {TJ_OP_mm, ex_matmul, "MatMul"}, {TJ_OP_bmm, ex_matmul, "MatMul"}, {TJ_OP_matmul, ex_matmul, "MatMul"},
    {TJ_OP_addmm, ex_addmm, "Gemm"},
    {TJ_OP_linear, ex_linear, "Gemm (2-D input), else MatMul, Transpose and Add"},
    {TJ_OP_conv1d, ex_conv, "Conv"}, {TJ_OP_conv2d, ex_conv, "Conv"},
    {TJ_OP_conv_transpose2d, ex_conv, "ConvTranspose"},
    {TJ_OP_conv2d_backward_input, NULL, GRAD}, {TJ_OP_conv2d_backward_weight, NULL, GRAD},
    {TJ_OP_max_pool2d_with_indices, ex_pool, "MaxPool, when the indices are unused (ONNX's flat indices differ)"},
    {TJ_OP_max_pool2d, ex_pool, "MaxPool"},
    {TJ_OP_max_pool2d_with_indices_backward, NULL, GRAD}, {TJ_OP_max_pool2d_gather, NULL, GRAD},
    {TJ_OP_avg_pool2d, ex_pool, "AveragePool"}, {TJ_OP_avg_pool2d_backward, NULL, GRAD},
    {TJ_OP_adaptive_avg_pool2d, ex_adaptive_avg, "GlobalAveragePool, or AveragePool when the sizes divide"},
    {TJ_OP_adaptive_avg_pool2d_backward, NULL, GRAD},
    {TJ_OP_native_batch_norm, NULL, "returns the saved statistics for autodiff; the forward form is batch_norm"},
    {TJ_OP_batch_norm, ex_batch_norm, "BatchNormalization (eval); training: the batch statistics with ReduceMean (the running-statistics update, a write into parameters, stays in tjit)"},
    {TJ_OP_native_batch_norm_backward, NULL, GRAD},
    {TJ_OP_batch_norm_stats, NULL, "written by split_batch_norm into compiled graphs only; export the traced graph, whose batch_norm exports"},
    {TJ_OP_native_layer_norm, ex_layer_norm, "LayerNormalization with its Mean and InvStdDev outputs"},
    {TJ_OP_layer_norm, ex_layer_norm, "LayerNormalization"},
    {TJ_OP_native_layer_norm_backward, NULL, GRAD},
    {TJ_OP_native_group_norm, NULL, "returns the saved statistics for autodiff; the forward form is group_norm"},
    {TJ_OP_group_norm, ex_group_norm, "InstanceNormalization (a group per channel), else Reshape, ReduceMean, ... (GroupNormalization is opset 18)"},
    {TJ_OP_native_group_norm_backward, NULL, GRAD},
    {TJ_OP_softmax, ex_softmax, "Softmax"}, {TJ_OP_log_softmax, ex_softmax, "LogSoftmax"},
    {TJ_OP_softmax_backward_data, NULL, GRAD}, {TJ_OP_log_softmax_backward_data, NULL, GRAD},
    {TJ_OP_mse_loss, ex_mse, "Sub, Mul and ReduceMean or ReduceSum"}, {TJ_OP_mse_loss_backward, NULL, GRAD},
    {TJ_OP_nll_loss, ex_nll, "NegativeLogLikelihoodLoss"}, {TJ_OP_nll_loss_backward, NULL, GRAD},
    {TJ_OP_cross_entropy_loss, ex_nll, "SoftmaxCrossEntropyLoss (label_smoothing 0)"},
    {TJ_OP_binary_cross_entropy_with_logits, ex_bce_logits, "its formula with Relu, Exp, Log (ONNX has no such loss)"},
    {TJ_OP_binary_cross_entropy_with_logits_backward, NULL, GRAD},
    {TJ_OP_embedding, ex_gather, "Gather on axis 0"}, {TJ_OP_embedding_dense_backward, NULL, GRAD},
    {TJ_OP_index_select, ex_gather, "Gather"}, {TJ_OP_gather, ex_gather, "GatherElements"},
    {TJ_OP_scatter_add, ex_gather, "ScatterElements with reduction add (opset 16 on)"},
    {TJ_OP_one_hot, ex_one_hot, "OneHot (num_classes given)"},
    {TJ_OP_native_dropout, ex_dropout, "Identity in eval mode; training draws tjit's Philox mask, which ONNX cannot"},
    {TJ_OP_dropout, ex_dropout, "Identity in eval mode; training draws tjit's Philox mask, which ONNX cannot"},
    {TJ_OP_native_dropout_backward, NULL, GRAD},
    {-1, NULL, NULL},
};
