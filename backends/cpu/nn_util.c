/* nn_util.c — the helpers of nn.h shared by the nn family's CPU kernels. */
#include "core/alloc.h"
#include "nn.h"

tj_tensor *tjnn_contig(tj_tensor *t) {
    if (!t) return NULL;
    if (tj_is_contiguous(t)) return tj_retain(t);
    return tjcpu_to_contiguous(t, t->dtype);
}

double *tjnn_scratch(const char *op, int64_t n) {
    double *p = tjc_malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (!p) tjc_error(TJ_ERR_MEMORY, "%s: out of memory for %lld scratch values", op, (long long)n);
    return p;
}

double *tjnn_doubles(const tj_tensor *t, int64_t n, double fill) {
    double *p = tjnn_scratch("tjit", n);
    if (!p) return NULL;
    if (!t) {
        for (int64_t i = 0; i < n; i++) p[i] = fill;
        return p;
    }
    /* walk t's elements in row-major order through its strides */
    int64_t count = tjc_numel(t->sizes, t->ndim), idx[TJ_MAX_DIMS] = {0};
    const char *base = tjc_data_ptr(t);
    for (int64_t k = 0; k < count && k < n; k++) {
        int64_t off = 0;
        for (int d = 0; d < t->ndim; d++) off += idx[d] * t->strides[d];
        p[k] = tjnn_ld(base, t->dtype, off);
        for (int d = t->ndim - 1; d >= 0 && ++idx[d] == t->sizes[d]; d--) idx[d] = 0;
    }
    for (int64_t k = count; k < n; k++) p[k] = count == 1 ? p[0] : fill;
    return p;
}

enum { SUM_BLOCK = 4096 };

double tjnn_sum_blocks(int64_t n, tjnn_block_fn fn, const void *ctx) {
    int64_t blocks = (n + SUM_BLOCK - 1) / SUM_BLOCK;
    if (blocks <= 1) return n > 0 ? fn(0, n, ctx) : 0.0;
    double stack[64], *part = blocks <= 64 ? stack : tjc_malloc(sizeof(double) * (size_t)blocks);
    if (!part) { /* no room for partial sums: one thread, same block order */
        double s = 0;
        for (int64_t b = 0; b < blocks; b++) {
            int64_t lo = b * SUM_BLOCK, hi = lo + SUM_BLOCK < n ? lo + SUM_BLOCK : n;
            s += fn(lo, hi, ctx);
        }
        return s;
    }
    int nt = tjcpu_threads_for(n);
#pragma omp parallel for num_threads(nt) if (nt > 1) schedule(static)
    for (int64_t b = 0; b < blocks; b++) {
        int64_t lo = b * SUM_BLOCK, hi = lo + SUM_BLOCK < n ? lo + SUM_BLOCK : n;
        part[b] = fn(lo, hi, ctx);
    }
    double s = 0;
    for (int64_t b = 0; b < blocks; b++) s += part[b];
    if (part != stack) tjc_free(part);
    return s;
}

void tjnn_split(const tj_tensor *t, int dim, int64_t *outer, int64_t *n, int64_t *inner) {
    *outer = 1;
    *inner = 1;
    *n = t->ndim ? t->sizes[dim] : 1;
    for (int d = 0; d < dim; d++) *outer *= t->sizes[d];
    for (int d = dim + 1; d < t->ndim; d++) *inner *= t->sizes[d];
}
