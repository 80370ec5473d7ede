/* test_matmul.c — every op of kind matmul (mm, bmm, matmul, addmm, linear)
 * against a naive double-precision reference: 1-D, 2-D and batched N-D
 * operands with broadcasting, transposed, strided and expanded operands, a
 * batch of one, empty inner dims, f32/f64/i64; and the error messages. */
#include <math.h>
#include <stdlib.h>

#include "tests/linalg_testing.h"

static tj_generator *gen;

/* The family as this test knows it; ops of kind matmul added later must also
 * get a reference here, or test_coverage fails. */
static const char *const family[] = {"aten::mm", "aten::bmm", "aten::matmul", "aten::addmm",
                                     "aten::linear"};

static const tj_dtype dtypes[] = {TJ_F32, TJ_F64, TJ_I64};

static double rel_tol(tj_dtype d) { return d == TJ_F32 ? 1e-4 : d == TJ_F64 ? 1e-12 : 0; }
static double abs_tol(tj_dtype d) { return d == TJ_F32 ? 1e-4 : d == TJ_F64 ? 1e-12 : 0; }

/* ---- reference -----------------------------------------------------------------
 * PyTorch's matmul, in plain loops over doubles:
 *   a [batch_a..., m, k]  (a 1-D a is [1, k]; its m dim is dropped from out)
 *   b [batch_b..., k, n]  (a 1-D b is [k, 1]; its n dim is dropped from out)
 *   out[batch..., m, n] = sum_p a[batch..., m, p] * b[batch..., p, n]
 * where batch = broadcast(batch_a, batch_b) and a size-1 batch dim repeats. */
static tt_ref ref_matmul(const tt_ref *a, const tt_ref *b) {
    int64_t m = a->ndim == 1 ? 1 : a->sizes[a->ndim - 2], k = a->sizes[a->ndim - 1];
    int64_t n = b->ndim == 1 ? 1 : b->sizes[b->ndim - 1];
    int anb = a->ndim >= 2 ? a->ndim - 2 : 0, bnb = b->ndim >= 2 ? b->ndim - 2 : 0;
    int nb = anb > bnb ? anb : bnb;
    int64_t batch[TJ_MAX_DIMS], out_sizes[TJ_MAX_DIMS];
    int nd = 0;
    for (int i = 0; i < nb; i++) {
        int da = anb - nb + i, db = bnb - nb + i;
        int64_t sa = da >= 0 ? a->sizes[da] : 1, sb = db >= 0 ? b->sizes[db] : 1;
        batch[i] = sa == 1 ? sb : sa;
        out_sizes[nd++] = batch[i];
    }
    if (a->ndim != 1) out_sizes[nd++] = m;
    if (b->ndim != 1) out_sizes[nd++] = n;
    tt_ref out = tt_ref_new(out_sizes, nd);
    int64_t nbatch = 1;
    for (int i = 0; i < nb; i++) nbatch *= batch[i];
    for (int64_t bi = 0; bi < nbatch; bi++) {
        int64_t idx[TJ_MAX_DIMS], rem = bi, aoff = 0, boff = 0;
        for (int i = nb - 1; i >= 0; i--) idx[i] = rem % batch[i], rem /= batch[i];
        for (int i = 0; i < anb; i++) {
            int64_t s = a->sizes[i];
            aoff = aoff * s + (s == 1 ? 0 : idx[nb - anb + i]);
        }
        for (int i = 0; i < bnb; i++) {
            int64_t s = b->sizes[i];
            boff = boff * s + (s == 1 ? 0 : idx[nb - bnb + i]);
        }
        const double *A = a->v + aoff * m * k, *B = b->v + boff * k * n;
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++) s += A[i * k + p] * B[p * n + j];
                out.v[(bi * m + i) * n + j] = s;
            }
    }
    return out;
}

/* out = beta * broadcast(add) + alpha * prod, in place in prod */
static void ref_add_scaled(tt_ref *prod, const tt_ref *add, double beta, double alpha) {
    int64_t idx[TJ_MAX_DIMS] = {0};
    for (int64_t i = 0; i < prod->numel; i++) {
        double base = add && beta != 0 ? beta * tt_ref_bcast(add, idx, prod->ndim) : 0;
        prod->v[i] = base + alpha * prod->v[i];
        tt_next_index(idx, prod->sizes, prod->ndim);
    }
}

/* ---- matmul, mm, bmm over shapes x dtypes x layouts ---------------------------- */

typedef struct shape {
    int n;
    int64_t s[4];
} shape;

static const struct {
    shape a, b;
} cases[] = {
    {{1, {5}}, {1, {5}}},                   /* dot */
    {{2, {3, 5}}, {1, {5}}},                /* matrix-vector */
    {{1, {5}}, {2, {5, 4}}},                /* vector-matrix */
    {{2, {3, 5}}, {2, {5, 4}}},             /* mm */
    {{2, {1, 5}}, {2, {5, 1}}},             /* one row by one column */
    {{3, {2, 3, 5}}, {2, {5, 4}}},          /* batch folds into rows */
    {{2, {3, 5}}, {3, {2, 5, 4}}},          /* matrix broadcast over b's batch */
    {{4, {2, 1, 3, 5}}, {3, {4, 5, 2}}},    /* batch dims broadcast both ways */
    {{1, {5}}, {3, {2, 5, 4}}},             /* vector by batch */
    {{3, {2, 4, 5}}, {1, {5}}},             /* batch by vector */
    {{2, {2, 0}}, {2, {0, 3}}},             /* empty inner dim: zeros */
    {{3, {1, 2, 3}}, {3, {1, 3, 4}}},       /* batch of one */
    {{3, {300, 4, 3}}, {3, {300, 3, 5}}},   /* many small products: parallel batch */
    {{3, {3, 40, 70}}, {3, {3, 70, 90}}},   /* a few medium ones */
    {{2, {130, 70}}, {2, {70, 120}}},       /* one larger product */
};

static void run_case(const shape *sa, const shape *sb, tj_dtype dt, lt_layout la, lt_layout lb) {
    tj_tensor *a = lt_tensor(gen, sa->s, sa->n, dt, la, NULL);
    tj_tensor *b = lt_tensor(gen, sb->s, sb->n, dt, lb, NULL);
    tt_ref ra = tt_ref_of(a), rb = tt_ref_of(b), want = ref_matmul(&ra, &rb);
    tj_tensor *got = tj_matmul(a, b);
    tt_assert_close_ref(got, &want, rel_tol(dt), abs_tol(dt));
    tj_release(got);
    lt_mark("aten::matmul");
    if (sa->n == 2 && sb->n == 2) {
        got = tj_mm(a, b);
        tt_assert_close_ref(got, &want, rel_tol(dt), abs_tol(dt));
        tj_release(got);
        lt_mark("aten::mm");
    }
    if (sa->n == 3 && sb->n == 3 && sa->s[0] == sb->s[0]) {
        got = tj_bmm(a, b);
        tt_assert_close_ref(got, &want, rel_tol(dt), abs_tol(dt));
        tj_release(got);
        lt_mark("aten::bmm");
    }
    tt_ref_free(&ra);
    tt_ref_free(&rb);
    tt_ref_free(&want);
    tj_release(a);
    tj_release(b);
}

static void test_matmul_cases(void **state) {
    (void)state;
    const lt_layout layouts[] = {LT_CONTIGUOUS, LT_TRANSPOSED, LT_STRIDED};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (size_t d = 0; d < 3; d++)
            for (int la = 0; la < 3; la++)
                for (int lb = 0; lb < 3; lb++)
                    run_case(&cases[c].a, &cases[c].b, dtypes[d], layouts[la], layouts[lb]);
}

/* Operands with a zero stride (expanded): b's batch, and a's columns. */
static void test_matmul_expanded(void **state) {
    (void)state;
    for (size_t d = 0; d < 3; d++) {
        int64_t bs[3] = {1, 3, 4}, be[3] = {5, 3, 4}, as[3] = {5, 2, 3};
        tj_tensor *b1 = lt_tensor(gen, bs, 3, dtypes[d], LT_CONTIGUOUS, NULL);
        int64_t bst[3] = {0, tj_strides(b1)[1], tj_strides(b1)[2]};
        tj_tensor *b = tjc_make_view(b1, be, bst, 3, 0);
        tj_tensor *a = lt_tensor(gen, as, 3, dtypes[d], LT_CONTIGUOUS, NULL);
        tt_ref ra = tt_ref_of(a), rb = tt_ref_of(b), want = ref_matmul(&ra, &rb);
        tj_tensor *got = tj_bmm(a, b);
        tt_assert_close_ref(got, &want, rel_tol(dtypes[d]), abs_tol(dtypes[d]));
        tj_release(got);
        tt_ref_free(&want);
        tt_ref_free(&ra);
        /* a [2, 3] whose rows repeat one value: column stride 0 */
        int64_t col[2] = {2, 1}, ae[2] = {2, 3}, ast[2] = {1, 0}, b2s[2] = {3, 4};
        tj_tensor *a1 = lt_tensor(gen, col, 2, dtypes[d], LT_CONTIGUOUS, NULL);
        tj_tensor *a2 = tjc_make_view(a1, ae, ast, 2, 0);
        tj_tensor *b2 = lt_tensor(gen, b2s, 2, dtypes[d], LT_TRANSPOSED, NULL);
        tt_ref ra2 = tt_ref_of(a2), rb2 = tt_ref_of(b2), want2 = ref_matmul(&ra2, &rb2);
        got = tj_mm(a2, b2);
        tt_assert_close_ref(got, &want2, rel_tol(dtypes[d]), abs_tol(dtypes[d]));
        tj_release(got);
        tt_ref_free(&ra2);
        tt_ref_free(&rb2);
        tt_ref_free(&want2);
        tt_ref_free(&rb);
        tj_release(a);
        tj_release(a1);
        tj_release(a2);
        tj_release(b);
        tj_release(b1);
        tj_release(b2);
    }
}

/* ---- addmm -------------------------------------------------------------------------- */

static void test_addmm(void **state) {
    (void)state;
    const shape selfs[] = {{2, {3, 4}}, {1, {4}}, {2, {1, 4}}, {2, {3, 1}}, {0, {0}}};
    const double coef[][2] = {{1, 1}, {0.5, -2}, {0, 1}, {2, 3}};
    int64_t s1[2] = {3, 5}, s2[2] = {5, 4};
    for (size_t d = 0; d < 3; d++) {
        tj_dtype dt = dtypes[d];
        for (size_t s = 0; s < sizeof selfs / sizeof selfs[0]; s++)
            for (size_t k = 0; k < sizeof coef / sizeof coef[0]; k++) {
                double beta = coef[k][0], alpha = coef[k][1];
                if (dt == TJ_I64 && (beta != floor(beta) || alpha != floor(alpha))) continue;
                tj_tensor *self = lt_tensor(gen, selfs[s].s, selfs[s].n, dt, LT_CONTIGUOUS, NULL);
                /* beta == 0 must ignore self entirely, NaN included */
                if (beta == 0 && dt != TJ_I64) {
                    tj_tensor *nan = tj_full(selfs[s].s, selfs[s].n, NAN, dt);
                    tj_release(self);
                    self = nan;
                }
                tj_tensor *m1 = lt_tensor(gen, s1, 2, dt, k % 2 ? LT_TRANSPOSED : LT_CONTIGUOUS, NULL);
                tj_tensor *m2 = lt_tensor(gen, s2, 2, dt, s % 2 ? LT_STRIDED : LT_TRANSPOSED, NULL);
                tt_ref rs = tt_ref_of(self), r1 = tt_ref_of(m1), r2 = tt_ref_of(m2);
                tt_ref want = ref_matmul(&r1, &r2);
                ref_add_scaled(&want, &rs, beta, alpha);
                tj_tensor *got = tj_addmm(self, m1, m2, beta, alpha);
                tt_assert_close_ref(got, &want, rel_tol(dt), abs_tol(dt));
                lt_mark("aten::addmm");
                tj_release(got);
                tt_ref_free(&rs);
                tt_ref_free(&r1);
                tt_ref_free(&r2);
                tt_ref_free(&want);
                tj_release(self);
                tj_release(m1);
                tj_release(m2);
            }
    }
}

/* ---- linear ---------------------------------------------------------------------------
 * out[..., o] = sum_i input[..., i] * weight[o, i] + bias[o]: matmul(input, weight^T) + bias */
static void test_linear(void **state) {
    (void)state;
    const shape inputs[] = {{1, {3}}, {2, {4, 3}}, {3, {2, 5, 3}}, {4, {2, 3, 1, 3}}, {2, {1, 3}}};
    int64_t ws[2] = {6, 3}, bs[1] = {6};
    const lt_layout wl[] = {LT_CONTIGUOUS, LT_TRANSPOSED, LT_STRIDED};
    for (size_t d = 0; d < 3; d++) {
        tj_dtype dt = dtypes[d];
        for (size_t i = 0; i < sizeof inputs / sizeof inputs[0]; i++)
            for (int l = 0; l < 3; l++)
                for (int with_bias = 0; with_bias < 2; with_bias++) {
                    tj_tensor *x = lt_tensor(gen, inputs[i].s, inputs[i].n, dt,
                                             i % 2 ? LT_TRANSPOSED : LT_CONTIGUOUS, NULL);
                    tj_tensor *w = lt_tensor(gen, ws, 2, dt, wl[l], NULL);
                    tj_tensor *b = with_bias ? lt_tensor(gen, bs, 1, dt, l == 2 ? LT_STRIDED
                                                                                : LT_CONTIGUOUS, NULL)
                                             : NULL;
                    int64_t wts[2] = {3, 6};
                    int64_t wtst[2] = {tj_strides(w)[1], tj_strides(w)[0]};
                    tj_tensor *wt = tjc_make_view(w, wts, wtst, 2, tj_storage_offset(w));
                    tt_ref rx = tt_ref_of(x), rwt = tt_ref_of(wt), want = ref_matmul(&rx, &rwt);
                    tt_ref rb = b ? tt_ref_of(b) : (tt_ref){0};
                    if (b) ref_add_scaled(&want, &rb, 1, 1);
                    tj_tensor *got = tj_linear(x, w, b);
                    tt_assert_close_ref(got, &want, rel_tol(dt), abs_tol(dt));
                    lt_mark("aten::linear");
                    tj_release(got);
                    tt_ref_free(&rx);
                    tt_ref_free(&rwt);
                    tt_ref_free(&want);
                    if (b) tt_ref_free(&rb);
                    tj_release(x);
                    tj_release(w);
                    tj_release(wt);
                    tj_release(b);
                }
    }
}

/* ---- errors ------------------------------------------------------------------------------ */

static tj_tensor *zeros(tj_dtype dt, int nd, int64_t s0, int64_t s1, int64_t s2) {
    int64_t s[3] = {s0, s1, s2};
    return tj_zeros(s, nd, dt);
}

static void expect_null(tj_tensor *t, const char *msg) {
    assert_null(t);
    tt_assert_error(msg);
    tj_clear_error();
}

static void test_errors(void **state) {
    (void)state;
    tj_tensor *a23 = zeros(TJ_F32, 2, 2, 3, 0), *b45 = zeros(TJ_F32, 2, 4, 5, 0);
    tj_tensor *b34 = zeros(TJ_F32, 2, 3, 4, 0), *d34 = zeros(TJ_F64, 2, 3, 4, 0);
    tj_tensor *v3 = zeros(TJ_F32, 1, 3, 0, 0), *s0 = zeros(TJ_F32, 0, 0, 0, 0);
    tj_tensor *t234 = zeros(TJ_F32, 3, 2, 3, 4), *t345 = zeros(TJ_F32, 3, 3, 4, 5);
    tj_tensor *bool23 = zeros(TJ_BOOL, 2, 2, 3, 0), *bool34 = zeros(TJ_BOOL, 2, 3, 4, 0);
    tj_tensor *i23 = zeros(TJ_I64, 2, 2, 3, 0), *i34 = zeros(TJ_I64, 2, 3, 4, 0);
    tj_tensor *w45 = zeros(TJ_F32, 2, 4, 5, 0), *self33 = zeros(TJ_F32, 2, 3, 3, 0);
    tj_tensor *w43 = zeros(TJ_F32, 2, 4, 3, 0), *i24 = zeros(TJ_I64, 2, 2, 4, 0);

    expect_null(tj_mm(a23, b45), "aten::mm: cannot multiply [2, 3] by [4, 5]: inner sizes 3 and 4 differ");
    expect_null(tj_mm(a23, d34), "aten::mm: expected 'self' and 'mat2' to have the same dtype; got f32 and f64");
    expect_null(tj_mm(v3, b34), "aten::mm: 'self' must be a matrix (2-D); got sizes [3]");
    expect_null(tj_mm(bool23, bool34), "aten::mm: supports f32, f64 and i64; got bool");
    expect_null(tj_bmm(t234, t345), "aten::bmm: batch sizes of [2, 3, 4] and [3, 4, 5] differ");
    expect_null(tj_bmm(a23, b34), "aten::bmm: 'self' must be a batch of matrices (3-D)");
    expect_null(tj_matmul(t234, t345), "aten::matmul: batch sizes of [2, 3, 4] and [3, 4, 5] do not broadcast");
    expect_null(tj_matmul(s0, b34), "aten::matmul: 'self' must be at least 1-D; got sizes []");
    expect_null(tj_matmul(v3, b45), "aten::matmul: cannot multiply [3] by [4, 5]: inner sizes 3 and 4 differ");
    expect_null(tj_linear(a23, w45, NULL), "aten::linear: cannot multiply input [2, 3] by weight [4, 5] transposed: in_features 3 and 5 differ");
    tj_tensor *xv = tj_linear(a23, v3, NULL); /* a vector weight: a23 @ v3, as in PyTorch */
    assert_non_null(xv);
    assert_int_equal(tj_ndim(xv), 1);
    assert_int_equal(tj_sizes(xv)[0], 2);
    tj_release(xv);
    expect_null(tj_linear(a23, w45, NULL), "aten::linear: cannot multiply input [2, 3] by weight [4, 5] transposed");
    expect_null(tj_linear(a23, w43, v3),
                "aten::linear: 'bias' of sizes [3] does not broadcast to the product's sizes [2, 4]");
    expect_null(tj_addmm(self33, a23, b34, 1, 1), "aten::addmm: 'self' of sizes [3, 3] does not broadcast to the product's sizes [2, 4]");
    expect_null(tj_addmm(i24, i23, i34, NAN, 1),
                "aten::addmm: beta nan or alpha 1 cannot be converted to i64 without overflow");
    expect_null(tj_mm(NULL, b34), "aten::mm: argument 'self' is NULL");

    tj_tensor *all[] = {a23, b45, b34, d34, v3, s0, t234, t345, bool23, bool34, i23, i34, w45, self33, w43, i24};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tj_release(all[i]);
}

static void test_coverage(void **state) {
    (void)state;
    lt_check_coverage(TJ_KIND_MATMUL, family, sizeof family / sizeof family[0]);
}

static int setup(void **state) {
    (void)state;
    gen = tj_generator_new(1234);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tj_generator_free(gen);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_cases), cmocka_unit_test(test_matmul_expanded),
        cmocka_unit_test(test_addmm),        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_coverage), /* last: it reads what the others checked */
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
