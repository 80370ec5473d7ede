/* reduce_plan.c — the driver of every CPU reduction (see reduce.h): lays the
 * input out as kept dims x reduced dims, picks a loop order that reads memory
 * forwards, cuts the work into fixed blocks, runs them on OpenMP threads and
 * combines the blocks' states in a fixed order.
 *
 * Two layouts:
 *  - row: the input's innermost dim is reduced (sum over the last dim). Each
 *    output folds runs of its reduced elements; a long reduction is cut into
 *    blocks of ROW_BLOCK elements.
 *  - column: the innermost dim is kept (sum over dim 0 of [4096, 1024]).
 *    COL_CHUNK neighbouring outputs advance together down the reduced rows,
 *    so the inner loop runs along contiguous memory across outputs; the
 *    reduction is cut into blocks of COL_BLOCK rows.
 * Blocks are sized by the shape alone and their states are combined by a
 * pairwise tree in index order, so the rounding of a result never depends on
 * how many threads ran, and long sums gain the accuracy of a cascade.
 */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "reduce.h"

#define ROW_BLOCK 8192
#define COL_BLOCK 256
#define COL_CHUNK 64

typedef struct plan {
    int nk, nr;                   /* kept and reduced dims, innermost first */
    int64_t ksize[TJ_MAX_DIMS];
    int64_t kin[TJ_MAX_DIMS];     /* input step in bytes */
    int64_t kout[TJ_MAX_DIMS];    /* output step in elements */
    int64_t rsize[TJ_MAX_DIMS];
    int64_t rin[TJ_MAX_DIMS];     /* input step in bytes */
    int64_t M, N, nb;             /* outputs, elements per output, blocks per output */
    bool column;
    const char *in;
    char *out[2];
    int64_t out_es[2];
    const tjcpu_reducer *r;
    const tjcpu_rparams *prm;
    char *partials;               /* nb states per output when nb > 1 */
} plan;

typedef union state_buf {
    max_align_t align;
    unsigned char b[TJCPU_STATE_MAX];
} state_buf;

typedef union chunk_buf {
    max_align_t align;
    unsigned char b[TJCPU_STATE_MAX * COL_CHUNK];
} chunk_buf;

static int64_t iabs(int64_t v) { return v < 0 ? -v : v; }

/* Stable insertion sort of dims by |a|, carrying size and b along. */
static void sort_dims(int n, int64_t *size, int64_t *a, int64_t *b) {
    for (int i = 1; i < n; i++) {
        int64_t s = size[i], x = a[i], y = b ? b[i] : 0;
        int j = i;
        for (; j > 0 && iabs(a[j - 1]) > iabs(x); j--) {
            size[j] = size[j - 1];
            a[j] = a[j - 1];
            if (b) b[j] = b[j - 1];
        }
        size[j] = s;
        a[j] = x;
        if (b) b[j] = y;
    }
}

/* Merges dim i into the one before it when stepping over both is one step
 * (in a, and in b when given); this keeps linear indices unchanged. */
static int merge_dims(int n, int64_t *size, int64_t *a, int64_t *b) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0 && a[i] == a[m - 1] * size[m - 1] && (!b || b[i] == b[m - 1] * size[m - 1])) {
            size[m - 1] *= size[i];
            continue;
        }
        size[m] = size[i];
        a[m] = a[i];
        if (b) b[m] = b[i];
        m++;
    }
    return m;
}

static void build_plan(plan *p, const tjc_call *c, const tjc_reduce_info *info, bool logical) {
    const tj_tensor *t = c->in[0], *o = c->out[0];
    int64_t es = (int64_t)tj_dtype_size(t->dtype);
    p->nk = p->nr = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->sizes[d] == 1) continue;
        if (info->reduced[d]) {
            p->rsize[p->nr] = t->sizes[d];
            p->rin[p->nr++] = t->strides[d] * es;
        } else {
            p->ksize[p->nk] = t->sizes[d];
            p->kin[p->nk] = t->strides[d] * es;
            p->kout[p->nk++] = o->strides[info->out_dim[d]];
        }
    }
    sort_dims(p->nk, p->ksize, p->kin, p->kout);
    /* arg reductions report row-major positions, so they keep logical order */
    if (!logical) sort_dims(p->nr, p->rsize, p->rin, NULL);
    p->nk = merge_dims(p->nk, p->ksize, p->kin, p->kout);
    p->nr = merge_dims(p->nr, p->rsize, p->rin, NULL);
    int64_t rmin = INT64_MAX;
    for (int k = 0; k < p->nr; k++)
        if (iabs(p->rin[k]) < rmin) rmin = iabs(p->rin[k]);
    p->column = p->nk > 0 && iabs(p->kin[0]) < rmin;
    if (p->nk == 0) {
        p->nk = 1;
        p->ksize[0] = 1;
        p->kin[0] = p->kout[0] = 0;
    }
    if (p->nr == 0) {
        p->nr = 1;
        p->rsize[0] = 1;
        p->rin[0] = 0;
    }
    p->M = tjc_numel(p->ksize, p->nk);
    p->N = tjc_numel(p->rsize, p->nr);
    int64_t block = p->column ? COL_BLOCK : ROW_BLOCK;
    p->nb = p->N > 0 ? (p->N + block - 1) / block : 1;
    p->in = tjc_data_ptr(t);
    for (int k = 0; k < c->n_out && k < 2; k++) {
        p->out[k] = tjc_data_ptr(c->out[k]);
        p->out_es[k] = (int64_t)tj_dtype_size(c->out[k]->dtype);
    }
}

/* Input (bytes) and output (elements) offsets of kept index o over kept dims
 * from..nk-1. */
static void kept_offsets(const plan *p, int64_t o, int from, int64_t *in, int64_t *out) {
    *in = *out = 0;
    for (int k = from; k < p->nk; k++) {
        int64_t i = o % p->ksize[k];
        o /= p->ksize[k];
        *in += i * p->kin[k];
        *out += i * p->kout[k];
    }
}

/* A position among the reduced elements, as a multi-index and a byte offset. */
typedef struct walker {
    int64_t idx[TJ_MAX_DIMS];
    int64_t off;
} walker;

static void walk_start(const plan *p, walker *w, int64_t at) {
    w->off = 0;
    for (int k = 0; k < p->nr; k++) {
        w->idx[k] = at % p->rsize[k];
        at /= p->rsize[k];
        w->off += w->idx[k] * p->rin[k];
    }
}

/* Steps n elements along reduced dim 0 (n never crosses its end). */
static void walk_advance(const plan *p, walker *w, int64_t n) {
    w->idx[0] += n;
    w->off += n * p->rin[0];
    for (int k = 0; k + 1 < p->nr && w->idx[k] == p->rsize[k]; k++) {
        w->idx[k] = 0;
        w->off -= p->rsize[k] * p->rin[k];
        w->idx[k + 1]++;
        w->off += p->rin[k + 1];
    }
}

static void finish(const plan *p, const void *s, int64_t out_off) {
    char *out[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++)
        if (p->out[k]) out[k] = p->out[k] + out_off * p->out_es[k];
    p->r->final(s, out, p->prm);
}

static void row_task(const plan *p, int64_t t) {
    const tjcpu_reducer *r = p->r;
    int64_t o = t / p->nb, b = t % p->nb;
    int64_t in_off, out_off;
    kept_offsets(p, o, 0, &in_off, &out_off);
    int64_t lo = b * ROW_BLOCK, hi = lo + ROW_BLOCK < p->N ? lo + ROW_BLOCK : p->N;
    state_buf s;
    r->init(s.b, lo, p->prm);
    if (lo < hi) {
        walker w;
        walk_start(p, &w, lo);
        for (int64_t at = lo; at < hi;) {
            int64_t n = p->rsize[0] - w.idx[0];
            if (n > hi - at) n = hi - at;
            r->run(s.b, p->in + in_off + w.off, p->rin[0], n, at, p->prm);
            at += n;
            walk_advance(p, &w, n);
        }
    }
    if (p->nb == 1) finish(p, s.b, out_off);
    else memcpy(p->partials + (size_t)t * r->size, s.b, r->size);
}

static void column_task(const plan *p, int64_t t) {
    const tjcpu_reducer *r = p->r;
    int64_t C = p->ksize[0], nchunks = (C + COL_CHUNK - 1) / COL_CHUNK;
    int64_t b = t % p->nb, rest = t / p->nb, ch = rest % nchunks, o2 = rest / nchunks;
    int64_t in_off, out_off;
    kept_offsets(p, o2, 1, &in_off, &out_off);
    int64_t col0 = ch * COL_CHUNK, ncols = C - col0 < COL_CHUNK ? C - col0 : COL_CHUNK;
    in_off += col0 * p->kin[0];
    out_off += col0 * p->kout[0];
    int64_t lo = b * COL_BLOCK, hi = lo + COL_BLOCK < p->N ? lo + COL_BLOCK : p->N;
    chunk_buf s;
    for (int64_t j = 0; j < ncols; j++) r->init(s.b + j * r->size, lo, p->prm);
    if (lo < hi) {
        walker w;
        walk_start(p, &w, lo);
        for (int64_t at = lo; at < hi;) {
            int64_t n = p->rsize[0] - w.idx[0];
            if (n > hi - at) n = hi - at;
            r->cols(s.b, p->in + in_off + w.off, p->kin[0], ncols, p->rin[0], n, at, p->prm);
            at += n;
            walk_advance(p, &w, n);
        }
    }
    for (int64_t j = 0; j < ncols; j++) {
        if (p->nb == 1) {
            finish(p, s.b + j * r->size, out_off + j * p->kout[0]);
        } else {
            int64_t o = o2 * C + col0 + j; /* kept dim 0 is the fastest */
            memcpy(p->partials + (size_t)(o * p->nb + b) * r->size, s.b + j * r->size, r->size);
        }
    }
}

/* Folds an output's block states pairwise, in index order, then writes it. */
static void combine_task(const plan *p, int64_t o) {
    const tjcpu_reducer *r = p->r;
    size_t sz = r->size;
    char *P = p->partials + (size_t)(o * p->nb) * sz;
    for (int64_t w = 1; w < p->nb; w *= 2)
        for (int64_t i = 0; i + w < p->nb; i += 2 * w)
            r->combine(P + (size_t)i * sz, P + (size_t)(i + w) * sz, p->prm);
    int64_t in_off, out_off;
    kept_offsets(p, o, 0, &in_off, &out_off);
    finish(p, P, out_off);
}

tj_status tjcpu_reduce(const tjc_call *c, const tjc_reduce_info *info, const tjcpu_reducer *r,
                       const tjcpu_rparams *prm, bool logical_order) {
    if (r->size > TJCPU_STATE_MAX)
        return tjc_error(TJ_ERR_INTERNAL, "%s: reduction state of %zu bytes is too large",
                         c->op->name, r->size);
    plan p = {.r = r, .prm = prm};
    build_plan(&p, c, info, logical_order);
    if (p.M == 0) return TJ_OK;
    if (p.nb > 1) {
        p.partials = tjc_malloc((size_t)(p.M * p.nb) * r->size);
        if (!p.partials)
            return tjc_error(TJ_ERR_MEMORY, "%s: out of memory for %lld partial results",
                             c->op->name, (long long)(p.M * p.nb));
    }
    int threads = tjcpu_threads_for(p.M * (p.N > 0 ? p.N : 1));
    if (p.column) {
        int64_t C = p.ksize[0], tasks = p.M / C * ((C + COL_CHUNK - 1) / COL_CHUNK) * p.nb;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
        for (int64_t t = 0; t < tasks; t++) column_task(&p, t);
    } else {
        int64_t tasks = p.M * p.nb;
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
        for (int64_t t = 0; t < tasks; t++) row_task(&p, t);
    }
    if (p.nb > 1) {
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
        for (int64_t o = 0; o < p.M; o++) combine_task(&p, o);
        tjc_free(p.partials);
    }
    return TJ_OK;
}
