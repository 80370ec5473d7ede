/* conv.c — CPU kernels of conv1d, conv2d, conv_transpose2d and conv2d's
 * backward ops, all on im2col + GEMM.
 *
 * For image n and group g, with col = im2col(x[n, g]) of shape
 * [C/g * kh * kw, Ho * Wo] and W_g the group's weight as [C_out/g, C/g*kh*kw]:
 *   forward          y[n, g]  = W_g @ col
 *   grad of input    dx[n, g] = col2im(W_g^T @ dy[n, g])   (= conv_transpose2d)
 *   grad of weight   dW_g    += dy[n, g] @ col^T
 * A 1x1 kernel with stride 1 and no padding has col == x[n, g] itself, so the
 * direct path hands the input (or dx) to the GEMM without im2col/col2im.
 * conv1d runs as a conv2d of height 1. Inputs are read through their strides;
 * only a weight whose inner dims do not form one run, or a grad_output whose
 * spatial dims do not, is copied first.
 *
 * col is built a band of output rows at a time, sized to stay in L2 cache
 * (COL_BUDGET), so the GEMM reads what im2col has just written instead of a
 * buffer the size of the whole image.
 *
 * Threads: when there are enough (image, group) products, each thread takes
 * whole products with its own col buffer and single-threaded BLAS; otherwise
 * the products run in turn, im2col/col2im split over channels and BLAS using
 * all threads (linalg.h).
 */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/linalg.h"
#include "linalg.h"

/* An activation as [n, c, h, w] element strides (0 for dims it lacks). */
typedef struct act4 {
    const char *p;
    int64_t sn, sc, sh, sw;
} act4;

static act4 act_of(const tj_tensor *t, const tjc_conv_geom *g) {
    act4 v = {tjc_data_ptr(t), 0, 0, 0, 0};
    int d = 0;
    if (g->batched) v.sn = t->strides[d++];
    v.sc = t->strides[d++];
    if (g->spatial == 2) v.sh = t->strides[d++];
    v.sw = t->strides[d];
    return v;
}

/* The step between positions of a [h, w] plane read as one row of h * w. */
static bool plane_step(int64_t h, int64_t w, int64_t sh, int64_t sw, int64_t *step) {
    int64_t sizes[2] = {h, w}, strides[2] = {sh, sw};
    return tjcpu_collapse(sizes, strides, 2, step);
}

/* A tensor as a matrix [rows = its dim 0, cols = the rest]; copied when the
 * rest is not one run (a permuted weight), so *owned may hold a copy. */
static tj_status as_matrix(tj_tensor *t, tj_tensor **owned, tjcpu_mat *m) {
    int64_t step;
    *owned = NULL;
    if (!tjcpu_collapse(t->sizes + 1, t->strides + 1, t->ndim - 1, &step)) {
        if (!(*owned = tjcpu_to_contiguous(t, t->dtype))) return tj_last_status();
        t = *owned;
        step = 1;
    }
    int64_t rest = tjc_numel(t->sizes + 1, t->ndim - 1);
    *m = (tjcpu_mat){tjc_data_ptr(t), t->sizes[0] > 1 ? t->strides[0] : rest, step};
    return TJ_OK;
}

/* Columns [lo, hi) of output positions ow whose input column
 * ow * sw - pw + kj * dw lies inside [0, w). */
static void ow_range(const tjc_conv_geom *g, int64_t kj, int64_t *lo, int64_t *hi) {
    int64_t off = kj * g->dw - g->pw;
    int64_t l = off >= 0 ? 0 : (-off + g->sw - 1) / g->sw;
    int64_t h = off > g->w - 1 ? 0 : (g->w - 1 - off) / g->sw + 1;
    if (h > g->wo) h = g->wo;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* Bytes of col built at a time: about half of a core's L2. */
#define COL_BUDGET ((int64_t)1 << 20)

/* Output rows per band of col. */
static int64_t band_rows(const tjc_conv_geom *g, int64_t ckk, size_t es) {
    int64_t rows = COL_BUDGET / ((int64_t)es * ckk * g->wo);
    return rows < 1 ? 1 : rows > g->ho ? g->ho : rows;
}

/* d[0, lo) = 0, d[lo, hi) = s[0], s[step], ..., d[hi, n) = 0: one row of col. */
#define COPY_ROW(U, sfx)                                                                       \
    static inline void copy_row_##sfx(U *restrict d, const U *restrict s, int64_t n, int64_t lo, \
                                      int64_t hi, int64_t step) {                              \
        for (int64_t i = 0; i < lo; i++) d[i] = 0;                                             \
        if (step == 1)                                                                         \
            for (int64_t i = lo; i < hi; i++) d[i] = s[i - lo];                                \
        else                                                                                   \
            for (int64_t i = lo; i < hi; i++) d[i] = s[(i - lo) * step];                       \
        for (int64_t i = hi; i < n; i++) d[i] = 0;                                             \
    }
COPY_ROW(uint32_t, u32)
COPY_ROW(uint64_t, u64)

/* col[(c * kh + ki) * kw + kj, (oh - oh0) * wo + ow] = x[c, ih, iw] (0 in the
 * padding) for channels [0, cg) of the plane block at x and output rows
 * [oh0, oh1); values move as bits, so one routine serves every dtype. */
static void im2col(const char *x, const act4 *v, const tjc_conv_geom *g, int64_t cg, int64_t oh0,
                   int64_t oh1, char *col, size_t es, int threads) {
    int64_t pc = (oh1 - oh0) * g->wo, kk = g->kh * g->kw;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t r = 0; r < cg * kk; r++) {
        int64_t ch = r / kk, ki = (r % kk) / g->kw, kj = r % g->kw, lo, hi;
        ow_range(g, kj, &lo, &hi);
        char *dst = col + (size_t)(r * pc) * es;
        const char *xc = x + (size_t)(ch * v->sc) * es;
        int64_t off = kj * g->dw - g->pw;
        for (int64_t oh = oh0; oh < oh1; oh++, dst += (size_t)g->wo * es) {
            int64_t ih = oh * g->sh - g->ph + ki * g->dh;
            bool row_in = ih >= 0 && ih < g->h && lo < hi;
            const char *src = row_in ? xc + (size_t)(ih * v->sh + (lo * g->sw + off) * v->sw) * es : xc;
            int64_t step = g->sw * v->sw;
            /* element loops rather than memcpy/memset calls: the runs are short
             * (one output row) and there are C * kh * kw * Ho of them */
            if (es == 4)
                copy_row_u32((uint32_t *)dst, (const uint32_t *)src, g->wo, row_in ? lo : g->wo,
                             row_in ? hi : g->wo, step);
            else
                copy_row_u64((uint64_t *)dst, (const uint64_t *)src, g->wo, row_in ? lo : g->wo,
                             row_in ? hi : g->wo, step);
        }
    }
}

/* The adjoint of im2col over output rows [oh0, oh1): dx[c, ih, iw] += col[...]
 * into a contiguous [cg, h, w] block; a channel's rows only touch its plane. */
#define COL2IM(T, sfx)                                                                         \
    static void col2im_##sfx(const T *col, T *dx, const tjc_conv_geom *g, int64_t cg,          \
                             int64_t oh0, int64_t oh1, int threads) {                          \
        int64_t pc = (oh1 - oh0) * g->wo, kk = g->kh * g->kw;                                  \
        _Pragma("omp parallel for num_threads(threads) schedule(static) if (threads > 1)")     \
        for (int64_t ch = 0; ch < cg; ch++) {                                                  \
            T *plane = dx + ch * g->h * g->w;                                                  \
            for (int64_t q = 0; q < kk; q++) {                                                 \
                int64_t ki = q / g->kw, kj = q % g->kw, lo, hi;                                \
                ow_range(g, kj, &lo, &hi);                                                     \
                const T *src = col + (ch * kk + q) * pc;                                       \
                int64_t off = kj * g->dw - g->pw;                                              \
                for (int64_t oh = oh0; oh < oh1; oh++) {                                       \
                    int64_t ih = oh * g->sh - g->ph + ki * g->dh;                              \
                    if (ih < 0 || ih >= g->h) continue;                                        \
                    T *d = plane + ih * g->w + off;                                            \
                    const T *s = src + (oh - oh0) * g->wo;                                     \
                    for (int64_t ow = lo; ow < hi; ow++) d[ow * g->sw] += s[ow];               \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }
COL2IM(float, f32)
COL2IM(double, f64)
COL2IM(uint64_t, i64) /* i64 sums wrap, as PyTorch's: unsigned adds, no overflow */

/* rows[r, 0..len) = v[r] for r < n (v strided by vs), or += when add. */
#define ROW_FILL(T, sfx)                                                                       \
    static void row_fill_##sfx(T *rows, int64_t n, int64_t len, const T *v, int64_t vs,        \
                               bool add) {                                                     \
        for (int64_t r = 0; r < n; r++) {                                                      \
            T *d = rows + r * len, x = v[r * vs];                                              \
            if (add)                                                                           \
                for (int64_t i = 0; i < len; i++) d[i] += x;                                   \
            else                                                                               \
                for (int64_t i = 0; i < len; i++) d[i] = x;                                    \
        }                                                                                      \
    }
ROW_FILL(float, f32)
ROW_FILL(double, f64)
ROW_FILL(uint64_t, i64)

static void row_fill(tj_dtype dt, char *rows, int64_t n, int64_t len, const tj_tensor *v,
                     int64_t first, bool add) {
    const char *vp = tjc_data_ptr(v) + (size_t)(first * v->strides[0]) * tj_dtype_size(dt);
    if (dt == TJ_F32)
        row_fill_f32((float *)rows, n, len, (const float *)vp, v->strides[0], add);
    else if (dt == TJ_F64)
        row_fill_f64((double *)rows, n, len, (const double *)vp, v->strides[0], add);
    else
        row_fill_i64((uint64_t *)rows, n, len, (const uint64_t *)vp, v->strides[0], add);
}

/* Threads for `units` independent products totalling `work` multiply-adds:
 * one each when they divide evenly enough, else 1 (BLAS then threads inside). */
static int unit_threads(int64_t units, int64_t work) {
    int t = tj_get_num_threads();
    if (t <= 1 || units < t || work < ((int64_t)1 << 20)) return 1;
    if (units % t != 0 && units < 4 * (int64_t)t) return 1;
    return t;
}

/* A worker thread's error message stays on its thread; the caller gets one. */
static tj_status report(const char *op, tj_status st, int threads) {
    if (st && threads > 1)
        return tjc_error(st, "%s: a worker thread failed (%s)", op, tj_status_name(st));
    return st;
}

/* A grad_output-like tensor as act4 whose (h, w) plane is one run: *owned
 * holds a contiguous copy when the given one is not. */
static tj_status plane_act(tj_tensor *t, const tjc_conv_geom *g, int64_t ph, int64_t pw,
                           tj_tensor **owned, act4 *v, int64_t *step) {
    *owned = NULL;
    *v = act_of(t, g);
    if (plane_step(ph, pw, v->sh, v->sw, step)) return TJ_OK;
    if (!(*owned = tjcpu_to_contiguous(t, t->dtype))) return tj_last_status();
    *v = act_of(*owned, g);
    *step = 1;
    return TJ_OK;
}

/* col == the input itself; conv_transpose2d's output padding (allowed below
 * the dilation) can make the input larger than the output, and then it is not */
static bool is_direct(const tjc_conv_geom *g) {
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0 &&
           g->h == g->ho && g->w == g->wo;
}

tj_status tjcpu_conv_forward(const tjc_call *c) {
    tjc_conv_geom g;
    tj_status st = tjc_conv_geometry(c, &g, NULL, NULL);
    if (st) return st;
    tj_tensor *x = c->in[0], *w = c->in[1], *bias = c->in[2], *out = c->out[0];
    if (tjc_numel(out->sizes, out->ndim) == 0) return TJ_OK;
    tj_dtype dt = x->dtype;
    size_t es = tj_dtype_size(dt);
    int64_t G = g.groups, cg = g.c_in / G, cog = g.c_out / G, ckk = cg * g.kh * g.kw;
    int64_t P = g.ho * g.wo, units = g.n * G;
    act4 xv = act_of(x, &g);
    int64_t xstep = 0;
    bool direct = is_direct(&g) && plane_step(g.h, g.w, xv.sh, xv.sw, &xstep);
    tj_tensor *wown;
    tjcpu_mat wm;
    if ((st = as_matrix(w, &wown, &wm))) return st;
    int threads = unit_threads(units, g.n * g.c_out * P * ckk);
    int64_t band = band_rows(&g, ckk, es);
    size_t col_bytes = direct ? 0 : (size_t)(ckk * band * g.wo) * es;
    char *cols = direct ? NULL : tjc_malloc(col_bytes * (size_t)threads);
    if (!direct && !cols) {
        tj_release(wown);
        return tjc_error(TJ_ERR_MEMORY, "%s: out of memory for a %lldx%lld im2col buffer",
                         c->op->name, (long long)ckk, (long long)(band * g.wo));
    }
    int inner = threads > 1 ? 1 : tjcpu_threads_for(ckk * band * g.wo);
    tjcpu_blas_threads(0);
    tj_status first = TJ_OK;
    char *y = tjc_data_ptr(out);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t u = 0; u < units; u++) {
        int64_t ni = u / G, gi = u % G;
        const char *xp = xv.p + (size_t)(ni * xv.sn + gi * cg * xv.sc) * es;
        char *yp = y + (size_t)((ni * g.c_out + gi * cog) * P) * es;
        if (bias) row_fill(dt, yp, cog, P, bias, gi * cog, false);
        tjcpu_mat am = {(const char *)wm.p + (size_t)(gi * cog * wm.rs) * es, wm.rs, wm.cs};
        tj_status s = TJ_OK;
        if (direct) {
            tjcpu_mat bm = {xp, xv.sc, xstep};
            s = tjcpu_gemm(dt, cog, P, ckk, 1.0, am, bm, bias ? 1.0 : 0.0, yp, P);
        }
        char *col = direct ? NULL : cols + col_bytes * (size_t)omp_get_thread_num();
        for (int64_t oh0 = 0; !direct && oh0 < g.ho && !s; oh0 += band) {
            int64_t oh1 = oh0 + band < g.ho ? oh0 + band : g.ho, pc = (oh1 - oh0) * g.wo;
            im2col(xp, &xv, &g, cg, oh0, oh1, col, es, inner);
            s = tjcpu_gemm(dt, cog, pc, ckk, 1.0, am, (tjcpu_mat){col, pc, 1}, bias ? 1.0 : 0.0,
                           yp + (size_t)(oh0 * g.wo) * es, P);
        }
        if (s) {
#pragma omp critical(tjcpu_conv_error)
            if (!first) first = s;
        }
    }
    tjc_free(cols);
    tj_release(wown);
    return report(c->op->name, first, threads);
}

/* conv2d_backward_input and conv_transpose2d (which adds its bias). */
tj_status tjcpu_conv_backward_input(const tjc_call *c) {
    tjc_conv_geom g;
    tj_status st = tjc_conv_geometry(c, &g, NULL, NULL);
    if (st) return st;
    tj_tensor *w = c->in[1], *bias = c->n_in > 2 ? c->in[2] : NULL, *dx = c->out[0];
    if (tjc_numel(dx->sizes, dx->ndim) == 0) return TJ_OK;
    tj_dtype dt = dx->dtype;
    size_t es = tj_dtype_size(dt);
    int64_t G = g.groups, cg = g.c_in / G, cog = g.c_out / G, ckk = cg * g.kh * g.kw;
    int64_t P = g.ho * g.wo, HW = g.h * g.w, units = g.n * G;
    bool direct = is_direct(&g);
    tj_tensor *gown = NULL, *wown = NULL;
    act4 gv;
    int64_t gstep;
    tjcpu_mat wm;
    if ((st = plane_act(c->in[0], &g, g.ho, g.wo, &gown, &gv, &gstep)) ||
        (st = as_matrix(w, &wown, &wm))) {
        tj_release(gown);
        return st;
    }
    int threads = unit_threads(units, g.n * g.c_out * P * ckk);
    int64_t band = band_rows(&g, ckk, es);
    size_t col_bytes = direct ? 0 : (size_t)(ckk * band * g.wo) * es;
    char *cols = direct ? NULL : tjc_malloc(col_bytes * (size_t)threads);
    if (!direct && !cols) {
        tj_release(gown);
        tj_release(wown);
        return tjc_error(TJ_ERR_MEMORY, "%s: out of memory for a %lldx%lld column buffer",
                         c->op->name, (long long)ckk, (long long)(band * g.wo));
    }
    int inner = threads > 1 ? 1 : tjcpu_threads_for(ckk * band * g.wo);
    tjcpu_blas_threads(0);
    tj_status first = TJ_OK;
    char *dxd = tjc_data_ptr(dx);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t u = 0; u < units; u++) {
        int64_t ni = u / G, gi = u % G;
        char *dxp = dxd + (size_t)((ni * g.c_in + gi * cg) * HW) * es;
        /* W_g^T: the group's rows of the weight matrix, read transposed */
        tjcpu_mat am = {(const char *)wm.p + (size_t)(gi * cog * wm.rs) * es, wm.cs, wm.rs};
        tjcpu_mat bm = {gv.p + (size_t)(ni * gv.sn + gi * cog * gv.sc) * es, gv.sc, gstep};
        tj_status s = TJ_OK;
        if (direct) {
            s = tjcpu_gemm(dt, ckk, P, cog, 1.0, am, bm, 0.0, dxp, HW);
        } else {
            memset(dxp, 0, (size_t)(cg * HW) * es);
        }
        char *col = direct ? NULL : cols + col_bytes * (size_t)omp_get_thread_num();
        for (int64_t oh0 = 0; !direct && oh0 < g.ho && !s; oh0 += band) {
            int64_t oh1 = oh0 + band < g.ho ? oh0 + band : g.ho, pc = (oh1 - oh0) * g.wo;
            tjcpu_mat bband = {(const char *)bm.p + (size_t)(oh0 * g.wo * gstep) * es, bm.rs, bm.cs};
            s = tjcpu_gemm(dt, ckk, pc, cog, 1.0, am, bband, 0.0, col, pc);
            if (dt == TJ_F32) col2im_f32((const float *)col, (float *)dxp, &g, cg, oh0, oh1, inner);
            else if (dt == TJ_F64) col2im_f64((const double *)col, (double *)dxp, &g, cg, oh0, oh1, inner);
            else col2im_i64((const uint64_t *)col, (uint64_t *)dxp, &g, cg, oh0, oh1, inner);
        }
        if (bias) row_fill(dt, dxp, cg, HW, bias, gi * cg, true);
        if (s) {
#pragma omp critical(tjcpu_conv_error)
            if (!first) first = s;
        }
    }
    tjc_free(cols);
    tj_release(gown);
    tj_release(wown);
    return report(c->op->name, first, threads);
}

#define ACCUMULATE(T, sfx)                                                                     \
    static void accumulate_##sfx(T *dst, const T *parts, int n_parts, int64_t len) {           \
        for (int p = 0; p < n_parts; p++)                                                      \
            for (int64_t i = 0; i < len; i++) dst[i] += parts[p * len + i];                    \
    }
ACCUMULATE(float, f32)
ACCUMULATE(double, f64)
ACCUMULATE(uint64_t, i64)

tj_status tjcpu_conv_backward_weight(const tjc_call *c) {
    tjc_conv_geom g;
    tj_status st = tjc_conv_geometry(c, &g, NULL, NULL);
    if (st) return st;
    tj_tensor *x = c->in[1], *dw = c->out[0];
    tj_dtype dt = dw->dtype;
    size_t es = tj_dtype_size(dt);
    int64_t G = g.groups, cg = g.c_in / G, cog = g.c_out / G, ckk = cg * g.kh * g.kw;
    int64_t P = g.ho * g.wo, wlen = g.c_out * ckk;
    char *dwd = tjc_data_ptr(dw);
    memset(dwd, 0, (size_t)wlen * es);
    if (g.n == 0) return TJ_OK;
    act4 xv = act_of(x, &g), gv;
    int64_t xstep = 0, gstep;
    bool direct = is_direct(&g) && plane_step(g.h, g.w, xv.sh, xv.sw, &xstep);
    tj_tensor *gown;
    if ((st = plane_act(c->in[0], &g, g.ho, g.wo, &gown, &gv, &gstep))) return st;
    /* images split across threads, each summing into its own copy of dW */
    int threads = unit_threads(g.n, g.n * g.c_out * P * ckk);
    int64_t band = band_rows(&g, ckk, es);
    size_t col_bytes = direct ? 0 : (size_t)(ckk * band * g.wo) * es;
    size_t part_bytes = threads > 1 ? (size_t)wlen * es : 0;
    char *scratch = tjc_calloc((size_t)threads, col_bytes + part_bytes + 1);
    if (!scratch) {
        tj_release(gown);
        return tjc_error(TJ_ERR_MEMORY, "%s: out of memory for %d column buffers of %lldx%lld",
                         c->op->name, threads, (long long)ckk, (long long)(band * g.wo));
    }
    char *parts = scratch + col_bytes * (size_t)threads;
    int inner = threads > 1 ? 1 : tjcpu_threads_for(ckk * band * g.wo);
    tjcpu_blas_threads(0);
    tj_status first = TJ_OK;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        char *acc = nt > 1 ? parts + part_bytes * (size_t)t : dwd;
        char *col = scratch + col_bytes * (size_t)t;
        for (int64_t ni = t; ni < g.n; ni += nt) {
            for (int64_t gi = 0; gi < G; gi++) {
                const char *xp = xv.p + (size_t)(ni * xv.sn + gi * cg * xv.sc) * es;
                tjcpu_mat am = {gv.p + (size_t)(ni * gv.sn + gi * cog * gv.sc) * es, gv.sc, gstep};
                char *dwg = acc + (size_t)(gi * cog * ckk) * es;
                tj_status s = TJ_OK;
                if (direct) /* x[n, g]^T as [P, cg] */
                    s = tjcpu_gemm(dt, cog, ckk, P, 1.0, am, (tjcpu_mat){xp, xstep, xv.sc}, 1.0,
                                   dwg, ckk);
                for (int64_t oh0 = 0; !direct && oh0 < g.ho && !s; oh0 += band) {
                    int64_t oh1 = oh0 + band < g.ho ? oh0 + band : g.ho, pc = (oh1 - oh0) * g.wo;
                    im2col(xp, &xv, &g, cg, oh0, oh1, col, es, inner);
                    /* the band of dy [cog, pc] by the band of col read transposed [pc, ckk] */
                    tjcpu_mat aband = {(const char *)am.p + (size_t)(oh0 * g.wo * gstep) * es,
                                       am.rs, am.cs};
                    s = tjcpu_gemm(dt, cog, ckk, pc, 1.0, aband, (tjcpu_mat){col, 1, pc}, 1.0, dwg,
                                   ckk);
                }
                if (s) {
#pragma omp critical(tjcpu_conv_error)
                    if (!first) first = s;
                }
            }
        }
    }
    if (threads > 1) {
        tjcpu_blas_threads(0);
        if (dt == TJ_F32) accumulate_f32((float *)dwd, (const float *)parts, threads, wlen);
        else if (dt == TJ_F64) accumulate_f64((double *)dwd, (const double *)parts, threads, wlen);
        else accumulate_i64((uint64_t *)dwd, (const uint64_t *)parts, threads, wlen);
    }
    tjc_free(scratch);
    tj_release(gown);
    return report(c->op->name, first, threads);
}
