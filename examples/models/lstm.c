/* lstm.c — an LSTM cell, and a stack of LSTM layers run over a sequence (the
 * loop over time steps unrolls under tracing). Gate order i, f, g, o as in
 * PyTorch's nn.LSTM. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "examples/models/models.h"

typedef struct layer {
    tj_tensor *w_ih, *w_hh, *b_ih, *b_hh;
} layer;

typedef struct lstm {
    tjx_lstm_sizes sizes;
    layer layers[4];
} lstm;

static void lstm_destroy(void *ctx) {
    lstm *m = ctx;
    if (!m) return;
    for (int l = 0; l < 4; l++) {
        tj_release(m->layers[l].w_ih);
        tj_release(m->layers[l].w_hh);
        tj_release(m->layers[l].b_ih);
        tj_release(m->layers[l].b_hh);
    }
    free(m);
}

static lstm *lstm_new(tj_generator *gen, tjx_lstm_sizes sizes) {
    lstm *m = calloc(1, sizeof *m);
    if (!m || sizes.layers < 1 || sizes.layers > 4) {
        free(m);
        return NULL;
    }
    m->sizes = sizes;
    double scale = 1.0 / sqrt((double)sizes.hidden);
    for (int l = 0; l < sizes.layers; l++) {
        int64_t in = l == 0 ? sizes.input : sizes.hidden;
        int64_t wi[2] = {4 * sizes.hidden, in}, wh[2] = {4 * sizes.hidden, sizes.hidden},
                b[1] = {4 * sizes.hidden};
        char name[4][32];
        const char *suffix[4] = {"weight_ih", "weight_hh", "bias_ih", "bias_hh"};
        for (int k = 0; k < 4; k++)
            snprintf(name[k], sizeof name[k], sizes.layers > 1 ? "%s_l%d" : "%s", suffix[k], l);
        layer *L = &m->layers[l];
        L->w_ih = tjx_param(gen, name[0], wi, 2, scale);
        L->w_hh = tjx_param(gen, name[1], wh, 2, scale);
        L->b_ih = tjx_param(gen, name[2], b, 1, scale);
        L->b_hh = tjx_param(gen, name[3], b, 1, scale);
        if (!L->w_ih || !L->w_hh || !L->b_ih || !L->b_hh) {
            lstm_destroy(m);
            return NULL;
        }
    }
    return m;
}

/* One step: x [batch, in], h and c [batch, hidden] -> h', c'. Inside a scope. */
static tj_status cell(const layer *L, tj_tensor *x, tj_tensor *h, tj_tensor *c, tj_tensor **h_out,
                      tj_tensor **c_out) {
    /* named steps: C leaves the order of a call's arguments open, and the
     * trace (and its golden IR) should not depend on the compiler */
    tj_tensor *from_x = tj_linear(x, L->w_ih, L->b_ih);
    tj_tensor *from_h = tj_linear(h, L->w_hh, L->b_hh);
    tj_tensor *gates = tj_add(from_x, from_h, 1.0);
    tj_tensor *g[4];
    if (tj_chunk(gates, 4, 1, g, 4) != 4) return tj_last_status();
    tj_tensor *in_gate = tj_sigmoid(g[0]), *forget = tj_sigmoid(g[1]), *cand = tj_tanh(g[2]),
              *out_gate = tj_sigmoid(g[3]);
    tj_tensor *kept = tj_mul(forget, c);
    tj_tensor *added = tj_mul(in_gate, cand);
    *c_out = tj_add(kept, added, 1.0);
    *h_out = tj_mul(out_gate, tj_tanh(*c_out));
    return *h_out ? TJ_OK : tj_last_status();
}

void *tjx_lstm_cell_create_sized(tj_generator *gen, tjx_lstm_sizes sizes) {
    sizes.layers = 1;
    sizes.steps = 1;
    return lstm_new(gen, sizes);
}

static void *cell_create(tj_generator *gen) {
    return tjx_lstm_cell_create_sized(gen, (tjx_lstm_sizes){64, 512, 512, 1, 1});
}

/* x [batch, input], h [batch, hidden], c [batch, hidden] -> h', c' */
static tj_status cell_forward(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in;
    (void)n_out;
    lstm *m = ctx;
    tj_scope_begin();
    tj_tensor *h, *c;
    tj_status st = cell(&m->layers[0], in[0], in[1], in[2], &h, &c);
    out[0] = st ? NULL : tj_keep(h);
    out[1] = st ? NULL : tj_keep(c);
    if (!st && (!out[0] || !out[1])) st = tj_last_status(); /* tj_keep: out of memory */
    tj_scope_end();
    return st;
}

static tj_status cell_inputs(void *ctx, tj_generator *gen, tj_tensor **inputs) {
    lstm *m = ctx;
    int64_t xs[2] = {m->sizes.batch, m->sizes.input}, hs[2] = {m->sizes.batch, m->sizes.hidden};
    inputs[0] = tj_randn(xs, 2, TJ_F32, gen);
    inputs[1] = tj_randn(hs, 2, TJ_F32, gen);
    inputs[2] = tj_randn(hs, 2, TJ_F32, gen);
    return inputs[0] && inputs[1] && inputs[2] ? TJ_OK : tj_last_status();
}

static void *seq_create(tj_generator *gen) {
    return lstm_new(gen, (tjx_lstm_sizes){4, 32, 64, 8, 2});
}

/* x [steps, batch, input] -> the top layer's outputs [steps, batch, hidden],
 * from zero initial states. */
static tj_status seq_forward(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in;
    (void)n_out;
    lstm *m = ctx;
    const tjx_lstm_sizes *s = &m->sizes;
    tj_scope_begin();
    /* the batch is the input's, so a shard of a batch runs the same model */
    int64_t hs[2] = {tj_size(in[0], 1), s->hidden};
    tj_tensor *h[4], *c[4], *outputs[64];
    for (int l = 0; l < s->layers; l++) {
        h[l] = tj_new_zeros(in[0], hs, 2); /* of the input's dtype, on its device */
        c[l] = tj_new_zeros(in[0], hs, 2);
    }
    tj_status st = TJ_OK;
    int64_t steps = s->steps < 64 ? s->steps : 64;
    for (int64_t t = 0; t < steps && st == TJ_OK; t++) {
        tj_tensor *x = tj_select(in[0], 0, t);
        for (int l = 0; l < s->layers && st == TJ_OK; l++) {
            st = cell(&m->layers[l], x, h[l], c[l], &h[l], &c[l]);
            x = h[l];
        }
        outputs[t] = x;
    }
    tj_tensor *y = st ? NULL : tj_stack(outputs, (int)steps, 0);
    out[0] = tj_keep(y);
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status seq_inputs(void *ctx, tj_generator *gen, tj_tensor **inputs) {
    lstm *m = ctx;
    int64_t xs[3] = {m->sizes.steps, m->sizes.batch, m->sizes.input};
    inputs[0] = tj_randn(xs, 3, TJ_F32, gen);
    return inputs[0] ? TJ_OK : tj_last_status();
}

static int lstm_parameters(void *ctx, tj_tensor **out, int cap) {
    lstm *m = ctx;
    tj_tensor *all[16];
    int n = 0;
    for (int l = 0; l < m->sizes.layers; l++) {
        all[n++] = m->layers[l].w_ih;
        all[n++] = m->layers[l].w_hh;
        all[n++] = m->layers[l].b_ih;
        all[n++] = m->layers[l].b_hh;
    }
    return tjx_collect(all, n, out, cap);
}

const tjx_model tjx_lstm_cell = {"lstm_cell", "LSTM cell: batch 64, input 512, hidden 512", 3, 2,
                                 cell_create, lstm_destroy, cell_forward, cell_inputs,
                                 lstm_parameters, NULL};
const tjx_model tjx_lstm = {"lstm", "2-layer LSTM over 8 steps: batch 4, input 32, hidden 64", 1, 1,
                            seq_create, lstm_destroy, seq_forward, seq_inputs, lstm_parameters, NULL};
