/* train.c — training through traced forward graphs and derived backward
 * graphs: the MLP on a classification set made here (ten Gaussian clusters in
 * 784 dims), the 2-layer LSTM on a sequence task (follow a running sum), and
 * SGD steps of the CNN and of the transformer block. Parameters are bound
 * to the programs by reference, so SGD updates them in place.
 * Usage: example_train [mlp|lstm|cnn|transformer|all] [steps] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/models/models.h"

typedef struct task {
    const tjx_model *model;
    void *params;
    int n_data;                 /* inputs of the loss function besides the model's */
    tj_tensor *(*target)(tj_tensor *const *inputs, tj_generator *gen); /* a new reference */
    const char *loss;           /* "nll" or "mse" */
} task;

/* loss(model(inputs[0..n_in)), inputs[n_in]) */
static tj_status loss_fn(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_out;
    const task *t = ctx;
    int n_model = n_in - 1;
    tj_tensor *y[2];
    tj_scope_begin();
    tj_status st = t->model->forward(t->params, in, n_model, y, t->model->n_out);
    tj_tensor *l = NULL;
    if (!st) {
        if (!strcmp(t->loss, "nll")) l = tj_nll_loss(y[0], in[n_model], NULL, "mean", -100);
        else if (!strcmp(t->loss, "mse")) l = tj_mse_loss(y[0], in[n_model], "mean");
        else l = tj_mean(tj_mul(y[0], y[0]), NULL, 0, false); /* a stand-in loss: mean square */
    }
    out[0] = tj_keep(l);
    tj_scope_end();
    return l ? TJ_OK : (st ? st : tj_last_status());
}

static void sgd(const task *t, tj_program *p, double lr) {
    tj_tensor *ps[32];
    int n = t->model->parameters(t->params, ps, 32);
    tj_scope_begin();
    for (int i = 0; i < n; i++) {
        tj_tensor *g = tj_program_grad(p, tj_tensor_name(ps[i]));
        if (g) tj_sub_(ps[i], g, lr); /* in place: the program reads it by reference */
    }
    tj_scope_end();
    tj_clear_error();
    tj_program_zero_grad(p);
}

/* ---- data ------------------------------------------------------------------------ */

/* ten cluster centres, fixed by the seed */
static tj_tensor *centres(void) {
    static tj_tensor *c;
    if (!c) { /* made in a scope of its own: it outlives whatever scope is open */
        tj_generator *g = tj_generator_new(1234);
        int64_t s[2] = {10, 784};
        tj_scope_begin();
        c = tj_retain(tj_randn(s, 2, TJ_F32, g));
        tj_scope_end();
        tj_generator_free(g);
    }
    return c;
}

/* x = centre[class] + noise; the classes are the targets */
static void mlp_batch(tj_generator *gen, tj_tensor **x, tj_tensor **y) {
    int64_t b = 64, s[2] = {64, 784};
    tj_scope_begin();
    tj_tensor *cls = tj_to_dtype(tj_floor(tj_mul_scalar(tj_rand(&b, 1, TJ_F64, gen), 10.0)), TJ_I64);
    tj_tensor *noise = tj_mul_scalar(tj_randn(s, 2, TJ_F32, gen), 2.0);
    *x = tj_retain(tj_add(tj_index_select(centres(), 0, cls), noise, 1.0));
    *y = tj_retain(cls);
    tj_scope_end();
}

/* the LSTM follows tanh of the running sum of its input's first feature */
static tj_tensor *running_sum_target(tj_tensor *const *inputs, tj_generator *gen) {
    (void)gen;
    tj_tensor *x = inputs[0]; /* [steps, batch, input] */
    int64_t steps = tj_size(x, 0), batch = tj_size(x, 1);
    tj_tensor *t = tj_zeros((int64_t[]){steps, batch, 64}, 3, TJ_F32);
    float *d = tj_data(t);
    for (int64_t b = 0; b < batch; b++) {
        double sum = 0;
        for (int64_t s = 0; s < steps; s++) {
            int64_t idx[3] = {s, b, 0};
            sum += tj_get(x, idx);
            for (int64_t h = 0; h < 64; h++) d[(s * batch + b) * 64 + h] = (float)tanh(0.5 * sum);
        }
    }
    return t;
}

/* ---- runs ---------------------------------------------------------------------------- */

static int train_mlp(int steps) {
    task t = {&tjx_mlp, NULL, 1, NULL, "nll"};
    tj_generator *gen = tj_generator_new(7);
    t.params = tjx_mlp.create(gen);
    tj_tensor *in[2];
    mlp_batch(gen, &in[0], &in[1]);
    tj_graph *g = tj_trace(loss_fn, &t, in, 2, 1, NULL);
    tj_compile_options o = {.grad_parameters = true};
    tj_program *p = g ? tj_compile(g, &o) : NULL;
    if (!p) {
        fprintf(stderr, "train mlp: %s\n", tj_last_error());
        return 1;
    }
    printf("MLP 784-256-256-10 on ten Gaussian clusters, batch 64, SGD lr 0.05:\n");
    for (int step = 0; step < steps; step++) {
        if (step) {
            tj_release(in[0]);
            tj_release(in[1]);
            mlp_batch(gen, &in[0], &in[1]);
        }
        tj_tensor *loss;
        if (tj_run(p, in, &loss) || tj_backward(p, NULL, NULL)) {
            fprintf(stderr, "train mlp: %s\n", tj_last_error());
            return 1;
        }
        double v;
        tj_item(loss, &v);
        tj_release(loss);
        if (step % (steps / 10 ? steps / 10 : 1) == 0 || step == steps - 1)
            printf("  step %3d  loss %.4f\n", step, v);
        sgd(&t, p, 0.05);
    }
    tj_release(in[0]);
    tj_release(in[1]);
    tj_program_free(p);
    tj_graph_free(g);
    tjx_mlp.destroy(t.params);
    tj_generator_free(gen);
    tj_release(centres());
    return 0;
}

/* Trains (or takes one step of) a registry model on its example inputs. */
static int train_model(const tjx_model *m, const char *loss, tj_tensor *(*target)(tj_tensor *const *,
                                                                                 tj_generator *),
                       int steps, double lr) {
    task t = {m, NULL, 1, target, loss};
    tj_generator *gen = tj_generator_new(9);
    t.params = m->create(gen);
    tj_tensor *in[4];
    if (!t.params || m->make_inputs(t.params, gen, in)) return 1;
    in[m->n_in] = target ? target(in, gen) : tj_zeros(NULL, 0, TJ_F32);
    tj_graph *g = tj_trace(loss_fn, &t, in, m->n_in + 1, 1, NULL);
    tj_compile_options o = {.grad_parameters = true};
    tj_program *p = g ? tj_compile(g, &o) : NULL;
    int rc = 0;
    if (!p) {
        printf("%s: no training yet: %s\n", m->name, tj_last_error());
        rc = 2;
    }
    for (int step = 0; p && step < steps; step++) {
        tj_tensor *l;
        if (tj_run(p, in, &l) || tj_backward(p, NULL, NULL)) {
            fprintf(stderr, "train %s: %s\n", m->name, tj_last_error());
            rc = 1;
            break;
        }
        double v;
        tj_item(l, &v);
        tj_release(l);
        if (steps == 1 || step % (steps / 8 ? steps / 8 : 1) == 0 || step == steps - 1)
            printf("  %s step %3d  loss %.5f\n", m->name, step, v);
        sgd(&t, p, lr);
    }
    for (int i = 0; i <= m->n_in; i++) tj_release(in[i]);
    tj_program_free(p);
    tj_graph_free(g);
    m->destroy(t.params);
    tj_generator_free(gen);
    return rc;
}

int main(int argc, char **argv) {
    const char *which = argc > 1 ? argv[1] : "all";
    int steps = argc > 2 ? atoi(argv[2]) : 60;
    int rc = 0;
    bool all = !strcmp(which, "all");
    if (all || !strcmp(which, "mlp")) rc |= train_mlp(steps);
    if (all || !strcmp(which, "lstm")) {
        printf("2-layer LSTM following tanh of a running sum, mse, SGD lr 0.5:\n");
        rc |= train_model(&tjx_lstm, "mse", running_sum_target, steps, 0.5) == 1;
    }
    if (all || !strcmp(which, "cnn")) {
        printf("CNN, three SGD steps (loss: mean square of the logits):\n");
        rc |= train_model(&tjx_cnn, "square", NULL, 3, 0.001) == 1;
    }
    if (all || !strcmp(which, "transformer")) {
        printf("transformer block, three SGD steps (loss: mean square of the outputs):\n");
        rc |= train_model(&tjx_transformer, "square", NULL, 3, 0.01) == 1;
    }
    return rc;
}
