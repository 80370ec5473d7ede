/* memory.c — replay memory of each example model: the static plan's arena
 * and outputs against the peak of op-by-op replay (every intermediate
 * allocated when made and freed after its last use), forward and forward +
 * backward, measured through the storage layer's counters in the same run. */
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "core/storage.h"
#include "examples/models/models.h"

/* The most storage bytes live at once during one replay (and backward),
 * above what was live before it. */
static long long replay_peak(tj_program *p, tj_tensor **in, int n_out, bool train) {
    tj_tensor *out[8];
    tjc_alloc_counts before, after;
    tjc_alloc_counts_reset_peak();
    tjc_alloc_counts_get(&before);
    tj_status st = tj_run(p, in, out);
    if (!st && train) st = tj_backward(p, NULL, NULL);
    tjc_alloc_counts_get(&after);
    if (st) {
        fprintf(stderr, "memory: %s\n", tj_last_error());
        exit(1);
    }
    for (int i = 0; i < n_out; i++) tj_release(out[i]);
    return after.peak_bytes - before.live_bytes;
}

static double kib(long long bytes) { return (double)bytes / 1024.0; }

int main(void) {
    printf("replay memory per example model (%s)\n\n", bench_isa());
    printf("| model | pass | intermediates, summed KiB | op-by-op peak KiB | planned: arena KiB "
           "| planned: outputs peak KiB | planned total / op-by-op peak |\n"
           "|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < tjx_num_models(); i++) {
        const tjx_model *m = tjx_model_at(i);
        tj_generator *gen = tj_generator_new(1);
        void *params = m->create(gen);
        tj_tensor *in[8];
        if (!params || m->make_inputs(params, gen, in) != TJ_OK) {
            fprintf(stderr, "memory: %s: %s\n", m->name, tj_last_error());
            return 1;
        }
        tj_graph *g = tj_trace(m->forward, params, in, m->n_in, m->n_out, NULL);
        for (int train = 0; train < 2 && g; train++) {
            tj_compile_options po = {.grad_parameters = train}, dyn = po;
            dyn.dynamic_replay = true;
            tj_program *p = tj_compile(g, &po), *d = tj_compile(g, &dyn);
            if (!p || !d) {
                fprintf(stderr, "memory: %s: %s\n", m->name, tj_last_error());
                return 1;
            }
            replay_peak(p, in, m->n_out, train); /* makes the frames */
            long long planned_outputs = replay_peak(p, in, m->n_out, train);
            long long dynamic_peak = replay_peak(d, in, m->n_out, train);
            tj_plan_stats fs;
            tj_program_plan_stats(p, &fs);
            long long arena = fs.arena_bytes + fs.backward_arena_bytes;
            long long summed = fs.intermediate_bytes + fs.backward_intermediate_bytes;
            printf("| %s | %s | %.0f | %.0f | %.0f | %.0f | %.2f |\n", m->name,
                   train ? "forward+backward" : "forward", kib(summed), kib(dynamic_peak), kib(arena),
                   kib(planned_outputs), (double)(arena + planned_outputs) / (double)dynamic_peak);
            tj_program_free(p);
            tj_program_free(d);
        }
        tj_graph_free(g);
        for (int k = 0; k < m->n_in; k++) tj_release(in[k]);
        m->destroy(params);
        tj_generator_free(gen);
    }
    printf("\nOp-by-op peak: the most storage live at once while the register interpreter\n"
           "replays (each result allocated when made, freed after its last use; outputs\n"
           "included). Planned: the frame's arena (allocated once, reused by every replay) plus\n"
           "what a replay allocates, its outputs. Backward's figures add the backward\n"
           "program's arena and the gradients.\n");
    return 0;
}
