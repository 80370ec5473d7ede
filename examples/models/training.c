/* training.c — what training a registry model needs, shared by the training
 * example, the tests and the benchmarks: a loss around a model's forward
 * function, compiling it with gradients, and SGD on the model's parameters
 * (which the program reads by reference). */
#include <string.h>

#include "examples/models/models.h"

tj_status tjx_loss_fn(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_out;
    const tjx_task *t = ctx;
    int n_model = n_in - 1;
    tj_tensor *y[2];
    tj_scope_begin(); /* the model's outputs belong to this scope, like any tj_ result */
    tj_status st = t->model->forward(t->params, in, n_model, y, t->model->n_out);
    tj_tensor *l = NULL;
    if (!st) {
        if (!strcmp(t->loss, "nll")) l = tj_nll_loss(y[0], in[n_model], NULL, "mean", -100);
        else if (!strcmp(t->loss, "mse")) l = tj_mse_loss(y[0], in[n_model], "mean");
        else l = tj_mean(tj_mul(y[0], y[0]), NULL, 0, false); /* "square" */
    }
    out[0] = tj_keep(l);
    tj_scope_end();
    return out[0] ? TJ_OK : (st ? st : tj_last_status());
}

tj_program *tjx_compile_training(tjx_task *t, tj_tensor *const *inputs, tj_graph **graph) {
    tj_graph *g = tj_trace(tjx_loss_fn, t, inputs, t->model->n_in + 1, 1, NULL);
    tj_compile_options o = {.grad_parameters = true};
    tj_program *p = g ? tj_compile(g, &o) : NULL;
    if (graph) *graph = g;
    else tj_graph_free(g);
    return p;
}

void tjx_sgd(const tjx_task *t, tj_program *p, double lr) {
    tj_tensor *ps[32];
    int n = t->model->parameters(t->params, ps, 32);
    tj_scope_begin();
    for (int i = 0; i < n && i < 32; i++) {
        tj_tensor *g = tj_program_grad(p, tj_tensor_name(ps[i]));
        if (g) tj_sub_(ps[i], g, lr); /* in place: the program reads it by reference */
    }
    tj_scope_end();
    tj_clear_error(); /* a parameter the loss does not reach has no gradient */
    tj_program_zero_grad(p);
}

tj_status tjx_train_step(tjx_task *t, tj_program *p, tj_tensor *const *inputs, double lr, double *loss) {
    tj_tensor *l;
    tj_status st = tj_run(p, inputs, &l);
    if (!st) st = tj_backward(p, NULL, NULL);
    if (!st && loss) st = tj_item(l, loss);
    if (!st) tjx_sgd(t, p, lr);
    tj_release(l);
    return st;
}
