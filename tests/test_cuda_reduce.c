/* test_cuda_reduce.c — every reduction row of core/ops_reduce.def through
 * the CUDA kernels against the CPU kernels (tt_cuda_check_op): every dtype
 * (and the ones an op refuses, which both devices must refuse), shapes with
 * 0-dim, size-0 and size-1 dims, dim lists (all, one, several, negative),
 * keepdim, contiguous, strided, transposed and expanded inputs, NaN, inf,
 * signed zeros and denormals, ties of the index forms, empty reductions, and
 * large shapes that take the multi-block paths (slices with partials, both
 * layouts). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/cuda_cases.h"

static tj_generator *gen;

static tj_generator *g(void) {
    if (!gen) gen = tj_generator_new(2024);
    return gen;
}

/* ---- inputs --------------------------------------------------------------------------------- */

typedef enum layout { CONTIGUOUS, STRIDED, TRANSPOSED, EXPANDED, N_LAYOUTS } layout;

static const char *const layout_names[N_LAYOUTS] = {"contiguous", "strided", "transposed",
                                                    "expanded"};

static tj_tensor *random_of(const int64_t *sizes, int nd, tj_dtype dt) {
    double lo = dt == TJ_I64 ? -5 : -2, hi = dt == TJ_I64 ? 5 : 2;
    return tt_random(g(), sizes, nd, dt, lo, hi);
}

/* Random values of sizes laid out as asked (a layout that does not apply to
 * the shape gives a contiguous tensor). */
static tj_tensor *input(const int64_t *sizes, int nd, tj_dtype dt, layout l) {
    if (l == STRIDED) return tt_noncontiguous(g(), random_of(sizes, nd, dt));
    if (l == TRANSPOSED && nd >= 2) {
        int64_t s[TJ_MAX_DIMS];
        memcpy(s, sizes, sizeof(int64_t) * (size_t)nd);
        s[0] = sizes[nd - 1];
        s[nd - 1] = sizes[0];
        return tj_transpose(random_of(s, nd, dt), 0, nd - 1);
    }
    if (l == EXPANDED && nd >= 1) {
        int64_t s[TJ_MAX_DIMS];
        memcpy(s, sizes, sizeof(int64_t) * (size_t)nd);
        s[0] = 1;
        return tj_expand(random_of(s, nd, dt), sizes, nd);
    }
    return random_of(sizes, nd, dt);
}

/* ---- the ops and their attributes --------------------------------------------------------------- */

typedef enum form {
    DIMS_KEEP,   /* (int[] dim, bool keepdim) */
    ONE_DIM,     /* max.dim, min.dim: (int dim, bool keepdim) */
    ARG,         /* argmax, argmin: (int[] dim of at most one, bool keepdim) */
    CORRECTION,  /* var, std: (int[] dim, int correction, bool keepdim) */
    NORM,        /* (float ord, int[] dim, bool keepdim) */
    TO_SIZE      /* sum_to_size: (int[] size) */
} form;

typedef struct rop {
    const char *name;
    form form;
    bool float_only;
} rop;

static const rop ops[] = {
    {"aten::sum.dim_IntList", DIMS_KEEP, false}, {"aten::mean.dim", DIMS_KEEP, true},
    {"aten::prod.dim_IntList", DIMS_KEEP, false}, {"aten::amax", DIMS_KEEP, false},
    {"aten::amin", DIMS_KEEP, false},            {"aten::max.dim", ONE_DIM, false},
    {"aten::min.dim", ONE_DIM, false},           {"aten::argmax", ARG, false},
    {"aten::argmin", ARG, false},                {"aten::var.correction", CORRECTION, true},
    {"aten::std.correction", CORRECTION, true},  {"aten::linalg_vector_norm", NORM, true},
    {"aten::logsumexp", DIMS_KEEP, true},
};
#define N_OPS ((int)(sizeof ops / sizeof *ops))

static const tj_dtype dtypes[] = {TJ_F32, TJ_F64, TJ_I64, TJ_BOOL};

/* Sums in another order than the CPU's: f64 results differ by a few units
 * of rounding of the sum of magnitudes, which for sums near zero is more
 * than 1e-12 relative. */
static double rtol_of(tj_dtype d) { return tt_cuda_rtol(d); }
static double atol_of(tj_dtype d) { return d == TJ_F64 ? 1e-12 : tt_cuda_atol(d); }

/* One call of op on x: dims (n_dims of them; the single dim of ONE_DIM),
 * keepdim, and the form's other attributes (correction, ord). */
static void set_ints(tj_attr *a, const int64_t *v, int n) {
    a->ints.data = v;
    a->ints.n = n;
}

static void check_call(const rop *op, tj_tensor *x, const int64_t *dims, int n_dims, bool keepdim,
                       int64_t correction, double ord, double rtol, double atol) {
    tj_attr a[3];
    int n = 0;
    switch (op->form) {
    case DIMS_KEEP:
    case ARG:
        set_ints(&a[n++], dims, n_dims);
        a[n++].b = keepdim;
        break;
    case ONE_DIM:
        a[n++].i = n_dims ? dims[0] : 0;
        a[n++].b = keepdim;
        break;
    case CORRECTION:
        set_ints(&a[n++], dims, n_dims);
        a[n++].i = correction;
        a[n++].b = keepdim;
        break;
    case NORM:
        a[n++].f = ord;
        set_ints(&a[n++], dims, n_dims);
        a[n++].b = keepdim;
        break;
    case TO_SIZE:
        set_ints(&a[n++], dims, n_dims);
        break;
    }
    tt_cuda_check_op(op->name, &x, 1, a, n, rtol, atol);
}

/* The dim lists tried on an nd-dim input: all, first, last (negative), the
 * first and last together, and a middle one. */
static int dim_lists(int nd, int64_t lists[][3], int *lens) {
    int k = 0;
    lens[k++] = 0;
    lists[k][0] = 0, lens[k++] = 1;
    lists[k][0] = -1, lens[k++] = 1;
    if (nd >= 2) lists[k][0] = nd - 1, lists[k][1] = 0, lens[k++] = 2;
    if (nd >= 3) lists[k][0] = 1, lens[k++] = 1;
    if (nd >= 4) lists[k][0] = -3, lists[k][1] = 0, lists[k][2] = 3, lens[k++] = 3;
    return k;
}

typedef struct shape {
    int nd;
    int64_t s[4];
} shape;

static const shape shapes[] = {
    {0, {0}},       {1, {1}},          {1, {7}},       {1, {0}},       {2, {3, 5}},
    {2, {1, 6}},    {3, {2, 3, 4}},    {3, {4, 1, 5}}, {3, {2, 0, 3}}, {4, {3, 2, 5, 2}},
    {2, {40, 33}},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof *shapes))

/* Every op, dtype, shape and dim list, keepdim alternating and the layout
 * turning with the case. */
static void every_op_dtype_shape_dims(void **state) {
    (void)state;
    int turn = 0;
    for (int o = 0; o < N_OPS; o++)
        for (size_t t = 0; t < sizeof dtypes / sizeof *dtypes; t++) {
            tj_dtype dt = dtypes[t];
            for (int s = 0; s < N_SHAPES; s++) {
                const shape *sh = &shapes[s];
                int64_t lists[8][3];
                int lens[8], nl = dim_lists(sh->nd, lists, lens);
                /* a refused dtype: one shape is enough to see both devices refuse */
                if (ops[o].float_only && !tj_dtype_is_float(dt) && s > 1) break;
                for (int k = 0; k < nl; k++) {
                    const rop *op = &ops[o];
                    if ((op->form == ONE_DIM || op->form == ARG) && lens[k] > 1) continue;
                    if (op->form == ONE_DIM && lens[k] == 0) continue;
                    layout l = (layout)(turn % N_LAYOUTS);
                    bool keep = (turn / N_LAYOUTS) % 2;
                    turn++;
                    tt_context("%s %s sizes #%d dims #%d keepdim %d %s", op->name,
                               tj_dtype_name(dt), s, k, keep, layout_names[l]);
                    tj_tensor *x = input(sh->s, sh->nd, dt, l);
                    check_call(op, x, lists[k], lens[k], keep, 1, 2, rtol_of(dt), atol_of(dt));
                }
            }
        }
    tt_context(NULL);
}

/* var/std's correction (0, 1, 2 and more than the count: NaN or inf) and
 * linalg_vector_norm's ords (each kind of reducer). */
static void corrections_and_ords(void **state) {
    (void)state;
    const int64_t sizes[3][3] = {{3, 4, 5}, {2, 1, 2}, {6, 2, 1}};
    const int64_t dim1[1] = {1}, dims02[2] = {0, 2};
    const double ords[] = {2, 1, 0, INFINITY, -INFINITY, 3.5, 0.5, -1, -2.5};
    for (int s = 0; s < 3; s++)
        for (int t = 0; t < 2; t++) {
            tj_dtype dt = dtypes[t];
            for (int l = 0; l < N_LAYOUTS; l++) {
                tj_tensor *x = input(sizes[s], 3, dt, (layout)l);
                for (int64_t corr = 0; corr <= 3; corr++)
                    for (int op = 9; op <= 10; op++) {
                        tt_context("%s correction %lld sizes #%d %s", ops[op].name,
                                   (long long)corr, s, tj_dtype_name(dt));
                        check_call(&ops[op], x, corr % 2 ? dim1 : dims02, corr % 2 ? 1 : 2,
                                   corr == 2, corr, 0, rtol_of(dt), atol_of(dt));
                    }
                for (size_t k = 0; k < sizeof ords / sizeof *ords; k++) {
                    tt_context("linalg_vector_norm ord %g sizes #%d %s", ords[k], s,
                               tj_dtype_name(dt));
                    check_call(&ops[11], x, k % 2 ? dim1 : NULL, k % 2, k % 3 == 0, 0, ords[k],
                               rtol_of(dt), atol_of(dt));
                }
            }
        }
    tt_context(NULL);
}

/* ---- special values ------------------------------------------------------------------------------ */

/* x [rows, 9] with the specials of its row: none, NaN, +inf, -inf and
 * +inf, -inf only, signed zeros and denormals, a NaN after an inf. */
static tj_tensor *specials(tj_dtype dt, int64_t rows) {
    int64_t sizes[2] = {rows, 9};
    tj_tensor *x = tt_random(g(), sizes, 2, dt, -2, 2);
    double tiny = dt == TJ_F32 ? 1e-40 : 1e-310;
    const double rowv[7][3] = {{0.5, 0.25, -1},       {NAN, 1, 2},       {INFINITY, 1, 1},
                               {-INFINITY, INFINITY, 0}, {-INFINITY, -INFINITY, -INFINITY},
                               {-0.0, 0.0, tiny},       {INFINITY, NAN, -tiny}};
    for (int64_t r = 0; r < rows; r++) {
        const double *v = rowv[r % 7];
        int64_t at[3] = {r % 9, (r + 4) % 9, (r + 7) % 9};
        for (int k = 0; k < 3; k++) {
            if (dt == TJ_F32) ((float *)tj_data(x))[r * 9 + at[k]] = (float)v[k];
            else ((double *)tj_data(x))[r * 9 + at[k]] = v[k];
        }
        if (r % 7 == 4) /* a whole row of -inf */
            for (int k = 0; k < 9; k++) {
                if (dt == TJ_F32) ((float *)tj_data(x))[r * 9 + k] = -INFINITY;
                else ((double *)tj_data(x))[r * 9 + k] = -INFINITY;
            }
    }
    return x;
}

static void special_values(void **state) {
    (void)state;
    const int64_t dim0[1] = {0}, dim1[1] = {1};
    for (int t = 0; t < 2; t++)
        for (int o = 0; o < N_OPS; o++) {
            tj_tensor *x = specials(dtypes[t], 7);
            for (int k = 0; k < 3; k++) {
                if ((ops[o].form == ONE_DIM) && k == 2) continue;
                tt_context("%s %s specials, dims #%d", ops[o].name, tj_dtype_name(dtypes[t]), k);
                const int64_t *dims = k == 0 ? dim1 : k == 1 ? dim0 : NULL;
                check_call(&ops[o], x, dims, k < 2, false, 1, k == 1 ? -1.5 : 2,
                           rtol_of(dtypes[t]), atol_of(dtypes[t]));
            }
        }
    tt_context(NULL);
}

/* Index forms: equal values give the first index, the first NaN wins;
 * integers and bools with many ties, in both layouts. */
static void ties_give_the_first_index(void **state) {
    (void)state;
    const int64_t sizes[2] = {6, 40};
    const int64_t dims[2][1] = {{1}, {0}};
    for (int t = 0; t < 4; t++) {
        tj_dtype dt = dtypes[t];
        tj_tensor *x = tt_random(g(), sizes, 2, dt, 0, 2);
        if (dt == TJ_F32 || dt == TJ_F64) { /* few distinct values, and NaNs in row 2 */
            for (int i = 0; i < 240; i++) {
                double v = floor(dt == TJ_F32 ? ((float *)tj_data(x))[i] : ((double *)tj_data(x))[i]);
                if (i / 40 == 2 && i % 7 == 3) v = NAN;
                if (dt == TJ_F32) ((float *)tj_data(x))[i] = (float)v;
                else ((double *)tj_data(x))[i] = v;
            }
        }
        for (int o = 5; o <= 8; o++)
            for (int k = 0; k < 3; k++) {
                tt_context("%s %s ties, dims #%d", ops[o].name, tj_dtype_name(dt), k);
                bool all = k == 2 && ops[o].form == ARG;
                if (k == 2 && !all) continue;
                check_call(&ops[o], tj_transpose(x, 0, 1), all ? NULL : dims[k], !all, k == 1, 0,
                           0, 0, 0);
                check_call(&ops[o], x, all ? NULL : dims[k], !all, k == 0, 0, 0, 0, 0);
            }
    }
    tt_context(NULL);
}

/* ---- sum_to_size ----------------------------------------------------------------------------------- */

static void sum_to_size_targets(void **state) {
    (void)state;
    const rop op = {"aten::sum_to_size", TO_SIZE, false};
    const int64_t sizes[3] = {4, 3, 5};
    const int64_t targets[][3] = {{4, 3, 5}, {1, 3, 5}, {3, 1}, {5}, {1, 1, 1}, {3, 5}, {7}};
    const int lens[] = {3, 3, 2, 1, 3, 2, 1};
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < 7; k++) {
            tt_context("sum_to_size %s target #%d", tj_dtype_name(dtypes[t]), k);
            tj_tensor *x = input(sizes, 3, dtypes[t], (layout)(k % N_LAYOUTS));
            check_call(&op, x, targets[k], lens[k], false, 0, 0, rtol_of(dtypes[t]),
                       atol_of(dtypes[t]));
        }
    const int64_t none[1] = {0};
    tj_tensor *scalar = tt_random(g(), none, 0, TJ_F32, -1, 1);
    check_call(&op, scalar, NULL, 0, false, 0, 0, 0, 0);
    tt_context(NULL);
}

/* ---- large reductions: slices with partials (pass 2), both layouts ----------------------------------- */

static void large_reductions_take_the_multi_block_path(void **state) {
    (void)state;
    const int64_t big[1] = {1 << 20}, rows[2] = {4, 250000}, cols[2] = {200000, 3};
    const int64_t dim0[1] = {0}, dim1[1] = {1};
    for (int t = 0; t < 2; t++) {
        tj_dtype dt = dtypes[t];
        /* sums of a million f64 values agree to the rounding of their magnitude */
        double rt = rtol_of(dt), at = dt == TJ_F64 ? 1e-9 : 1e-4;
        tj_tensor *x = tt_random(g(), big, 1, dt, -1, 1);
        for (int o = 0; o < N_OPS; o++) {
            tt_context("%s %s over 2^20 to a scalar", ops[o].name, tj_dtype_name(dt));
            check_call(&ops[o], x, dim0, 1, false, 1, 2, rt, at);
        }
        tj_tensor *r = tt_random(g(), rows, 2, dt, -1, 1), *c = tt_random(g(), cols, 2, dt, -1, 1);
        int picks[] = {0, 1, 3, 5, 8, 9, 11, 12};
        for (size_t k = 0; k < sizeof picks / sizeof *picks; k++) {
            const rop *op = &ops[picks[k]];
            tt_context("%s %s [4, 250000] over dim 1", op->name, tj_dtype_name(dt));
            check_call(op, r, dim1, 1, true, 1, 2, rt, at);
            tt_context("%s %s [200000, 3] over dim 0", op->name, tj_dtype_name(dt));
            check_call(op, c, dim0, 1, false, 1, 2, rt, at);
            tt_context("%s %s [200000, 3] transposed over dim 1", op->name, tj_dtype_name(dt));
            check_call(op, tj_transpose(c, 0, 1), dim1, 1, false, 1, 2, rt, at);
        }
    }
    /* two columns of 1.1M: 34 slices, so pass 2 folds them with 64 lanes (two warps) */
    const int64_t tall[2] = {1100000, 2};
    const int picks2[3][2] = {{0, TJ_F32}, {9, TJ_F64}, {7, TJ_I64}};
    for (int k = 0; k < 3; k++) {
        tj_dtype dt = (tj_dtype)picks2[k][1];
        tt_context("%s %s [1100000, 2] over dim 0", ops[picks2[k][0]].name, tj_dtype_name(dt));
        tj_tensor *x = tt_random(g(), tall, 2, dt, -3, 3);
        check_call(&ops[picks2[k][0]], x, dim0, 1, false, 1, 2, rtol_of(dt), 1e-9);
    }
    /* f64 norms of huge and tiny values neither overflow nor underflow */
    tj_tensor *h = tt_random(g(), big, 1, TJ_F64, -1, 1);
    for (int64_t i = 0; i < big[0]; i += 3) ((double *)tj_data(h))[i] *= i % 2 ? 1e300 : 1e-300;
    for (int k = 0; k < 3; k++) {
        double ord = k == 0 ? 2 : k == 1 ? 3 : -2;
        tt_context("linalg_vector_norm ord %g of huge and tiny f64", ord);
        check_call(&ops[11], h, NULL, 0, false, 0, ord, 1e-12, 0);
    }
    /* the first of many equal maxima, far apart in different slices */
    tj_tensor *ties = tt_random(g(), big, 1, TJ_I64, 0, 3);
    ((int64_t *)tj_data(ties))[777777] = 9;
    ((int64_t *)tj_data(ties))[900001] = 9;
    ((int64_t *)tj_data(ties))[1000] = -9;
    ((int64_t *)tj_data(ties))[1048575] = -9;
    for (int o = 5; o <= 8; o++) {
        tt_context("%s over 2^20 i64 with planted ties", ops[o].name);
        check_call(&ops[o], ties, ops[o].form == ARG ? NULL : dim0, ops[o].form == ARG ? 0 : 1,
                   false, 0, 0, 0, 0);
    }
    /* integer sums and products wrap alike however the slices are cut */
    tj_tensor *flags = tt_random(g(), big, 1, TJ_BOOL, 0, 1);
    for (int o = 0; o <= 4; o++) {
        if (ops[o].float_only) continue;
        tt_context("%s over 2^20 i64 and bool", ops[o].name);
        check_call(&ops[o], ties, dim0, 1, false, 0, 0, 0, 0);
        check_call(&ops[o], flags, dim0, 1, true, 0, 0, 0, 0);
    }
    tt_context(NULL);
}

/* Errors that reach the kernels' callers: both devices refuse alike. */
static void refusals_match(void **state) {
    (void)state;
    const int64_t sizes[2] = {3, 0}, dim1[1] = {1}, dims_bad[2] = {0, 0}, dim5[1] = {5};
    tj_tensor *x = tt_random(g(), sizes, 2, TJ_F32, -1, 1);
    for (int o = 0; o < N_OPS; o++) {
        tt_context("%s over a zero-size dim", ops[o].name);
        check_call(&ops[o], x, dim1, 1, false, 1, -1, 0, 0); /* identity, or an error */
        tt_context("%s with a repeated dim", ops[o].name);
        check_call(&ops[o], x, dims_bad, 2, false, 1, 2, 0, 0);
        tt_context("%s with a dim out of range", ops[o].name);
        check_call(&ops[o], x, dim5, 1, false, 1, 2, 0, 0);
    }
    tt_context("linalg_vector_norm with ord NaN");
    check_call(&ops[11], x, NULL, 0, false, 0, NAN, 0, 0);
    tt_context(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(every_op_dtype_shape_dims),
        TT_SCOPED_TEST(corrections_and_ords),
        TT_SCOPED_TEST(special_values),
        TT_SCOPED_TEST(ties_give_the_first_index),
        TT_SCOPED_TEST(sum_to_size_targets),
        TT_SCOPED_TEST(large_reductions_take_the_multi_block_path),
        TT_SCOPED_TEST(refusals_match),
    };
    int rc = TT_CUDA_RUN(tests);
    if (gen) tj_generator_free(gen);
    return rc;
}
