/* op_linalg.c — CUDA kernels of mm, bmm, matmul, addmm and linear, and the
 * family's registration (tjcu_register_linalg). The geometry is core's
 * (tjc_mm_geometry: 1-D operands, broadcast batch dims, linear's transposed
 * weight as swapped strides); every product is one tjcu_gemm over the
 * operands as they lie, so transposed and expanded inputs are not copied. */
#include <math.h>
#include "backends/cuda/linalg.h"

/* out[batch..., m, n] (contiguous) = alpha * A @ B + beta * out. */
static tj_status run_product(const tjc_call *c, const tjc_mm_geom *mg, double alpha, double beta) {
    tjcu_gemm g = {
        .dtype = mg->dtype,
        .m = mg->m, .n = mg->n, .k = mg->k,
        .a = tjc_data_ptr(mg->a), .a_rs = mg->a_rs, .a_cs = mg->a_cs,
        .b = tjc_data_ptr(mg->b), .b_rs = mg->b_rs, .b_cs = mg->b_cs,
        .c = tjc_data_ptr(c->out[0]), .c_rs = mg->n, .c_cs = 1,
        .nbatch = mg->nbatch,
        .alpha = alpha, .beta = beta,
    };
    int64_t stride = mg->m * mg->n;
    for (int d = mg->nbatch - 1; d >= 0; d--) {
        g.batch[d] = mg->batch[d];
        g.a_bs[d] = mg->a_bs[d], g.b_bs[d] = mg->b_bs[d], g.c_bs[d] = stride;
        stride *= mg->batch[d];
    }
    return tjcu_gemm_run(c->op->name, c->device, &g);
}

/* out = t broadcast to out's sizes (addmm's self, linear's bias). */
static tj_status fill_broadcast(const tjc_call *c, const tj_tensor *t) {
    tj_tensor *out = c->out[0];
    tjcu_tensor_arg src = tjcu_arg_broadcast(t, out->sizes, out->ndim);
    return tjcu_pack(c->op->name, c->device, &src, tj_dtype_size(out->dtype), tjc_data_ptr(out));
}

static tj_status tjcu_matmul(const tjc_call *c) {
    tjc_mm_geom g;
    tj_status st = tjc_mm_geometry(c, &g);
    return st ? st : run_product(c, &g, 1.0, 0.0);
}

static tj_status tjcu_addmm(const tjc_call *c) {
    tjc_mm_geom g;
    tj_status st = tjc_mm_geometry(c, &g);
    if (st) return st;
    double beta = c->attr[0].f, alpha = c->attr[1].f;
    if (g.dtype == TJ_I64) beta = trunc(beta), alpha = trunc(alpha); /* PyTorch converts them */
    /* beta == 0 ignores self entirely (NaN and inf included), as in PyTorch */
    if (beta != 0 && (st = fill_broadcast(c, c->in[0]))) return st;
    return run_product(c, &g, alpha, beta);
}

static tj_status tjcu_linear(const tjc_call *c) {
    tjc_mm_geom g;
    tj_status st = tjc_mm_geometry(c, &g);
    if (st) return st;
    tj_tensor *bias = c->in[2];
    if (bias && (st = fill_broadcast(c, bias))) return st;
    return run_product(c, &g, 1.0, bias ? 1.0 : 0.0);
}

void tjcu_register_linalg(tjc_kernel_fn *kernels) {
    kernels[TJ_OP_mm] = tjcu_matmul;
    kernels[TJ_OP_bmm] = tjcu_matmul;
    kernels[TJ_OP_matmul] = tjcu_matmul;
    kernels[TJ_OP_addmm] = tjcu_addmm;
    kernels[TJ_OP_linear] = tjcu_linear;
    kernels[TJ_OP_conv1d] = tjcu_conv_forward;
    kernels[TJ_OP_conv2d] = tjcu_conv_forward;
    kernels[TJ_OP_conv_transpose2d] = tjcu_conv_backward_input;
    kernels[TJ_OP_conv2d_backward_input] = tjcu_conv_backward_input;
    kernels[TJ_OP_conv2d_backward_weight] = tjcu_conv_backward_weight;
}
