/* soak.c — long replays with resident memory sampled (not in make test):
 * one million replays of the LSTM cell (B=1, H=64, planned), then 10,000
 * training steps of the MLP (forward, backward, SGD). Prints the resident
 * set every tenth of each run; flat figures mean replay and training leak
 * nothing and their caches stay bounded. SOAK_SCALE=0.1 runs a tenth. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench_util.h"
#include "examples/models/models.h"

static double resident_mib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
}

static void fail(const char *what) {
    fprintf(stderr, "soak: %s: %s\n", what, tj_last_error());
    exit(1);
}

int main(void) {
    const char *scale_env = getenv("SOAK_SCALE");
    double scale = scale_env ? atof(scale_env) : 1.0;
    long replays = (long)(1000000 * scale), steps = (long)(10000 * scale);
    if (replays < 10) replays = 10;
    if (steps < 10) steps = 10;
    printf("soak (%s, %d threads): resident MiB every tenth of each run\n\n", bench_isa(),
           tj_get_num_threads());

    tj_generator *gen = tj_generator_new(1);
    void *cell = tjx_lstm_cell_create_sized(gen, (tjx_lstm_sizes){1, 64, 64, 1, 1});
    tj_tensor *in[3];
    if (!cell || tjx_lstm_cell.make_inputs(cell, gen, in)) fail("lstm cell");
    tj_graph *g = tj_trace(tjx_lstm_cell.forward, cell, in, 3, 2, NULL);
    tj_compile_options o = {.backend = NULL};
    tj_program *p = g ? tj_compile(g, &o) : NULL;
    if (!p) fail("compile");
    printf("| LSTM cell replays | resident MiB | us per replay |\n|---|---|---|\n");
    double t0 = bench_now();
    for (long r = 1; r <= replays; r++) {
        tj_tensor *out[2];
        if (tj_run(p, in, out)) fail("replay");
        tj_release(out[0]);
        tj_release(out[1]);
        if (r % (replays / 10) == 0) {
            double t = bench_now();
            printf("| %ld | %.1f | %.2f |\n", r, resident_mib(), (t - t0) * 1e6 / (double)(replays / 10));
            fflush(stdout);
            t0 = t;
        }
    }
    tj_program_free(p);
    tj_graph_free(g);
    for (int i = 0; i < 3; i++) tj_release(in[i]);
    tjx_lstm_cell.destroy(cell);

    tjx_task task = {&tjx_mlp, tjx_mlp.create(gen), "nll"};
    tj_tensor *min[2];
    if (!task.params || tjx_mlp.make_inputs(task.params, gen, min)) fail("mlp");
    int64_t batch = tj_sizes(min[0])[0];
    tj_scope_begin();
    min[1] = tj_retain(tj_to_dtype(tj_floor(tj_mul_scalar(tj_rand(&batch, 1, TJ_F64, gen), 10.0)),
                                   TJ_I64)); /* classes 0..9 */
    tj_scope_end();
    tj_program *tp = tjx_compile_training(&task, min, NULL);
    if (!tp) fail("compile training");
    printf("\n| MLP training steps | resident MiB | loss | ms per step |\n|---|---|---|---|\n");
    t0 = bench_now();
    for (long s = 1; s <= steps; s++) {
        double loss;
        if (tjx_train_step(&task, tp, min, 0.01, &loss)) fail("train step");
        if (s % (steps / 10) == 0) {
            double t = bench_now();
            printf("| %ld | %.1f | %.4f | %.3f |\n", s, resident_mib(), loss,
                   (t - t0) * 1e3 / (double)(steps / 10));
            fflush(stdout);
            t0 = t;
        }
    }
    tj_program_free(tp);
    for (int i = 0; i < 2; i++) tj_release(min[i]);
    tjx_mlp.destroy(task.params);
    tj_generator_free(gen);
    return 0;
}
