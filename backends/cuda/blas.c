/* blas.c — products on cuBLAS (linalg.h): one handle per device per thread,
 * bound to the thread's stream, with a workspace from the caching allocator
 * (so steady-state work allocates nothing from the driver), and the CUDA
 * runtime's device binding that cuBLAS and cuDNN share.
 *
 * tjit's matrices are row-major and cuBLAS's column-major: C = A B is run as
 * C^T = B^T A^T, where a row-major operand with unit column stride is its own
 * transpose in column-major order (op N) and one with unit row stride is read
 * with op T. An operand with neither (a doubly strided view) is packed first.
 * Batch dims become one strided-batched call over the innermost run of dims
 * whose strides collapse for all three operands, looped over the rest; a
 * shared B whose A rows run on through A's batch dims (linear on [N, T, in])
 * becomes one tall product, as on the CPU.
 *
 * f32 runs with CUBLAS_DEFAULT_MATH (full f32 inputs: no TF32) unless
 * tj_cuda_set_allow_tf32(true), then CUBLAS_TF32_TENSOR_OP_MATH.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/linalg.h"

/* ---- the runtime's device --------------------------------------------------------- */

tj_status tjcu_runtime_bind(const char *op, tj_device dev) {
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur == dev.index) return TJ_OK;
    cudaError_t e = cudaSetDevice(dev.index);
    if (e != cudaSuccess)
        return tjc_error(TJ_ERR_DEVICE, "%s: cudaSetDevice(%d) failed: %s", op, dev.index,
                         cudaGetErrorString(e));
    return TJ_OK;
}

int tjcu_compute_major(tj_device dev) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev.index) != cudaSuccess)
        return 0;
    return major;
}

/* ---- handles ------------------------------------------------------------------------ */

enum { MAX_DEVICES = 64 };
/* cuBLAS's recommendation for Hopper; ample for earlier GPUs */
#define WORKSPACE_BYTES ((size_t)32 << 20)

typedef struct blas_slot {
    cublasHandle_t handle;
    void *stream;    /* the stream the handle is bound to */
    void *workspace; /* WORKSPACE_BYTES from tjcu_malloc, on that stream */
    int math;        /* the cublasMath_t set on the handle, -1 before any */
} blas_slot;

typedef struct blas_thread {
    blas_slot slot[MAX_DEVICES];
} blas_thread;

static _Thread_local blas_thread *this_thread;
static pthread_key_t thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* At thread exit: the thread's handles and workspaces go. */
static void release_thread(void *p) {
    blas_thread *t = p;
    for (int i = 0; i < MAX_DEVICES; i++) {
        blas_slot *s = &t->slot[i];
        if (!s->handle) continue;
        cublasDestroy(s->handle);
        if (s->workspace) tjcu_free((tj_device){TJ_CUDA, i}, s->workspace);
    }
    free(t);
}

static void make_key(void) { pthread_key_create(&thread_key, release_thread); }

static tj_status blas_error(const char *op, const char *call, cublasStatus_t s) {
    return tjc_error(s == CUBLAS_STATUS_ALLOC_FAILED ? TJ_ERR_MEMORY : TJ_ERR_DEVICE,
                     "%s: %s failed: %s (%s)", op, call, cublasGetStatusName(s),
                     cublasGetStatusString(s));
}

/* This thread's handle for dev, bound to its current stream, in the math
 * mode the TF32 switch asks for. */
static tj_status handle_for(const char *op, tj_device dev, cublasHandle_t *out) {
    if (dev.index < 0 || dev.index >= MAX_DEVICES)
        return tjc_error(TJ_ERR_DEVICE, "%s: cuda:%d is beyond the %d devices cuBLAS is set up "
                         "for", op, dev.index, MAX_DEVICES);
    tj_status st = tjcu_runtime_bind(op, dev);
    if (st) return st;
    if (!this_thread) {
        if (!(this_thread = calloc(1, sizeof *this_thread)))
            return tjc_error(TJ_ERR_MEMORY, "%s: out of memory for cuBLAS handles", op);
        pthread_once(&key_once, make_key);
        pthread_setspecific(thread_key, this_thread);
    }
    blas_slot *s = &this_thread->slot[dev.index];
    cublasStatus_t bs;
    if (!s->handle) {
        if ((bs = cublasCreate(&s->handle)) != CUBLAS_STATUS_SUCCESS) {
            s->handle = NULL;
            return blas_error(op, "cublasCreate", bs);
        }
        s->math = -1;
    }
    void *stream = tjcu_stream(dev);
    if (!s->workspace || stream != s->stream) {
        /* cublasSetStream resets the workspace to cuBLAS's own pool: set ours again */
        if ((bs = cublasSetStream(s->handle, (cudaStream_t)stream)) != CUBLAS_STATUS_SUCCESS)
            return blas_error(op, "cublasSetStream", bs);
        if (s->workspace) tjcu_free(dev, s->workspace);
        s->stream = stream;
        s->workspace = tjcu_malloc(dev, WORKSPACE_BYTES);
        if (!s->workspace) return tj_last_status();
        if ((bs = cublasSetWorkspace(s->handle, s->workspace, WORKSPACE_BYTES)) !=
            CUBLAS_STATUS_SUCCESS)
            return blas_error(op, "cublasSetWorkspace", bs);
    }
    int math = tj_cuda_allow_tf32() ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH;
    if (s->math != math) {
        if ((bs = cublasSetMathMode(s->handle, (cublasMath_t)math)) != CUBLAS_STATUS_SUCCESS)
            return blas_error(op, "cublasSetMathMode", bs);
        s->math = math;
    }
    *out = s->handle;
    return TJ_OK;
}

/* ---- products ---------------------------------------------------------------------------- */

/* How cuBLAS reads a row-major rows x cols operand (rs, cs) as the
 * column-major cols x rows matrix it needs: in place (op N, ld rs) or as the
 * transpose of what lies there (op T, ld cs). Size-1 dims take any stride. */
static bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, cublasOperation_t *op,
                        int64_t *ld) {
    if ((cols <= 1 || cs == 1) && (rows <= 1 || rs >= cols)) {
        *op = CUBLAS_OP_N;
        *ld = rows <= 1 ? (cols > 1 ? cols : 1) : rs;
    } else if ((rows <= 1 || rs == 1) && (cols <= 1 || cs >= rows)) {
        *op = CUBLAS_OP_T;
        *ld = cols <= 1 ? (rows > 1 ? rows : 1) : cs;
    } else {
        return false;
    }
    return *ld >= 1 && *ld <= INT_MAX;
}

/* One operand of the product as cuBLAS takes it. */
typedef struct operand {
    const char *p;
    int64_t rows, cols, rs, cs;
    int64_t bs[TJ_MAX_DIMS];
    cublasOperation_t op;
    int64_t ld;
    void *packed; /* scratch holding a packed copy, or NULL */
} operand;

/* Packs x (with its batch dims) into contiguous scratch when its layout does
 * not fit cuBLAS. */
static tj_status fit_operand(const char *op, tj_device dev, operand *x, const int64_t *batch,
                             int nbatch, size_t es) {
    x->packed = NULL;
    if (blas_layout(x->rows, x->cols, x->rs, x->cs, &x->op, &x->ld)) return TJ_OK;
    tjcu_tensor_arg v = {.data = (void *)x->p, .ndim = nbatch + 2, .contiguous = 0};
    int64_t count = x->rows * x->cols;
    for (int d = 0; d < nbatch; d++) v.sizes[d] = batch[d], v.strides[d] = x->bs[d];
    v.sizes[nbatch] = x->rows, v.strides[nbatch] = x->rs;
    v.sizes[nbatch + 1] = x->cols, v.strides[nbatch + 1] = x->cs;
    for (int d = 0; d < nbatch; d++) count *= batch[d];
    if (!(x->packed = tjcu_malloc(dev, (size_t)count * es))) return tj_last_status();
    tj_status st = tjcu_pack(op, dev, &v, es, x->packed);
    if (st) return st;
    x->p = x->packed;
    x->rs = x->cols, x->cs = 1;
    int64_t stride = x->rows * x->cols;
    for (int d = nbatch - 1; d >= 0; d--) x->bs[d] = stride, stride *= batch[d];
    blas_layout(x->rows, x->cols, x->rs, x->cs, &x->op, &x->ld);
    return TJ_OK;
}

static cublasStatus_t strided_batched(cublasHandle_t h, tj_dtype dt, const operand *a,
                                      const operand *b, int64_t m, int64_t n, int64_t k,
                                      double alpha, double beta, char *c, int64_t ldc,
                                      int64_t sa, int64_t sb, int64_t sc, int64_t count) {
    /* C^T [n, m] = op(B^T) [n, k] * op(A^T) [k, m] in column-major terms */
    if (dt == TJ_F32) {
        float al = (float)alpha, be = (float)beta;
        return cublasSgemmStridedBatched(h, b->op, a->op, (int)n, (int)m, (int)k, &al,
                                         (const float *)b->p, (int)b->ld, sb, (const float *)a->p,
                                         (int)a->ld, sa, &be, (float *)c, (int)ldc, sc, (int)count);
    }
    return cublasDgemmStridedBatched(h, b->op, a->op, (int)n, (int)m, (int)k, &alpha,
                                     (const double *)b->p, (int)b->ld, sb, (const double *)a->p,
                                     (int)a->ld, sa, &beta, (double *)c, (int)ldc, sc, (int)count);
}

/* The product over nb batch dims: the innermost dims whose strides collapse
 * for A, B and C go to one strided-batched call, the outer ones are looped. */
static tj_status run_batches(const char *op, cublasHandle_t h, const tjcu_gemm *g,
                             const operand *a, const operand *b, const int64_t *batch,
                             const int64_t *cbs, int nb, int64_t m, int64_t ldc) {
    size_t es = tj_dtype_size(g->dtype);
    int inner = nb;
    int64_t sa = 0, sb = 0, sc = m * g->n;
    while (inner > 0) {
        int64_t ta, tb, tc;
        int lo = inner - 1, len = nb - lo;
        if (!tjcu_collapse(batch + lo, a->bs + lo, len, &ta) ||
            !tjcu_collapse(batch + lo, b->bs + lo, len, &tb) ||
            !tjcu_collapse(batch + lo, cbs + lo, len, &tc))
            break;
        inner = lo, sa = ta, sb = tb, sc = tc;
    }
    int64_t count = 1, outer = 1;
    for (int d = inner; d < nb; d++) count *= batch[d];
    for (int d = 0; d < inner; d++) outer *= batch[d];
    for (int64_t o = 0; o < outer; o++) {
        int64_t rem = o, ao = 0, bo = 0, co = 0;
        for (int d = inner - 1; d >= 0; d--) {
            int64_t idx = rem % batch[d];
            rem /= batch[d];
            ao += idx * a->bs[d], bo += idx * b->bs[d], co += idx * cbs[d];
        }
        operand ai = *a, bi = *b;
        ai.p += ao * (int64_t)es, bi.p += bo * (int64_t)es;
        cublasStatus_t bs = strided_batched(h, g->dtype, &ai, &bi, m, g->n, g->k, g->alpha,
                                            g->beta, (char *)g->c + co * (int64_t)es, ldc, sa, sb,
                                            sc, count);
        if (bs != CUBLAS_STATUS_SUCCESS)
            return blas_error(op, g->dtype == TJ_F32 ? "cublasSgemmStridedBatched"
                                                     : "cublasDgemmStridedBatched", bs);
    }
    return TJ_OK;
}

tj_status tjcu_gemm_cublas(const char *op, tj_device dev, const tjcu_gemm *g, bool *used) {
    *used = false;
    if (g->dtype != TJ_F32 && g->dtype != TJ_F64) return TJ_OK;
    size_t es = tj_dtype_size(g->dtype);
    /* batch dims of size 1 move nothing */
    int nb = 0;
    int64_t batch[TJ_MAX_DIMS], cbs[TJ_MAX_DIMS], total = 1;
    operand a = {.p = g->a, .rows = g->m, .cols = g->k, .rs = g->a_rs, .cs = g->a_cs};
    operand b = {.p = g->b, .rows = g->k, .cols = g->n, .rs = g->b_rs, .cs = g->b_cs};
    for (int d = 0; d < g->nbatch; d++) {
        if (g->batch[d] == 1) continue;
        batch[nb] = g->batch[d], a.bs[nb] = g->a_bs[d], b.bs[nb] = g->b_bs[d];
        cbs[nb++] = g->c_bs[d];
        total *= g->batch[d];
    }
    int64_t m = g->m, n = g->n, k = g->k, c_rs = g->c_rs;
    if (m <= 0 || n <= 0 || total <= 0) {
        *used = true;
        return TJ_OK;
    }
    /* k == 0 is the own kernel's (C = beta C); C must have unit column stride */
    if (k <= 0 || (n > 1 && g->c_cs != 1)) return TJ_OK;

    /* a shared B and A's rows running on through its batch dims: one tall product */
    bool b_shared = true;
    for (int d = 0; d < nb; d++) b_shared = b_shared && b.bs[d] == 0;
    if (nb > 0 && b_shared) {
        int64_t sizes[TJ_MAX_DIMS + 1], as[TJ_MAX_DIMS + 1], cs[TJ_MAX_DIMS + 1], astep, cstep;
        for (int d = 0; d < nb; d++) sizes[d] = batch[d], as[d] = a.bs[d], cs[d] = cbs[d];
        sizes[nb] = m, as[nb] = a.rs, cs[nb] = c_rs;
        if (tjcu_collapse(sizes, as, nb + 1, &astep) && tjcu_collapse(sizes, cs, nb + 1, &cstep) &&
            astep != 0) {
            m *= total, a.rows = m, a.rs = astep, c_rs = cstep;
            nb = 0, total = 1;
        }
    }
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || total > INT_MAX) return TJ_OK;
    int64_t ldc = m <= 1 ? (n > 1 ? n : 1) : c_rs;
    if (ldc < n || ldc > INT_MAX) return TJ_OK;

    cublasHandle_t h = NULL;
    tj_status st = handle_for(op, dev, &h);
    if (st) return st;
    *used = true;
    if (!(st = fit_operand(op, dev, &a, batch, nb, es)) &&
        !(st = fit_operand(op, dev, &b, batch, nb, es)))
        st = run_batches(op, h, g, &a, &b, batch, cbs, nb, m, ldc);
    /* queued work holds the scratch until it runs: stream order makes this safe */
    if (a.packed) tjcu_free(dev, a.packed);
    if (b.packed) tjcu_free(dev, b.packed);
    return st;
}
