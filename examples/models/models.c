/* models.c — the registry of example models and parameter helpers. */
#include <stdio.h>
#include <string.h>

#include "examples/models/models.h"

static const tjx_model *const all[] = {&tjx_mlp, &tjx_lstm_cell, &tjx_lstm, &tjx_cnn,
                                       &tjx_transformer};

int tjx_num_models(void) { return (int)(sizeof all / sizeof all[0]); }
const tjx_model *tjx_model_at(int i) { return i >= 0 && i < tjx_num_models() ? all[i] : NULL; }

const tjx_model *tjx_find_model(const char *name) {
    for (int i = 0; name && i < tjx_num_models(); i++)
        if (!strcmp(all[i]->name, name)) return all[i];
    return NULL;
}

/* Parameters belong to the model, whatever scope is open when it is made:
 * they are created inside a scope of their own and retained out of it. */
tj_tensor *tjx_param(tj_generator *gen, const char *name, const int64_t *sizes, int ndim,
                     double scale) {
    tj_scope_begin();
    tj_tensor *t = tj_randn(sizes, ndim, TJ_F32, gen);
    if (t) tj_mul_scalar_(t, scale);
    if (t) tj_tensor_set_name(t, name);
    tj_retain(t);
    tj_scope_end();
    return t;
}

tj_tensor *tjx_param_fill(const char *name, const int64_t *sizes, int ndim, double value) {
    tj_scope_begin();
    tj_tensor *t = tj_full(sizes, ndim, value, TJ_F32);
    if (t) tj_tensor_set_name(t, name);
    tj_retain(t);
    tj_scope_end();
    return t;
}

int tjx_collect(tj_tensor *const *all, int n, tj_tensor **out, int cap) {
    for (int i = 0; i < n && i < cap; i++) out[i] = all[i];
    return n;
}
