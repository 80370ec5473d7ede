/* reduce_plan.h — the host side of the CUDA backend's reduction engine (the
 * device side is kernels/tjcu_reduce.h): lays a reduction out as kept dims x
 * reduced dims, picks the launch shape (row or column mode, lanes per
 * output, how many slices the reduction is cut into) and runs pass 1 and,
 * when there are several slices, pass 2. The reduction ops (op_reduce.c)
 * and the norms' statistics (op_norm*.c) run on it. Prefix tjcu_. */
#ifndef TJIT_CUDA_REDUCE_PLAN_H
#define TJIT_CUDA_REDUCE_PLAN_H

#include "backends/cuda/cuda.h"

/* Mirrors RGeom in kernels/tjcu_reduce.h. Dims innermost first; strides in elements. */
typedef struct tjcu_rgeom {
    int64_t M, N, chunk; /* outputs, elements per output, elements per slice */
    int32_t nk, nr, row, pad;
    int64_t ksize[TJCU_MAX_DIMS], kin[TJCU_MAX_DIMS], kout[TJCU_MAX_DIMS];
    int64_t rsize[TJCU_MAX_DIMS], rin[TJCU_MAX_DIMS];
} tjcu_rgeom;

/* Mirrors RArgs. */
typedef struct tjcu_rargs {
    const void *in, *in2;
    void *out0, *out1;
    const double *pa, *pb;
    int64_t n;
    int64_t correction;
    double ord;
    int64_t i0, i1, i2;
} tjcu_rargs;

/* The layout of reducing a tensor of ndim dims (sizes, strides) over the
 * dims marked in reduced; out_strides[d] is the output's stride for a kept
 * dim d. Size-1 dims are dropped, kept dims are ordered by input stride and
 * merged where both strides allow; reduced dims are ordered by stride too,
 * unless logical: then element r is the row-major position among the
 * reduced dims (what the index reductions report). */
void tjcu_rgeom_build(tjcu_rgeom *g, int ndim, const int64_t *sizes, const int64_t *strides,
                      const bool *reduced, const int64_t *out_strides, bool logical);

/* Runs reducer `kernel` (module's <kernel>_p1 and _p2) over g with args a. */
tj_status tjcu_reduce_run(const char *what, tj_device dev, const char *module, const char *kernel,
                          tjcu_rgeom *g, const tjcu_rargs *a);

/* t itself (retained) when contiguous, else a contiguous copy made on dev
 * by module's <module>_gather_f32/_f64 kernel (float tensors; see
 * TJR_GATHER_KERNELS). NULL for NULL, or with the error set. The caller
 * releases the result. */
tj_tensor *tjcu_dense(const char *what, tj_device dev, tj_tensor *t, const char *module);

/* The smallest power of two >= n (1 for n <= 1). */
unsigned tjcu_pow2_at_least(int64_t n);

/* The largest reducer state of the device side, in bytes (partials are
 * allocated at this stride or less). */
#define TJCU_RSTATE_MAX 32

#endif
