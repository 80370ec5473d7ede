/* reduce.h — the CPU reduction machinery shared by backends/cpu/reduce.c
 * (the per-op reducers and kernels) and backends/cpu/reduce_plan.c (the
 * driver that lays out, blocks, threads and combines any reduction).
 *
 * A reducer folds input elements into a state (a few doubles, or an integer
 * or value-and-index pair) and turns the state into output values:
 *
 *   init(s, first)            an empty state; `first` is the index of the
 *                             first element it will see (arg reductions)
 *   run(s, x, step, n, first) folds n elements at x, x+step, ... (bytes) whose
 *                             indices are first, first+1, ...
 *   cols(s, x, cstep, n, rstep, rows, first)
 *                             folds `rows` rows into n states s[0..n): row r
 *                             holds the elements x + r*rstep + j*cstep
 *                             (j < n), all with index first + r
 *   combine(a, b)             a := a followed by b (b saw later indices)
 *   final(s, out)             writes the result(s) at out[0] (and out[1])
 *
 * Indices are linear positions among the reduced dims in row-major order
 * (when the driver is asked for logical order, see tjcpu_reduce).
 */
#ifndef TJIT_CPU_REDUCE_H
#define TJIT_CPU_REDUCE_H

#include <math.h>

#include "core/reduce.h"
#include "cpu.h"

typedef struct tjcpu_rparams {
    int64_t n;          /* elements per output */
    int64_t correction; /* var, std */
    double ord;         /* linalg_vector_norm */
} tjcpu_rparams;

typedef struct tjcpu_reducer {
    size_t size; /* of one state, at most TJCPU_STATE_MAX */
    void (*init)(void *s, int64_t first, const tjcpu_rparams *p);
    void (*run)(void *s, const char *x, int64_t step, int64_t n, int64_t first,
                const tjcpu_rparams *p);
    void (*cols)(void *s, const char *x, int64_t cstep, int64_t n, int64_t rstep, int64_t rows,
                 int64_t first, const tjcpu_rparams *p);
    void (*combine)(void *a, const void *b, const tjcpu_rparams *p);
    void (*final)(const void *s, char *const *out, const tjcpu_rparams *p);
} tjcpu_reducer;

#define TJCPU_STATE_MAX 32

/* The reducers of linalg_vector_norm for ord (backends/cpu/reduce_norm.c),
 * indexed by dtype (f32 and f64). */
const tjcpu_reducer *tjcpu_norm_reducers(double ord);

/* ---- helpers for the files that define reducers ---------------------------------- */

#define UNUSED(x) (void)(x)
#define AT(T, x, i, step) (*(const T *)((x) + (i) * (step)))

#define ISNAN_f32(x) isnan(x)
#define ISNAN_f64(x) isnan(x)
#define ISNAN_i64(x) 0
#define ISNAN_b8(x) 0

/* run and cols from a reducer's element update name##_upd_##sfx. */
#define GEN_RUN(name, sfx, S, T)                                                            \
    static void name##_run_##sfx(void *s_, const char *x, int64_t step, int64_t n,          \
                                 int64_t first, const tjcpu_rparams *p) {                   \
        S *s = s_;                                                                          \
        if (step == (int64_t)sizeof(T)) {                                                   \
            const T *v = (const T *)x;                                                      \
            for (int64_t i = 0; i < n; i++) name##_upd_##sfx(s, v[i], first + i, p);        \
        } else {                                                                            \
            for (int64_t i = 0; i < n; i++) name##_upd_##sfx(s, AT(T, x, i, step), first + i, p); \
        }                                                                                   \
    }
/* Row by row, each row across the columns: with contiguous columns the inner
 * loop vectorises across independent states. */
#define GEN_COLS(name, sfx, S, T)                                                           \
    static void name##_cols_##sfx(void *s_, const char *x, int64_t cstep, int64_t n,        \
                                  int64_t rstep, int64_t rows, int64_t first,               \
                                  const tjcpu_rparams *p) {                                 \
        S *restrict s = s_;                                                                 \
        for (int64_t r = 0; r < rows; r++) {                                                \
            const char *row = x + r * rstep;                                                \
            if (cstep == (int64_t)sizeof(T)) {                                              \
                const T *restrict v = (const T *)row;                                       \
                for (int64_t j = 0; j < n; j++) name##_upd_##sfx(&s[j], v[j], first + r, p); \
            } else {                                                                        \
                for (int64_t j = 0; j < n; j++)                                             \
                    name##_upd_##sfx(&s[j], AT(T, row, j, cstep), first + r, p);            \
            }                                                                               \
        }                                                                                   \
    }

/* Reducer table entries from name##_S_##sfx, name##_init_##sfx, ... */
#define RED(name, sfx, final)                                                               \
    {sizeof(name##_S_##sfx), name##_init_##sfx, name##_run_##sfx, name##_cols_##sfx,        \
     name##_comb_##sfx, final}
#define RED_ALL(name, fin)                                                                  \
    {[TJ_F32] = RED(name, f32, fin##_f32), [TJ_F64] = RED(name, f64, fin##_f64),           \
     [TJ_I64] = RED(name, i64, fin##_i64), [TJ_BOOL] = RED(name, b8, fin##_b8)}
/* float-only reducers whose init and combine are shared by both dtypes */
#define RED_FLOAT(name, init, comb, fin)                                                    \
    {[TJ_F32] = {sizeof(name##_S_f32), init, name##_run_f32, name##_cols_f32, comb, fin##_f32}, \
     [TJ_F64] = {sizeof(name##_S_f64), init, name##_run_f64, name##_cols_f64, comb, fin##_f64}}

/* Runs reducer r over c->in[0] as described by info into c->out[]. With
 * logical_order the indices passed to the reducer are row-major positions
 * (arg reductions); otherwise the driver may visit reduced dims in memory
 * order. The result never depends on the thread count. */
tj_status tjcpu_reduce(const tjc_call *c, const tjc_reduce_info *info, const tjcpu_reducer *r,
                       const tjcpu_rparams *p, bool logical_order);

#endif
