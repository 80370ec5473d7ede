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

static inline void sq_step(nrm_S *s, double v, const tjcpu_rparams *p) {
    UNUSED(p);
    s->b += v * v;
}

static inline void abs_step(nrm_S *s, double v, const tjcpu_rparams *p) {
    UNUSED(p);
    s->b += fabs(v);
}

static inline void cnt_step(nrm_S *s, double v, const tjcpu_rparams *p) {
    UNUSED(p);
    s->b += v != 0; /* NaN counts, as in PyTorch */
}

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

#define NORM_KIND(kind, sfx, T, RESULT)                                                     \
    typedef nrm_S kind##_S_##sfx;                                                           \
    static inline void kind##_upd_##sfx(nrm_S *s, T x, int64_t i, const tjcpu_rparams *p) { \
        UNUSED(i);                                                                          \
        kind##_step(s, (double)x, p);                                                       \
    }                                                                                       \
    GEN_RUN(kind, sfx, nrm_S, T)                                                            \
    GEN_COLS(kind, sfx, nrm_S, T)                                                           \
    static void kind##_final_##sfx(const void *s_, char *const *out,                        \
                                   const tjcpu_rparams *p) {                                \
        const nrm_S *s = s_;                                                                \
        UNUSED(p);                                                                          \
        *(T *)out[0] = (T)(RESULT);                                                         \
    }

#define NORM_KINDS(sfx, T)                                                                  \
    NORM_KIND(abs, sfx, T, s->b)                                                            \
    NORM_KIND(cnt, sfx, T, s->b)                                                            \
    NORM_KIND(max, sfx, T, s->a)                                                            \
    NORM_KIND(min, sfx, T, s->a)                                                            \
    NORM_KIND(pos, sfx, T, p->ord == 2 ? s->a * sqrt(s->b) : s->a * pow(s->b, 1 / p->ord))  \
    NORM_KIND(neg, sfx, T, s->a * pow(s->b, 1 / p->ord))
NORM_KIND(sq, f32, float, sqrt(s->b)) /* ord 2 of f64 takes the scaled path */
NORM_KINDS(f32, float)
NORM_KINDS(f64, double)

static const tjcpu_reducer l2_r[TJ_NUM_DTYPES] = {
    [TJ_F32] = {sizeof(nrm_S), zero_init, sq_run_f32, sq_cols_f32, sum_comb, sq_final_f32},
    [TJ_F64] = {sizeof(nrm_S), zero_init, pos_run_f64, pos_cols_f64, pos_comb, pos_final_f64}};
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
