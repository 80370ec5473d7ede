/* train.c — training steps through traced forward and derived backward
 * graphs: the MLP (784-256-256-10, batch 64, nll loss) and the LSTM cell
 * forward+backward (B=64, H=512), each compiled unfused ("dce,cse") and with
 * the default pipeline (fused), in ms per step (forward, backward and for the
 * MLP an SGD update). Medians of repetitions after warm-up, same run. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "examples/models/models.h"
#include "bench_util.h"

static tj_status mlp_loss(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in;
    (void)n_out;
    tj_tensor *y = NULL;
    tj_scope_begin(); /* the model's outputs belong to this scope, like any tj_ result */
    tj_status st = tjx_mlp.forward(ctx, in, 1, &y, 1);
    out[0] = st ? NULL : tj_keep(tj_nll_loss(y, in[1], NULL, "mean", -100));
    tj_scope_end();
    return out[0] ? TJ_OK : (st ? st : tj_last_status());
}

static double step_ms(tj_model_fn fn, void *ctx, const tjx_model *m, tj_tensor **in, int n_in,
                      const char *passes, int reps, bool sgd) {
    tj_graph *g = tj_trace(fn, ctx, in, n_in, 1, NULL);
    tj_compile_options o = {.passes = passes, .grad_parameters = true};
    tj_program *p = g ? tj_compile(g, &o) : NULL;
    if (!p) {
        fprintf(stderr, "train bench: %s\n", tj_last_error());
        exit(1);
    }
    tj_tensor *params[32];
    int n_params = m->parameters(ctx, params, 32);
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (int r = -3; r < reps; r++) {
        double t0 = bench_now();
        tj_scope_begin();
        tj_tensor *loss;
        if (tj_run(p, in, &loss) || tj_backward(p, NULL, NULL)) {
            fprintf(stderr, "train bench: %s\n", tj_last_error());
            exit(1);
        }
        for (int i = 0; sgd && i < n_params; i++) {
            tj_tensor *gr = tj_program_grad(p, tj_tensor_name(params[i]));
            if (gr) tj_sub_(params[i], gr, 1e-3);
        }
        tj_program_zero_grad(p);
        tj_scope_end();
        if (r >= 0) t[r] = bench_now() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, bench_cmp_double);
    double med = t[reps / 2];
    free(t);
    tj_program_free(p);
    tj_graph_free(g);
    return med * 1e3;
}

int main(void) {
    tj_generator *gen = tj_generator_new(3);
    printf("training steps (forward + derived backward%s), %d threads, medians\n\n", "", tj_get_num_threads());
    printf("| workload | unfused ms/step | fused ms/step | speed-up |\n|---|---|---|---|\n");

    void *mlp = tjx_mlp.create(gen);
    tj_tensor *in[3];
    tjx_mlp.make_inputs(mlp, gen, in);
    int64_t n = 64;
    tj_scope_begin();
    tj_tensor *cls = tj_keep(tj_to_dtype(tj_floor(tj_mul_scalar(tj_rand(&n, 1, TJ_F64, gen), 10.0)), TJ_I64));
    tj_scope_end();
    in[1] = cls;
    double u = step_ms(mlp_loss, mlp, &tjx_mlp, in, 2, "dce,cse", 30, true);
    double f = step_ms(mlp_loss, mlp, &tjx_mlp, in, 2, NULL, 30, true);
    printf("| MLP 784-256-256-10 step (batch 64, SGD) | %.3f | %.3f | %.2fx |\n", u, f, u / f);
    tj_release(in[0]);
    tj_release(in[1]);
    tjx_mlp.destroy(mlp);

    void *cell = tjx_lstm_cell_create_sized(gen, (tjx_lstm_sizes){64, 512, 512, 1, 1});
    tjx_lstm_cell.make_inputs(cell, gen, in);
    u = step_ms(bench_lstm_cell_loss, cell, &tjx_lstm_cell, in, 3, "dce,cse", 20, false);
    f = step_ms(bench_lstm_cell_loss, cell, &tjx_lstm_cell, in, 3, NULL, 20, false);
    printf("| LSTM cell forward+backward (B=64, H=512) | %.3f | %.3f | %.2fx |\n", u, f, u / f);
    for (int i = 0; i < 3; i++) tj_release(in[i]);
    tjx_lstm_cell.destroy(cell);
    tj_generator_free(gen);
    return 0;
}
