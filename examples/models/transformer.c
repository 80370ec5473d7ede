/* transformer.c — one post-norm transformer encoder block: multi-head
 * self-attention (matmul, softmax), residual, layer_norm, a gelu MLP, residual,
 * layer_norm. Batch 1, sequence 128, width 256, 4 heads. */
#include <math.h>
#include <stdlib.h>

#include "examples/models/models.h"

enum { SEQ = 128, WIDTH = 256, HEADS = 4, HIDDEN = 4 * WIDTH };

typedef struct block {
    tj_tensor *qkv_w, *qkv_b, *proj_w, *proj_b, *ln1_w, *ln1_b;
    tj_tensor *fc1_w, *fc1_b, *fc2_w, *fc2_b, *ln2_w, *ln2_b;
} block;

static void block_destroy(void *ctx) {
    block *m = ctx;
    if (!m) return;
    tj_tensor **p = &m->qkv_w;
    for (int i = 0; i < 12; i++) tj_release(p[i]);
    free(m);
}

static void *block_create(tj_generator *gen) {
    block *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    double s = 1.0 / sqrt((double)WIDTH), sh = 1.0 / sqrt((double)HIDDEN);
    int64_t qkv[2] = {3 * WIDTH, WIDTH}, q3[1] = {3 * WIDTH}, proj[2] = {WIDTH, WIDTH},
            w[1] = {WIDTH}, fc1[2] = {HIDDEN, WIDTH}, h[1] = {HIDDEN}, fc2[2] = {WIDTH, HIDDEN};
    m->qkv_w = tjx_param(gen, "attn.in_proj_weight", qkv, 2, s);
    m->qkv_b = tjx_param_fill("attn.in_proj_bias", q3, 1, 0.0);
    m->proj_w = tjx_param(gen, "attn.out_proj.weight", proj, 2, s);
    m->proj_b = tjx_param_fill("attn.out_proj.bias", w, 1, 0.0);
    m->ln1_w = tjx_param_fill("norm1.weight", w, 1, 1.0);
    m->ln1_b = tjx_param_fill("norm1.bias", w, 1, 0.0);
    m->fc1_w = tjx_param(gen, "linear1.weight", fc1, 2, s);
    m->fc1_b = tjx_param_fill("linear1.bias", h, 1, 0.0);
    m->fc2_w = tjx_param(gen, "linear2.weight", fc2, 2, sh);
    m->fc2_b = tjx_param_fill("linear2.bias", w, 1, 0.0);
    m->ln2_w = tjx_param_fill("norm2.weight", w, 1, 1.0);
    m->ln2_b = tjx_param_fill("norm2.bias", w, 1, 0.0);
    tj_tensor **p = &m->qkv_w;
    for (int i = 0; i < 12; i++)
        if (!p[i]) {
            block_destroy(m);
            return NULL;
        }
    return m;
}

/* x [1, SEQ, WIDTH] -> [1, SEQ, WIDTH] */
static tj_status block_forward(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in;
    (void)n_out;
    block *m = ctx;
    const int64_t b = tj_size(in[0], 0), s = tj_size(in[0], 1), dh = WIDTH / HEADS;
    const int64_t heads_shape[4] = {b, s, HEADS, dh}, merged[3] = {b, s, WIDTH}, width = WIDTH;
    tj_scope_begin();
    tj_tensor *qkv[3];
    tj_status st = TJ_OK;
    if (tj_chunk(tj_linear(in[0], m->qkv_w, m->qkv_b), 3, -1, qkv, 3) != 3) st = tj_last_status();
    tj_tensor *q = NULL, *k = NULL, *v = NULL;
    if (!st) { /* [b, s, w] -> [b, heads, s, dh] */
        q = tj_transpose(tj_view(qkv[0], heads_shape, 4), 1, 2);
        k = tj_transpose(tj_view(qkv[1], heads_shape, 4), 1, 2);
        v = tj_transpose(tj_view(qkv[2], heads_shape, 4), 1, 2);
    }
    tj_tensor *scores = tj_mul_scalar(tj_matmul(q, tj_transpose(k, -2, -1)), 1.0 / sqrt((double)dh));
    tj_tensor *attn = tj_matmul(tj_softmax(scores, -1), v);
    attn = tj_reshape(tj_transpose(attn, 1, 2), merged, 3);
    tj_tensor *x1 = tj_layer_norm(tj_add(in[0], tj_linear(attn, m->proj_w, m->proj_b), 1.0), &width,
                                  1, m->ln1_w, m->ln1_b, 1e-5);
    tj_tensor *mlp = tj_linear(tj_gelu(tj_linear(x1, m->fc1_w, m->fc1_b), "none"), m->fc2_w, m->fc2_b);
    tj_tensor *y = tj_layer_norm(tj_add(x1, mlp, 1.0), &width, 1, m->ln2_w, m->ln2_b, 1e-5);
    out[0] = tj_keep(y);
    tj_scope_end();
    return out[0] ? TJ_OK : (st ? st : tj_last_status());
}

static int block_parameters(void *ctx, tj_tensor **out, int cap) {
    return tjx_collect(&((block *)ctx)->qkv_w, 12, out, cap);
}

static tj_status block_inputs(void *ctx, tj_generator *gen, tj_tensor **inputs) {
    (void)ctx;
    int64_t sz[3] = {1, SEQ, WIDTH};
    inputs[0] = tj_randn(sz, 3, TJ_F32, gen);
    return inputs[0] ? TJ_OK : tj_last_status();
}

const tjx_model tjx_transformer = {"transformer",
                                   "encoder block: 4-head self-attention, layer_norm, gelu MLP; "
                                   "sequence 128, width 256",
                                   1, 1, block_create, block_destroy, block_forward, block_inputs,
                                   block_parameters, NULL};
