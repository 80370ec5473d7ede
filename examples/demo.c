/* demo.c — `make demo`: traces the LSTM cell example, prints its canonical IR
 * and register code, replays the compiled program, checks that replay equals
 * the eager run, and prints eager vs replay timings. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples/models/models.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds of reps runs of one forward, eager or replayed. */
static double median_time(const tjx_model *m, void *params, tj_program *p, tj_tensor **in, int reps) {
    double *t = malloc(sizeof(double) * (size_t)reps);
    tj_tensor *out[2];
    for (int r = -3; r < reps; r++) { /* three warm-up runs */
        double t0 = now_s();
        tj_status st = p ? tj_run(p, in, out) : m->forward(params, in, m->n_in, out, m->n_out);
        double dt = now_s() - t0;
        if (st != TJ_OK) {
            fprintf(stderr, "demo: %s\n", tj_last_error());
            exit(1);
        }
        for (int i = 0; i < m->n_out; i++) tj_release(out[i]);
        if (r >= 0) t[r] = dt;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    double med = t[reps / 2];
    free(t);
    return med;
}

static double max_abs_diff(tj_tensor *a, tj_tensor *b) {
    tj_tensor *d = tj_abs(tj_sub(a, b, 1.0));
    tj_tensor *m = tj_amax(d, NULL, 0, false);
    double v = -1;
    tj_item(m, &v);
    return v;
}

static void run_size(tjx_lstm_sizes sizes, bool show_ir) {
    const tjx_model *m = &tjx_lstm_cell;
    tj_generator *gen = tj_generator_new(7);
    void *params = tjx_lstm_cell_create_sized(gen, sizes);
    tj_tensor *in[3];
    if (!params || m->make_inputs(params, gen, in) != TJ_OK) {
        fprintf(stderr, "demo: %s\n", tj_last_error());
        exit(1);
    }
    double t0 = now_s();
    tj_graph *g = tj_trace(m->forward, params, in, 3, 2, NULL);
    tj_program *p = g ? tj_compile(g, NULL) : NULL;
    double t_compile = now_s() - t0;
    if (!p) {
        fprintf(stderr, "demo: %s\n", tj_last_error());
        exit(1);
    }
    if (show_ir) {
        char *ir = tj_graph_to_string(g, TJ_PRINT_CANONICAL | TJ_PRINT_NO_STRIDES);
        char *code = tj_program_code_to_string(p);
        printf("== the LSTM cell, traced (canonical IR)\n%s\n== its register code\n%s\n", ir, code);
        free(ir);
        free(code);
        tj_plan_stats ps;
        if (tj_program_plan_stats(p, &ps) == TJ_OK && ps.planned)
            printf("== its replay plan (tjit dump lstm_cell --plan prints it whole)\n"
                   "%d kernel calls a replay; intermediates %lld bytes in all, in an arena of %lld "
                   "bytes; outputs %lld bytes a replay\n\n", ps.steps, (long long)ps.intermediate_bytes,
                   (long long)ps.arena_bytes, (long long)ps.output_bytes);
    }
    tj_scope_begin();
    tj_tensor *eager[2], *replay[2];
    m->forward(params, in, 3, eager, 2);
    tj_run(p, in, replay);
    double diff = max_abs_diff(eager[0], replay[0]);
    double diff_c = max_abs_diff(eager[1], replay[1]);
    tj_scope_end(); /* releases everything returned inside it */
    int reps = sizes.batch * sizes.hidden >= 16384 ? 50 : 2000;
    double te = median_time(m, params, NULL, in, reps), tr = median_time(m, params, p, in, reps);
    printf("  B=%-4lld H=%-4lld  trace+compile %7.3f ms   eager %9.1f us   replay %9.1f us   "
           "speed-up %.2fx   max |eager - replay| %g\n",
           (long long)sizes.batch, (long long)sizes.hidden, t_compile * 1e3, te * 1e6, tr * 1e6,
           te / tr, diff > diff_c ? diff : diff_c);
    tj_program_free(p);
    tj_graph_free(g);
    for (int i = 0; i < 3; i++) tj_release(in[i]);
    m->destroy(params);
    tj_generator_free(gen);
}

int main(void) {
    run_size((tjx_lstm_sizes){64, 512, 512, 1, 1}, true);
    printf("== LSTM cell forward, eager vs replay (medians, %d threads)\n", tj_get_num_threads());
    run_size((tjx_lstm_sizes){1, 64, 64, 1, 1}, false);
    run_size((tjx_lstm_sizes){64, 512, 512, 1, 1}, false);
    run_size((tjx_lstm_sizes){512, 256, 256, 1, 1}, false);
    return 0;
}
