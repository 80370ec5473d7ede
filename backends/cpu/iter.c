/* iter.c — the strided iteration helper (see cpu.h) and the thread count. */
#include <omp.h>
#include <stdatomic.h>
#include <string.h>

#include "cpu.h"

/* 0: OpenMP's default. Atomic since any thread may set it while others run. */
static atomic_int num_threads;

void tj_set_num_threads(int n) {
    if (n < 0) {
        tjc_error(TJ_ERR_ARG, "tj_set_num_threads: %d threads (give 1 or more, or 0 for "
                  "OpenMP's default)", n);
        return;
    }
    atomic_store_explicit(&num_threads, n, memory_order_relaxed);
}

int tj_get_num_threads(void) {
    int n = atomic_load_explicit(&num_threads, memory_order_relaxed);
    return n > 0 ? n : omp_get_max_threads();
}

int tjcpu_threads_for(int64_t work) {
    int t = tj_get_num_threads();
    if (work < TJCPU_GRAIN || t <= 1) return 1;
    int64_t most = work / (TJCPU_GRAIN / 2);
    return most < t ? (int)most : t;
}

typedef struct plan {
    int ndim, n_ops;
    int64_t size[TJ_MAX_DIMS];                       /* dim 0 is innermost */
    int64_t step[TJ_MAX_DIMS][TJCPU_MAX_OPERANDS];    /* bytes */
    char *base[TJCPU_MAX_OPERANDS];
} plan;

static void build_plan(plan *p, tj_tensor *const *ops, int n_ops) {
    const tj_tensor *out = ops[0];
    p->n_ops = n_ops;
    for (int k = 0; k < n_ops; k++) p->base[k] = tjc_data_ptr(ops[k]);
    /* gather non-trivial dims, innermost first */
    int nd = 0;
    int64_t size[TJ_MAX_DIMS], step[TJ_MAX_DIMS][TJCPU_MAX_OPERANDS];
    for (int d = out->ndim - 1; d >= 0; d--) {
        if (out->sizes[d] == 1) continue;
        size[nd] = out->sizes[d];
        for (int k = 0; k < n_ops; k++) {
            const tj_tensor *t = ops[k];
            int dk = d - (out->ndim - t->ndim);
            int64_t es = (int64_t)tj_dtype_size(t->dtype);
            step[nd][k] = (dk >= 0 && t->sizes[dk] != 1) ? t->strides[dk] * es : 0;
        }
        nd++;
    }
    /* order dims by the output's stride (stable insertion sort), so writes
     * into a transposed output still walk memory forwards */
    int order[TJ_MAX_DIMS];
    for (int i = 0; i < nd; i++) order[i] = i;
    for (int i = 1; i < nd; i++) {
        int j = i, o = order[i];
        while (j > 0) {
            int64_t a = step[order[j - 1]][0], b = step[o][0];
            if (a < 0) a = -a;
            if (b < 0) b = -b;
            if (a <= b) break;
            order[j] = order[j - 1];
            j--;
        }
        order[j] = o;
    }
    /* merge dim i+1 into dim i when every operand is contiguous across them */
    p->ndim = 0;
    for (int i = 0; i < nd; i++) {
        int d = order[i];
        if (p->ndim > 0) {
            int q = p->ndim - 1;
            bool mergeable = true;
            for (int k = 0; k < n_ops && mergeable; k++)
                mergeable = step[d][k] == p->step[q][k] * p->size[q];
            if (mergeable) {
                p->size[q] *= size[d];
                continue;
            }
        }
        p->size[p->ndim] = size[d];
        memcpy(p->step[p->ndim], step[d], sizeof(int64_t) * (size_t)n_ops);
        p->ndim++;
    }
    if (p->ndim == 0) { /* one element */
        p->ndim = 1;
        p->size[0] = 1;
        for (int k = 0; k < n_ops; k++) p->step[0][k] = 0;
    }
}

static void run_range(const plan *p, int64_t lo, int64_t hi, tjcpu_loop_fn fn, const void *ctx) {
    int64_t idx[TJ_MAX_DIMS];
    char *ptr[TJCPU_MAX_OPERANDS];
    int64_t rem = lo;
    for (int k = 0; k < p->n_ops; k++) ptr[k] = p->base[k];
    for (int d = 0; d < p->ndim; d++) {
        idx[d] = rem % p->size[d];
        rem /= p->size[d];
        for (int k = 0; k < p->n_ops; k++) ptr[k] += idx[d] * p->step[d][k];
    }
    int64_t at = lo;
    while (at < hi) {
        int64_t n = p->size[0] - idx[0];
        if (n > hi - at) n = hi - at;
        fn(n, ptr, p->step[0], ctx);
        at += n;
        idx[0] += n;
        for (int k = 0; k < p->n_ops; k++) ptr[k] += n * p->step[0][k];
        for (int d = 0; d + 1 < p->ndim && idx[d] == p->size[d]; d++) {
            idx[d] = 0;
            idx[d + 1]++;
            for (int k = 0; k < p->n_ops; k++)
                ptr[k] += p->step[d + 1][k] - p->size[d] * p->step[d][k];
        }
    }
}

void tjcpu_iter(tj_tensor *const *ops, int n_ops, tjcpu_loop_fn fn, const void *ctx) {
    int64_t total = tjc_numel(ops[0]->sizes, ops[0]->ndim);
    if (total == 0) return;
    plan p;
    build_plan(&p, ops, n_ops);
    int threads = tjcpu_threads_for(total);
    if (threads == 1) {
        run_range(&p, 0, total, fn, ctx);
        return;
    }
#pragma omp parallel num_threads(threads)
    {
        /* split points on multiples of 16 elements: for elements of 4 bytes
         * or more, a contiguous operand's chunks then start on a 64-byte line
         * and no two threads write into one line */
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        int64_t lo = total * t / nt / 16 * 16, hi = total * (t + 1) / nt / 16 * 16;
        if (t == nt - 1) hi = total;
        run_range(&p, lo, hi, fn, ctx);
    }
}
