/* cnn.c — a small convolutional classifier for 3x32x32 images:
 * (conv 3x3 - batch_norm - relu - max_pool 2x2) x 2, then linear to 10 classes.
 * batch_norm runs in training mode: batch statistics, running stats updated. */
#include <math.h>
#include <stdlib.h>

#include "examples/models/models.h"

typedef struct cnn {
    tj_tensor *conv_w[2], *conv_b[2], *bn_w[2], *bn_b[2], *bn_mean[2], *bn_var[2];
    tj_tensor *fc_w, *fc_b;
} cnn;

static void cnn_destroy(void *ctx) {
    cnn *m = ctx;
    if (!m) return;
    for (int i = 0; i < 2; i++) {
        tj_release(m->conv_w[i]);
        tj_release(m->conv_b[i]);
        tj_release(m->bn_w[i]);
        tj_release(m->bn_b[i]);
        tj_release(m->bn_mean[i]);
        tj_release(m->bn_var[i]);
    }
    tj_release(m->fc_w);
    tj_release(m->fc_b);
    free(m);
}

static void *cnn_create(tj_generator *gen) {
    static const int64_t channels[3] = {3, 16, 32};
    static const char *const names[2][6] = {
        {"conv1.weight", "conv1.bias", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var"},
        {"conv2.weight", "conv2.bias", "bn2.weight", "bn2.bias", "bn2.running_mean", "bn2.running_var"}};
    cnn *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    bool ok = true;
    for (int i = 0; i < 2; i++) {
        int64_t ws[4] = {channels[i + 1], channels[i], 3, 3}, cs[1] = {channels[i + 1]};
        double scale = 1.0 / sqrt((double)(channels[i] * 9));
        m->conv_w[i] = tjx_param(gen, names[i][0], ws, 4, scale);
        m->conv_b[i] = tjx_param_fill(names[i][1], cs, 1, 0.0);
        m->bn_w[i] = tjx_param_fill(names[i][2], cs, 1, 1.0);
        m->bn_b[i] = tjx_param_fill(names[i][3], cs, 1, 0.0);
        m->bn_mean[i] = tjx_param_fill(names[i][4], cs, 1, 0.0);
        m->bn_var[i] = tjx_param_fill(names[i][5], cs, 1, 1.0);
        ok = ok && m->conv_w[i] && m->conv_b[i] && m->bn_w[i] && m->bn_b[i] && m->bn_mean[i] &&
             m->bn_var[i];
    }
    int64_t fs[2] = {10, 32 * 8 * 8}, bs[1] = {10};
    m->fc_w = tjx_param(gen, "fc.weight", fs, 2, 1.0 / sqrt(32.0 * 8 * 8));
    m->fc_b = tjx_param_fill("fc.bias", bs, 1, 0.0);
    if (!ok || !m->fc_w || !m->fc_b) {
        cnn_destroy(m);
        return NULL;
    }
    return m;
}

/* x [batch, 3, 32, 32] -> logits [batch, 10] */
static tj_status cnn_forward(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in;
    (void)n_out;
    cnn *m = ctx;
    static const int64_t one = 1, two = 2;
    tj_scope_begin();
    tj_tensor *x = in[0];
    for (int i = 0; i < 2; i++) {
        x = tj_conv2d(x, m->conv_w[i], m->conv_b[i], &one, 1, &one, 1, &one, 1, 1);
        x = tj_batch_norm(x, m->bn_w[i], m->bn_b[i], m->bn_mean[i], m->bn_var[i], true, 0.1, 1e-5);
        x = tj_max_pool2d(tj_relu(x), &two, 1, &two, 1, (int64_t[]){0}, 1, &one, 1, false);
    }
    tj_tensor *y = tj_linear(tj_flatten(x, 1, -1), m->fc_w, m->fc_b);
    out[0] = tj_keep(y);
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status cnn_inputs(void *ctx, tj_generator *gen, tj_tensor **inputs) {
    (void)ctx;
    int64_t s[4] = {8, 3, 32, 32};
    inputs[0] = tj_randn(s, 4, TJ_F32, gen);
    return inputs[0] ? TJ_OK : tj_last_status();
}

/* the trainable ones: running statistics are updated by batch_norm itself */
static int cnn_parameters(void *ctx, tj_tensor **out, int cap) {
    cnn *m = ctx;
    tj_tensor *all[10] = {m->conv_w[0], m->conv_b[0], m->bn_w[0], m->bn_b[0], m->conv_w[1],
                          m->conv_b[1], m->bn_w[1], m->bn_b[1], m->fc_w, m->fc_b};
    return tjx_collect(all, 10, out, cap);
}

static int cnn_buffers(void *ctx, tj_tensor **out, int cap) {
    cnn *m = ctx;
    tj_tensor *all[4] = {m->bn_mean[0], m->bn_var[0], m->bn_mean[1], m->bn_var[1]};
    return tjx_collect(all, 4, out, cap);
}

const tjx_model tjx_cnn = {"cnn", "(conv3x3-batch_norm-relu-max_pool)x2, linear; batch 8, 3x32x32",
                           1, 1, cnn_create, cnn_destroy, cnn_forward, cnn_inputs, cnn_parameters,
                           cnn_buffers};
