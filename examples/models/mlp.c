/* mlp.c — a 784-256-256-10 perceptron with relu and log_softmax. */
#include <math.h>
#include <stdlib.h>

#include "examples/models/models.h"

typedef struct mlp {
    tj_tensor *w[3], *b[3];
} mlp;

static void mlp_destroy(void *ctx) {
    mlp *m = ctx;
    if (!m) return;
    for (int i = 0; i < 3; i++) {
        tj_release(m->w[i]);
        tj_release(m->b[i]);
    }
    free(m);
}

static void *mlp_create(tj_generator *gen) {
    static const int64_t width[4] = {784, 256, 256, 10};
    static const char *const wn[3] = {"fc1.weight", "fc2.weight", "fc3.weight"};
    static const char *const bn[3] = {"fc1.bias", "fc2.bias", "fc3.bias"};
    mlp *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    for (int i = 0; i < 3; i++) {
        int64_t ws[2] = {width[i + 1], width[i]};
        m->w[i] = tjx_param(gen, wn[i], ws, 2, 1.0 / sqrt((double)width[i]));
        m->b[i] = tjx_param_fill(bn[i], &width[i + 1], 1, 0.0);
        if (!m->w[i] || !m->b[i]) {
            mlp_destroy(m);
            return NULL;
        }
    }
    return m;
}

/* x [batch, 784] -> log-probabilities [batch, 10] */
static tj_status mlp_forward(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in;
    (void)n_out;
    mlp *m = ctx;
    tj_scope_begin();
    tj_tensor *h = tj_relu(tj_linear(in[0], m->w[0], m->b[0]));
    h = tj_relu(tj_linear(h, m->w[1], m->b[1]));
    tj_tensor *y = tj_log_softmax(tj_linear(h, m->w[2], m->b[2]), 1);
    out[0] = tj_keep(y);
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status mlp_inputs(void *ctx, tj_generator *gen, tj_tensor **inputs) {
    (void)ctx;
    int64_t s[2] = {64, 784};
    inputs[0] = tj_randn(s, 2, TJ_F32, gen);
    return inputs[0] ? TJ_OK : tj_last_status();
}

static int mlp_parameters(void *ctx, tj_tensor **out, int cap) {
    mlp *m = ctx;
    tj_tensor *all[6] = {m->w[0], m->b[0], m->w[1], m->b[1], m->w[2], m->b[2]};
    return tjx_collect(all, 6, out, cap);
}

const tjx_model tjx_mlp = {"mlp", "784-256-256-10 perceptron, relu, log_softmax (batch 64)", 1, 1,
                           mlp_create, mlp_destroy, mlp_forward, mlp_inputs, mlp_parameters, NULL};
