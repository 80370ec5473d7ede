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

#include "core/alloc.h"
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
    tjc_free(t);
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
        if (!(this_thread = tjc_calloc(1, sizeof *this_thread)))
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
    if (!stream) return tj_last_status();
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

/* ---- the plan: cuBLAS's terms for a row-major product --------------------------------- */

/* How cuBLAS reads a row-major rows x cols operand (rs, cs) as the
 * column-major cols x rows matrix it needs: in place (op N, ld rs) or as the
 * transpose of what lies there (op T, ld cs). Size-1 dims take any stride. */
static bool blas_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool *trans,
                        int64_t *ld) {
    if ((cols <= 1 || cs == 1) && (rows <= 1 || rs >= cols)) {
        *trans = false;
        *ld = rows <= 1 ? (cols > 1 ? cols : 1) : rs;
    } else if ((rows <= 1 || rs == 1) && (cols <= 1 || cs >= rows)) {
        *trans = true;
        *ld = cols <= 1 ? (rows > 1 ? rows : 1) : cs;
    } else {
        return false;
    }
    return *ld >= 1 && *ld <= INT_MAX;
}

/* One of our operands (rows x cols, batch strides bs over the plan's batch
 * dims) as cuBLAS reads it: in place, or packed when its layout does not fit. */
static void plan_operand(const void *data, int64_t rows, int64_t cols, int64_t rs, int64_t cs,
                         int64_t *bs, const int64_t *batch, int nb, bool *trans, int64_t *ld,
                         bool *pack, tjcu_tensor_arg *view, int64_t *elems) {
    *pack = !blas_layout(rows, cols, rs, cs, trans, ld);
    if (!*pack) return;
    *view = (tjcu_tensor_arg){.data = (void *)data, .ndim = nb + 2, .contiguous = 0};
    for (int d = 0; d < nb; d++) view->sizes[d] = batch[d], view->strides[d] = bs[d];
    view->sizes[nb] = rows, view->strides[nb] = rs;
    view->sizes[nb + 1] = cols, view->strides[nb + 1] = cs;
    int64_t stride = rows * cols;
    for (int d = nb - 1; d >= 0; d--) bs[d] = stride, stride *= batch[d];
    *elems = stride;
    blas_layout(rows, cols, cols, 1, trans, ld);
}

bool tjcu_blas_plan_of(const tjcu_gemm *g, tjcu_blas_plan *p) {
    memset(p, 0, sizeof *p);
    if (g->dtype != TJ_F32 && g->dtype != TJ_F64) return false;
    /* our A [m, k] and B [k, n]; batch dims of size 1 move nothing */
    int nb = 0;
    int64_t batch[TJ_MAX_DIMS], abs_[TJ_MAX_DIMS], bbs[TJ_MAX_DIMS], cbs[TJ_MAX_DIMS], total = 1;
    for (int d = 0; d < g->nbatch; d++) {
        if (g->batch[d] == 1) continue;
        batch[nb] = g->batch[d], abs_[nb] = g->a_bs[d], bbs[nb] = g->b_bs[d];
        cbs[nb++] = g->c_bs[d];
        total *= g->batch[d];
    }
    int64_t m = g->m, n = g->n, k = g->k, a_rs = g->a_rs, c_rs = g->c_rs;
    if (m <= 0 || n <= 0 || total <= 0) return true; /* nothing to compute: no calls */
    /* k == 0 is the own kernel's (C = beta C); C must have unit column stride */
    if (k <= 0 || (n > 1 && g->c_cs != 1)) return false;

    /* a shared B and A's rows running on through its batch dims: one tall product */
    bool b_shared = true;
    for (int d = 0; d < nb; d++) b_shared = b_shared && bbs[d] == 0;
    if (nb > 0 && b_shared) {
        int64_t sizes[TJ_MAX_DIMS + 1], as[TJ_MAX_DIMS + 1], cs[TJ_MAX_DIMS + 1], astep, cstep;
        for (int d = 0; d < nb; d++) sizes[d] = batch[d], as[d] = abs_[d], cs[d] = cbs[d];
        sizes[nb] = m, as[nb] = a_rs, cs[nb] = c_rs;
        if (tjcu_collapse(sizes, as, nb + 1, &astep) && tjcu_collapse(sizes, cs, nb + 1, &cstep) &&
            astep != 0 && cstep != 0) {
            m *= total, a_rs = astep, c_rs = cstep;
            nb = 0, total = 1;
        }
    }
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || total > INT_MAX) return false;
    /* C^T [n, m] (column-major, ld c_rs) = op(B^T) [n, k] * op(A^T) [k, m]:
     * cuBLAS's A is our B, its B our A */
    int64_t ldc = m <= 1 ? n : c_rs;
    if (ldc < n || ldc > INT_MAX) return false;
    p->m = n, p->n = m, p->k = k, p->ldc = ldc;
    plan_operand(g->b, k, n, g->b_rs, g->b_cs, bbs, batch, nb, &p->trans_a, &p->lda, &p->pack_a,
                 &p->pack_view_a, &p->pack_elems_a);
    plan_operand(g->a, m, k, a_rs, g->a_cs, abs_, batch, nb, &p->trans_b, &p->ldb, &p->pack_b,
                 &p->pack_view_b, &p->pack_elems_b);
    /* the innermost batch dims whose strides collapse for all three go to one
     * strided-batched call; the outer ones are looped */
    int inner = nb;
    p->stride_a = 0, p->stride_b = 0, p->stride_c = m * n;
    while (inner > 0) {
        int64_t ta, tb, tc;
        int lo = inner - 1, len = nb - lo;
        if (!tjcu_collapse(batch + lo, bbs + lo, len, &ta) ||
            !tjcu_collapse(batch + lo, abs_ + lo, len, &tb) ||
            !tjcu_collapse(batch + lo, cbs + lo, len, &tc))
            break;
        inner = lo, p->stride_a = ta, p->stride_b = tb, p->stride_c = tc;
    }
    p->count = 1, p->calls = 1;
    for (int d = inner; d < nb; d++) p->count *= batch[d];
    for (int d = 0; d < inner; d++) {
        p->calls *= batch[d];
        p->outer[d] = batch[d], p->outer_a[d] = bbs[d], p->outer_b[d] = abs_[d];
        p->outer_c[d] = cbs[d];
    }
    p->n_outer = inner;
    return true;
}

void tjcu_blas_plan_offsets(const tjcu_blas_plan *p, int64_t call, int64_t off[3]) {
    off[0] = off[1] = off[2] = 0;
    for (int d = p->n_outer - 1; d >= 0; d--) {
        int64_t idx = call % p->outer[d];
        call /= p->outer[d];
        off[0] += idx * p->outer_a[d], off[1] += idx * p->outer_b[d], off[2] += idx * p->outer_c[d];
    }
}

/* ---- running it ------------------------------------------------------------------------ */

static cublasStatus_t strided_batched(cublasHandle_t h, tj_dtype dt, const tjcu_blas_plan *p,
                                      const char *a, const char *b, char *c, double alpha,
                                      double beta) {
    cublasOperation_t ta = p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t tb = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (dt == TJ_F32) {
        float al = (float)alpha, be = (float)beta;
        return cublasSgemmStridedBatched(h, ta, tb, (int)p->m, (int)p->n, (int)p->k, &al,
                                         (const float *)a, (int)p->lda, p->stride_a,
                                         (const float *)b, (int)p->ldb, p->stride_b, &be,
                                         (float *)c, (int)p->ldc, p->stride_c, (int)p->count);
    }
    return cublasDgemmStridedBatched(h, ta, tb, (int)p->m, (int)p->n, (int)p->k, &alpha,
                                     (const double *)a, (int)p->lda, p->stride_a,
                                     (const double *)b, (int)p->ldb, p->stride_b, &beta,
                                     (double *)c, (int)p->ldc, p->stride_c, (int)p->count);
}

/* buf = the packed copy of view (elems elements), or NULL when not packed. */
static tj_status pack_operand(const char *op, tj_device dev, bool pack,
                              const tjcu_tensor_arg *view, int64_t elems, size_t es, void **buf) {
    *buf = NULL;
    if (!pack) return TJ_OK;
    if (!(*buf = tjcu_malloc(dev, (size_t)elems * es))) return tj_last_status();
    return tjcu_pack(op, dev, view, es, *buf);
}

tj_status tjcu_gemm_cublas(const char *op, tj_device dev, const tjcu_gemm *g, bool *used) {
    tjcu_blas_plan p;
    *used = tjcu_blas_plan_of(g, &p);
    if (!*used || p.m == 0) return TJ_OK;
    cublasHandle_t h = NULL;
    tj_status st = handle_for(op, dev, &h);
    if (st) return st;
    size_t es = tj_dtype_size(g->dtype);
    void *pa = NULL, *pb = NULL;
    if (!(st = pack_operand(op, dev, p.pack_a, &p.pack_view_a, p.pack_elems_a, es, &pa)) &&
        !(st = pack_operand(op, dev, p.pack_b, &p.pack_view_b, p.pack_elems_b, es, &pb))) {
        const char *a = pa ? pa : g->b, *b = pb ? pb : g->a; /* cuBLAS's A is our B */
        for (int64_t i = 0; i < p.calls && !st; i++) {
            int64_t off[3];
            tjcu_blas_plan_offsets(&p, i, off);
            cublasStatus_t bs = strided_batched(h, g->dtype, &p, a + off[0] * (int64_t)es,
                                                b + off[1] * (int64_t)es,
                                                (char *)g->c + off[2] * (int64_t)es, g->alpha,
                                                g->beta);
            if (bs != CUBLAS_STATUS_SUCCESS)
                st = blas_error(op, g->dtype == TJ_F32 ? "cublasSgemmStridedBatched"
                                                       : "cublasDgemmStridedBatched", bs);
        }
    }
    /* queued work holds the scratch until it runs: stream order makes this safe */
    if (pa) tjcu_free(dev, pa);
    if (pb) tjcu_free(dev, pb);
    return st;
}
