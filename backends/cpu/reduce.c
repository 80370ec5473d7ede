/* reduce.c — CPU kernels of the reduction rows of ops.def: one reducer (see
 * reduce.h) per op and input dtype, run by the driver in reduce_plan.c.
 *
 * Numerics: f32 input accumulates in double; i64 and bool sum and multiply in
 * uint64 (exact, wrapping like PyTorch without signed-overflow UB); float
 * sums are pairwise within a run (on top of the driver's pairwise combining of
 * blocks); var/std take two passes over each run and join runs and blocks
 * with Chan's formula; logsumexp keeps a running max and a sum of exp(x - max)
 * rescaled when the max grows; the norms are in reduce_norm.c. Built once per
 * instruction set (isa.h).
 */
#include <math.h>
#include <string.h>

#include "isa.h"
#include "reduce.h"

/* ---- sum, mean, prod ---------------------------------------------------------------
 * A is the accumulator: double for floats, uint64_t for integers and bool. */
#define FOLD_DEFS(name, OP, ZERO, sfx, T, A)                                                \
    typedef A name##_S_##sfx;                                                               \
    static void name##_init_##sfx(void *s, int64_t first, const tjcpu_rparams *p) {         \
        UNUSED(first), UNUSED(p);                                                           \
        *(A *)s = ZERO;                                                                     \
    }                                                                                       \
    static inline void name##_upd_##sfx(A *s, T x, int64_t i, const tjcpu_rparams *p) {     \
        UNUSED(i), UNUSED(p);                                                               \
        *s = *s OP (A)x;                                                                    \
    }                                                                                       \
    GEN_COLS(name, sfx, A, T)                                                               \
    static void name##_comb_##sfx(void *a, const void *b, const tjcpu_rparams *p) {         \
        UNUSED(p);                                                                          \
        *(A *)a = *(A *)a OP *(const A *)b;                                                 \
    }                                                                                       \
    static void name##_final_##sfx(const void *s, char *const *out, const tjcpu_rparams *p) { \
        UNUSED(p);                                                                          \
        *(OUT_##sfx *)out[0] = (OUT_##sfx)*(const A *)s;                                    \
    }

/* the output type of sum and prod per input dtype */
#define OUT_f32 float
#define OUT_f64 double
#define OUT_i64 int64_t
#define OUT_b8 int64_t

/* Products and integer sums: eight lanes, vectorisable. */
#define LANES_RUN(name, OP, ZERO, sfx, T, A)                                                \
    static void name##_run_##sfx(void *s, const char *x, int64_t step, int64_t n,           \
                                 int64_t first, const tjcpu_rparams *p) {                   \
        UNUSED(first), UNUSED(p);                                                           \
        A l[8] = {ZERO, ZERO, ZERO, ZERO, ZERO, ZERO, ZERO, ZERO};                          \
        int64_t i = 0;                                                                      \
        if (step == (int64_t)sizeof(T)) {                                                   \
            const T *v = (const T *)x;                                                      \
            for (; i + 8 <= n; i += 8)                                                      \
                for (int k = 0; k < 8; k++) l[k] = l[k] OP (A)v[i + k];                     \
        }                                                                                   \
        for (; i < n; i++) l[i & 7] = l[i & 7] OP (A)AT(T, x, i, step);                     \
        A r = ((l[0] OP l[1]) OP (l[2] OP l[3])) OP ((l[4] OP l[5]) OP (l[6] OP l[7]));     \
        *(A *)s = *(A *)s OP r;                                                             \
    }

/* Float sums: pairwise, with leaves of up to 128 elements in eight lanes, so
 * the rounding error grows with log n rather than n. */
#define PAIRWISE_RUN(sfx, T)                                                                \
    static double pairwise_##sfx(const char *x, int64_t step, int64_t n) {                  \
        if (n > 128) {                                                                      \
            int64_t h = n / 16 * 8;                                                         \
            return pairwise_##sfx(x, step, h) + pairwise_##sfx(x + h * step, step, n - h);  \
        }                                                                                   \
        double l[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                             \
        int64_t i = 0;                                                                      \
        if (step == (int64_t)sizeof(T)) {                                                   \
            const T *v = (const T *)x;                                                      \
            for (; i + 8 <= n; i += 8)                                                      \
                for (int k = 0; k < 8; k++) l[k] += v[i + k];                               \
        }                                                                                   \
        for (; i < n; i++) l[i & 7] += AT(T, x, i, step);                                   \
        return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));           \
    }                                                                                       \
    static void sum_run_##sfx(void *s, const char *x, int64_t step, int64_t n,              \
                              int64_t first, const tjcpu_rparams *p) {                      \
        UNUSED(first), UNUSED(p);                                                           \
        *(double *)s += pairwise_##sfx(x, step, n);                                         \
    }

#define SUM_INT(sfx, T) \
    FOLD_DEFS(sum, +, 0, sfx, T, uint64_t) LANES_RUN(sum, +, 0, sfx, T, uint64_t)
#define SUM_FLOAT(sfx, T) FOLD_DEFS(sum, +, 0, sfx, T, double) PAIRWISE_RUN(sfx, T)
#define PROD(sfx, T, A) FOLD_DEFS(prod, *, 1, sfx, T, A) LANES_RUN(prod, *, 1, sfx, T, A)
SUM_FLOAT(f32, float)
SUM_FLOAT(f64, double)
SUM_INT(i64, int64_t)
SUM_INT(b8, bool)
PROD(f32, float, double)
PROD(f64, double, double)
PROD(i64, int64_t, uint64_t)
PROD(b8, bool, uint64_t)

#define MEAN_FINAL(sfx, T)                                                                  \
    static void mean_final_##sfx(const void *s, char *const *out, const tjcpu_rparams *p) {  \
        *(T *)out[0] = (T)(*(const double *)s / (double)p->n); /* 0/0: NaN, as PyTorch */   \
    }
MEAN_FINAL(f32, float)
MEAN_FINAL(f64, double)

/* ---- amax, amin, and the value-and-index forms --------------------------------------
 * `!(x <= best)` is true for a larger x and for a NaN x; a NaN best stays. */
#define BETTER_max(x, best) (!((x) <= (best)))
#define BETTER_min(x, best) (!((x) >= (best)))

#define EXT_DEFS(kind, sfx, T, START)                                                       \
    typedef T a##kind##_S_##sfx;                                                            \
    static void a##kind##_init_##sfx(void *s, int64_t first, const tjcpu_rparams *p) {      \
        UNUSED(first), UNUSED(p);                                                           \
        *(T *)s = START;                                                                    \
    }                                                                                       \
    static inline void a##kind##_upd_##sfx(T *s, T x, int64_t i, const tjcpu_rparams *p) {  \
        UNUSED(i), UNUSED(p);                                                               \
        if (BETTER_##kind(x, *s) && !ISNAN_##sfx(*s)) *s = x;                               \
    }                                                                                       \
    GEN_RUN(a##kind, sfx, T, T)                                                             \
    GEN_COLS(a##kind, sfx, T, T)                                                            \
    static void a##kind##_comb_##sfx(void *a, const void *b, const tjcpu_rparams *p) {      \
        a##kind##_upd_##sfx(a, *(const T *)b, 0, p);                                        \
    }                                                                                       \
    static void a##kind##_final_##sfx(const void *s, char *const *out,                      \
                                      const tjcpu_rparams *p) {                             \
        UNUSED(p);                                                                          \
        *(T *)out[0] = *(const T *)s;                                                       \
    }                                                                                       \
    typedef struct arg##kind##_S_##sfx {                                                    \
        T v;                                                                                \
        int64_t i;                                                                          \
    } arg##kind##_S_##sfx;                                                                  \
    /* no value is worse than START: a state left alone holds the block's first index, */ \
    /* which is where its ties start */                                                   \
    static void arg##kind##_init_##sfx(void *s_, int64_t first, const tjcpu_rparams *p) {   \
        UNUSED(p);                                                                          \
        arg##kind##_S_##sfx *s = s_;                                                        \
        s->v = START;                                                                       \
        s->i = first;                                                                       \
    }                                                                                       \
    static inline void arg##kind##_upd_##sfx(arg##kind##_S_##sfx *s, T x, int64_t i,        \
                                             const tjcpu_rparams *p) {                      \
        UNUSED(p);                                                                          \
        if (BETTER_##kind(x, s->v) && !ISNAN_##sfx(s->v)) {                                 \
            s->v = x;                                                                       \
            s->i = i;                                                                       \
        }                                                                                   \
    }                                                                                       \
    GEN_RUN(arg##kind, sfx, arg##kind##_S_##sfx, T)                                         \
    GEN_COLS(arg##kind, sfx, arg##kind##_S_##sfx, T)                                        \
    /* b saw later indices: it wins only when strictly better, so ties keep a */           \
    static void arg##kind##_comb_##sfx(void *a_, const void *b_, const tjcpu_rparams *p) {  \
        UNUSED(p);                                                                          \
        arg##kind##_S_##sfx *a = a_;                                                        \
        const arg##kind##_S_##sfx *b = b_;                                                  \
        if (BETTER_##kind(b->v, a->v) && !ISNAN_##sfx(a->v)) *a = *b;                       \
    }                                                                                       \
    static void arg##kind##_final_##sfx(const void *s_, char *const *out,                   \
                                        const tjcpu_rparams *p) {                           \
        UNUSED(p);                                                                          \
        *(int64_t *)out[0] = ((const arg##kind##_S_##sfx *)s_)->i;                          \
    }                                                                                       \
    static void kind##_dim_final_##sfx(const void *s_, char *const *out,                    \
                                       const tjcpu_rparams *p) {                            \
        UNUSED(p);                                                                          \
        const arg##kind##_S_##sfx *s = s_;                                                  \
        *(T *)out[0] = s->v;                                                                \
        *(int64_t *)out[1] = s->i;                                                          \
    }

EXT_DEFS(max, f32, float, -INFINITY)
EXT_DEFS(max, f64, double, -INFINITY)
EXT_DEFS(max, i64, int64_t, INT64_MIN)
EXT_DEFS(max, b8, bool, false)
EXT_DEFS(min, f32, float, INFINITY)
EXT_DEFS(min, f64, double, INFINITY)
EXT_DEFS(min, i64, int64_t, INT64_MAX)
EXT_DEFS(min, b8, bool, true)

/* ---- var, std ------------------------------------------------------------------------ */
typedef struct moments {
    double n, mean, m2; /* m2: sum of squared deviations from mean */
} moments;

/* Chan et al.'s pairwise update: a := a joined with (n, mean, m2). */
static inline void chan(moments *a, double n, double mean, double m2) {
    if (n == 0) return;
    if (a->n == 0) {
        *a = (moments){n, mean, m2};
        return;
    }
    double total = a->n + n, d = mean - a->mean;
    a->mean += d * (n / total);
    a->m2 += m2 + d * d * (a->n * n / total);
    a->n = total;
}

static void var_init(void *s, int64_t first, const tjcpu_rparams *p) {
    UNUSED(first), UNUSED(p);
    *(moments *)s = (moments){0, 0, 0};
}

static void var_comb(void *a, const void *b_, const tjcpu_rparams *p) {
    UNUSED(p);
    const moments *b = b_;
    chan(a, b->n, b->mean, b->m2);
}

#define VAR_DEFS(sfx, T)                                                                    \
    typedef moments var_S_##sfx;                                                            \
    /* Welford's update, for the column layout (one element per state at a time) */        \
    static inline void var_upd_##sfx(moments *s, T x, int64_t i, const tjcpu_rparams *p) {  \
        UNUSED(i), UNUSED(p);                                                               \
        double v = x, d = v - s->mean;                                                      \
        s->n += 1;                                                                          \
        s->mean += d / s->n;                                                                \
        s->m2 += d * (v - s->mean);                                                         \
    }                                                                                       \
    GEN_COLS(var, sfx, moments, T)                                                          \
    /* a run: the mean, then the corrected two-pass sum of squared deviations, */            \
    /* with four lanes so that both passes vectorise */                                     \
    static void var_run_##sfx(void *s, const char *x, int64_t step, int64_t n,              \
                              int64_t first, const tjcpu_rparams *p) {                      \
        UNUSED(first), UNUSED(p);                                                           \
        double sum[4] = {0, 0, 0, 0}, sq[4] = {0, 0, 0, 0}, dev[4] = {0, 0, 0, 0};          \
        const T *v = (const T *)x;                                                          \
        bool contig = step == (int64_t)sizeof(T);                                           \
        int64_t i = 0, n4 = contig ? n / 4 * 4 : 0;                                         \
        for (; i < n4; i += 4)                                                              \
            for (int k = 0; k < 4; k++) sum[k] += v[i + k];                                 \
        for (; i < n; i++) sum[i & 3] += AT(T, x, i, step);                                 \
        double mean = ((sum[0] + sum[1]) + (sum[2] + sum[3])) / (double)n;                  \
        for (i = 0; i < n4; i += 4)                                                         \
            for (int k = 0; k < 4; k++) {                                                   \
                double d = v[i + k] - mean;                                                 \
                sq[k] += d * d;                                                             \
                dev[k] += d;                                                                \
            }                                                                               \
        for (; i < n; i++) {                                                                \
            double d = AT(T, x, i, step) - mean;                                            \
            sq[i & 3] += d * d;                                                             \
            dev[i & 3] += d;                                                                \
        }                                                                                   \
        double c = (dev[0] + dev[1]) + (dev[2] + dev[3]);                                   \
        double m2 = ((sq[0] + sq[1]) + (sq[2] + sq[3])) - c * c / (double)n;                \
        chan(s, (double)n, mean, m2 < 0 ? 0 : m2);                                          \
    }                                                                                       \
    static void var_final_##sfx(const void *s_, char *const *out, const tjcpu_rparams *p) { \
        const moments *s = s_;                                                              \
        double div = s->n - (double)p->correction;                                          \
        *(T *)out[0] = (T)(s->m2 / (div > 0 ? div : 0));                                    \
    }                                                                                       \
    static void std_final_##sfx(const void *s_, char *const *out, const tjcpu_rparams *p) { \
        const moments *s = s_;                                                              \
        double div = s->n - (double)p->correction;                                          \
        *(T *)out[0] = (T)sqrt(s->m2 / (div > 0 ? div : 0));                                \
    }
VAR_DEFS(f32, float)
VAR_DEFS(f64, double)

/* ---- logsumexp ----------------------------------------------------------------------
 * (m, s) stands for m + log(s): s sums exp(x - m) over the elements seen, m
 * is their max. Equal maxima add directly, which keeps infinities exact. */
typedef struct lse_S {
    double m, s;
} lse_S;

static void lse_init(void *s, int64_t first, const tjcpu_rparams *p) {
    UNUSED(first), UNUSED(p);
    *(lse_S *)s = (lse_S){-INFINITY, 0};
}

static inline void lse_join(lse_S *a, double m, double s) {
    if (m > a->m) {
        a->s = a->s * exp(a->m - m) + s;
        a->m = m;
    } else if (m == a->m) {
        a->s += s;
    } else {
        a->s += s * exp(m - a->m); /* a NaN m lands here and makes s NaN */
    }
}

static void lse_comb(void *a, const void *b_, const tjcpu_rparams *p) {
    UNUSED(p);
    const lse_S *b = b_;
    lse_join(a, b->m, b->s);
}

#define LSE_DEFS(sfx, T)                                                                    \
    typedef lse_S lse_S_##sfx;                                                              \
    static inline void lse_upd_##sfx(lse_S *s, T x, int64_t i, const tjcpu_rparams *p) {    \
        UNUSED(i), UNUSED(p);                                                               \
        lse_join(s, (double)x, 1);                                                          \
    }                                                                                       \
    GEN_RUN(lse, sfx, lse_S, T)                                                             \
    GEN_COLS(lse, sfx, lse_S, T)                                                            \
    static void lse_final_##sfx(const void *s_, char *const *out, const tjcpu_rparams *p) { \
        UNUSED(p);                                                                          \
        const lse_S *s = s_;                                                                \
        *(T *)out[0] = (T)(s->m + log(s->s));                                               \
    }
LSE_DEFS(f32, float)
LSE_DEFS(f64, double)

/* ---- the reducer tables and the kernels --------------------------------------------- */

static const tjcpu_reducer sum_r[TJ_NUM_DTYPES] = RED_ALL(sum, sum_final);
static const tjcpu_reducer prod_r[TJ_NUM_DTYPES] = RED_ALL(prod, prod_final);
static const tjcpu_reducer mean_r[TJ_NUM_DTYPES] = {
    [TJ_F32] = RED(sum, f32, mean_final_f32), [TJ_F64] = RED(sum, f64, mean_final_f64)};
static const tjcpu_reducer amax_r[TJ_NUM_DTYPES] = RED_ALL(amax, amax_final);
static const tjcpu_reducer amin_r[TJ_NUM_DTYPES] = RED_ALL(amin, amin_final);
static const tjcpu_reducer argmax_r[TJ_NUM_DTYPES] = RED_ALL(argmax, argmax_final);
static const tjcpu_reducer argmin_r[TJ_NUM_DTYPES] = RED_ALL(argmin, argmin_final);
static const tjcpu_reducer max_dim_r[TJ_NUM_DTYPES] = RED_ALL(argmax, max_dim_final);
static const tjcpu_reducer min_dim_r[TJ_NUM_DTYPES] = RED_ALL(argmin, min_dim_final);
static const tjcpu_reducer var_r[TJ_NUM_DTYPES] = RED_FLOAT(var, var_init, var_comb, var_final);
static const tjcpu_reducer std_r[TJ_NUM_DTYPES] = RED_FLOAT(var, var_init, var_comb, std_final);
static const tjcpu_reducer lse_r[TJ_NUM_DTYPES] = RED_FLOAT(lse, lse_init, lse_comb, lse_final);

static tj_status reduce_with(const tjc_call *c, const tjcpu_reducer *table, bool logical,
                             tjcpu_rparams *prm) {
    tjc_reduce_info info;
    tj_status st = tjc_reduce_info_of(c, &info);
    if (st) return st;
    const tjcpu_reducer *r = &table[c->in[0]->dtype];
    if (!r->init)
        return tjc_error(TJ_ERR_INTERNAL, "%s: no CPU kernel for input dtype %s", c->op->name,
                         tj_dtype_name(c->in[0]->dtype));
    prm->n = info.n_reduce;
    return tjcpu_reduce(c, &info, r, prm, logical);
}

#define KERNEL(name, table, logical)                                                        \
    tj_status TJCPU_ISA_NAME(tjcpu_##name)(const tjc_call *c) {                                             \
        tjcpu_rparams prm = {0};                                                            \
        return reduce_with(c, table, logical, &prm);                                        \
    }
KERNEL(sum, sum_r, false)
KERNEL(mean, mean_r, false)
KERNEL(prod, prod_r, false)
KERNEL(amax, amax_r, false)
KERNEL(amin, amin_r, false)
KERNEL(argmax, argmax_r, true)
KERNEL(argmin, argmin_r, true)
KERNEL(max_dim, max_dim_r, true)
KERNEL(min_dim, min_dim_r, true)

tj_status TJCPU_ISA_NAME(tjcpu_logsumexp)(const tjc_call *c) {
    if (c->in[0]->dtype != c->out[0]->dtype) /* integers and bools, in f32 */
        return tjc_kernel_with_input_as(c, 0, c->out[0]->dtype, TJCPU_ISA_NAME(tjcpu_logsumexp));
    tjcpu_rparams prm = {0};
    return reduce_with(c, lse_r, false, &prm);
}

tj_status TJCPU_ISA_NAME(tjcpu_var)(const tjc_call *c) {
    tjcpu_rparams prm = {.correction = tjc_reduce_attr(c, "correction")->i};
    return reduce_with(c, var_r, false, &prm);
}

tj_status TJCPU_ISA_NAME(tjcpu_std)(const tjc_call *c) {
    tjcpu_rparams prm = {.correction = tjc_reduce_attr(c, "correction")->i};
    return reduce_with(c, std_r, false, &prm);
}

tj_status TJCPU_ISA_NAME(tjcpu_linalg_vector_norm)(const tjc_call *c) {
    tjcpu_rparams prm = {.ord = tjc_reduce_attr(c, "ord")->f};
    return reduce_with(c, tjcpu_norm_reducers(prm.ord), false, &prm);
}
