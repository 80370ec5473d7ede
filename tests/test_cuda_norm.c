/* test_cuda_norm.c — softmax, log_softmax, their backward ops and batch,
 * layer and group norm (forward, composite and backward) through the CUDA
 * kernels against the CPU kernels (tt_cuda_check_op: inputs keep their
 * strides on the device): every dim, 0-dim, size-0 and size-1 dims, strided,
 * transposed and expanded inputs, NaN and inf, optional weight and bias,
 * running statistics updated in place (compared after the call, strided
 * and in another dtype), both input dtypes of the backward ops, refused
 * dtypes and arguments, and large shapes (softmax rows of 5000, layer norm
 * over 4096 and over 100000, which takes the multi-block path). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/cuda_cases.h"

static tj_generator *gen;

static tj_generator *g(void) {
    if (!gen) gen = tj_generator_new(77);
    return gen;
}

typedef enum layout { CONTIGUOUS, STRIDED, TRANSPOSED, EXPANDED, N_LAYOUTS } layout;

static tj_tensor *random_in(const int64_t *sizes, int nd, tj_dtype dt, double lo, double hi) {
    return tt_random(g(), sizes, nd, dt, lo, hi);
}

/* Random values in [lo, hi) of sizes, laid out as asked (contiguous where
 * the layout does not apply). */
static tj_tensor *input(const int64_t *sizes, int nd, tj_dtype dt, layout l, double lo, double hi) {
    if (l == STRIDED) return tt_noncontiguous(g(), random_in(sizes, nd, dt, lo, hi));
    if (l == TRANSPOSED && nd >= 2) {
        int64_t s[TJ_MAX_DIMS];
        memcpy(s, sizes, sizeof(int64_t) * (size_t)nd);
        s[0] = sizes[nd - 1];
        s[nd - 1] = sizes[0];
        return tj_transpose(random_in(s, nd, dt, lo, hi), 0, nd - 1);
    }
    if (l == EXPANDED && nd >= 2) {
        int64_t s[TJ_MAX_DIMS];
        memcpy(s, sizes, sizeof(int64_t) * (size_t)nd);
        s[nd - 1] = 1;
        return tj_expand(random_in(s, nd, dt, lo, hi), sizes, nd);
    }
    return random_in(sizes, nd, dt, lo, hi);
}

static tj_tensor *vec(int64_t n, tj_dtype dt, bool strided, double lo, double hi) {
    tj_tensor *t = random_in(&n, 1, dt, lo, hi);
    return strided ? tt_noncontiguous(g(), t) : t;
}

/* Element kernels round per-channel coefficients to T and may fuse a
 * multiply-add where the CPU rounds twice: f32 results near zero differ by
 * a few ulp of the O(1) terms, not of the result. */
static double rtol_of(tj_dtype d) { return d == TJ_F32 ? 2e-5 : 1e-12; }
static double atol_of(tj_dtype d) { return d == TJ_F32 ? 2e-5 : 1e-12; }

/* ---- softmax ---------------------------------------------------------------------------------------- */

typedef struct shape {
    int nd;
    int64_t s[4];
} shape;

static const shape shapes[] = {
    {0, {0}},    {1, {1}},    {1, {7}},          {1, {0}},       {2, {3, 5}},
    {2, {5, 1}}, {3, {2, 0, 3}}, {3, {2, 3, 4}}, {3, {4, 1, 5}}, {4, {3, 2, 5, 2}},
    {2, {37, 70}},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof *shapes))

static const char *const fwd_ops[2] = {"aten::softmax", "aten::log_softmax"};
static const char *const bwd_ops[2] = {"aten::_softmax_backward_data",
                                       "aten::_log_softmax_backward_data"};

static void check_softmax(int log_form, tj_tensor *x, int64_t dim, tj_dtype dt) {
    tj_attr a[1];
    a[0].i = dim;
    tt_cuda_check_op(fwd_ops[log_form], &x, 1, a, 1, rtol_of(dt), atol_of(dt));
}

/* The backward op on (g, y) with y a (log-)softmax output of x. */
static void check_softmax_backward(int log_form, tj_tensor *gout, tj_tensor *x, int64_t dim,
                                   tj_dtype input_dtype) {
    tj_attr a[2];
    a[0].i = dim;
    a[1].dtype = input_dtype;
    tj_tensor *y = log_form ? tj_log_softmax(x, dim) : tj_softmax(x, dim);
    tj_tensor *in[2] = {gout, y ? y : x}; /* a refused x: both devices refuse y too */
    tj_dtype dt = tj_tensor_dtype(x);
    tt_cuda_check_op(bwd_ops[log_form], in, 2, a, 2, rtol_of(dt), atol_of(dt));
    tj_clear_error();
}

static void softmax_every_dim_shape_dtype(void **state) {
    (void)state;
    int turn = 0;
    const tj_dtype dts[3] = {TJ_F32, TJ_F64, TJ_I64};
    for (int lf = 0; lf < 2; lf++)
        for (int t = 0; t < 3; t++)
            for (int s = 0; s < N_SHAPES; s++) {
                const shape *sh = &shapes[s];
                if (dts[t] == TJ_I64 && s > 1) break; /* refused: both devices */
                int lo = sh->nd ? -sh->nd : -1, hi = sh->nd ? sh->nd - 1 : 0;
                for (int d = lo; d <= hi; d++) {
                    layout l = (layout)(turn++ % N_LAYOUTS);
                    tt_context("%s %s sizes #%d dim %d layout %d", fwd_ops[lf],
                               tj_dtype_name(dts[t]), s, d, l);
                    tj_tensor *x = input(sh->s, sh->nd, dts[t], l, -3, 3);
                    check_softmax(lf, x, d, dts[t]);
                    if (dts[t] == TJ_I64) continue;
                    tj_tensor *gout = input(sh->s, sh->nd, dts[t], (layout)((l + 1) % N_LAYOUTS),
                                            -1, 1);
                    tj_dtype other = dts[t] == TJ_F32 ? TJ_F64 : TJ_F32;
                    tt_context("%s %s sizes #%d dim %d", bwd_ops[lf], tj_dtype_name(dts[t]), s, d);
                    check_softmax_backward(lf, gout, x, d, turn % 2 ? dts[t] : other);
                }
            }
    tt_context(NULL);
}

/* Rows with NaN, +inf, all -inf, huge values (stability), signed zeros. */
static void softmax_special_values(void **state) {
    (void)state;
    const int64_t sizes[2] = {6, 9};
    const double rows[6][2] = {{NAN, 0}, {INFINITY, 1}, {-INFINITY, -INFINITY},
                               {1e30, -1e30}, {-0.0, 0.0}, {-INFINITY, 5}};
    for (int t = 0; t < 2; t++) {
        tj_dtype dt = t ? TJ_F64 : TJ_F32;
        tj_tensor *x = random_in(sizes, 2, dt, -2, 2);
        for (int r = 0; r < 6; r++)
            for (int k = 0; k < 9; k++) {
                /* row 2 is all -inf; the others get their two values at r and r + 2 */
                double v = r == 2 ? -INFINITY : k == r ? rows[r][0] : rows[r][1];
                if (r != 2 && k != r && k != r + 2) continue;
                if (dt == TJ_F32) ((float *)tj_data(x))[r * 9 + k] = (float)v;
                else ((double *)tj_data(x))[r * 9 + k] = v;
            }
        for (int lf = 0; lf < 2; lf++)
            for (int d = 0; d < 2; d++) {
                tt_context("%s %s specials dim %d", fwd_ops[lf], tj_dtype_name(dt), d);
                check_softmax(lf, x, d, dt);
                check_softmax_backward(lf, random_in(sizes, 2, dt, -1, 1), x, d, dt);
            }
    }
    tt_context(NULL);
}

/* Long lines in both layouts: rows of 5000, a column of 5000, and the
 * middle dim of [4, 5000, 2]. */
static void softmax_long_lines(void **state) {
    (void)state;
    const int64_t rows[2] = {6, 5000}, cols[2] = {5000, 3}, mid[3] = {4, 5000, 2};
    for (int t = 0; t < 2; t++) {
        tj_dtype dt = t ? TJ_F64 : TJ_F32;
        for (int lf = 0; lf < 2; lf++) {
            tt_context("%s %s long lines", fwd_ops[lf], tj_dtype_name(dt));
            tj_tensor *x = random_in(rows, 2, dt, -10, 10);
            check_softmax(lf, x, 1, dt);
            check_softmax_backward(lf, random_in(rows, 2, dt, -1, 1), x, 1, dt);
            tj_tensor *c = random_in(cols, 2, dt, -10, 10);
            check_softmax(lf, c, 0, dt);
            check_softmax_backward(lf, random_in(cols, 2, dt, -1, 1), c, 0, dt);
            tj_tensor *m = random_in(mid, 3, dt, -10, 10);
            check_softmax(lf, m, -2, dt);
            check_softmax_backward(lf, random_in(mid, 3, dt, -1, 1), m, -2, dt);
        }
    }
    tt_context(NULL);
}

/* ---- batch norm ------------------------------------------------------------------------------------------ */

static const shape bn_shapes[] = {
    {2, {4, 3}}, {3, {2, 3, 5}}, {4, {2, 3, 4, 5}}, {3, {1, 2, 3}}, {3, {3, 0, 4}}, {3, {16, 8, 600}},
    {3, {0, 3, 4}}, {3, {2, 3, 0}}, /* empty batches: NaN statistics, zero weight gradients */

};
#define N_BN ((int)(sizeof bn_shapes / sizeof *bn_shapes))

/* Every combination of training, affine, running stats (absent, strided, in
 * the other float dtype) over the shapes, for native_batch_norm and
 * batch_norm, and tjit::batch_norm_stats in training; the running stats are
 * compared after the call. */
static void batch_norm_forward(void **state) {
    (void)state;
    const char *names[2] = {"aten::native_batch_norm", "aten::batch_norm"};
    int turn = 0;
    for (int t = 0; t < 2; t++) {
        tj_dtype dt = t ? TJ_F64 : TJ_F32;
        for (int s = 0; s < N_BN; s++)
            for (int v = 0; v < 8; v++) {
                const shape *sh = &bn_shapes[s];
                int64_t C = sh->s[1];
                bool training = v & 1, affine = v & 2, stats = !training || (v & 4);
                tj_dtype sdt = dt; /* one dtype: PyTorch refuses a mix */
                layout l = (layout)(turn++ % N_LAYOUTS);
                tj_tensor *in[5] = {input(sh->s, sh->nd, dt, l, -2, 3),
                                    affine ? vec(C, dt, v & 4, -1, 1) : NULL,
                                    affine ? vec(C, sdt, false, -1, 1) : NULL,
                                    stats ? vec(C, sdt, v & 2, -1, 1) : NULL,
                                    stats ? vec(C, sdt, !(v & 2), 0.5, 2) : NULL};
                tj_attr a[3];
                a[0].b = training;
                a[1].f = 0.1 + 0.1 * (v % 3);
                a[2].f = 1e-5;
                for (int k = 0; k < 2; k++) {
                    tt_context("%s %s sizes #%d variant %d layout %d", names[k],
                               tj_dtype_name(dt), s, v, l);
                    tt_cuda_check_op(names[k], in, 5, a, 3, rtol_of(dt), atol_of(dt));
                }
                if (training) { /* the statistics alone: momentum, eps */
                    tt_context("tjit::batch_norm_stats %s sizes #%d variant %d layout %d",
                               tj_dtype_name(dt), s, v, l);
                    tt_cuda_check_op("tjit::batch_norm_stats", in, 5, a + 1, 2, rtol_of(dt),
                                     atol_of(dt));
                }
            }
    }
    /* one value per channel while training (computed, as aten's op does); an i64 input (refused) */
    const int64_t one[2] = {1, 4};
    tj_tensor *bad[5] = {random_in(one, 2, TJ_F32, -1, 1), NULL, NULL, NULL, NULL};
    tj_attr a[3];
    a[0].b = true, a[1].f = 0.1, a[2].f = 1e-5;
    tt_cuda_check_op("aten::native_batch_norm", bad, 5, a, 3, 0, 0);
    bad[0] = random_in(one, 2, TJ_I64, -3, 3);
    tt_cuda_check_op("aten::native_batch_norm", bad, 5, a, 3, 0, 0);
    tt_context(NULL);
}

/* train (from save_mean/save_invstd) and eval (from the running stats),
 * with and without weight, grad_out strided differently from input. */
static void batch_norm_backward(void **state) {
    (void)state;
    int turn = 0;
    for (int t = 0; t < 2; t++) {
        tj_dtype dt = t ? TJ_F64 : TJ_F32, other = t ? TJ_F32 : TJ_F64;
        for (int s = 0; s < N_BN; s++)
            for (int v = 0; v < 4; v++) {
                const shape *sh = &bn_shapes[s];
                int64_t C = sh->s[1];
                bool train = v & 1, weight = v & 2;
                layout l = (layout)(turn++ % N_LAYOUTS);
                tj_tensor *in[7] = {input(sh->s, sh->nd, dt, (layout)((l + 1) % N_LAYOUTS), -1, 1),
                                    input(sh->s, sh->nd, dt, l, -2, 3),
                                    weight ? vec(C, dt, v & 1, -1, 1) : NULL,
                                    vec(C, other, false, -1, 1),
                                    vec(C, dt, true, 0.5, 2),
                                    vec(C, dt, false, -1, 1),
                                    vec(C, dt, false, 0.5, 2)};
                tj_attr a[2];
                a[0].b = train;
                a[1].f = 1e-5;
                tt_context("native_batch_norm_backward %s sizes #%d variant %d layout %d",
                           tj_dtype_name(dt), s, v, l);
                /* grad_weight sums g (x - mean) over every value of a channel */
                tt_cuda_check_op("aten::native_batch_norm_backward", in, 7, a, 2,
                                     rtol_of(dt), t ? 1e-11 : 1e-4);
            }
    }
    /* an empty batch's saved statistics are NaN; its gradients are empty and
     * the weight's and bias's are 0, not NaN */
    int64_t empty[3] = {0, 3, 4}, three = 3;
    tj_tensor *nan = tj_full(&three, 1, NAN, TJ_F64);
    tj_tensor *ein[7] = {tj_zeros(empty, 3, TJ_F64), tj_zeros(empty, 3, TJ_F64), vec(3, TJ_F64, false, -1, 1),
                         NULL, NULL, nan, nan};
    tj_attr ea[2] = {{.b = true}, {.f = 1e-5}};
    tt_context("native_batch_norm_backward of an empty batch");
    tt_cuda_check_op("aten::native_batch_norm_backward", ein, 7, ea, 2, 1e-12, 1e-12);
    tt_context(NULL);
}

/* ---- layer norm ------------------------------------------------------------------------------------------- */

typedef struct ln_case {
    shape x;
    int n_ns; /* normalized_shape: the last n_ns sizes of x */
} ln_case;

static const ln_case ln_cases[] = {
    {{3, {2, 3, 4}}, 1}, {{3, {2, 3, 4}}, 2}, {{2, {5, 7}}, 1}, {{1, {6}}, 1},
    {{2, {0, 4}}, 1},    {{2, {3, 0}}, 1},    {{3, {2, 1, 3}}, 3}, {{2, {8, 4096}}, 1},
    {{2, {2, 100000}}, 1},
};
#define N_LN ((int)(sizeof ln_cases / sizeof *ln_cases))

static void layer_norm_forward_and_backward(void **state) {
    (void)state;
    int turn = 0;
    for (int t = 0; t < 2; t++) {
        tj_dtype dt = t ? TJ_F64 : TJ_F32;
        for (int c = 0; c < N_LN; c++)
            for (int v = 0; v < 4; v++) {
                const ln_case *lc = &ln_cases[c];
                const int64_t *ns = lc->x.s + lc->x.nd - lc->n_ns;
                bool big = lc->x.s[lc->x.nd - 1] >= 4096;
                if (big && v != 3) continue;
                layout l = (layout)(turn++ % N_LAYOUTS);
                tj_tensor *w = v & 1 ? input(ns, lc->n_ns, dt, l, -1, 1) : NULL;
                tj_tensor *b = v & 2 ? random_in(ns, lc->n_ns, dt, -1, 1) : NULL;
                tj_tensor *x = input(lc->x.s, lc->x.nd, dt, big ? CONTIGUOUS : l, -2, 3);
                tj_attr a[2];
                a[0].ints.data = ns;
                a[0].ints.n = lc->n_ns;
                a[1].f = 1e-5;
                tj_tensor *in[3] = {x, w, b};
                tt_context("native_layer_norm %s case #%d variant %d", tj_dtype_name(dt), c, v);
                tt_cuda_check_op("aten::native_layer_norm", in, 3, a, 2, rtol_of(dt),
                                     atol_of(dt));
                tt_context("layer_norm %s case #%d variant %d", tj_dtype_name(dt), c, v);
                tt_cuda_check_op("aten::layer_norm", in, 3, a, 2, rtol_of(dt), atol_of(dt));
                /* backward from the CPU's statistics */
                tj_tensor *stats[3];
                assert_int_equal(tjc_invoke_nested(tj_op_find("aten::native_layer_norm"), in, 3,
                                                   a, stats, 3),
                                 3);
                tj_tensor *gout = input(lc->x.s, lc->x.nd, dt, (layout)((l + 1) % N_LAYOUTS), -1, 1);
                tj_tensor *bin[6] = {gout, x, stats[1], stats[2], w, b};
                tt_context("native_layer_norm_backward %s case #%d variant %d", tj_dtype_name(dt),
                           c, v);
                /* the affine gradients sum over every row: widen with their count */
                double at = atol_of(dt) * (big ? 100 : 1);
                tt_cuda_check_op("aten::native_layer_norm_backward", bin, 6, a, 1,
                                     rtol_of(dt), at);
                for (int k = 0; k < 3; k++) tj_release(stats[k]);
            }
    }
    /* refused: normalized_shape that does not match */
    const int64_t sizes[2] = {3, 4}, wrong[1] = {3};
    tj_tensor *in[3] = {random_in(sizes, 2, TJ_F32, -1, 1), NULL, NULL};
    tj_attr a[2];
    a[0].ints.data = wrong;
    a[0].ints.n = 1;
    a[1].f = 1e-5;
    tt_cuda_check_op("aten::native_layer_norm", in, 3, a, 2, 0, 0);
    tt_context(NULL);
}

/* ---- group norm ---------------------------------------------------------------------------------------------- */

typedef struct gn_case {
    shape x;
    int64_t groups;
} gn_case;

static const gn_case gn_cases[] = {
    {{3, {2, 6, 5}}, 1},    {{3, {2, 6, 5}}, 2},   {{3, {2, 6, 5}}, 3}, {{3, {2, 6, 5}}, 6},
    {{4, {3, 4, 2, 3}}, 2}, {{2, {1, 8}}, 4},      {{3, {0, 4, 3}}, 2}, {{3, {2, 4, 0}}, 2},
    {{3, {4, 32, 1024}}, 8},
};
#define N_GN ((int)(sizeof gn_cases / sizeof *gn_cases))

static int64_t hxw(const shape *s) {
    int64_t n = 1;
    for (int d = 2; d < s->nd; d++) n *= s->s[d];
    return n;
}

static void group_norm_forward_and_backward(void **state) {
    (void)state;
    int turn = 0;
    for (int t = 0; t < 2; t++) {
        tj_dtype dt = t ? TJ_F64 : TJ_F32;
        for (int c = 0; c < N_GN; c++)
            for (int v = 0; v < 4; v++) {
                const gn_case *gc = &gn_cases[c];
                int64_t N = gc->x.s[0], C = gc->x.s[1], S = hxw(&gc->x);
                bool big = S >= 1024;
                if (big && v != 3) continue;
                layout l = (layout)(turn++ % N_LAYOUTS);
                tj_tensor *w = v & 1 ? vec(C, dt, v & 2, -1, 1) : NULL;
                tj_tensor *b = v & 2 ? vec(C, dt, false, -1, 1) : NULL;
                tj_tensor *x = input(gc->x.s, gc->x.nd, dt, l, -2, 3);
                tj_tensor *in[3] = {x, w, b};
                tj_attr a[5];
                a[0].i = N, a[1].i = C, a[2].i = S, a[3].i = gc->groups, a[4].f = 1e-5;
                tt_context("native_group_norm %s case #%d variant %d", tj_dtype_name(dt), c, v);
                tt_cuda_check_op("aten::native_group_norm", in, 3, a, 5, rtol_of(dt),
                                     atol_of(dt));
                tj_attr ca[2];
                ca[0].i = gc->groups, ca[1].f = 1e-5;
                tt_context("group_norm %s case #%d variant %d", tj_dtype_name(dt), c, v);
                tt_cuda_check_op("aten::group_norm", in, 3, ca, 2, rtol_of(dt), atol_of(dt));
                tj_tensor *stats[3];
                assert_int_equal(tjc_invoke_nested(tj_op_find("aten::native_group_norm"), in, 3,
                                                   a, stats, 3),
                                 3);
                tj_tensor *gout = input(gc->x.s, gc->x.nd, dt, (layout)((l + 1) % N_LAYOUTS), -1, 1);
                tj_tensor *bin[5] = {gout, x, stats[1], stats[2], w};
                tt_context("native_group_norm_backward %s case #%d variant %d", tj_dtype_name(dt),
                           c, v);
                double at = atol_of(dt) * (big ? 100 : 1);
                tt_cuda_check_op("aten::native_group_norm_backward", bin, 5, a, 4, rtol_of(dt),
                                     at);
                for (int k = 0; k < 3; k++) tj_release(stats[k]);
            }
    }
    /* refused: groups that do not divide the channels */
    const int64_t sizes[3] = {2, 6, 3};
    tj_tensor *in[3] = {random_in(sizes, 3, TJ_F32, -1, 1), NULL, NULL};
    tj_attr ca[2];
    ca[0].i = 4, ca[1].f = 1e-5;
    tt_cuda_check_op("aten::group_norm", in, 3, ca, 2, 0, 0);
    tt_context(NULL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(softmax_every_dim_shape_dtype),
        TT_SCOPED_TEST(softmax_special_values),
        TT_SCOPED_TEST(softmax_long_lines),
        TT_SCOPED_TEST(batch_norm_forward),
        TT_SCOPED_TEST(batch_norm_backward),
        TT_SCOPED_TEST(layer_norm_forward_and_backward),
        TT_SCOPED_TEST(group_norm_forward_and_backward),
    };
    int rc = TT_CUDA_RUN(tests);
    if (gen) tj_generator_free(gen);
    return rc;
}
