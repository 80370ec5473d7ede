/* pool_impl.h — the typed loops of pool.c, included once per element type with
 * T (the type) and SFX (its name suffix) defined. Each function handles the
 * planes [p0, p1) of the N * C planes; planes are independent, so pool.c splits
 * them across threads. x is read through its strides (xs: n, c, h, w);
 * outputs and gradients of the input are contiguous. */
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SFX)

/* Plane p = n * C + c of a strided 4-D operand, computed once per plane so the
 * window loops carry no 64-bit division; AT reads element (y, x) of it. */
#define PLANE(E, base, s, p) ((const E *)(base) + ((p) / g->c) * (s)[0] + ((p) % g->c) * (s)[1])
#define AT(plane, s, y, xx) ((plane)[(y) * (s)[2] + (xx) * (s)[3]])

/* The 2x2 windows of stride 2 that lie inside the plane (every one but a
 * ceil-mode edge), over a plane whose rows are contiguous: the four elements
 * in the general loop's order with its update rule, so values and indices
 * are the same, without its per-window bounds; the value-only loop
 * vectorises. Outputs [0, oh_in) x [0, ow_in). */
static void FN(max_pool_quads)(const tjc_pool_geom *g, const T *xp, int64_t row, T *o,
                               int64_t *io, int64_t oh_in, int64_t ow_in) {
    for (int64_t oh = 0; oh < oh_in; oh++) {
        const T *r0 = xp + 2 * oh * row, *r1 = r0 + row;
        T *orow = o + oh * g->ow;
        int64_t *irow = io ? io + oh * g->ow : NULL;
        for (int64_t ow = 0; ow < ow_in; ow++) {
            T a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1], best = a;
            int64_t at = 0;
            if (b > best || b != b) best = b, at = 1;
            if (c > best || c != c) best = c, at = g->w;
            if (d > best || d != d) best = d, at = g->w + 1;
            orow[ow] = best;
            if (irow) irow[ow] = 2 * oh * g->w + 2 * ow + at;
        }
    }
}

static void FN(max_pool)(const tjc_pool_geom *g, const char *x, const int64_t *xs, T *out,
                         int64_t *ind, int64_t p0, int64_t p1) {
    bool quads = g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->dh == 1 &&
                 g->dw == 1 && g->ph == 0 && g->pw == 0 && xs[3] == 1;
    int64_t oh_in = quads ? (g->h / 2 < g->oh ? g->h / 2 : g->oh) : 0;
    int64_t ow_in = quads ? (g->w / 2 < g->ow ? g->w / 2 : g->ow) : 0;
    for (int64_t p = p0; p < p1; p++) {
        const T *xp = PLANE(T, x, xs, p);
        T *o = out + p * g->oh * g->ow;
        int64_t *io = ind ? ind + p * g->oh * g->ow : NULL;
        if (quads) FN(max_pool_quads)(g, xp, xs[2], o, io, oh_in, ow_in);
        for (int64_t oh = 0; oh < g->oh; oh++) {
            int64_t hs = oh * g->sh - g->ph, he = hs + (g->kh - 1) * g->dh + 1;
            if (he > g->h) he = g->h;
            while (hs < 0) hs += g->dh;
            for (int64_t ow = oh < oh_in ? ow_in : 0; ow < g->ow; ow++) {
                int64_t ws = ow * g->sw - g->pw, we = ws + (g->kw - 1) * g->dw + 1;
                if (we > g->w) we = g->w;
                while (ws < 0) ws += g->dw;
                T best = -(T)INFINITY;
                int64_t at = hs * g->w + ws;
                for (int64_t y = hs; y < he; y += g->dh)
                    for (int64_t xx = ws; xx < we; xx += g->dw) {
                        T v = AT(xp, xs, y, xx);
                        /* NaN wins, as in PyTorch */
                        if (v > best || v != v) {
                            best = v;
                            at = y * g->w + xx;
                        }
                    }
                o[oh * g->ow + ow] = best;
                if (io) io[oh * g->ow + ow] = at;
            }
        }
    }
}

/* Returns false when an index lies outside its plane. */
static bool FN(max_pool_backward)(const tjc_pool_geom *g, const char *go, const int64_t *gs,
                                  const char *ind, const int64_t *is, T *gi, int64_t p0,
                                  int64_t p1) {
    int64_t hw = g->h * g->w;
    for (int64_t p = p0; p < p1; p++) {
        const T *gop = PLANE(T, go, gs, p);
        const int64_t *ip = PLANE(int64_t, ind, is, p);
        T *plane = gi + p * hw;
        for (int64_t y = 0; y < g->oh; y++)
            for (int64_t xx = 0; xx < g->ow; xx++) {
                int64_t k = ip[y * is[2] + xx * is[3]];
                if (k < 0 || k >= hw) return false;
                plane[k] += AT(gop, gs, y, xx);
            }
    }
    return true;
}

/* out[p, oh, ow] = x[p, indices[p, oh, ow]]: the adjoint of max_pool_backward.
 * Returns false when an index lies outside its plane. */
static bool FN(max_pool_gather)(const tjc_pool_geom *g, const char *x, const int64_t *xs,
                                const char *ind, const int64_t *is, T *out, int64_t p0,
                                int64_t p1) {
    int64_t hw = g->h * g->w;
    for (int64_t p = p0; p < p1; p++) {
        const T *xp = PLANE(T, x, xs, p);
        const int64_t *ip = PLANE(int64_t, ind, is, p);
        T *o = out + p * g->oh * g->ow;
        for (int64_t y = 0; y < g->oh; y++)
            for (int64_t xx = 0; xx < g->ow; xx++) {
                int64_t k = ip[y * is[2] + xx * is[3]];
                if (k < 0 || k >= hw) return false;
                o[y * g->ow + xx] = AT(xp, xs, k / g->w, k % g->w);
            }
    }
    return true;
}

/* The window of average-pooling cell (oh, ow) clipped to the input, and its
 * divisor, exactly as PyTorch's avg_pool2d computes them. */
static inline int64_t FN(avg_window)(const tjc_pool_geom *g, int64_t oh, int64_t ow, int64_t *hs,
                                     int64_t *he, int64_t *ws, int64_t *we) {
    *hs = oh * g->sh - g->ph, *ws = ow * g->sw - g->pw;
    *he = *hs + g->kh, *we = *ws + g->kw;
    if (*he > g->h + g->ph) *he = g->h + g->ph;
    if (*we > g->w + g->pw) *we = g->w + g->pw;
    int64_t padded = (*he - *hs) * (*we - *ws);
    if (*hs < 0) *hs = 0;
    if (*ws < 0) *ws = 0;
    if (*he > g->h) *he = g->h;
    if (*we > g->w) *we = g->w;
    return g->count_include_pad ? padded : (*he - *hs) * (*we - *ws);
}

static void FN(avg_pool)(const tjc_pool_geom *g, const char *x, const int64_t *xs, T *out,
                         int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; p++) {
        const T *xp = PLANE(T, x, xs, p);
        T *o = out + p * g->oh * g->ow;
        for (int64_t oh = 0; oh < g->oh; oh++)
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t hs, he, ws, we, div = FN(avg_window)(g, oh, ow, &hs, &he, &ws, &we);
                double sum = 0;
                for (int64_t y = hs; y < he; y++)
                    for (int64_t xx = ws; xx < we; xx++) sum += AT(xp, xs, y, xx);
                o[oh * g->ow + ow] = (hs >= he || ws >= we) ? (T)0 : (T)(sum / (double)div);
            }
    }
}

static void FN(avg_pool_backward)(const tjc_pool_geom *g, const char *go, const int64_t *gs,
                                  T *gi, int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; p++) {
        const T *gop = PLANE(T, go, gs, p);
        T *plane = gi + p * g->h * g->w;
        for (int64_t oh = 0; oh < g->oh; oh++)
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t hs, he, ws, we, div = FN(avg_window)(g, oh, ow, &hs, &he, &ws, &we);
                if (hs >= he || ws >= we) continue;
                T v = (T)(AT(gop, gs, oh, ow) / (double)div);
                for (int64_t y = hs; y < he; y++)
                    for (int64_t xx = ws; xx < we; xx++) plane[y * g->w + xx] += v;
            }
    }
}

static void FN(adaptive_avg)(const tjc_pool_geom *g, const char *x, const int64_t *xs, T *out,
                             int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; p++) {
        const T *xp = PLANE(T, x, xs, p);
        T *o = out + p * g->oh * g->ow;
        for (int64_t oh = 0; oh < g->oh; oh++) {
            int64_t hs = tjc_adaptive_start(oh, g->h, g->oh), he = tjc_adaptive_end(oh, g->h, g->oh);
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t ws = tjc_adaptive_start(ow, g->w, g->ow);
                int64_t we = tjc_adaptive_end(ow, g->w, g->ow);
                double sum = 0;
                for (int64_t y = hs; y < he; y++)
                    for (int64_t xx = ws; xx < we; xx++) sum += AT(xp, xs, y, xx);
                o[oh * g->ow + ow] = (T)(sum / (double)((he - hs) * (we - ws)));
            }
        }
    }
}

static void FN(adaptive_avg_backward)(const tjc_pool_geom *g, const char *go, const int64_t *gs,
                                      T *gi, int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; p++) {
        const T *gop = PLANE(T, go, gs, p);
        T *plane = gi + p * g->h * g->w;
        for (int64_t oh = 0; oh < g->oh; oh++) {
            int64_t hs = tjc_adaptive_start(oh, g->h, g->oh), he = tjc_adaptive_end(oh, g->h, g->oh);
            for (int64_t ow = 0; ow < g->ow; ow++) {
                int64_t ws = tjc_adaptive_start(ow, g->w, g->ow);
                int64_t we = tjc_adaptive_end(ow, g->w, g->ow);
                T v = (T)(AT(gop, gs, oh, ow) / (double)((he - hs) * (we - ws)));
                for (int64_t y = hs; y < he; y++)
                    for (int64_t xx = ws; xx < we; xx++) plane[y * g->w + xx] += v;
            }
        }
    }
}

#undef AT
#undef PLANE
#undef FN
#undef CAT
#undef CAT_
