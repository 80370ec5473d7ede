/* op_dropout.c — CUDA kernels of native_dropout, dropout and
 * native_dropout_backward (rows of core/ops_nn.def; device code in
 * kernels/dropout.cu).
 *
 * Counters are reserved on the host exactly as the CPU kernel reserves them
 * (tjc_generator_reserve_for: numel per training call, from the call's
 * generator or the process-wide default one), and element i draws Philox
 * counter first + i on the device: one seed and offset give the CPU's mask. */
#include <stdio.h>

#include "backends/cuda/op_nn.h"
#include "core/random.h"

/* out (and mask when not NULL) from input; attrs: p, train, generator */
static tj_status dropout(const tjc_call *c, tj_tensor *out, tj_tensor *mask) {
    double p = c->attr[0].f;
    bool train = c->attr[1].b;
    const tj_tensor *x = c->in[0];
    int64_t n = tjc_numel(x->sizes, x->ndim);
    if (!train) { /* eval: the identity, everything kept, nothing drawn */
        tj_status st = tjcu_nn_copy(c, out, x);
        if (!st && mask && n) st = tjcu_memset(c->device, tjc_data_ptr(mask), 1, (size_t)n);
        return st;
    }
    uint64_t seed, first;
    tj_status st = tjc_generator_reserve_for(c->op->name, c->attr[2].gen, (uint64_t)n, &seed,
                                             &first);
    if (st) return st;
    double scale = p < 1 ? 1 / (1 - p) : 0;
    tjcu_tensor_arg xa = tjcu_arg(x);
    void *o = tjc_data_ptr(out), *m = mask ? tjc_data_ptr(mask) : NULL;
    void *args[] = {&xa, &o, &m, &n, &seed, &first, &p, &scale};
    char kernel[40];
    snprintf(kernel, sizeof kernel, "dropout_train_%s", tjcu_nn_dtype_suffix(x->dtype));
    return tjcu_nn_launch(c, "dropout", kernel, n, args);
}

tj_status tjcu_native_dropout(const tjc_call *c) { return dropout(c, c->out[0], c->out[1]); }
tj_status tjcu_dropout(const tjc_call *c) { return dropout(c, c->out[0], NULL); }

/* in: grad_output, mask; attrs: scale. gi = g * mask * scale */
tj_status tjcu_native_dropout_backward(const tjc_call *c) {
    const tj_tensor *g = c->in[0];
    int64_t n = tjc_numel(g->sizes, g->ndim);
    double scale = c->attr[0].f;
    tjcu_tensor_arg ga = tjcu_arg(g), ma = tjcu_arg(c->in[1]);
    void *o = tjc_data_ptr(c->out[0]);
    void *args[] = {&ga, &ma, &o, &n, &scale};
    char kernel[40];
    snprintf(kernel, sizeof kernel, "dropout_backward_%s", tjcu_nn_dtype_suffix(g->dtype));
    return tjcu_nn_launch(c, "dropout", kernel, n, args);
}
