/* op_reduce.c — CUDA kernels of the reduction rows (core/ops_reduce.def):
 * sum, mean, prod, amax, amin, max.dim, min.dim, argmax, argmin, var, std,
 * linalg_vector_norm, logsumexp and sum_to_size, all on the reduction
 * engine (reduce_plan.h) with the reducers of kernels/reduce.cu and
 * kernels/reduce_stats.cu. The dims are read by core/reduce.h, as the CPU
 * kernels read them, so the two devices cannot disagree about the layout;
 * the shape rule already refused what the CPU refuses (empty extrema, dtypes). */
#include <math.h>
#include <stdio.h>

#include "backends/cuda/reduce_plan.h"
#include "core/reduce.h"

static const char *dtype_suffix(tj_dtype d) {
    switch (d) {
    case TJ_F32: return "f32";
    case TJ_F64: return "f64";
    case TJ_I64: return "i64";
    default: return "bool";
    }
}

/* Runs reducer <base>_<input dtype> of module over c->in[0] into c->out[]. */
static tj_status reduce_with(const tjc_call *c, const char *module, const char *base,
                             bool logical, tjcu_rargs *a) {
    tjc_reduce_info info;
    tj_status st = tjc_reduce_info_of(c, &info);
    if (st) return st;
    const tj_tensor *x = c->in[0], *out = c->out[0];
    int64_t out_strides[TJ_MAX_DIMS] = {0};
    for (int d = 0; d < x->ndim; d++)
        if (!info.reduced[d]) out_strides[d] = out->strides[info.out_dim[d]];
    tjcu_rgeom g;
    tjcu_rgeom_build(&g, x->ndim, x->sizes, x->strides, info.reduced, out_strides, logical);
    a->in = tjc_data_ptr(x);
    a->out0 = tjc_data_ptr(out);
    a->out1 = c->n_out > 1 ? tjc_data_ptr(c->out[1]) : NULL;
    a->n = info.n_reduce;
    char kernel[64];
    snprintf(kernel, sizeof kernel, "%s_%s", base, dtype_suffix(x->dtype));
    return tjcu_reduce_run(c->op->name, c->device, module, kernel, &g, a);
}

#define KERNEL(name, module, base, logical)                                                     \
    static tj_status cuda_##name(const tjc_call *c) {                                           \
        tjcu_rargs a = {0};                                                                     \
        return reduce_with(c, module, base, logical, &a);                                       \
    }
KERNEL(sum, "reduce", "sum", false)
KERNEL(mean, "reduce", "mean", false)
KERNEL(prod, "reduce", "prod", false)
KERNEL(amax, "reduce", "amax", false)
KERNEL(amin, "reduce", "amin", false)
/* the index forms report row-major positions among the reduced dims */
KERNEL(argmax, "reduce", "argmax", true)
KERNEL(argmin, "reduce", "argmin", true)
KERNEL(max_dim, "reduce", "max_dim", true)
KERNEL(min_dim, "reduce", "min_dim", true)

static tj_status cuda_logsumexp(const tjc_call *c) {
    if (c->in[0]->dtype != c->out[0]->dtype) /* integers and bools, in f32 */
        return tjc_kernel_with_input_as(c, 0, c->out[0]->dtype, cuda_logsumexp);
    tjcu_rargs a = {0};
    return reduce_with(c, "reduce_stats", "logsumexp", false, &a);
}

static tj_status cuda_var_or_std(const tjc_call *c, const char *base) {
    tjcu_rargs a = {.correction = tjc_reduce_attr(c, "correction")->i};
    return reduce_with(c, "reduce_stats", base, false, &a);
}
static tj_status cuda_var(const tjc_call *c) { return cuda_var_or_std(c, "var"); }
static tj_status cuda_std(const tjc_call *c) { return cuda_var_or_std(c, "std"); }

/* The reducer for ord, as the CPU's tjcpu_norm_reducers picks: ord 2 of f32
 * sums squares in double; of f64 it takes the scaled path. */
static tj_status cuda_linalg_vector_norm(const tjc_call *c) {
    double ord = tjc_reduce_attr(c, "ord")->f;
    bool f32 = c->in[0]->dtype == TJ_F32;
    const char *base = ord == 2 ? (f32 ? "norm_sq" : "norm_pos")
                       : ord == 1 ? "norm_abs"
                       : ord == 0 ? "norm_cnt"
                       : ord == INFINITY ? "norm_max"
                       : ord == -INFINITY ? "norm_min"
                       : ord > 0 ? "norm_pos"
                                 : "norm_neg";
    tjcu_rargs a = {.ord = ord};
    return reduce_with(c, "reduce_stats", base, false, &a);
}

void tjcu_register_reduce(tjc_kernel_fn *kernels) {
    kernels[TJ_OP_sum] = cuda_sum;
    kernels[TJ_OP_sum_to_size] = cuda_sum;
    kernels[TJ_OP_mean] = cuda_mean;
    kernels[TJ_OP_prod] = cuda_prod;
    kernels[TJ_OP_amax] = cuda_amax;
    kernels[TJ_OP_amin] = cuda_amin;
    kernels[TJ_OP_max_dim] = cuda_max_dim;
    kernels[TJ_OP_min_dim] = cuda_min_dim;
    kernels[TJ_OP_argmax] = cuda_argmax;
    kernels[TJ_OP_argmin] = cuda_argmin;
    kernels[TJ_OP_var] = cuda_var;
    kernels[TJ_OP_std] = cuda_std;
    kernels[TJ_OP_linalg_vector_norm] = cuda_linalg_vector_norm;
    kernels[TJ_OP_logsumexp] = cuda_logsumexp;
}
