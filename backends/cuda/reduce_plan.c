/* reduce_plan.c — see reduce_plan.h. The layout follows the CPU's
 * (backends/cpu/reduce_plan.c): drop size-1 dims, order kept and reduced
 * dims by stride, merge what is contiguous; row mode when the innermost
 * dim in memory is reduced, column mode when it is kept.
 *
 * Launch shape:
 *  - row mode: LANES lanes along x per output (a power of two up to 512,
 *    fewer for short reductions), 256 / LANES outputs along y;
 *  - column mode: up to 32 outputs along x, up to 256 / 32 lanes along y.
 * The reduction is cut into gridDim.y slices so that a lane folds at most
 * SERIAL_MAX elements in sequence (the accuracy of a cascade, as the CPU's
 * blocks), and into more slices when the outputs alone would leave the
 * device idle (while a lane still folds at least SERIAL_MIN). */
#include "backends/cuda/reduce_plan.h"

#include <stdio.h>
#include <string.h>

enum {
    ROW_LANES_MAX = 512,
    BLOCK_THREADS = 256,
    COL_OUTPUTS = 32,
    SERIAL_MAX = 256,
    SERIAL_MIN = 32,
    BLOCKS_PER_SM = 4,
    GRID_Y_MAX = 65535
};

/* the kernels read these as RGeom and RArgs (kernels/tjcu_reduce.h) */
_Static_assert(sizeof(tjcu_rgeom) == 3 * 8 + 4 * 4 + 5 * TJCU_MAX_DIMS * 8, "RGeom's layout");
_Static_assert(sizeof(tjcu_rargs) == 6 * sizeof(void *) + 6 * 8, "RArgs' layout");

static int64_t iabs64(int64_t v) { return v < 0 ? -v : v; }

unsigned tjcu_pow2_at_least(int64_t n) {
    unsigned p = 1;
    while ((int64_t)p < n) p <<= 1;
    return p;
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* Stable insertion sort of dims by |a|, carrying size and b along. */
static void sort_dims(int n, int64_t *size, int64_t *a, int64_t *b) {
    for (int i = 1; i < n; i++) {
        int64_t s = size[i], x = a[i], y = b ? b[i] : 0;
        int j = i;
        for (; j > 0 && iabs64(a[j - 1]) > iabs64(x); j--) {
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
 * (in a, and in b when given); linear indices stay the same. */
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

void tjcu_rgeom_build(tjcu_rgeom *g, int ndim, const int64_t *sizes, const int64_t *strides,
                      const bool *reduced, const int64_t *out_strides, bool logical) {
    memset(g, 0, sizeof *g);
    for (int d = ndim - 1; d >= 0; d--) {
        if (sizes[d] == 1) continue;
        if (reduced[d]) {
            g->rsize[g->nr] = sizes[d];
            g->rin[g->nr++] = strides[d];
        } else {
            g->ksize[g->nk] = sizes[d];
            g->kin[g->nk] = strides[d];
            g->kout[g->nk++] = out_strides[d];
        }
    }
    sort_dims(g->nk, g->ksize, g->kin, g->kout);
    if (!logical) sort_dims(g->nr, g->rsize, g->rin, NULL);
    g->nk = merge_dims(g->nk, g->ksize, g->kin, g->kout);
    g->nr = merge_dims(g->nr, g->rsize, g->rin, NULL);
    int64_t rmin = INT64_MAX;
    for (int k = 0; k < g->nr; k++)
        if (iabs64(g->rin[k]) < rmin) rmin = iabs64(g->rin[k]);
    g->row = !(g->nk > 0 && iabs64(g->kin[0]) < rmin);
    if (g->nk == 0) {
        g->nk = 1;
        g->ksize[0] = 1;
    }
    if (g->nr == 0) {
        g->nr = 1;
        g->rsize[0] = 1;
    }
    g->M = tjc_numel(g->ksize, g->nk);
    g->N = tjc_numel(g->rsize, g->nr);
}

tj_status tjcu_reduce_run(const char *what, tj_device dev, const char *module, const char *kernel,
                          tjcu_rgeom *g, const tjcu_rargs *a) {
    if (g->M == 0) return TJ_OK;
    unsigned bx, by;
    int64_t per_block;
    if (g->row) {
        bx = tjcu_pow2_at_least(g->N < ROW_LANES_MAX ? g->N : ROW_LANES_MAX);
        by = bx < BLOCK_THREADS ? BLOCK_THREADS / bx : 1; /* whole warps: the lanes shuffle */
        per_block = by;
    } else {
        bx = tjcu_pow2_at_least(g->M < COL_OUTPUTS ? g->M : COL_OUTPUTS);
        int64_t lanes = BLOCK_THREADS / bx;
        by = tjcu_pow2_at_least(g->N < lanes ? (g->N > 0 ? g->N : 1) : lanes);
        per_block = bx;
    }
    int64_t lanes = g->row ? bx : by, gx = ceil_div(g->M, per_block);
    int64_t gy = ceil_div(g->N, lanes * SERIAL_MAX);
    int64_t target = (int64_t)BLOCKS_PER_SM * tjcu_sm_count(dev);
    int64_t wide = gx < target ? ceil_div(target, gx) : 1, most = ceil_div(g->N, lanes * SERIAL_MIN);
    if (wide > most) wide = most;
    if (gy < wide) gy = wide;
    if (gy > GRID_Y_MAX) gy = GRID_Y_MAX;
    if (gy < 1) gy = 1;
    g->chunk = g->N > 0 ? ceil_div(g->N, gy) : 1;
    gy = g->N > 0 ? ceil_div(g->N, g->chunk) : 1;
    if (gx > INT32_MAX || (gy > 1 && g->M > INT32_MAX))
        return tjc_error(TJ_ERR_UNSUPPORTED, "%s: %lld outputs are more than one launch can cover",
                         what, (long long)g->M);
    char name[96];
    void *partials = NULL;
    if (gy > 1) {
        partials = tjcu_malloc(dev, (size_t)(g->M * gy) * TJCU_RSTATE_MAX);
        if (!partials) return tj_last_status();
    }
    tjcu_rargs args = *a;
    snprintf(name, sizeof name, "%s_p1", kernel);
    void *p1[] = {g, &args, &partials};
    tjcu_dim3 grid = {(unsigned)gx, (unsigned)gy, 1}, block = {bx, by, 1};
    tj_status st = tjcu_launch(what, dev, module, name, grid, block,
                               (size_t)bx * by * TJCU_RSTATE_MAX, p1);
    if (!st && gy > 1) {
        int parts = (int)gy;
        unsigned b2 = tjcu_pow2_at_least(gy < BLOCK_THREADS ? gy : BLOCK_THREADS);
        if (b2 < 32) b2 = 32; /* whole warps: the lanes shuffle */
        snprintf(name, sizeof name, "%s_p2", kernel);
        void *p2[] = {g, &args, &partials, &parts};
        st = tjcu_launch(what, dev, module, name, (tjcu_dim3){(unsigned)g->M, 1, 1},
                         (tjcu_dim3){b2, 1, 1}, (size_t)b2 * TJCU_RSTATE_MAX, p2);
    }
    if (partials) tjcu_free(dev, partials); /* stream order keeps it until pass 2 ran */
    return st;
}

tj_tensor *tjcu_dense(const char *what, tj_device dev, tj_tensor *t, const char *module) {
    if (!t) return NULL;
    if (tj_is_contiguous(t)) return tj_retain(t);
    tj_tensor *d = tjc_alloc_on(dev, t->sizes, t->ndim, t->dtype);
    if (!d) return NULL;
    int64_t n = tjc_numel(t->sizes, t->ndim);
    if (n == 0) return d;
    char name[64];
    snprintf(name, sizeof name, "%s_gather_%s", module, t->dtype == TJ_F32 ? "f32" : "f64");
    tjcu_tensor_arg src = tjcu_arg(t);
    void *dst = tjc_data_ptr(d), *args[] = {&src, &dst, &n};
    if (tjcu_launch(what, dev, module, name, tjcu_grid_for(dev, n, 256), (tjcu_dim3){256, 1, 1}, 0,
                    args)) {
        tj_release(d);
        return NULL;
    }
    return d;
}
