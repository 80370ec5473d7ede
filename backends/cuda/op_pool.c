/* op_pool.c — CUDA kernels of the pooling rows of core/ops_linalg.def:
 * max_pool2d(_with_indices), its backward op, tjit::max_pool2d_gather,
 * avg_pool2d, adaptive_avg_pool2d and their backward ops (device code in
 * kernels/pool.cu). The geometry is core's (tjc_pool_geometry), read once
 * here and passed to the kernels as pool.cu's PoolGeom. */
#include <stdio.h>

#include "backends/cuda/op_nn.h"
#include "core/linalg.h"

/* pool.cu's PoolGeom and Strides4, member for member */
typedef struct pool_geom_arg {
    int64_t n, c, h, w, oh, ow;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int64_t count_include_pad;
} pool_geom_arg;

typedef struct strides4 {
    int64_t n, c, h, w;
} strides4;

static pool_geom_arg geom_arg(const tjc_pool_geom *g) {
    return (pool_geom_arg){g->n,  g->c,  g->h,  g->w,  g->oh, g->ow, g->kh, g->kw,
                           g->sh, g->sw, g->ph, g->pw, g->dh, g->dw, g->count_include_pad};
}

/* [n, c, h, w] element strides of a 3-D or 4-D tensor (n's is 0 when unbatched) */
static strides4 strides_of(const tj_tensor *t) {
    int b = t->ndim == 4;
    return (strides4){b ? t->strides[0] : 0, t->strides[b], t->strides[b + 1],
                      t->strides[b + 2]};
}

static tj_status launch(const tjc_call *c, const char *kernel, tj_dtype dt, int64_t total,
                        void **args) {
    char name[48];
    snprintf(name, sizeof name, "%s_%s", kernel, tjcu_nn_dtype_suffix(dt));
    return tjcu_nn_launch(c, "pool", name, total, args);
}

static tj_status zero(const tjc_call *c, tj_tensor *t) {
    size_t bytes = (size_t)tjc_numel(t->sizes, t->ndim) * tj_dtype_size(t->dtype);
    return bytes ? tjcu_memset(c->device, tjc_data_ptr(t), 0, bytes) : TJ_OK;
}

static tj_status tjcu_max_pool2d(const tjc_call *c) {
    tjc_pool_geom g;
    tj_status st = tjc_pool_geometry(c, &g);
    if (st) return st;
    pool_geom_arg ga = geom_arg(&g);
    strides4 xs = strides_of(c->in[0]);
    void *x = tjc_data_ptr(c->in[0]), *out = tjc_data_ptr(c->out[0]);
    void *ind = c->n_out > 1 ? tjc_data_ptr(c->out[1]) : NULL;
    int64_t total = g.n * g.c * g.oh * g.ow;
    void *args[] = {&ga, &x, &xs, &out, &ind, &total};
    return launch(c, "max_pool", c->in[0]->dtype, total, args);
}

/* An index outside its plane, found by the kernel that read it: the CPU's error. */
static tj_status indices_in_planes(const tjc_call *c, const tjc_pool_geom *g, void *bad) {
    uint64_t first = 0;
    tj_status st = tjcu_copy_to_host(c->device, &first, bad, sizeof first);
    tjcu_free(c->device, bad);
    if (st || first == UINT64_MAX) return st;
    return tjc_error(TJ_ERR_ARG, "%s: an element of 'indices' lies outside its %lldx%lld input "
                     "plane", c->op->name, (long long)g->h, (long long)g->w);
}

/* The indices kernels: backward (in: grad_output, self, indices) scatters into
 * the zeroed gradient, gather (in: self, indices) reads self. */
static tj_status by_indices(const tjc_call *c, bool backward) {
    tjc_pool_geom g;
    tj_status st = tjc_pool_geometry(c, &g);
    if (st) return st;
    const tj_tensor *src = c->in[0], *indices = c->in[backward ? 2 : 1];
    pool_geom_arg ga = geom_arg(&g);
    strides4 ss = strides_of(src), is = strides_of(indices);
    void *sp = tjc_data_ptr(src), *ip = tjc_data_ptr(indices), *out = tjc_data_ptr(c->out[0]);
    int64_t total = g.n * g.c * g.oh * g.ow;
    void *bad = tjcu_nn_scratch(c, sizeof(uint64_t));
    if (!bad) return tj_last_status();
    st = tjcu_memset(c->device, bad, 0xff, sizeof(uint64_t));
    if (!st && backward) st = zero(c, c->out[0]);
    void *args[] = {&ga, &sp, &ss, &ip, &is, &out, &bad, &total};
    if (!st)
        st = launch(c, backward ? "max_pool_backward" : "max_pool_gather", c->out[0]->dtype,
                    total, args);
    if (st) {
        tjcu_free(c->device, bad);
        return st;
    }
    return indices_in_planes(c, &g, bad);
}

static tj_status tjcu_max_pool2d_backward(const tjc_call *c) { return by_indices(c, true); }
static tj_status tjcu_max_pool2d_gather(const tjc_call *c) { return by_indices(c, false); }

/* The average pools: forward ops take one thread per output cell, backward
 * ops (in: grad_output, self) one per input element. */
static tj_status averaging(const tjc_call *c, const char *kernel, bool backward) {
    tjc_pool_geom g;
    tj_status st = tjc_pool_geometry(c, &g);
    if (st) return st;
    if (!tj_dtype_is_float(c->out[0]->dtype)) /* PyTorch's CUDA pools take floats only */
        return tjc_error(TJ_ERR_DTYPE, "%s: on CUDA supports f32 and f64; got %s (integer "
                         "average pooling runs on the CPU)", c->op->name,
                         tj_dtype_name(c->out[0]->dtype));
    pool_geom_arg ga = geom_arg(&g);
    strides4 xs = strides_of(c->in[0]);
    void *x = tjc_data_ptr(c->in[0]), *out = tjc_data_ptr(c->out[0]);
    int64_t total = g.n * g.c * (backward ? g.h * g.w : g.oh * g.ow);
    void *args[] = {&ga, &x, &xs, &out, &total};
    return launch(c, kernel, c->out[0]->dtype, total, args);
}

static tj_status tjcu_avg_pool2d(const tjc_call *c) { return averaging(c, "avg_pool", false); }
static tj_status tjcu_avg_pool2d_backward(const tjc_call *c) {
    return averaging(c, "avg_pool_backward", true);
}
static tj_status tjcu_adaptive_avg_pool2d(const tjc_call *c) {
    return averaging(c, "adaptive_avg", false);
}
static tj_status tjcu_adaptive_avg_pool2d_backward(const tjc_call *c) {
    return averaging(c, "adaptive_avg_backward", true);
}

void tjcu_register_pool(tjc_kernel_fn *kernels) {
    kernels[TJ_OP_max_pool2d_with_indices] = tjcu_max_pool2d;
    kernels[TJ_OP_max_pool2d] = tjcu_max_pool2d;
    kernels[TJ_OP_max_pool2d_with_indices_backward] = tjcu_max_pool2d_backward;
    kernels[TJ_OP_max_pool2d_gather] = tjcu_max_pool2d_gather;
    kernels[TJ_OP_avg_pool2d] = tjcu_avg_pool2d;
    kernels[TJ_OP_avg_pool2d_backward] = tjcu_avg_pool2d_backward;
    kernels[TJ_OP_adaptive_avg_pool2d] = tjcu_adaptive_avg_pool2d;
    kernels[TJ_OP_adaptive_avg_pool2d_backward] = tjcu_adaptive_avg_pool2d_backward;
}
