/* models.h — the example models, written as plain C model functions with their
 * parameters in a struct, and a registry that the tjit program, the demo, the
 * tests and the benchmarks share. Prefix tjx_. */
#ifndef TJIT_EXAMPLE_MODELS_H
#define TJIT_EXAMPLE_MODELS_H

#include "tjit/tjit.h"

typedef struct tjx_model {
    const char *name;
    const char *description;
    int n_in, n_out;
    /* Parameters, initialised from gen; NULL on error. */
    void *(*create)(tj_generator *gen);
    void (*destroy)(void *params);
    tj_model_fn forward;
    /* Example inputs (n_in new references), from gen. */
    tj_status (*make_inputs)(void *params, tj_generator *gen, tj_tensor **inputs);
    /* The parameters (borrowed), for optimisers: fills out (at most cap) and
     * returns how many there are. */
    int (*parameters)(void *params, tj_tensor **out, int cap);
    /* State that is not trained but moves with the model (batch_norm's
     * running statistics), like parameters(); NULL when there is none. */
    int (*buffers)(void *params, tj_tensor **out, int cap);
} tjx_model;

extern const tjx_model tjx_mlp, tjx_lstm_cell, tjx_lstm, tjx_cnn, tjx_transformer;

int tjx_num_models(void);
const tjx_model *tjx_model_at(int i);
const tjx_model *tjx_find_model(const char *name); /* NULL when unknown */

/* A parameter: normal values scaled by scale, named. NULL on error. */
tj_tensor *tjx_param(tj_generator *gen, const char *name, const int64_t *sizes, int ndim,
                     double scale);
/* The same sizes filled with value, named. */
tj_tensor *tjx_param_fill(const char *name, const int64_t *sizes, int ndim, double value);
/* Copies up to cap of all[0..n) into out; returns n (for parameters()). */
int tjx_collect(tj_tensor *const *all, int n, tj_tensor **out, int cap);

/* The LSTM cell's sizes: the model functions read them from their params. */
typedef struct tjx_lstm_sizes {
    int64_t batch, input, hidden, steps, layers;
} tjx_lstm_sizes;

/* An LSTM cell's parameters and its parameter-struct constructor with given
 * sizes (the registry's entry uses batch 64, input and hidden 512). */
void *tjx_lstm_cell_create_sized(tj_generator *gen, tjx_lstm_sizes sizes);

/* ---- training (training.c) ----------------------------------------------------- */

/* A model, its parameters and a loss: "nll" (the model returns log-
 * probabilities; the target is i64 classes), "mse" (against a target of the
 * output's sizes) or "square" (the mean square of the output; no target
 * needed, but an input slot for it is still passed). */
typedef struct tjx_task {
    const tjx_model *model;
    void *params;
    const char *loss;
} tjx_task;

/* The loss as a model function: inputs are the model's, then the target. */
tj_status tjx_loss_fn(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out);
/* Traces the loss on inputs (the model's then the target) and compiles it
 * with the parameters' gradients; the graph goes to *graph when given. */
tj_program *tjx_compile_training(tjx_task *t, tj_tensor *const *inputs, tj_graph **graph);
/* SGD on the parameters from the program's gradients, which it then clears. */
void tjx_sgd(const tjx_task *t, tj_program *p, double lr);
/* Forward, backward and SGD; the loss before the step goes to *loss. */
tj_status tjx_train_step(tjx_task *t, tj_program *p, tj_tensor *const *inputs, double lr, double *loss);

#endif
