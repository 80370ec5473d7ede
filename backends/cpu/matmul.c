/* matmul.c — CPU kernels of mm, bmm, matmul, addmm and linear, and the GEMM
 * (backends/cpu/linalg.h) that the convolution kernels share. */
#include <math.h>
#include <cblas.h>
#include <limits.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/linalg.h"
#include "linalg.h"

void tjcpu_blas_threads(int n) {
    if (n <= 0) n = tj_get_num_threads();
    if (openblas_get_num_threads() != n) openblas_set_num_threads(n);
}

/* ---- GEMM ------------------------------------------------------------------ */

/* How BLAS can read a rows x cols operand in place: as a row-major matrix with
 * leading dim ld, or as the transpose of one. Size-1 dims may have any stride. */
static bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool *trans,
                        int64_t *ld) {
    if ((cols <= 1 || cs == 1) && (rows <= 1 || (rs >= cols && rs >= 1))) {
        *trans = false;
        *ld = rows <= 1 ? (cols > 1 ? cols : 1) : rs;
    } else if ((rows <= 1 || rs == 1) && (cols <= 1 || (cs >= rows && cs >= 1))) {
        *trans = true;
        *ld = cols <= 1 ? (rows > 1 ? rows : 1) : cs;
    } else {
        return false;
    }
    return *ld <= INT_MAX;
}

/* A contiguous copy of a strided rows x cols operand (malloc'd). */
static void *pack(const tjcpu_mat *x, int64_t rows, int64_t cols, size_t es) {
    char *buf = tjc_malloc((size_t)(rows * cols) * es + 1);
    if (!buf) return NULL;
    const char *src = x->p;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
            memcpy(buf + (size_t)(i * cols + j) * es, src + (size_t)(i * x->rs + j * x->cs) * es, es);
    return buf;
}

/* The operand as BLAS takes it, packing it when its layout does not fit. */
static tj_status blas_operand(tjcpu_mat *x, int64_t rows, int64_t cols, size_t es, bool *trans,
                              int64_t *ld, void **owned) {
    *owned = NULL;
    if (blas_layout(rows, cols, x->rs, x->cs, trans, ld)) return TJ_OK;
    *owned = pack(x, rows, cols, es);
    if (!*owned) return tjc_error(TJ_ERR_MEMORY, "gemm: out of memory packing a %lldx%lld operand",
                                  (long long)rows, (long long)cols);
    *x = (tjcpu_mat){*owned, cols, 1};
    *trans = false;
    *ld = cols > 1 ? cols : 1;
    return TJ_OK;
}

static void scale_rows(tj_dtype dt, void *c, int64_t m, int64_t n, int64_t ldc, double beta) {
    for (int64_t i = 0; i < m; i++) {
        if (dt == TJ_F32) {
            float *r = (float *)c + i * ldc;
            for (int64_t j = 0; j < n; j++) r[j] = beta == 0 ? 0.0f : (float)beta * r[j];
        } else {
            double *r = (double *)c + i * ldc;
            for (int64_t j = 0; j < n; j++) r[j] = beta == 0 ? 0.0 : beta * r[j];
        }
    }
}

/* i64: unsigned arithmetic gives two's-complement wrapping without undefined
 * behaviour; rows split across threads when not already in a parallel loop. */
static void gemm_i64(int64_t m, int64_t n, int64_t k, int64_t alpha, tjcpu_mat a, tjcpu_mat b,
                     int64_t beta, int64_t *c, int64_t ldc) {
    const int64_t *ap = a.p, *bp = b.p;
    int threads = omp_in_parallel() ? 1 : tjcpu_threads_for(m * n * k / 4);
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t i = 0; i < m; i++) {
        uint64_t *row = (uint64_t *)(c + i * ldc);
        for (int64_t j = 0; j < n; j++) row[j] = beta == 0 ? 0 : row[j] * (uint64_t)beta;
        for (int64_t p = 0; p < k; p++) {
            uint64_t av = (uint64_t)alpha * (uint64_t)ap[i * a.rs + p * a.cs];
            const int64_t *brow = bp + p * b.rs;
            if (b.cs == 1)
                for (int64_t j = 0; j < n; j++) row[j] += av * (uint64_t)brow[j];
            else
                for (int64_t j = 0; j < n; j++) row[j] += av * (uint64_t)brow[j * b.cs];
        }
    }
}

/* Small products run here rather than in BLAS: OpenBLAS threads a product
 * as small as a 64 x 256 matrix-vector one, and waking its threads costs
 * more than the product (an LSTM cell at batch 1 spent most of its time
 * there). Operands contiguous along k give dot products in eight lanes;
 * rows of B contiguous along n give row updates; anything else the plain
 * loop. */
enum { SMALL_GEMM = 1 << 16 }; /* m * n * k */

#define DEFINE_SMALL_GEMM(name, T)                                                              \
    static void name(int64_t m, int64_t n, int64_t k, T alpha, tjcpu_mat a, tjcpu_mat b, T beta, \
                     T *c, int64_t ldc) {                                                       \
        const T *ap = a.p, *bp = b.p;                                                           \
        for (int64_t i = 0; i < m; i++) {                                                       \
            T *row = c + i * ldc;                                                               \
            const T *ai = ap + i * a.rs;                                                        \
            if (a.cs == 1 && b.rs == 1) {                                                       \
                for (int64_t j = 0; j < n; j++) {                                               \
                    const T *bj = bp + j * b.cs;                                                \
                    T acc[8] = {0};                                                             \
                    int64_t p = 0;                                                              \
                    for (; p + 8 <= k; p += 8)                                                  \
                        for (int l = 0; l < 8; l++) acc[l] += ai[p + l] * bj[p + l];           \
                    T sum = ((acc[0] + acc[4]) + (acc[1] + acc[5])) +                           \
                            ((acc[2] + acc[6]) + (acc[3] + acc[7]));                            \
                    for (; p < k; p++) sum += ai[p] * bj[p];                                    \
                    row[j] = beta == 0 ? alpha * sum : alpha * sum + beta * row[j];             \
                }                                                                               \
            } else if (b.cs == 1) {                                                             \
                for (int64_t j = 0; j < n; j++) row[j] = beta == 0 ? 0 : beta * row[j];        \
                for (int64_t p = 0; p < k; p++) {                                               \
                    T av = alpha * ai[p * a.cs];                                                \
                    const T *bp_row = bp + p * b.rs;                                            \
                    for (int64_t j = 0; j < n; j++) row[j] += av * bp_row[j];                   \
                }                                                                               \
            } else {                                                                            \
                for (int64_t j = 0; j < n; j++) {                                               \
                    T sum = 0;                                                                  \
                    for (int64_t p = 0; p < k; p++) sum += ai[p * a.cs] * bp[p * b.rs + j * b.cs]; \
                    row[j] = beta == 0 ? alpha * sum : alpha * sum + beta * row[j];             \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }
DEFINE_SMALL_GEMM(small_gemm_f32, float)
DEFINE_SMALL_GEMM(small_gemm_f64, double)

tj_status tjcpu_gemm(tj_dtype dt, int64_t m, int64_t n, int64_t k, double alpha, tjcpu_mat a,
                     tjcpu_mat b, double beta, void *c, int64_t ldc) {
    tjcpu_blas_check_core(); /* every BLAS call of tjit's comes through here */
    if (m <= 0 || n <= 0) return TJ_OK;
    if (dt == TJ_I64) {
        gemm_i64(m, n, k, (int64_t)alpha, a, b, (int64_t)beta, c, ldc);
        return TJ_OK;
    }
    if (k <= 0) {
        scale_rows(dt, c, m, n, ldc, beta);
        return TJ_OK;
    }
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || ldc > INT_MAX)
        return tjc_error(TJ_ERR_UNSUPPORTED, "gemm: sizes %lld x %lld x %lld exceed BLAS's int "
                         "range", (long long)m, (long long)n, (long long)k);
    if (m * n * k <= SMALL_GEMM) {
        if (dt == TJ_F32) small_gemm_f32(m, n, k, (float)alpha, a, b, (float)beta, c, ldc);
        else small_gemm_f64(m, n, k, alpha, a, b, beta, c, ldc);
        return TJ_OK;
    }
    size_t es = tj_dtype_size(dt);
    bool f32 = dt == TJ_F32;
    void *own_a = NULL, *own_b = NULL;
    tj_status st = TJ_OK;
    if (n == 1 || m == 1) {
        /* matrix-vector: y = op(M) x through gemv, which streams M once */
        bool a_is_mat = n == 1;
        tjcpu_mat mat = a_is_mat ? a : (tjcpu_mat){b.p, b.cs, b.rs}; /* m == 1: y = B^T x */
        tjcpu_mat vec = a_is_mat ? (tjcpu_mat){b.p, b.rs, 0} : (tjcpu_mat){a.p, a.cs, 0};
        int64_t rows = a_is_mat ? m : n, len = k, incy = a_is_mat ? ldc : 1;
        bool tr;
        int64_t ld;
        if ((st = blas_operand(&mat, rows, len, es, &tr, &ld, &own_a))) return st;
        if (len > 1 && (vec.rs <= 0 || vec.rs > INT_MAX)) {
            if (!(own_b = pack(&vec, len, 1, es))) {
                tjc_free(own_a);
                return tjc_error(TJ_ERR_MEMORY, "gemm: out of memory packing a vector");
            }
            vec = (tjcpu_mat){own_b, 1, 0};
        }
        int incx = len > 1 ? (int)vec.rs : 1;
        if (rows == 1) incy = 1;
        if (beta == 0) scale_rows(dt, c, a_is_mat ? m : 1, a_is_mat ? 1 : n, a_is_mat ? ldc : n, 0);
        /* a transposed operand lies as a len x rows row-major matrix */
        enum CBLAS_TRANSPOSE t = tr ? CblasTrans : CblasNoTrans;
        int M = (int)(tr ? len : rows), N = (int)(tr ? rows : len);
        if (f32)
            cblas_sgemv(CblasRowMajor, t, M, N, (float)alpha, mat.p, (int)ld, vec.p, incx,
                        (float)beta, c, (int)incy);
        else
            cblas_dgemv(CblasRowMajor, t, M, N, alpha, mat.p, (int)ld, vec.p, incx, beta, c,
                        (int)incy);
    } else {
        bool ta, tb;
        int64_t lda, ldb;
        if ((st = blas_operand(&a, m, k, es, &ta, &lda, &own_a)) ||
            (st = blas_operand(&b, k, n, es, &tb, &ldb, &own_b))) {
            tjc_free(own_a);
            return st;
        }
        enum CBLAS_TRANSPOSE ta_ = ta ? CblasTrans : CblasNoTrans, tb_ = tb ? CblasTrans : CblasNoTrans;
        if (f32)
            cblas_sgemm(CblasRowMajor, ta_, tb_, (int)m, (int)n, (int)k, (float)alpha, a.p,
                        (int)lda, b.p, (int)ldb, (float)beta, c, (int)ldc);
        else
            cblas_dgemm(CblasRowMajor, ta_, tb_, (int)m, (int)n, (int)k, alpha, a.p, (int)lda,
                        b.p, (int)ldb, beta, c, (int)ldc);
    }
    tjc_free(own_a);
    tjc_free(own_b);
    return TJ_OK;
}

/* ---- batched products ---------------------------------------------------------- */

bool tjcpu_collapse(const int64_t *sizes, const int64_t *strides, int n, int64_t *step) {
    int last = -1;
    for (int d = n - 1; d >= 0; d--) {
        if (sizes[d] == 1) continue;
        if (last < 0) {
            *step = strides[d];
        } else if (strides[d] != strides[last] * sizes[last]) {
            return false;
        }
        last = d;
    }
    if (last < 0) *step = 1;
    return *step != 0 || last < 0;
}

/* out = alpha * (A @ B) + beta * out over the geometry's batch, out being
 * contiguous. When B is shared by the whole batch and A's batch dims run on
 * from its rows (linear on [N, T, in], matmul of [N, T, k] by [k, n]), the
 * batch folds into one tall product. */
static tj_status run_product(const tjc_mm_geom *g, tj_tensor *out, double alpha, double beta) {
    size_t es = tj_dtype_size(g->dtype);
    const char *a0 = tjc_data_ptr(g->a), *b0 = tjc_data_ptr(g->b);
    char *c0 = tjc_data_ptr(out);
    int64_t m = g->m, n = g->n, k = g->k, nb = 1;
    for (int i = 0; i < g->nbatch; i++) nb *= g->batch[i];
    if (nb == 0 || m == 0 || n == 0) return TJ_OK;

    bool b_shared = true;
    for (int i = 0; i < g->nbatch; i++) b_shared = b_shared && g->b_bs[i] == 0;
    int64_t sizes[TJ_MAX_DIMS + 1], strides[TJ_MAX_DIMS + 1], rs;
    for (int i = 0; i < g->nbatch; i++) sizes[i] = g->batch[i], strides[i] = g->a_bs[i];
    sizes[g->nbatch] = m, strides[g->nbatch] = g->a_rs;
    if (nb == 1 || (b_shared && tjcpu_collapse(sizes, strides, g->nbatch + 1, &rs))) {
        tjcpu_blas_threads(0);
        tjcpu_mat a = {a0, nb == 1 ? g->a_rs : rs, g->a_cs}, b = {b0, g->b_rs, g->b_cs};
        return tjcpu_gemm(g->dtype, nb * m, n, k, alpha, a, b, beta, c0, n);
    }

    /* Small products run one per thread with single-threaded BLAS; big ones
     * one after another, each using all threads inside BLAS. */
    int64_t work = m * n * (k > 0 ? k : 1);
    int threads = tj_get_num_threads();
    if (threads > nb) threads = (int)nb;
    if (work >= ((int64_t)1 << 21) || nb * work < ((int64_t)1 << 16)) threads = 1;
    tjcpu_blas_threads(0);
    tj_status first = TJ_OK;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
    for (int64_t bi = 0; bi < nb; bi++) {
        int64_t rem = bi, ao = 0, bo = 0;
        for (int d = g->nbatch - 1; d >= 0; d--) {
            int64_t idx = rem % g->batch[d];
            rem /= g->batch[d];
            ao += idx * g->a_bs[d];
            bo += idx * g->b_bs[d];
        }
        tjcpu_mat a = {a0 + ao * (int64_t)es, g->a_rs, g->a_cs};
        tjcpu_mat b = {b0 + bo * (int64_t)es, g->b_rs, g->b_cs};
        tj_status st = tjcpu_gemm(g->dtype, m, n, k, alpha, a, b, beta, c0 + bi * m * n * (int64_t)es, n);
        if (st) {
#pragma omp critical(tjcpu_matmul_error)
            if (!first) first = st;
        }
    }
    /* a worker's message stays on its thread; say it again on the caller's */
    if (first && threads > 1)
        return tjc_error(first, "matmul: a batched product failed (%s)", tj_status_name(first));
    return first;
}

tj_status tjcpu_matmul(const tjc_call *c) {
    tjc_mm_geom g;
    tj_status st = tjc_mm_geometry(c, &g);
    return st ? st : run_product(&g, c->out[0], 1.0, 0.0);
}

/* Whether a and b are the same elements: a plan that lets addmm write over
 * its self (interpreter/plan_build.c) passes the same bytes as both, and the
 * GEMM then accumulates into them as they are. */
static bool same_place(const tj_tensor *a, const tj_tensor *b) {
    if (tjc_data_ptr(a) != tjc_data_ptr(b) || a->ndim != b->ndim || a->dtype != b->dtype) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] != b->sizes[d] || (a->sizes[d] != 1 && a->strides[d] != b->strides[d]))
            return false;
    return true;
}

tj_status tjcpu_addmm(const tjc_call *c) {
    tjc_mm_geom g;
    tj_status st = tjc_mm_geometry(c, &g);
    if (st) return st;
    double beta = c->attr[0].f, alpha = c->attr[1].f;
    if (g.dtype == TJ_I64) beta = trunc(beta), alpha = trunc(alpha); /* PyTorch converts them */
    /* beta == 0 ignores self entirely (NaN and inf included), as in PyTorch */
    if (beta != 0 && !same_place(c->out[0], c->in[0]) && (st = tjcpu_copy(c->out[0], c->in[0])))
        return st;
    return run_product(&g, c->out[0], alpha, beta);
}

tj_status tjcpu_linear(const tjc_call *c) {
    tjc_mm_geom g;
    tj_status st = tjc_mm_geometry(c, &g);
    if (st) return st;
    tj_tensor *bias = c->in[2];
    if (bias && (st = tjcpu_copy(c->out[0], bias))) return st;
    return run_product(&g, c->out[0], 1.0, bias ? 1.0 : 0.0);
}
