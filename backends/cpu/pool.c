/* pool.c — CPU kernels of max_pool2d(_with_indices), avg_pool2d,
 * adaptive_avg_pool2d, their backward ops and max_pool2d_gather. The typed loops are in
 * pool_impl.h; this file picks the type and splits the N * C planes across
 * threads (planes never share output elements, backward ones included). */
#include <math.h>
#include <omp.h>
#include <stdatomic.h>
#include <string.h>

#include "core/linalg.h"
#include "cpu.h"

#define T float
#define SFX f32
#include "pool_impl.h"
#undef T
#undef SFX
#define T double
#define SFX f64
#include "pool_impl.h"
#undef T
#undef SFX

/* i64 average pooling, as PyTorch's CPU kernels compute it: a window's sum
 * (wrapping) divided by its divisor toward zero; the backward adds each
 * gradient so divided to its window. The window is the float loops'. */
static void avg_pool_i64(const tjc_pool_geom *g, const char *x, const int64_t *xs, int64_t *out,
                         int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; p++) {
        const int64_t *xp = (const int64_t *)x + (p / g->c) * xs[0] + (p % g->c) * xs[1];
        int64_t *o = out + p * g->oh * g->ow;
        for (int64_t oh = 0; oh < g->oh; oh++)
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t hs, he, ws, we, div = avg_window_f64(g, oh, ow, &hs, &he, &ws, &we);
                uint64_t sum = 0;
                for (int64_t y = hs; y < he; y++)
                    for (int64_t xx = ws; xx < we; xx++) sum += (uint64_t)xp[y * xs[2] + xx * xs[3]];
                o[oh * g->ow + ow] = hs >= he || ws >= we ? 0 : (int64_t)sum / div;
            }
    }
}

static void avg_pool_backward_i64(const tjc_pool_geom *g, const char *go, const int64_t *gs,
                                  int64_t *gi, int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; p++) {
        const int64_t *gop = (const int64_t *)go + (p / g->c) * gs[0] + (p % g->c) * gs[1];
        uint64_t *plane = (uint64_t *)gi + p * g->h * g->w;
        for (int64_t oh = 0; oh < g->oh; oh++)
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t hs, he, ws, we, div = avg_window_f64(g, oh, ow, &hs, &he, &ws, &we);
                if (hs >= he || ws >= we) continue;
                uint64_t v = (uint64_t)(gop[oh * gs[2] + ow * gs[3]] / div);
                for (int64_t y = hs; y < he; y++)
                    for (int64_t xx = ws; xx < we; xx++) plane[y * g->w + xx] += v;
            }
    }
}

/* [n, c, h, w] element strides of a 3-D or 4-D tensor (n's is 0 when unbatched). */
static void strides4(const tj_tensor *t, int64_t *s) {
    int b = t->ndim == 4;
    s[0] = b ? t->strides[0] : 0;
    s[1] = t->strides[b], s[2] = t->strides[b + 1], s[3] = t->strides[b + 2];
}

static int plane_threads(const tjc_pool_geom *g, int64_t per_cell) {
    int64_t planes = g->n * g->c;
    int t = tjcpu_threads_for(planes * g->oh * g->ow * per_cell);
    return t > planes ? (int)(planes > 0 ? planes : 1) : t;
}

/* Runs body over the planes, one static range [p0, p1) per thread, with the
 * `threads` of the calling scope. */
#define OVER_PLANES(g, body)                                                            \
    do {                                                                                \
        int64_t planes_ = (g)->n * (g)->c;                                              \
        _Pragma("omp parallel num_threads(threads) if (threads > 1)")                  \
        {                                                                               \
            int64_t t_ = omp_get_thread_num(), nt_ = omp_get_num_threads();             \
            int64_t p0 = planes_ * t_ / nt_, p1 = planes_ * (t_ + 1) / nt_;             \
            body;                                                                       \
        }                                                                               \
    } while (0)

tj_status tjcpu_max_pool2d(const tjc_call *c) {
    tjc_pool_geom g;
    tj_status st = tjc_pool_geometry(c, &g);
    if (st) return st;
    int64_t xs[4];
    strides4(c->in[0], xs);
    const char *x = tjc_data_ptr(c->in[0]);
    char *out = tjc_data_ptr(c->out[0]);
    int64_t *ind = c->n_out > 1 ? (int64_t *)tjc_data_ptr(c->out[1]) : NULL;
    int threads = plane_threads(&g, g.kh * g.kw);
    if (c->in[0]->dtype == TJ_F32)
        OVER_PLANES(&g, max_pool_f32(&g, x, xs, (float *)out, ind, p0, p1));
    else
        OVER_PLANES(&g, max_pool_f64(&g, x, xs, (double *)out, ind, p0, p1));
    return TJ_OK;
}

tj_status tjcpu_max_pool2d_backward(const tjc_call *c) {
    tjc_pool_geom g;
    tj_status st = tjc_pool_geometry(c, &g);
    if (st) return st;
    int64_t gs[4], is[4];
    strides4(c->in[0], gs);
    strides4(c->in[2], is);
    const char *go = tjc_data_ptr(c->in[0]), *ind = tjc_data_ptr(c->in[2]);
    tj_tensor *gi = c->out[0];
    char *gid = tjc_data_ptr(gi);
    memset(gid, 0, (size_t)tjc_numel(gi->sizes, gi->ndim) * tj_dtype_size(gi->dtype));
    int threads = plane_threads(&g, 1);
    atomic_bool bad = false;
    if (gi->dtype == TJ_F32)
        OVER_PLANES(&g, if (!max_pool_backward_f32(&g, go, gs, ind, is, (float *)gid, p0, p1))
                            atomic_store(&bad, true));
    else
        OVER_PLANES(&g, if (!max_pool_backward_f64(&g, go, gs, ind, is, (double *)gid, p0, p1))
                            atomic_store(&bad, true));
    if (atomic_load(&bad))
        return tjc_error(TJ_ERR_ARG, "%s: an element of 'indices' lies outside its %lldx%lld "
                         "input plane", c->op->name, (long long)g.h, (long long)g.w);
    return TJ_OK;
}

tj_status tjcpu_max_pool2d_gather(const tjc_call *c) {
    tjc_pool_geom g;
    tj_status st = tjc_pool_geometry(c, &g);
    if (st) return st;
    int64_t xs[4], is[4];
    strides4(c->in[0], xs);
    strides4(c->in[1], is);
    const char *x = tjc_data_ptr(c->in[0]), *ind = tjc_data_ptr(c->in[1]);
    char *out = tjc_data_ptr(c->out[0]);
    int threads = plane_threads(&g, 1);
    atomic_bool bad = false;
    if (c->in[0]->dtype == TJ_F32)
        OVER_PLANES(&g, if (!max_pool_gather_f32(&g, x, xs, ind, is, (float *)out, p0, p1))
                            atomic_store(&bad, true));
    else
        OVER_PLANES(&g, if (!max_pool_gather_f64(&g, x, xs, ind, is, (double *)out, p0, p1))
                            atomic_store(&bad, true));
    if (atomic_load(&bad))
        return tjc_error(TJ_ERR_ARG, "%s: an element of 'indices' lies outside its %lldx%lld "
                         "input plane", c->op->name, (long long)g.h, (long long)g.w);
    return TJ_OK;
}

tj_status tjcpu_avg_pool2d(const tjc_call *c) {
    tjc_pool_geom g;
    tj_status st = tjc_pool_geometry(c, &g);
    if (st) return st;
    int64_t xs[4];
    strides4(c->in[0], xs);
    const char *x = tjc_data_ptr(c->in[0]);
    char *out = tjc_data_ptr(c->out[0]);
    int threads = plane_threads(&g, g.kh * g.kw);
    if (c->in[0]->dtype == TJ_F32)
        OVER_PLANES(&g, avg_pool_f32(&g, x, xs, (float *)out, p0, p1));
    else if (c->in[0]->dtype == TJ_F64)
        OVER_PLANES(&g, avg_pool_f64(&g, x, xs, (double *)out, p0, p1));
    else
        OVER_PLANES(&g, avg_pool_i64(&g, x, xs, (int64_t *)out, p0, p1));
    return TJ_OK;
}

tj_status tjcpu_avg_pool2d_backward(const tjc_call *c) {
    tjc_pool_geom g;
    tj_status st = tjc_pool_geometry(c, &g);
    if (st) return st;
    int64_t gs[4];
    strides4(c->in[0], gs);
    const char *go = tjc_data_ptr(c->in[0]);
    tj_tensor *gi = c->out[0];
    char *gid = tjc_data_ptr(gi);
    memset(gid, 0, (size_t)tjc_numel(gi->sizes, gi->ndim) * tj_dtype_size(gi->dtype));
    int threads = plane_threads(&g, g.kh * g.kw);
    if (gi->dtype == TJ_F32)
        OVER_PLANES(&g, avg_pool_backward_f32(&g, go, gs, (float *)gid, p0, p1));
    else if (gi->dtype == TJ_F64)
        OVER_PLANES(&g, avg_pool_backward_f64(&g, go, gs, (double *)gid, p0, p1));
    else
        OVER_PLANES(&g, avg_pool_backward_i64(&g, go, gs, (int64_t *)gid, p0, p1));
    return TJ_OK;
}

/* Cells per window on average, for the thread decision. */
static int64_t adaptive_cell(const tjc_pool_geom *g) {
    if (g->oh == 0 || g->ow == 0) return 1; /* an empty output */
    return ((g->h + g->oh - 1) / g->oh + 1) * ((g->w + g->ow - 1) / g->ow + 1);
}

tj_status tjcpu_adaptive_avg_pool2d(const tjc_call *c) {
    tjc_pool_geom g;
    tj_status st = tjc_pool_geometry(c, &g);
    if (st) return st;
    int64_t xs[4];
    strides4(c->in[0], xs);
    const char *x = tjc_data_ptr(c->in[0]);
    char *out = tjc_data_ptr(c->out[0]);
    int threads = plane_threads(&g, adaptive_cell(&g));
    if (c->in[0]->dtype == TJ_F32)
        OVER_PLANES(&g, adaptive_avg_f32(&g, x, xs, (float *)out, p0, p1));
    else
        OVER_PLANES(&g, adaptive_avg_f64(&g, x, xs, (double *)out, p0, p1));
    return TJ_OK;
}

tj_status tjcpu_adaptive_avg_pool2d_backward(const tjc_call *c) {
    tjc_pool_geom g;
    tj_status st = tjc_pool_geometry(c, &g);
    if (st) return st;
    int64_t gs[4];
    strides4(c->in[0], gs);
    const char *go = tjc_data_ptr(c->in[0]);
    tj_tensor *gi = c->out[0];
    char *gid = tjc_data_ptr(gi);
    memset(gid, 0, (size_t)tjc_numel(gi->sizes, gi->ndim) * tj_dtype_size(gi->dtype));
    int threads = plane_threads(&g, adaptive_cell(&g));
    if (gi->dtype == TJ_F32)
        OVER_PLANES(&g, adaptive_avg_backward_f32(&g, go, gs, (float *)gid, p0, p1));
    else
        OVER_PLANES(&g, adaptive_avg_backward_f64(&g, go, gs, (double *)gid, p0, p1));
    return TJ_OK;
}
