/* gemm.c — the backend's own GEMM (kernels/gemm.cu) and operand packing, and
 * the choice between it and cuBLAS (linalg.h). */
#include <string.h>

#include "backends/cuda/linalg.h"

/* Mirrors GemmArgs in kernels/gemm.cu (same layout). */
typedef struct tjcu_gemm_args {
    const void *a;
    const void *b;
    void *c;
    int64_t m, n, k;
    int64_t a_rs, a_cs, b_rs, b_cs, c_rs, c_cs;
    int64_t batches;
    int32_t nbatch;
    int32_t pad_;
    int64_t batch[TJCU_MAX_DIMS];
    int64_t a_bs[TJCU_MAX_DIMS];
    int64_t b_bs[TJCU_MAX_DIMS];
    int64_t c_bs[TJCU_MAX_DIMS];
    double alpha, beta;
    int64_t ialpha, ibeta;
} tjcu_gemm_args;

/* The kernel's tile (kernels/gemm.cu: GEMM_BM x GEMM_BN, 256 threads). */
enum { TILE_M = 64, TILE_N = 64, GEMM_THREADS = 256, MAX_GRID_YZ = 65535 };

static _Thread_local bool libraries_off;

void tjcu_linalg_set_libraries(bool enabled) { libraries_off = !enabled; }

bool tjcu_linalg_libraries(tj_device dev) { return !libraries_off && tjcu_has_libraries(dev); }

bool tjcu_collapse(const int64_t *sizes, const int64_t *strides, int n, int64_t *step) {
    int last = -1;
    *step = 1;
    for (int d = n - 1; d >= 0; d--) {
        if (sizes[d] == 1) continue;
        if (last < 0) *step = strides[d];
        else if (strides[d] != strides[last] * sizes[last]) return false;
        last = d;
    }
    return true;
}

static unsigned grid_dim(int64_t tiles, int64_t cap) {
    return (unsigned)(tiles < 1 ? 1 : tiles > cap ? cap : tiles);
}

tj_status tjcu_gemm_kernel(const char *op, tj_device dev, const tjcu_gemm *g) {
    tjcu_gemm_args p;
    memset(&p, 0, sizeof p);
    p.a = g->a, p.b = g->b, p.c = g->c;
    p.m = g->m, p.n = g->n, p.k = g->k;
    p.a_rs = g->a_rs, p.a_cs = g->a_cs, p.b_rs = g->b_rs, p.b_cs = g->b_cs;
    p.c_rs = g->c_rs, p.c_cs = g->c_cs;
    p.batches = 1;
    for (int d = 0; d < g->nbatch; d++) {
        if (g->batch[d] == 1) continue; /* a size-1 dim moves no operand */
        int i = p.nbatch++;
        p.batch[i] = g->batch[d];
        p.a_bs[i] = g->a_bs[d], p.b_bs[i] = g->b_bs[d], p.c_bs[i] = g->c_bs[d];
        p.batches *= g->batch[d];
    }
    if (p.m <= 0 || p.n <= 0 || p.batches <= 0) return TJ_OK;
    p.alpha = g->alpha, p.beta = g->beta;
    p.ialpha = (int64_t)g->alpha, p.ibeta = (int64_t)g->beta;
    const char *kernel = g->dtype == TJ_F32 ? "gemm_f32" : g->dtype == TJ_F64 ? "gemm_f64"
                                                                            : "gemm_i64";
    if (g->dtype != TJ_F32 && g->dtype != TJ_F64 && g->dtype != TJ_I64)
        return tjc_error(TJ_ERR_INTERNAL, "%s: GEMM of dtype %s", op, tj_dtype_name(g->dtype));
    /* the kernel loops over tiles and batches beyond the grid */
    tjcu_dim3 grid = {grid_dim((p.n + TILE_N - 1) / TILE_N, (int64_t)1 << 30),
                      grid_dim((p.m + TILE_M - 1) / TILE_M, MAX_GRID_YZ),
                      grid_dim(p.batches, MAX_GRID_YZ)};
    void *args[] = {&p};
    return tjcu_launch(op, dev, "gemm", kernel, grid, (tjcu_dim3){GEMM_THREADS, 1, 1}, 0, args);
}

tj_status tjcu_gemm_run(const char *op, tj_device dev, const tjcu_gemm *g) {
    if (g->dtype != TJ_I64 && tjcu_linalg_libraries(dev)) {
        bool used = false;
        tj_status st = tjcu_gemm_cublas(op, dev, g, &used);
        if (st || used) return st;
    }
    return tjcu_gemm_kernel(op, dev, g);
}

tj_status tjcu_pack(const char *op, tj_device dev, const tjcu_tensor_arg *src, size_t es,
                    void *dst) {
    int64_t n = 1;
    for (int d = 0; d < src->ndim; d++) n *= src->sizes[d];
    if (n == 0) return TJ_OK;
    if (es != 4 && es != 8)
        return tjc_error(TJ_ERR_INTERNAL, "%s: packing elements of %zu bytes", op, es);
    tjcu_tensor_arg s = *src;
    void *args[] = {&s, &dst, &n};
    return tjcu_launch(op, dev, "gemm", es == 4 ? "gemm_pack_4" : "gemm_pack_8",
                       tjcu_grid_for(dev, n, 256), (tjcu_dim3){256, 1, 1}, 0, args);
}
