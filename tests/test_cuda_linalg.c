/* test_cuda_linalg.c — the CUDA matmul family (mm, bmm, matmul, addmm,
 * linear) against the CPU's kernels on the same inputs: f32, f64 and i64;
 * 1-D, 2-D and N-D matmul with broadcast batch dims; operands dense,
 * transposed, strided and expanded (the device gets the same strides);
 * size-0 and size-1 dims; addmm's beta and alpha (beta = 0 ignoring NaN);
 * the dtypes and shapes both devices refuse, with the same message; products
 * of 200x300x150 and a deep k that use many blocks and k tiles.
 *
 * Tolerance: tt_product_tol(dtype, k) — 1e-5 sqrt(k) for f32, 1e-13 sqrt(k)
 * for f64, relative and absolute, values in [-1, 1]; i64 exact.
 *
 * On a GPU (tjcu_has_libraries) two more tests compare the cuBLAS path with
 * the backend's own kernels on the same device, and show what the TF32 switch
 * does. Against the host execution harness they are skipped. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tests/support/cuda_linalg_cases.h"
#include "tjit/ops_api.h"
#ifdef TJIT_HAVE_CUDA
#include "backends/cuda/linalg.h"
#endif

static tj_generator *gen;

static tj_tensor *rnd(const int64_t *sizes, int nd, tj_dtype dt) {
    return dt == TJ_I64 ? tt_random(gen, sizes, nd, dt, -9, 9)
                        : tt_random(gen, sizes, nd, dt, -1, 1);
}

static const tj_dtype dtypes[] = {TJ_F32, TJ_F64, TJ_I64};

/* ---- mm and matmul of matrices, every layout of both operands --------------------- */

static void test_mm_layouts(void **state) {
    (void)state;
    static const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 4},   {17, 33, 65}, {64, 16, 64},
                                        {1, 40, 7}, {9, 40, 1}, {0, 4, 3},    {3, 0, 4},
                                        {4, 3, 0},  {70, 1, 66}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int d = 0; d < 3; d++)
            for (int la = 0; la < 3; la++)
                for (int lb = 0; lb < 3; lb++) {
                    const int64_t *sh = shapes[s];
                    int64_t as[2] = {sh[0], sh[1]}, bs[2] = {sh[1], sh[2]};
                    tj_tensor *in[2] = {tt_in_layout(gen, rnd(as, 2, dtypes[d]), la),
                                        tt_in_layout(gen, rnd(bs, 2, dtypes[d]), lb)};
                    double tol = tt_product_tol(dtypes[d], sh[1]);
                    tt_context("mm %lldx%lldx%lld %s, a %s, b %s", (long long)sh[0],
                               (long long)sh[1], (long long)sh[2], tj_dtype_name(dtypes[d]),
                               tt_layout_name(la), tt_layout_name(lb));
                    tt_cuda_check_op("aten::mm", in, 2, NULL, 0, tol, tol);
                    tt_cuda_check_op("aten::matmul", in, 2, NULL, 0, tol, tol);
                }
    tt_context(NULL);
}

/* Products with many blocks in each grid dim and many k tiles. */
static void test_mm_large(void **state) {
    (void)state;
    static const int64_t shapes[][3] = {{200, 300, 150}, {130, 1000, 3}, {5, 2000, 70}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int d = 0; d < 3; d++) {
            const int64_t *sh = shapes[s];
            int64_t as[2] = {sh[0], sh[1]}, bs[2] = {sh[1], sh[2]};
            tt_layout lb = s == 0 ? TT_TRANSPOSED : TT_DENSE;
            tj_tensor *in[2] = {rnd(as, 2, dtypes[d]),
                                tt_in_layout(gen, rnd(bs, 2, dtypes[d]), lb)};
            double tol = tt_product_tol(dtypes[d], sh[1]);
            tt_context("mm %lldx%lldx%lld %s", (long long)sh[0], (long long)sh[1],
                       (long long)sh[2], tj_dtype_name(dtypes[d]));
            tt_cuda_check_op("aten::mm", in, 2, NULL, 0, tol, tol);
        }
    tt_context(NULL);
}

/* ---- bmm: batch layouts ---------------------------------------------------------------- */

static void test_bmm(void **state) {
    (void)state;
    static const int64_t shapes[][4] = {{3, 4, 5, 6}, {1, 7, 3, 2}, {0, 2, 3, 4}, {5, 1, 9, 1},
                                        {2, 33, 17, 65}, {4, 3, 0, 2}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int d = 0; d < 3; d++)
            for (int la = 0; la < 4; la++) {
                const int64_t *sh = shapes[s];
                int64_t as[3] = {sh[0], sh[1], sh[2]}, bs[3] = {sh[0], sh[2], sh[3]};
                tj_tensor *a = rnd(as, 3, dtypes[d]), *b = rnd(bs, 3, dtypes[d]);
                if (la == 3) { /* a batch of one expanded: batch stride 0 */
                    int64_t one[3] = {1, sh[1], sh[2]};
                    a = tj_expand(rnd(one, 3, dtypes[d]), as, 3);
                    b = tt_in_layout(gen, b, TT_TRANSPOSED);
                } else {
                    a = tt_in_layout(gen, a, la);
                    b = tt_in_layout(gen, b, (la + 1) % 3);
                }
                tj_tensor *in[2] = {a, b};
                double tol = tt_product_tol(dtypes[d], sh[2]);
                tt_context("bmm %lld x %lldx%lldx%lld %s layout %d", (long long)sh[0],
                           (long long)sh[1], (long long)sh[2], (long long)sh[3],
                           tj_dtype_name(dtypes[d]), la);
                tt_cuda_check_op("aten::bmm", in, 2, NULL, 0, tol, tol);
            }
    /* a batch dim that is not outermost in memory: [b, m, k] permuted from [m, b, k] */
    int64_t mbk[3] = {4, 3, 5}, bkn[3] = {3, 5, 2}, perm[3] = {1, 0, 2};
    tj_tensor *in[2] = {tj_permute(rnd(mbk, 3, TJ_F32), perm, 3), rnd(bkn, 3, TJ_F32)};
    tt_cuda_check_op("aten::bmm", in, 2, NULL, 0, tt_product_tol(TJ_F32, 5),
                         tt_product_tol(TJ_F32, 5));
    tt_context(NULL);
}

/* ---- matmul: 1-D and N-D operands, broadcast batch dims -------------------------------- */

typedef struct mshape {
    int na, nb;
    int64_t a[5], b[5];
} mshape;

static void test_matmul_broadcast(void **state) {
    (void)state;
    static const mshape cases[] = {
        {1, 1, {7}, {7}},                        /* dot */
        {1, 1, {0}, {0}},                        /* empty dot */
        {1, 2, {4}, {4, 3}},                     /* vector @ matrix */
        {2, 1, {3, 4}, {4}},                     /* matrix @ vector */
        {4, 1, {2, 3, 5, 4}, {4}},               /* N-D @ vector */
        {1, 3, {4}, {2, 4, 3}},                  /* vector @ N-D */
        {4, 3, {2, 1, 3, 4}, {5, 4, 2}},         /* batch dims broadcast both ways */
        {2, 3, {3, 4}, {2, 4, 5}},               /* a shared, b batched */
        {3, 2, {6, 3, 4}, {4, 5}},               /* b shared: folds into one tall product */
        {5, 4, {2, 1, 3, 2, 4}, {1, 3, 4, 6}},   /* three batch dims */
        {3, 3, {0, 3, 4}, {1, 4, 2}},            /* empty batch */
        {3, 3, {2, 3, 0}, {2, 0, 2}},            /* empty inner dim */
    };
    for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++)
        for (int d = 0; d < 3; d++)
            for (int l = 0; l < 3; l++) {
                const mshape *c = &cases[s];
                tj_tensor *in[2] = {tt_in_layout(gen, rnd(c->a, c->na, dtypes[d]), l),
                                    tt_in_layout(gen, rnd(c->b, c->nb, dtypes[d]), (l + 2) % 3)};
                double tol = tt_product_tol(dtypes[d], c->a[c->na - 1]);
                tt_context("matmul case %zu %s layout %d", s, tj_dtype_name(dtypes[d]), l);
                tt_cuda_check_op("aten::matmul", in, 2, NULL, 0, tol, tol);
            }
    /* b broadcast along a batch dim by expand (stride 0 in the middle) */
    int64_t a_s[3] = {3, 4, 5}, b1[3] = {1, 5, 2}, b_s[3] = {3, 5, 2};
    tj_tensor *in[2] = {rnd(a_s, 3, TJ_F64), tj_expand(rnd(b1, 3, TJ_F64), b_s, 3)};
    tt_cuda_check_op("aten::matmul", in, 2, NULL, 0, tt_product_tol(TJ_F64, 5),
                         tt_product_tol(TJ_F64, 5));
    tt_context(NULL);
}

/* ---- addmm and linear ------------------------------------------------------------------- */

static void test_addmm(void **state) {
    (void)state;
    static const double ba[][2] = {{1, 1}, {0.5, -2}, {0, 1}, {-1, 0}, {2, 3}};
    int64_t m1s[2] = {5, 7}, m2s[2] = {7, 6};
    int64_t self_shapes[][2] = {{5, 6}, {1, 6}, {5, 1}, {6, 0}, {0, 0}};
    int self_nd[] = {2, 2, 2, 1, 0};
    for (int d = 0; d < 3; d++)
        for (size_t k = 0; k < sizeof ba / sizeof ba[0]; k++)
            for (int s = 0; s < 5; s++) {
                int64_t sz[2] = {self_shapes[s][0], self_shapes[s][1]};
                tj_tensor *self = rnd(sz, self_nd[s], dtypes[d]);
                if (k == 2 && dtypes[d] != TJ_I64) /* beta = 0: self's NaN is not read */
                    self = tj_full(sz, self_nd[s], NAN, dtypes[d]);
                tj_tensor *in[3] = {tt_in_layout(gen, self, TT_STRIDED),
                                    tt_in_layout(gen, rnd(m1s, 2, dtypes[d]), (int)k % 3),
                                    tt_in_layout(gen, rnd(m2s, 2, dtypes[d]), (int)(k + s) % 3)};
                tj_attr at[2] = {{.f = ba[k][0]}, {.f = ba[k][1]}};
                double tol = tt_product_tol(dtypes[d], 7);
                tt_context("addmm %s beta %g alpha %g self %d", tj_dtype_name(dtypes[d]),
                           ba[k][0], ba[k][1], s);
                tt_cuda_check_op("aten::addmm", in, 3, at, 2, tol, tol);
            }
    /* an empty inner dim: the result is beta * self */
    int64_t e1[2] = {3, 0}, e2[2] = {0, 4}, es[2] = {3, 4};
    tj_tensor *in[3] = {rnd(es, 2, TJ_F32), rnd(e1, 2, TJ_F32), rnd(e2, 2, TJ_F32)};
    tj_attr at[2] = {{.f = 0.5}, {.f = INFINITY}};
    tt_cuda_check_op("aten::addmm", in, 3, at, 2, 0, 0);
    /* i64 truncates float beta and alpha (PyTorch) and refuses ones beyond i64 */
    int64_t is[2] = {2, 2};
    tj_tensor *ii[3] = {rnd(is, 2, TJ_I64), rnd(is, 2, TJ_I64), rnd(is, 2, TJ_I64)};
    tj_attr half[2] = {{.f = 0.5}, {.f = 2.5}}, huge[2] = {{.f = NAN}, {.f = 1}};
    tt_cuda_check_op("aten::addmm", ii, 3, half, 2, 0, 0);
    tt_cuda_check_refused("aten::addmm", ii, 3, huge, 2);
    tt_context(NULL);
}

static void test_linear(void **state) {
    (void)state;
    typedef struct lshape {
        int nd;
        int64_t x[4];
        int64_t out;
    } lshape;
    static const lshape cases[] = {{1, {6}, 4},          {2, {5, 6}, 4},  {3, {2, 3, 6}, 5},
                                   {4, {2, 1, 3, 16}, 33}, {2, {0, 6}, 3}, {2, {4, 6}, 1},
                                   {2, {3, 0}, 2},        {3, {4, 50, 40}, 70}};
    for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++)
        for (int d = 0; d < 3; d++)
            for (int l = 0; l < 3; l++)
                for (int bias = 0; bias < 3; bias++) {
                    const lshape *c = &cases[s];
                    int64_t in_f = c->x[c->nd - 1], ws[2] = {c->out, in_f}, bs[2] = {1, c->out};
                    tj_tensor *b = bias == 0 ? NULL : rnd(bias == 1 ? bs + 1 : bs, bias, dtypes[d]);
                    tj_tensor *in[3] = {tt_in_layout(gen, rnd(c->x, c->nd, dtypes[d]), l),
                                        tt_in_layout(gen, rnd(ws, 2, dtypes[d]), (l + 1) % 3),
                                        b ? tt_in_layout(gen, b, TT_STRIDED) : NULL};
                    double tol = tt_product_tol(dtypes[d], in_f);
                    tt_context("linear case %zu %s layout %d bias %d", s,
                               tj_dtype_name(dtypes[d]), l, bias);
                    tt_cuda_check_op("aten::linear", in, 3, NULL, 0, tol, tol);
                }
    tt_context(NULL);
}

/* ---- special values: inf, -inf, NaN, -0 and denormals flow through products -------------- */

static void test_special_values(void **state) {
    (void)state;
    const double special[] = {INFINITY, -INFINITY, NAN, -0.0, 1e-310, -3e-320};
    int64_t as[2] = {6, 8}, bs[2] = {8, 5};
    double av[48], bv[40];
    for (int i = 0; i < 48; i++) av[i] = (double)((i * 7) % 13) / 6.5 - 1;
    for (int i = 0; i < 40; i++) bv[i] = i < 5 ? 0.0 : (double)((i * 5) % 11) / 5.5 - 1;
    /* one special value per row of a, in a different column each; b's first
     * row is 0, so an infinity in a's first column meets 0 (NaN on both) */
    for (int i = 0; i < 6; i++) av[i * 8 + (i * 3) % 8] = special[i];
    for (int d = 0; d < 2; d++) {
        tj_tensor *a = tj_to_dtype(tj_from_array(av, as, 2, TJ_F64), dtypes[d]);
        tj_tensor *b = tj_to_dtype(tj_from_array(bv, bs, 2, TJ_F64), dtypes[d]);
        tj_tensor *in[2] = {a, tt_in_layout(gen, b, TT_TRANSPOSED)};
        tt_context("special values, %s", tj_dtype_name(dtypes[d]));
        double tol = tt_product_tol(dtypes[d], 8);
        tt_cuda_check_op("aten::mm", in, 2, NULL, 0, tol, tol);
        tj_tensor *bt[2] = {tt_in_layout(gen, b, TT_STRIDED), tj_transpose(a, 0, 1)};
        tt_cuda_check_op("aten::mm", bt, 2, NULL, 0, tol, tol);
    }
    tt_context(NULL);
}

/* ---- refusals: the same message on both devices ----------------------------------------- */

static void test_refusals(void **state) {
    (void)state;
    int64_t a[2] = {2, 3}, b[2] = {3, 4}, bad[2] = {4, 4}, v3[3] = {2, 3, 3};
    tj_tensor *bools[2] = {tj_ones(a, 2, TJ_BOOL), tj_ones(b, 2, TJ_BOOL)};
    tj_tensor *mixed[2] = {rnd(a, 2, TJ_F32), rnd(b, 2, TJ_F64)};
    tj_tensor *mismatch[2] = {rnd(a, 2, TJ_F32), rnd(bad, 2, TJ_F32)};
    tj_tensor *not2d[2] = {rnd(v3, 3, TJ_F32), rnd(b, 2, TJ_F32)};
    const char *ops[] = {"aten::mm", "aten::matmul", "aten::bmm"};
    for (int o = 0; o < 3; o++) {
        tt_context("%s refusals", ops[o]);
        tt_cuda_check_refused(ops[o], bools, 2, NULL, 0);
        tt_cuda_check_refused(ops[o], mixed, 2, NULL, 0);
        tt_cuda_check_refused(ops[o], mismatch, 2, NULL, 0);
    }
    tt_cuda_check_refused("aten::mm", not2d, 2, NULL, 0);
    tj_tensor *lin[3] = {rnd(a, 2, TJ_F32), rnd(bad, 2, TJ_F32), NULL};
    tt_cuda_check_refused("aten::linear", lin, 3, NULL, 0);
    tt_context(NULL);
}

/* ---- cuBLAS's plan, checked on the host ------------------------------------------------
 * tjcu_blas_plan_of turns a row-major strided product into column-major
 * cublas<t>gemmStridedBatched calls. Here those calls run on host doubles as
 * cuBLAS's documentation defines them, for operands transposed, doubly
 * strided (packed first), broadcast and batched every way, and must give the
 * row-major product. */
#ifdef TJIT_HAVE_CUDA
/* C[z] = alpha op(A[z]) op(B[z]) + beta C[z], column-major, z < count */
static void blas_reference(const tjcu_blas_plan *p, const double *A, const double *B, double *C,
                           double alpha, double beta) {
    for (int64_t z = 0; z < p->count; z++)
        for (int64_t i = 0; i < p->m; i++)
            for (int64_t j = 0; j < p->n; j++) {
                double s = 0;
                for (int64_t l = 0; l < p->k; l++) {
                    double a = p->trans_a ? A[z * p->stride_a + l + i * p->lda]
                                          : A[z * p->stride_a + i + l * p->lda];
                    double b = p->trans_b ? B[z * p->stride_b + j + l * p->ldb]
                                          : B[z * p->stride_b + l + j * p->ldb];
                    s += a * b;
                }
                double *c = &C[z * p->stride_c + i + j * p->ldc];
                *c = alpha * s + (beta == 0 ? 0 : beta * *c);
            }
}

/* The packed copy of a view, as gemm_pack_8 makes it. */
static double *host_pack(const tjcu_tensor_arg *v, int64_t elems) {
    double *out = test_malloc(sizeof(double) * (size_t)(elems ? elems : 1));
    int64_t idx[TJCU_MAX_DIMS] = {0};
    for (int64_t i = 0; i < elems; i++) {
        int64_t off = 0;
        for (int d = 0; d < v->ndim; d++) off += idx[d] * v->strides[d];
        out[i] = ((const double *)v->data)[off];
        tt_next_index(idx, v->sizes, v->ndim);
    }
    return out;
}

typedef struct pgeom {
    int64_t m, n, k;
    int nb;
    int64_t batch[3];
} pgeom;

/* Strides of one operand (rows x cols) in layout l, batch dims after it in
 * order (bl 0), broadcast (bl 1, stride 0) or outer dims innermost (bl 2);
 * returns the storage it needs. */
static int64_t operand_strides(int64_t rows, int64_t cols, int l, int bl, const pgeom *g,
                               int64_t *rs, int64_t *cs, int64_t *bs) {
    int64_t span;
    switch (l) {
    case 0: *rs = cols, *cs = 1, span = rows * cols; break;            /* row-major */
    case 1: *rs = 1, *cs = rows, span = rows * cols; break;            /* transposed */
    case 2: *rs = 2 * cols + 1, *cs = 2, span = rows * (2 * cols + 1); break; /* doubly strided */
    default: *rs = 0, *cs = 1, span = cols; break;                     /* rows broadcast */
    }
    int64_t stride = span;
    if (bl == 1) {
        for (int d = 0; d < g->nb; d++) bs[d] = 0;
    } else if (bl == 0) {
        for (int d = g->nb - 1; d >= 0; d--) bs[d] = stride, stride *= g->batch[d];
    } else {
        for (int d = 0; d < g->nb; d++) bs[d] = stride, stride *= g->batch[d];
    }
    return stride + 1;
}

typedef struct plan_counts {
    int plans, packed, folded, looped;
} plan_counts;

/* One geometry with A in layout la (batch layout ba), B in lb (bb): the plan's
 * calls, run as cuBLAS defines them, must give the row-major product. */
static void check_plan(const pgeom *pg, int la, int ba, int lb, int bb, plan_counts *n) {
    tjcu_gemm g = {.dtype = TJ_F64, .m = pg->m, .n = pg->n, .k = pg->k, .nbatch = pg->nb,
                   .alpha = 1.5, .beta = 0.5, .c_rs = pg->n, .c_cs = 1};
    memcpy(g.batch, pg->batch, sizeof pg->batch);
    int64_t na = operand_strides(pg->m, pg->k, la, ba, pg, &g.a_rs, &g.a_cs, g.a_bs);
    int64_t nbs = operand_strides(pg->k, pg->n, lb, bb, pg, &g.b_rs, &g.b_cs, g.b_bs);
    int64_t total = pg->m * pg->n;
    for (int d = pg->nb - 1; d >= 0; d--) g.c_bs[d] = total, total *= pg->batch[d];
    double *A = test_malloc(sizeof(double) * (size_t)na);
    double *B = test_malloc(sizeof(double) * (size_t)nbs);
    double *C = test_malloc(sizeof(double) * (size_t)total);
    double *want = test_malloc(sizeof(double) * (size_t)total);
    for (int64_t i = 0; i < na; i++) A[i] = (double)((i * 7 + 3) % 11) - 5;
    for (int64_t i = 0; i < nbs; i++) B[i] = (double)((i * 5 + 1) % 13) - 6;
    for (int64_t i = 0; i < total; i++) C[i] = want[i] = (double)(i % 5) - 2;
    g.a = A, g.b = B, g.c = C;
    /* the row-major product, straight from tjcu_gemm's definition */
    for (int64_t z = 0; z < total / (pg->m * pg->n); z++) {
        int64_t rem = z, ao = 0, bo = 0, co = 0;
        for (int d = pg->nb - 1; d >= 0; d--) {
            int64_t idx = rem % pg->batch[d];
            rem /= pg->batch[d];
            ao += idx * g.a_bs[d], bo += idx * g.b_bs[d], co += idx * g.c_bs[d];
        }
        for (int64_t i = 0; i < pg->m; i++)
            for (int64_t j = 0; j < pg->n; j++) {
                double s = 0;
                for (int64_t l = 0; l < pg->k; l++)
                    s += A[ao + i * g.a_rs + l * g.a_cs] * B[bo + l * g.b_rs + j * g.b_cs];
                want[co + i * g.c_rs + j] = g.alpha * s + g.beta * want[co + i * g.c_rs + j];
            }
    }
    tjcu_blas_plan p;
    assert_true(tjcu_blas_plan_of(&g, &p));
    /* cuBLAS's constraints on its arguments */
    assert_true(p.m >= 1 && p.n >= 1 && p.k >= 1 && p.count >= 1 && p.calls >= 1);
    assert_true(p.lda >= (p.trans_a ? p.k : p.m) && p.lda <= INT32_MAX);
    assert_true(p.ldb >= (p.trans_b ? p.n : p.k) && p.ldb <= INT32_MAX);
    assert_true(p.ldc >= p.m && p.ldc <= INT32_MAX && p.stride_c >= 0);
    double *pa = p.pack_a ? host_pack(&p.pack_view_a, p.pack_elems_a) : NULL;
    double *pb = p.pack_b ? host_pack(&p.pack_view_b, p.pack_elems_b) : NULL;
    for (int64_t i = 0; i < p.calls; i++) { /* cuBLAS's A is our B */
        int64_t off[3];
        tjcu_blas_plan_offsets(&p, i, off);
        blas_reference(&p, (pa ? pa : B) + off[0], (pb ? pb : A) + off[1], C + off[2], g.alpha,
                       g.beta);
    }
    for (int64_t i = 0; i < total; i++)
        if (C[i] != want[i])
            fail_msg("element %lld is %g, not %g", (long long)i, C[i], want[i]);
    n->plans++;
    n->packed += p.pack_a || p.pack_b;
    n->folded += pg->nb > 0 && p.count == 1 && p.calls == 1;
    n->looped += p.calls > 1;
    test_free(pa);
    test_free(pb);
    test_free(A);
    test_free(B);
    test_free(C);
    test_free(want);
}

static void test_cublas_plan(void **state) {
    (void)state;
    static const pgeom geoms[] = {
        {5, 4, 3, 0, {0}},    {1, 6, 4, 0, {0}},       {7, 1, 5, 0, {0}},    {1, 1, 9, 0, {0}},
        {4, 3, 2, 1, {3}},    {3, 5, 4, 2, {2, 3}},    {2, 3, 4, 3, {2, 1, 3}},
        {6, 2, 3, 2, {4, 2}},
    };
    plan_counts n = {0, 0, 0, 0};
    for (size_t gi = 0; gi < sizeof geoms / sizeof geoms[0]; gi++)
        for (int la = 0; la < 4; la++)
            for (int lb = 0; lb < 3; lb++)
                for (int ba = 0; ba < 3; ba++)
                    for (int bb = 0; bb < 3; bb++) {
                        if (geoms[gi].nb == 0 && (ba || bb)) continue;
                        tt_context("plan: geometry %zu, a layout %d batch %d, b layout %d batch "
                                   "%d", gi, la, ba, lb, bb);
                        check_plan(&geoms[gi], la, ba, lb, bb, &n);
                    }
    printf("test_cublas_plan: %d plans run on the host (%d packing an operand, %d batches folded "
           "into one product, %d looping calls)\n", n.plans, n.packed, n.folded, n.looped);
    assert_true(n.packed > 0 && n.folded > 0 && n.looped > 0);
    /* what cuBLAS does not take */
    tjcu_gemm i64 = {.dtype = TJ_I64, .m = 2, .n = 2, .k = 2, .c_rs = 2, .c_cs = 1};
    tjcu_gemm k0 = {.dtype = TJ_F32, .m = 2, .n = 2, .k = 0, .c_rs = 2, .c_cs = 1};
    tjcu_blas_plan p;
    assert_false(tjcu_blas_plan_of(&i64, &p));
    assert_false(tjcu_blas_plan_of(&k0, &p));
    tt_context(NULL);
}
#endif

/* ---- on a GPU: cuBLAS against the own kernels; TF32 ------------------------------------- */

#ifdef TJIT_HAVE_CUDA
static bool gpu_libraries(void) { return tjcu_has_libraries(TT_CUDA0); }

/* The op on cuda:0 through cuBLAS and through the own kernels (libraries
 * switched off for this thread), as host tensors. */
static void both_paths(const char *name, tj_tensor *const *in, int n_in, const tj_attr *at,
                       int n_at, tj_tensor **lib, tj_tensor **own) {
    tj_tensor *dev[4];
    for (int i = 0; i < n_in; i++) dev[i] = tt_cuda_copy_like(in[i]);
    int id = tj_op_id(tj_op_find(name));
    tj_tensor *out[2] = {NULL, NULL};
    assert_int_equal(tj_invoke(id, dev, n_in, at, n_at, &out[0], 1), 1);
    tjcu_linalg_set_libraries(false);
    int n = tj_invoke(id, dev, n_in, at, n_at, &out[1], 1);
    tjcu_linalg_set_libraries(true);
    assert_int_equal(n, 1);
    *lib = tj_to_device(out[0], TJ_DEVICE_CPU);
    *own = tj_to_device(out[1], TJ_DEVICE_CPU);
    for (int i = 0; i < n_in; i++) tj_release(dev[i]);
}

static void test_cublas_against_own_kernels(void **state) {
    (void)state;
    if (!gpu_libraries()) skip();
    int64_t as[3] = {3, 40, 70}, bs[3] = {3, 70, 50}, a2[2] = {129, 257}, b2[2] = {257, 65};
    for (int d = 0; d < 2; d++)
        for (int l = 0; l < TT_N_LAYOUTS; l++) {
            tj_tensor *bm[2] = {tt_in_layout(gen, rnd(as, 3, dtypes[d]), l),
                                tt_in_layout(gen, rnd(bs, 3, dtypes[d]), (l + 1) % 3)};
            tj_tensor *mm[2] = {tt_in_layout(gen, rnd(a2, 2, dtypes[d]), l % 3),
                                tt_in_layout(gen, rnd(b2, 2, dtypes[d]), (l + 2) % 3)};
            tj_tensor *lib, *own;
            tt_context("bmm and mm, cuBLAS against own kernels, %s %s", tj_dtype_name(dtypes[d]),
                       tt_layout_name(l));
            both_paths("aten::bmm", bm, 2, NULL, 0, &lib, &own);
            tt_ref r = tt_ref_of(own);
            double tol = tt_product_tol(dtypes[d], 70);
            tt_assert_close_ref(lib, &r, tol, tol);
            tt_ref_free(&r);
            both_paths("aten::mm", mm, 2, NULL, 0, &lib, &own);
            r = tt_ref_of(own);
            tt_assert_close_ref(lib, &r, tt_product_tol(dtypes[d], 257),
                                tt_product_tol(dtypes[d], 257));
            tt_ref_free(&r);
            /* and both against the CPU */
            tt_cuda_check_op("aten::bmm", bm, 2, NULL, 0, tt_product_tol(dtypes[d], 70),
                                 tt_product_tol(dtypes[d], 70));
        }
    tt_context(NULL);
}

/* Largest |got - want| / max|want| of an f32 product against its f64 value. */
static double rel_error(tj_tensor *got, tj_tensor *want) {
    tt_ref g = tt_ref_of(got), w = tt_ref_of(want);
    double err = 0, scale = 0;
    for (int64_t i = 0; i < w.numel; i++) {
        err = fmax(err, fabs(g.v[i] - w.v[i]));
        scale = fmax(scale, fabs(w.v[i]));
    }
    tt_ref_free(&g);
    tt_ref_free(&w);
    return err / scale;
}

static void test_tf32_switch(void **state) {
    (void)state;
    if (!gpu_libraries()) skip();
    int64_t n = 512, sz[2] = {n, n};
    tj_tensor *a = rnd(sz, 2, TJ_F32), *b = rnd(sz, 2, TJ_F32);
    tj_tensor *want = tj_mm(tj_to_dtype(a, TJ_F64), tj_to_dtype(b, TJ_F64));
    tj_tensor *da = tj_to_device(a, TT_CUDA0), *db = tj_to_device(b, TT_CUDA0);
    assert_false(tj_cuda_allow_tf32());
    double off = rel_error(tj_to_device(tj_mm(da, db), TJ_DEVICE_CPU), want);
    tj_cuda_set_allow_tf32(true);
    double on = rel_error(tj_to_device(tj_mm(da, db), TJ_DEVICE_CPU), want);
    tj_cuda_set_allow_tf32(false);
    double again = rel_error(tj_to_device(tj_mm(da, db), TJ_DEVICE_CPU), want);
    printf("test_tf32_switch: 512^3 f32 mm, largest error / largest value: TF32 off %.2e, on "
           "%.2e, off again %.2e (compute capability %d)\n", off, on, again,
           tjcu_compute_major(TT_CUDA0));
    assert_true(off < 1e-5 && again == off);
    /* TF32 tensor cores exist from Ampere on; before, the switch changes nothing */
    if (tjcu_compute_major(TT_CUDA0) >= 8) assert_true(on > 10 * off && on < 1e-2);
    else assert_true(on == off);
}
#endif

int main(void) {
    gen = tj_generator_new(20240611);
    const struct CMUnitTest tests[] = {
        TT_SCOPED_TEST(test_mm_layouts),     TT_SCOPED_TEST(test_mm_large),
        TT_SCOPED_TEST(test_bmm),            TT_SCOPED_TEST(test_matmul_broadcast),
        TT_SCOPED_TEST(test_addmm),          TT_SCOPED_TEST(test_linear),
        TT_SCOPED_TEST(test_special_values), TT_SCOPED_TEST(test_refusals),
#ifdef TJIT_HAVE_CUDA
        TT_SCOPED_TEST(test_cublas_plan),
        TT_SCOPED_TEST(test_cublas_against_own_kernels), TT_SCOPED_TEST(test_tf32_switch),
#endif
    };
    int rc = TT_CUDA_RUN(tests);
    tj_generator_free(gen);
    return rc;
}
