/* reduce_norm.c — the reducers of linalg_vector_norm, one family per kind
 * of ord (see reduce.h for the reducer interface).
 *
 * ord 2 on f32 sums squares in double, which can neither overflow nor
 * underflow for f32 data. Other finite ords keep (scale, sum): scale is the
 * largest |x| seen (the smallest, for ord < 0) and sum adds (|x|/scale)^ord,
 * rescaled when the scale changes, as LAPACK's dnrm2 does; so f64 norms of
 * huge or tiny values come out right. NaN anywhere gives NaN. */
#include <math.h>

#include "reduce.h"

typedef struct nrm_S {
    double a, b; /* scale or extreme |x|; sum */
} nrm_S;

static inline double powp(double r, double p) { return p == 2 ? r * r : pow(r, p); }

static void zero_init(void *s, int64_t first, const tjcpu_rparams *p) {
    UNUSED(first), UNUSED(p);
    *(nrm_S *)s = (nrm_S){0, 0};
}

static void inf_init(void *s, int64_t first, const tjcpu_rparams *p) {
    UNUSED(first), UNUSED(p);
    *(nrm_S *)s = (nrm_S){INFINITY, 0};
}

/* ---- element steps ------------------------------------------------------------------ */

/* the sums: ord 2 (f32), 1 and 0 */
static inline double sq_term(double v) { return v * v; }
static inline double abs_term(double v) { return fabs(v); }
static inline double cnt_term(double v) { return v != 0; } /* NaN counts, as in PyTorch */

#define SUM_STEP(kind)                                                                      \
    static inline void kind##_step(nrm_S *s, double v, const tjcpu_rparams *p) {            \
        UNUSED(p);                                                                          \
        s->b += kind##_term(v);                                                             \
    }
SUM_STEP(sq)
SUM_STEP(abs)
SUM_STEP(cnt)

/* `!(ax <= a)` also takes a NaN ax; a NaN a stays */
static inline void max_step(nrm_S *s, double v, const tjcpu_rparams *p) {
    UNUSED(p);
    double ax = fabs(v);
    if (!(ax <= s->a) && !isnan(s->a)) s->a = ax;
}

static inline void min_step(nrm_S *s, double v, const tjcpu_rparams *p) {
    UNUSED(p);
    double ax = fabs(v);
    if (!(ax >= s->a) && !isnan(s->a)) s->a = ax;
}

/* Equal scales add directly, which keeps zeros and infinities exact. */
static inline void pos_join(nrm_S *s, double a, double b, double ord) {
    if (isnan(s->b) || isnan(b)) s->b = NAN;
    else if (a > s->a) {
        s->b = s->b * powp(s->a / a, ord) + b;
        s->a = a;
    } else if (a == s->a) {
        s->b += b;
    } else {
        s->b += b * powp(a / s->a, ord);
    }
}

static inline void neg_join(nrm_S *s, double a, double b, double ord) {
    if (isnan(s->b) || isnan(b)) s->b = NAN;
    else if (a < s->a) {
        s->b = s->b * pow(s->a / a, ord) + b;
        s->a = a;
    } else if (a == s->a) {
        s->b += b;
    } else {
        s->b += b * pow(a / s->a, ord);
    }
}

static inline void pos_step(nrm_S *s, double v, const tjcpu_rparams *p) {
    pos_join(s, fabs(v), isnan(v) ? v : 1, p->ord);
}

static inline void neg_step(nrm_S *s, double v, const tjcpu_rparams *p) {
    neg_join(s, fabs(v), isnan(v) ? v : 1, p->ord);
}

/* ---- combines ----------------------------------------------------------------------- */

static void sum_comb(void *a, const void *b, const tjcpu_rparams *p) {
    UNUSED(p);
    ((nrm_S *)a)->b += ((const nrm_S *)b)->b;
}

static void max_comb(void *a, const void *b, const tjcpu_rparams *p) {
    max_step(a, ((const nrm_S *)b)->a, p);
}

static void min_comb(void *a, const void *b, const tjcpu_rparams *p) {
    min_step(a, ((const nrm_S *)b)->a, p);
}

static void pos_comb(void *a, const void *b_, const tjcpu_rparams *p) {
    const nrm_S *b = b_;
    pos_join(a, b->a, b->b, p->ord);
}

static void neg_comb(void *a, const void *b_, const tjcpu_rparams *p) {
    const nrm_S *b = b_;
    neg_join(a, b->a, b->b, p->ord);
}

/* ---- per dtype: run, cols and final ------------------------------------------------- */

/* Runs of the sums: eight lanes, vectorisable. */
#define LANE_RUN(kind, sfx, S, T)                                                           \
    static void kind##_run_##sfx(void *s, const char *x, int64_t step, int64_t n,           \
                                 int64_t first, const tjcpu_rparams *p) {                   \
        UNUSED(first), UNUSED(p);                                                           \
        double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                             \
        int64_t i = 0;                                                                      \
        if (step == (int64_t)sizeof(T)) {                                                   \
            const T *v = (const T *)x;                                                      \
            for (; i + 8 <= n; i += 8)                                                      \
                for (int k = 0; k < 8; k++) l[k] += kind##_term((double)v[i + k]);          \
        }                                                                                   \
        for (; i < n; i++) l[i & 7] += kind##_term((double)AT(T, x, i, step));              \
        ((S *)s)->b += ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));   \
    }

#define NORM_KIND(kind, sfx, T, RESULT, RUN)                                                \
    typedef nrm_S kind##_S_##sfx;                                                           \
    static inline void kind##_upd_##sfx(nrm_S *s, T x, int64_t i, const tjcpu_rparams *p) { \
        UNUSED(i);                                                                          \
        kind##_step(s, (double)x, p);                                                       \
    }                                                                                       \
    RUN(kind, sfx, nrm_S, T)                                                                \
    GEN_COLS(kind, sfx, nrm_S, T)                                                           \
    static void kind##_final_##sfx(const void *s_, char *const *out,                        \
                                   const tjcpu_rparams *p) {                                \
        const nrm_S *s = s_;                                                                \
        UNUSED(p);                                                                          \
        *(T *)out[0] = (T)(RESULT);                                                         \
    }

#define NORM_KINDS(sfx, T)                                                                  \
    NORM_KIND(abs, sfx, T, s->b, LANE_RUN)                                                  \
    NORM_KIND(cnt, sfx, T, s->b, LANE_RUN)                                                  \
    NORM_KIND(max, sfx, T, s->a, GEN_RUN)                                                   \
    NORM_KIND(min, sfx, T, s->a, GEN_RUN)                                                   \
    NORM_KIND(pos, sfx, T, p->ord == 2 ? s->a * sqrt(s->b) : s->a * pow(s->b, 1 / p->ord),  \
              GEN_RUN)                                                                      \
    NORM_KIND(neg, sfx, T, s->a * pow(s->b, 1 / p->ord), GEN_RUN)
NORM_KIND(sq, f32, float, sqrt(s->b), LANE_RUN) /* ord 2 of f64 takes the scaled path */
NORM_KINDS(f32, float)
NORM_KINDS(f64, double)

/* ord 2 of an f64 run: its max |x| first, then the squares of x scaled by a
 * power of two near 1/max (exact, and no division per element); joined to
 * the state as (max, sum (x/max)^2). Zeros, infinities and NaNs take the
 * element path, which handles them. */
#define MAX_SKIP_NAN(a, x) ((x) > (a) ? (x) : (a)) /* vectorises; NaNs show up in the sum */
static void l2_run_f64(void *s, const char *x, int64_t step, int64_t n, int64_t first,
                       const tjcpu_rparams *p) {
    double mx[4] = {0, 0, 0, 0}, sq[4] = {0, 0, 0, 0};
    const double *v = (const double *)x;
    bool contig = step == (int64_t)sizeof(double);
    int64_t i = 0, n4 = contig ? n / 4 * 4 : 0;
    for (; i < n4; i += 4)
        for (int k = 0; k < 4; k++) mx[k] = MAX_SKIP_NAN(mx[k], fabs(v[i + k]));
    for (; i < n; i++) mx[i & 3] = MAX_SKIP_NAN(mx[i & 3], fabs(AT(double, x, i, step)));
    double a = MAX_SKIP_NAN(MAX_SKIP_NAN(mx[0], mx[1]), MAX_SKIP_NAN(mx[2], mx[3]));
    if (a == 0 || isinf(a)) {
        pos_run_f64(s, x, step, n, first, p);
        return;
    }
    int e;
    double m = frexp(a, &e), scale = ldexp(1, -e);
    for (i = 0; i < n4; i += 4)
        for (int k = 0; k < 4; k++) sq[k] += (v[i + k] * scale) * (v[i + k] * scale);
    for (; i < n; i++) {
        double y = AT(double, x, i, step) * scale;
        sq[i & 3] += y * y;
    }
    double b = ((sq[0] + sq[1]) + (sq[2] + sq[3])) / (m * m);
    if (isnan(b)) pos_run_f64(s, x, step, n, first, p); /* a NaN that fmax skipped */
    else pos_join(s, a, b, 2);
}

static const tjcpu_reducer l2_r[TJ_NUM_DTYPES] = {
    [TJ_F32] = {sizeof(nrm_S), zero_init, sq_run_f32, sq_cols_f32, sum_comb, sq_final_f32},
    [TJ_F64] = {sizeof(nrm_S), zero_init, l2_run_f64, pos_cols_f64, pos_comb, pos_final_f64}};
static const tjcpu_reducer l1_r[TJ_NUM_DTYPES] = RED_FLOAT(abs, zero_init, sum_comb, abs_final);
static const tjcpu_reducer l0_r[TJ_NUM_DTYPES] = RED_FLOAT(cnt, zero_init, sum_comb, cnt_final);
static const tjcpu_reducer linf_r[TJ_NUM_DTYPES] = RED_FLOAT(max, zero_init, max_comb, max_final);
static const tjcpu_reducer lninf_r[TJ_NUM_DTYPES] = RED_FLOAT(min, inf_init, min_comb, min_final);
static const tjcpu_reducer lp_r[TJ_NUM_DTYPES] = RED_FLOAT(pos, zero_init, pos_comb, pos_final);
static const tjcpu_reducer lnp_r[TJ_NUM_DTYPES] = RED_FLOAT(neg, inf_init, neg_comb, neg_final);

const tjcpu_reducer *tjcpu_norm_reducers(double ord) {
    if (ord == 2) return l2_r;
    if (ord == 1) return l1_r;
    if (ord == 0) return l0_r;
    if (ord == INFINITY) return linf_r;
    if (ord == -INFINITY) return lninf_r;
    return ord > 0 ? lp_r : lnp_r;
}
