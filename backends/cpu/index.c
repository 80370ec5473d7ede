/* index.c — CPU kernels of embedding, embedding_dense_backward, index_select,
 * gather, scatter_add and one_hot (rows of core/ops_nn.def). Indices are
 * checked in a pass of their own before anything is written, so an
 * out-of-range index is an error naming the op, the value and the size it
 * indexes, never a stray read. Copies move whole elements by size, so every
 * dtype works; scatter_add adds in f32, f64 or i64 and ors bools. */
#include <omp.h>
#include <string.h>

#include "core/alloc.h"
#include "nn.h"

/* Copies one element of es bytes (1, 4 or 8). */
static inline void copy_elem(char *dst, const char *src, size_t es) {
    switch (es) {
    case 8: memcpy(dst, src, 8); break;
    case 4: memcpy(dst, src, 4); break;
    default: *dst = *src; break;
    }
}

/* Fails unless every idx[i] is in [0, size); what names the indexed thing. */
static tj_status check_range(const char *op, const int64_t *idx, int64_t n, int64_t size,
                             const char *what) {
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < 0 || idx[i] >= size)
            return tjc_error(TJ_ERR_ARG, "%s: index %lld is out of range for %s of size %lld "
                             "(index element %lld)", op, (long long)idx[i], what,
                             (long long)size, (long long)i);
    return TJ_OK;
}

/* A row-major walk over sizes that keeps the element offset of each of
 * n_ops tensors through their own strides. */
typedef struct walk {
    int ndim, n_ops;
    const int64_t *sizes;
    const int64_t *strides[3];
    int64_t idx[TJ_MAX_DIMS], off[3];
} walk;

static void walk_start(walk *w, int64_t flat) {
    for (int k = 0; k < w->n_ops; k++) w->off[k] = 0;
    for (int d = w->ndim - 1; d >= 0; d--) {
        w->idx[d] = w->sizes[d] ? flat % w->sizes[d] : 0;
        flat = w->sizes[d] ? flat / w->sizes[d] : 0;
        for (int k = 0; k < w->n_ops; k++) w->off[k] += w->idx[d] * w->strides[k][d];
    }
}

static void walk_next(walk *w) {
    for (int d = w->ndim - 1; d >= 0; d--) {
        for (int k = 0; k < w->n_ops; k++) w->off[k] += w->strides[k][d];
        if (++w->idx[d] < w->sizes[d]) return;
        for (int k = 0; k < w->n_ops; k++) w->off[k] -= w->idx[d] * w->strides[k][d];
        w->idx[d] = 0;
    }
}

/* ---- embedding ---------------------------------------------------------------------- */

/* in: weight [V, D], indices; attrs: padding_idx, scale_grad_by_freq.
 * out[i, :] = weight[indices[i], :] */
tj_status tjcpu_embedding(const tjc_call *c) {
    tj_tensor *w = tjnn_contig(c->in[0]), *idx = tjnn_contig(c->in[1]);
    tj_status st = w && idx ? TJ_OK : tj_last_status();
    int64_t n = idx ? tjc_numel(idx->sizes, idx->ndim) : 0;
    const int64_t *ip = idx ? (const int64_t *)tjc_data_ptr(idx) : NULL;
    if (!st) st = check_range(c->op->name, ip, n, w->sizes[0], "the rows of 'weight'");
    if (!st) {
        size_t row = (size_t)w->sizes[1] * tj_dtype_size(w->dtype);
        const char *src = tjc_data_ptr(w);
        char *dst = tjc_data_ptr(c->out[0]);
        int nt = tjcpu_threads_for(n * w->sizes[1]);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
        for (int64_t i = 0; i < n; i++)
            memcpy(dst + (size_t)i * row, src + (size_t)ip[i] * row, row);
    }
    tj_release(w), tj_release(idx);
    return st;
}

/* in: grad_output [*, D], indices [*]; attrs: num_weights, padding_idx,
 * scale_grad_by_freq. Threads own blocks of columns and add rows in index
 * order, so the sums do not depend on the thread count. */
tj_status tjcpu_embedding_dense_backward(const tjc_call *c) {
    int64_t V = c->attr[0].i, pad = c->attr[1].i;
    bool by_freq = c->attr[2].b;
    tj_tensor *g = tjnn_contig(c->in[0]), *idx = tjnn_contig(c->in[1]), *out = c->out[0];
    int64_t D = out->sizes[1], n = idx ? tjc_numel(idx->sizes, idx->ndim) : 0;
    const int64_t *ip = idx ? (const int64_t *)tjc_data_ptr(idx) : NULL;
    double *scale = NULL;
    tj_status st = g && idx ? TJ_OK : tj_last_status();
    if (!st) st = check_range(c->op->name, ip, n, V, "num_weights");
    if (!st && !(scale = tjnn_doubles(NULL, V, 0.0))) st = tj_last_status();
    if (!st) {
        for (int64_t i = 0; i < n; i++) scale[ip[i]] += 1;
        for (int64_t v = 0; v < V; v++) scale[v] = by_freq && scale[v] > 0 ? 1 / scale[v] : 1;
        char *o = tjc_data_ptr(out);
        const char *gp = tjc_data_ptr(g);
        tj_dtype dt = out->dtype;
        memset(o, 0, (size_t)(V * D) * tj_dtype_size(dt));
        enum { COLS = 64 };
        int64_t blocks = (D + COLS - 1) / COLS;
        int nt = tjcpu_threads_for(n * D);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
        for (int64_t b = 0; b < blocks; b++) {
            int64_t j0 = b * COLS, j1 = j0 + COLS < D ? j0 + COLS : D;
            for (int64_t i = 0; i < n; i++) {
                int64_t v = ip[i];
                if (v == pad) continue;
                for (int64_t j = j0; j < j1; j++)
                    tjnn_st(o, dt, v * D + j,
                            tjnn_ld(o, dt, v * D + j) + tjnn_ld(gp, dt, i * D + j) * scale[v]);
            }
        }
    }
    tjc_free(scale);
    tj_release(g), tj_release(idx);
    return st;
}

/* ---- index_select ------------------------------------------------------------------- */

/* in: self, index; attrs: dim. self [outer, S, inner] -> out [outer, K, inner] */
tj_status tjcpu_index_select(const tjc_call *c) {
    int dim;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, c->in[0]->ndim, &dim);
    if (st) return st;
    int64_t one = 1;
    if (c->in[0]->ndim == 0) /* a 0-dim self as [1] */
        return tjc_kernel_with_inputs_expanded(c, 0, 1, &one, 1, tjcpu_index_select);
    tj_tensor *x = tjnn_contig(c->in[0]), *idx = tjnn_contig(c->in[1]);
    int64_t K = idx ? tjc_numel(idx->sizes, idx->ndim) : 0;
    const int64_t *ip = idx ? (const int64_t *)tjc_data_ptr(idx) : NULL;
    st = x && idx ? TJ_OK : tj_last_status();
    if (!st) st = check_range(c->op->name, ip, K, x->sizes[dim], "the selected dim of 'self'");
    if (!st) {
        int64_t outer, S, inner;
        tjnn_split(x, dim, &outer, &S, &inner);
        size_t run = (size_t)inner * tj_dtype_size(x->dtype);
        const char *src = tjc_data_ptr(x);
        char *dst = tjc_data_ptr(c->out[0]);
        int nt = tjcpu_threads_for(outer * K * inner);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
        for (int64_t t = 0; t < outer * K; t++) {
            int64_t o = t / K, k = t % K;
            memcpy(dst + (size_t)t * run, src + (size_t)(o * S + ip[k]) * run, run);
        }
    }
    tj_release(x), tj_release(idx);
    return st;
}

/* ---- gather ------------------------------------------------------------------------- */

/* in: self, index; attrs: dim. out[p] = self[p with p[dim] = index[p]];
 * self is read through its strides. */
tj_status tjcpu_gather(const tjc_call *c) {
    const tj_tensor *x = c->in[0];
    int dim;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, x->ndim, &dim);
    if (st) return st;
    tj_tensor *idx = tjnn_contig(c->in[1]);
    if (!idx) return tj_last_status();
    int64_t n = tjc_numel(idx->sizes, idx->ndim);
    const int64_t *ip = (const int64_t *)tjc_data_ptr(idx);
    st = check_range(c->op->name, ip, n, x->ndim ? x->sizes[dim] : 1, "the gathered dim of 'self'");
    if (!st) {
        size_t es = tj_dtype_size(x->dtype);
        const char *src = tjc_data_ptr(x);
        char *dst = tjc_data_ptr(c->out[0]);
        int64_t dstride = x->ndim ? x->strides[dim] : 0;
        int nt = tjcpu_threads_for(n);
#pragma omp parallel num_threads(nt) if (nt > 1)
        {
            int t = omp_get_thread_num(), nth = omp_get_num_threads();
            int64_t lo = n * t / nth, hi = n * (t + 1) / nth;
            walk w = {.ndim = idx->ndim, .n_ops = 1, .sizes = idx->sizes, .strides = {x->strides}};
            walk_start(&w, lo);
            for (int64_t i = lo; i < hi; i++, walk_next(&w)) {
                /* w.off[0] is self's offset with index's position, whose
                 * p[dim] term is replaced by the gathered one */
                int64_t off = w.off[0] + (ip[i] - (x->ndim ? w.idx[dim] : 0)) * dstride;
                copy_elem(dst + (size_t)i * es, src + off * (int64_t)es, es);
            }
        }
    }
    tj_release(idx);
    return st;
}

/* ---- scatter_add -------------------------------------------------------------------- */

/* out = self; out[p with p[dim] = index[p]] += src[p] for p over index. The
 * positions that differ only along dim write one line of out; threads take
 * whole lines and walk each in order, so sums do not depend on the thread
 * count and no two threads touch an element. */
tj_status tjcpu_scatter_add(const tjc_call *c) {
    const tj_tensor *src = c->in[2];
    tj_tensor *out = c->out[0];
    int dim;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, out->ndim, &dim);
    if (st) return st;
    tj_tensor *idx = tjnn_contig(c->in[1]);
    if (!idx) return tj_last_status();
    int64_t n = tjc_numel(idx->sizes, idx->ndim);
    const int64_t *ip = (const int64_t *)tjc_data_ptr(idx);
    int64_t dsize = out->ndim ? out->sizes[dim] : 1;
    st = check_range(c->op->name, ip, n, dsize, "the scattered dim of 'self'");
    if (!st) st = tjcpu_copy(out, c->in[0]);
    if (st || n == 0) {
        tj_release(idx);
        return st;
    }
    /* lines: index's sizes with dim collapsed to 1 */
    int nd = idx->ndim;
    int64_t line_sizes[TJ_MAX_DIMS], K = nd ? idx->sizes[dim] : 1;
    for (int d = 0; d < nd; d++) line_sizes[d] = d == dim ? 1 : idx->sizes[d];
    int64_t lines = n / K;
    int64_t ost = nd ? out->strides[dim] : 0, sst = nd ? src->strides[dim] : 0;
    int64_t ist = nd ? idx->strides[dim] : 0;
    char *o = tjc_data_ptr(out);
    const char *s = tjc_data_ptr(src);
    tj_dtype dt = out->dtype;
    int nt = tjcpu_threads_for(n);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        int t = omp_get_thread_num(), nth = omp_get_num_threads();
        int64_t lo = lines * t / nth, hi = lines * (t + 1) / nth;
        walk w = {.ndim = nd, .n_ops = 3, .sizes = line_sizes,
                  .strides = {out->strides, src->strides, idx->strides}};
        walk_start(&w, lo);
        for (int64_t l = lo; l < hi; l++, walk_next(&w)) {
            for (int64_t k = 0; k < K; k++) {
                int64_t oo = w.off[0] + ip[w.off[2] + k * ist] * ost, so = w.off[1] + k * sst;
                switch (dt) {
                case TJ_F32: ((float *)o)[oo] += ((const float *)s)[so]; break;
                case TJ_F64: ((double *)o)[oo] += ((const double *)s)[so]; break;
                case TJ_BOOL: ((bool *)o)[oo] |= ((const bool *)s)[so]; break; /* PyTorch's bool add */
                default: ((int64_t *)o)[oo] += ((const int64_t *)s)[so]; break;
                }
            }
        }
    }
    tj_release(idx);
    return TJ_OK;
}

/* ---- one_hot ------------------------------------------------------------------------ */

/* in: self (i64); attrs: num_classes. out[i, self[i]] = 1. */
tj_status tjcpu_one_hot(const tjc_call *c) {
    tj_tensor *x = tjnn_contig(c->in[0]), *out = c->out[0];
    if (!x) return tj_last_status();
    int64_t n = tjc_numel(x->sizes, x->ndim), C = out->sizes[out->ndim - 1];
    const int64_t *xp = (const int64_t *)tjc_data_ptr(x);
    tj_status st = TJ_OK;
    for (int64_t i = 0; i < n && !st; i++)
        if (xp[i] < 0 || xp[i] >= C)
            st = tjc_error(TJ_ERR_ARG, "%s: class value %lld is out of range for num_classes "
                           "%lld (element %lld)", c->op->name, (long long)xp[i], (long long)C,
                           (long long)i);
    if (!st) {
        int64_t *o = (int64_t *)tjc_data_ptr(out);
        memset(o, 0, sizeof(int64_t) * (size_t)(n * C));
        for (int64_t i = 0; i < n; i++) o[i * C + xp[i]] = 1;
    }
    tj_release(x);
    return st;
}
