/* op_softmax.c — CUDA kernels of softmax, log_softmax,
 * _softmax_backward_data and _log_softmax_backward_data (rows of
 * core/ops_nn.def), on kernels/softmax.cu. As the CPU kernels, inputs are
 * made dense and seen as [outer, n, inner] around the softmax dim; one group
 * of lanes per line of n elements (see softmax.cu for the numerics). */
#include <stdio.h>

#include "backends/cuda/op_norm.h"
#include "backends/cuda/reduce_plan.h"

enum { ROW_LANES_MAX = 512, BLOCK_THREADS = 256, COL_LINES = 32 };

typedef struct lines {
    int64_t outer, n, inner;
} lines;

static lines split(const tj_tensor *t, int dim) {
    lines l = {1, t->ndim ? t->sizes[dim] : 1, 1};
    for (int d = 0; d < dim; d++) l.outer *= t->sizes[d];
    for (int d = dim + 1; d < t->ndim; d++) l.inner *= t->sizes[d];
    return l;
}

/* Launches kernel over the lines of l with args (whose trailing row flag it
 * fills); state is the bytes of one lane's state. */
static tj_status launch_lines(const tjc_call *c, const char *kernel, lines l, size_t state,
                              int *row_flag, void **args) {
    int row = l.inner == 1;
    int64_t count = row ? l.outer : l.outer * l.inner;
    if (count == 0 || l.n == 0) return TJ_OK;
    unsigned bx, by;
    if (row) {
        bx = tjcu_pow2_at_least(l.n < ROW_LANES_MAX ? l.n : ROW_LANES_MAX);
        by = bx < BLOCK_THREADS ? BLOCK_THREADS / bx : 1; /* whole warps: the lanes shuffle */
    } else {
        bx = tjcu_pow2_at_least(count < COL_LINES ? count : COL_LINES);
        int64_t most = BLOCK_THREADS / bx;
        by = tjcu_pow2_at_least(l.n < most ? l.n : most);
    }
    int64_t per_block = row ? by : bx, gx = (count + per_block - 1) / per_block;
    if (gx > INT32_MAX)
        return tjc_error(TJ_ERR_UNSUPPORTED, "%s: %lld lines are more than one launch can cover",
                         c->op->name, (long long)count);
    *row_flag = row;
    return tjcu_launch(c->op->name, c->device, "softmax", kernel, (tjcu_dim3){(unsigned)gx, 1, 1},
                       (tjcu_dim3){bx, by, 1}, (size_t)bx * by * state, args);
}

static const char *sfx(tj_dtype d) { return d == TJ_F32 ? "f32" : "f64"; }

static tj_status forward(const tjc_call *c, int log_form) {
    int dim;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, c->in[0]->ndim, &dim);
    if (st) return st;
    tj_tensor *x = tjcu_dense(c->op->name, c->device, c->in[0], "softmax");
    if (!x) return tj_last_status();
    lines l = split(x, dim);
    const void *xp = tjc_data_ptr(x);
    void *yp = tjc_data_ptr(c->out[0]);
    int row = 0;
    void *args[] = {&xp, &yp, &l.outer, &l.n, &l.inner, &row, &log_form};
    char kernel[48];
    snprintf(kernel, sizeof kernel, "softmax_fwd_%s", sfx(x->dtype));
    st = launch_lines(c, kernel, l, 2 * tj_dtype_size(x->dtype), &row, args);
    tj_release(x);
    return st;
}

tj_status tjcu_softmax(const tjc_call *c) { return forward(c, 0); }
tj_status tjcu_log_softmax(const tjc_call *c) { return forward(c, 1); }

/* in: grad_output, output; attrs: dim, input_dtype. Computed in output's
 * dtype, stored in input_dtype (the result's). */
static tj_status backward(const tjc_call *c, int log_form) {
    int dim;
    tj_status st = tjc_wrap_dim(c->op->name, c->attr[0].i, c->in[1]->ndim, &dim);
    if (st) return st;
    tj_tensor *g = tjcu_dense(c->op->name, c->device, c->in[0], "softmax");
    tj_tensor *y = g ? tjcu_dense(c->op->name, c->device, c->in[1], "softmax") : NULL;
    if (!g || !y) {
        tj_release(g);
        return tj_last_status();
    }
    lines l = split(y, dim);
    const void *gp = tjc_data_ptr(g), *yp = tjc_data_ptr(y);
    void *op = tjc_data_ptr(c->out[0]);
    int row = 0;
    void *args[] = {&gp, &yp, &op, &l.outer, &l.n, &l.inner, &row, &log_form};
    char kernel[48];
    snprintf(kernel, sizeof kernel, "softmax_bwd_%s_%s", sfx(y->dtype), sfx(c->out[0]->dtype));
    st = launch_lines(c, kernel, l, tj_dtype_size(y->dtype), &row, args);
    tj_release(g);
    tj_release(y);
    return st;
}

tj_status tjcu_softmax_backward_data(const tjc_call *c) { return backward(c, 0); }
tj_status tjcu_log_softmax_backward_data(const tjc_call *c) { return backward(c, 1); }
