/* op_index.c — CUDA kernels of embedding, embedding_dense_backward,
 * index_select, gather, scatter_add and one_hot (rows of core/ops_nn.def;
 * device code in kernels/index.cu).
 *
 * Each op queues index_check on its index tensor, then its own kernels (which
 * skip bad indices), then reads the check back: an index out of range fails
 * the call with the CPU's message, naming the value, the size it indexes and
 * its element. */
#include <stdio.h>

#include "backends/cuda/op_nn.h"

/* Ends the check of an index tensor; what names the indexed thing. */
static tj_status indices_checked(const tjc_call *c, tjcu_nn_check *chk, int64_t size,
                                 const char *what) {
    int64_t element, value;
    tj_status st = tjcu_nn_check_end(c, chk, &element, &value);
    if (st || element < 0) return st;
    return tjc_error(TJ_ERR_ARG, "%s: index %lld is out of range for %s of size %lld (index "
                     "element %lld)", c->op->name, (long long)value, what, (long long)size,
                     (long long)element);
}

/* The kernel's status, or the check's when the kernels were queued. */
static tj_status finish(const tjc_call *c, tj_status st, tjcu_nn_check *chk, int64_t size,
                        const char *what) {
    if (st) {
        tjcu_nn_check_drop(c, chk);
        return st;
    }
    return indices_checked(c, chk, size, what);
}

static const char *named(char *buf, size_t n, const char *kernel, const char *suffix) {
    snprintf(buf, n, "%s_%s", kernel, suffix);
    return buf;
}

/* ---- embedding ------------------------------------------------------------------------------ */

/* in: weight [V, D], indices; attrs: padding_idx, scale_grad_by_freq.
 * out[i, :] = weight[indices[i], :] */
tj_status tjcu_embedding(const tjc_call *c) {
    const tj_tensor *w = c->in[0], *idx = c->in[1];
    int64_t n = tjc_numel(idx->sizes, idx->ndim), D = w->sizes[1], V = w->sizes[0];
    tjcu_nn_check chk;
    tj_status st = tjcu_nn_check_begin(c, idx, V, false, 0, &chk);
    if (st) return st;
    tjcu_tensor_arg wa = tjcu_arg(w), ia = tjcu_arg(idx);
    void *out = tjc_data_ptr(c->out[0]);
    void *args[] = {&wa, &ia, &out, &n, &D};
    char k[40];
    st = tjcu_nn_launch(c, "index", named(k, sizeof k, "embedding", tjcu_nn_size_suffix(w->dtype)),
                        n * D, args);
    return finish(c, st, &chk, V, "the rows of 'weight'");
}

/* in: grad_output [*, D], indices [*]; attrs: num_weights, padding_idx,
 * scale_grad_by_freq. Rows are added atomically into the zeroed result. */
tj_status tjcu_embedding_dense_backward(const tjc_call *c) {
    int64_t V = c->attr[0].i, pad = c->attr[1].i;
    bool by_freq = c->attr[2].b;
    const tj_tensor *g = c->in[0], *idx = c->in[1];
    tj_tensor *out = c->out[0];
    int64_t D = out->sizes[1], n = tjc_numel(idx->sizes, idx->ndim);
    void *o = tjc_data_ptr(out), *counts = NULL;
    tjcu_nn_check chk;
    tj_status st = tjcu_nn_check_begin(c, idx, V, false, 0, &chk);
    if (st) return st;
    st = tjcu_memset(c->device, o, 0, (size_t)(V * D) * tj_dtype_size(out->dtype));
    tjcu_tensor_arg ga = tjcu_arg(g), ia = tjcu_arg(idx);
    if (!st && by_freq) { /* how often each row is named: its gradient's divisor */
        if (!(counts = tjcu_nn_scratch(c, sizeof(uint64_t) * (size_t)V))) st = tj_last_status();
        if (!st) st = tjcu_memset(c->device, counts, 0, sizeof(uint64_t) * (size_t)V);
        void *args[] = {&ia, &n, &V, &counts};
        if (!st) st = tjcu_nn_launch(c, "index", "embedding_count", n, args);
    }
    if (!st) {
        void *args[] = {&ga, &ia, &n, &D, &V, &pad, &counts, &o};
        char k[40];
        st = tjcu_nn_launch(c, "index",
                            named(k, sizeof k, "embedding_backward",
                                  tjcu_nn_dtype_suffix(out->dtype)),
                            n * D, args);
    }
    if (counts) tjcu_free(c->device, counts);
    return finish(c, st, &chk, V, "num_weights");
}

/* ---- index_select, gather, scatter_add ------------------------------------------------------- */

/* in: self, index; attrs: dim. self [.., S, ..] -> out [.., K, ..] */
tj_status tjcu_index_select(const tjc_call *c) {
    const tj_tensor *x = c->in[0], *idx = c->in[1];
    int dim;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, x->ndim, &dim);
    if (st) return st;
    int64_t one = 1;
    if (x->ndim == 0) /* a 0-dim self as [1] */
        return tjc_kernel_with_inputs_expanded(c, 0, 1, &one, 1, tjcu_index_select);
    int64_t K = tjc_numel(idx->sizes, idx->ndim), S = x->sizes[dim];
    int64_t n = tjc_numel(c->out[0]->sizes, c->out[0]->ndim);
    tjcu_nn_check chk;
    if ((st = tjcu_nn_check_begin(c, idx, S, false, 0, &chk))) return st;
    tjcu_tensor_arg xa = tjcu_arg(x), ia = tjcu_arg(idx);
    int32_t d = dim;
    void *out = tjc_data_ptr(c->out[0]);
    void *args[] = {&xa, &ia, &d, &K, &out, &n};
    char k[40];
    st = tjcu_nn_launch(c, "index",
                        named(k, sizeof k, "index_select", tjcu_nn_size_suffix(x->dtype)), n, args);
    return finish(c, st, &chk, S, "the selected dim of 'self'");
}

/* in: self, index; attrs: dim. out[p] = self[p with p[dim] = index[p]] */
tj_status tjcu_gather(const tjc_call *c) {
    const tj_tensor *x = c->in[0], *idx = c->in[1];
    int dim;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, x->ndim, &dim);
    if (st) return st;
    int64_t n = tjc_numel(idx->sizes, idx->ndim), size = x->ndim ? x->sizes[dim] : 1;
    tjcu_nn_check chk;
    if ((st = tjcu_nn_check_begin(c, idx, size, false, 0, &chk))) return st;
    tjcu_tensor_arg xa = tjcu_arg(x), ia = tjcu_arg(idx);
    int32_t d = dim;
    void *out = tjc_data_ptr(c->out[0]);
    void *args[] = {&xa, &ia, &d, &out, &n};
    char k[40];
    st = tjcu_nn_launch(c, "index", named(k, sizeof k, "gather", tjcu_nn_size_suffix(x->dtype)),
                        n, args);
    return finish(c, st, &chk, size, "the gathered dim of 'self'");
}

/* in: self, index, src; attrs: dim. out = self; out[p with p[dim] = index[p]]
 * += src[p] for p over index, added atomically. */
tj_status tjcu_scatter_add(const tjc_call *c) {
    const tj_tensor *idx = c->in[1], *src = c->in[2];
    tj_tensor *out = c->out[0];
    int dim;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, out->ndim, &dim);
    if (st) return st;
    int64_t n = tjc_numel(idx->sizes, idx->ndim), size = out->ndim ? out->sizes[dim] : 1;
    tjcu_nn_check chk;
    if ((st = tjcu_nn_check_begin(c, idx, size, false, 0, &chk))) return st;
    st = tjcu_nn_copy(c, out, c->in[0]);
    if (!st) {
        tjcu_tensor_arg sa = tjcu_arg(src), ia = tjcu_arg(idx), oa = tjcu_arg(out);
        int32_t d = dim;
        void *args[] = {&sa, &ia, &d, &oa, &n};
        char k[40];
        st = tjcu_nn_launch(c, "index",
                            named(k, sizeof k, "scatter_add", tjcu_nn_dtype_suffix(out->dtype)),
                            n, args);
    }
    return finish(c, st, &chk, size, "the scattered dim of 'self'");
}

/* ---- one_hot --------------------------------------------------------------------------------- */

/* in: self (i64); attrs: num_classes. out[i, j] = self[i] == j */
tj_status tjcu_one_hot(const tjc_call *c) {
    const tj_tensor *x = c->in[0];
    tj_tensor *out = c->out[0];
    int64_t n = tjc_numel(x->sizes, x->ndim), C = out->sizes[out->ndim - 1];
    tjcu_nn_check chk;
    tj_status st = tjcu_nn_check_begin(c, x, C, false, 0, &chk);
    if (st) return st;
    tjcu_tensor_arg xa = tjcu_arg(x);
    void *o = tjc_data_ptr(out);
    void *args[] = {&xa, &n, &C, &o};
    st = tjcu_nn_launch(c, "index", "one_hot", n * C, args);
    if (st) {
        tjcu_nn_check_drop(c, &chk);
        return st;
    }
    int64_t element, value;
    if ((st = tjcu_nn_check_end(c, &chk, &element, &value)) || element < 0) return st;
    return tjc_error(TJ_ERR_ARG, "%s: class value %lld is out of range for num_classes %lld "
                     "(element %lld)", c->op->name, (long long)value, (long long)C,
                     (long long)element);
}
