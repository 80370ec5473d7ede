/* plan_print.c — a plan's memory as text (`tjit dump MODEL --plan`), and the
 * figures of tj_program_plan_stats (the CUDA graph's among them). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "program.h"
#include "core/text.h"


/* The graph value of value number v. */
static tj_value *value_of(const tji_plan *P, const tj_graph *g, int v, const int *instr_of) {
    if (v < P->code->n_inputs) return tj_graph_input((tj_graph *)g, v);
    int k = instr_of[v - P->code->n_inputs];
    return tj_node_output((tj_node *)P->code->instrs[k].node, v - P->code->n_inputs -
                          P->instr_out_at[k]);
}

static void value_name(tjc_text *t, tj_value *v) {
    const char *name = tj_value_name(v);
    if (name) tjc_put(t, "%%%s", name);
    else tjc_put(t, "%%%d", tj_value_id(v));
}

static const char *device_name(char *buf, size_t n, tj_device d) {
    return d.type == TJ_CPU ? "cpu" : tj_device_to_string(d, buf, n) ? buf : "?";
}

static void put_bytes_line(tjc_text *t, const tji_plan *P) {
    char dev[32];
    for (int a = 0; a < P->n_arenas; a++)
        tjc_put(t, "arena %s: %lld bytes\n", device_name(dev, sizeof dev, P->arena_device[a]),
            (long long)P->arena_bytes[a]);
    double pct = P->intermediate_bytes ? 100.0 * (double)P->peak_live_bytes /
                                             (double)P->intermediate_bytes : 0.0;
    tjc_put(t, "intermediates: %lld bytes in all; peak live %lld bytes (%.1f%% of all)\n",
        (long long)P->intermediate_bytes, (long long)P->peak_live_bytes, pct);
    tjc_put(t, "outputs: %lld bytes allocated per replay\n", (long long)P->external_bytes);
}

char *tji_plan_to_string(const tji_plan *P, const tj_graph *g) {
    tjc_text t = {0};
    int n_out_values = P->n_values - P->code->n_inputs;
    int *instr_of = tjc_calloc((size_t)(n_out_values ? n_out_values : 1), sizeof(int));
    int *start = tjc_calloc((size_t)P->n_buffers + 2, sizeof(int));
    int *values = tjc_calloc((size_t)(P->n_values ? P->n_values : 1), sizeof(int));
    if (!instr_of || !start || !values) {
        tjc_free(instr_of);
        tjc_free(start);
        tjc_free(values);
        return tjc_error(TJ_ERR_MEMORY, "planning dump: out of memory"), NULL;
    }
    for (int k = 0; k < P->code->n_instrs; k++)
        for (int j = 0; j < P->code->instrs[k].n_out; j++) instr_of[P->instr_out_at[k] + j] = k;
    /* values grouped by the buffer they live in (counting sort) */
    for (int v = 0; v < P->n_values; v++) {
        int s = P->value_slot[v];
        if (s >= 0 && (P->slots[s].root == TJI_ROOT_ARENA || P->slots[s].root == TJI_ROOT_EXTERNAL))
            start[P->slots[s].index + 2]++;
    }
    for (int b = 0; b < P->n_buffers; b++) start[b + 2] += start[b + 1];
    for (int v = 0; v < P->n_values; v++) {
        int s = P->value_slot[v];
        if (s >= 0 && (P->slots[s].root == TJI_ROOT_ARENA || P->slots[s].root == TJI_ROOT_EXTERNAL))
            values[start[P->slots[s].index + 1]++] = v;
    }
    int views = 0;
    for (int v = P->code->n_inputs; v < P->n_values; v++) {
        int s = P->value_slot[v];
        if (s < 0) continue;
        const tji_slot *sl = &P->slots[s];
        const tji_instr *I = &P->code->instrs[instr_of[v - P->code->n_inputs]];
        views += I->code != TJI_CONST && sl->root != TJI_ROOT_NONE &&
                 (sl->root == TJI_ROOT_INPUT || sl->root == TJI_ROOT_CONST ||
                  P->buffers[sl->index].first != instr_of[v - P->code->n_inputs]);
    }
    int placed = 0;
    for (int b = 0; b < P->n_buffers; b++) placed += !P->buffers[b].external && P->buffers[b].bytes >= 0;
    tjc_put(&t, "plan: %d steps for %d instructions; %d buffers in the arena (%d results written "
        "over their dead input), %d values that are views or in-place results\n",
        P->n_steps, P->code->n_instrs, placed, P->n_reused, views);
    put_bytes_line(&t, P);
    tjc_put(&t, "%10s %10s %13s  values\n", "offset", "bytes", "live");
    for (int pass = 0; pass < 2; pass++) {
        if (pass) tjc_put(&t, "outputs (their own storage at every replay):\n");
        for (int b = 0; b < P->n_buffers; b++) {
            const tji_buffer *B = &P->buffers[b];
            if (B->bytes < 0 || B->external != (pass == 1)) continue;
            char range[32];
            snprintf(range, sizeof range, "%d..%d", B->first, B->last);
            if (pass) tjc_put(&t, "%10s %10lld %13s  ", "-", (long long)B->bytes, range);
            else tjc_put(&t, "%10lld %10lld %13s  ", (long long)B->offset, (long long)B->bytes, range);
            for (int i = start[b]; i < start[b + 1]; i++) {
                if (i > start[b]) tjc_put(&t, ", ");
                value_name(&t, value_of(P, g, values[i], instr_of));
            }
            tjc_put(&t, "\n");
        }
    }
    tjc_free(instr_of);
    tjc_free(start);
    tjc_free(values);
    return tjc_text_finish(&t);
}

static void fill_stats(const tj_program *p, tj_plan_stats *out) {
    memset(out, 0, sizeof *out);
    if (atomic_load(&p->n_plans) == 0) {
        out->plan_error = p->plan_error ? p->plan_error
                          : p->opts.dynamic_replay ? "compiled with dynamic_replay"
                                                   : "no input signature planned yet";
        return;
    }
    const tji_plan *P = p->plans[0];
    out->planned = true;
    out->steps = P->n_steps;
    for (int b = 0; b < P->n_buffers; b++) out->buffers += !P->buffers[b].external && P->buffers[b].bytes >= 0;
    out->reused = P->n_reused;
    for (int a = 0; a < P->n_arenas; a++) out->arena_bytes += P->arena_bytes[a];
    out->intermediate_bytes = P->intermediate_bytes;
    out->peak_live_bytes = P->peak_live_bytes;
    out->output_bytes = P->external_bytes;
    if (p->opts.cuda_graph)
        tji_plan_graph_stats(P, &out->cuda_graph, &out->cuda_graph_error, &out->cuda_graph_launches,
                             &out->cuda_graph_captures);
    else
        out->cuda_graph_error = "not asked for (tj_compile_options.cuda_graph is off)";
}

tj_status tj_program_plan_stats(const tj_program *p, tj_plan_stats *out) {
    if (!p || !out) return tjc_error(TJ_ERR_ARG, "tj_program_plan_stats: NULL argument");
    fill_stats(p, out);
    if (p->backward) {
        tj_plan_stats b;
        fill_stats(p->backward, &b);
        out->backward_arena_bytes = b.arena_bytes;
        out->backward_intermediate_bytes = b.intermediate_bytes;
    }
    return TJ_OK;
}

static void put_program(tjc_text *t, const tj_program *p, const char *title) {
    tjc_put(t, "%s", title);
    if (atomic_load(&p->n_plans) == 0) {
        tj_plan_stats st;
        fill_stats(p, &st);
        tjc_put(t, "no plan: replay runs op by op (%s)\n", st.plan_error);
        return;
    }
    char *s = tji_plan_to_string(p->plans[0], p->graph);
    tjc_put(t, "%s", s ? s : "(out of memory)\n");
    tjc_free(s);
    if (p->opts.cuda_graph) {
        tj_plan_stats st;
        fill_stats(p, &st);
        if (st.cuda_graph)
            tjc_put(t, "cuda graph: captured %d time(s), %lld launch(es)\n", st.cuda_graph_captures,
                    (long long)st.cuda_graph_launches);
        else
            tjc_put(t, "cuda graph: replay runs the plan (%s)\n", st.cuda_graph_error);
    }
}

char *tj_program_plan_to_string(const tj_program *p) {
    if (!p) return tjc_error(TJ_ERR_ARG, "tj_program_plan_to_string: program is NULL"), NULL;
    tjc_text t = {0};
    put_program(&t, p, p->backward ? "# forward\n" : "");
    if (p->backward) put_program(&t, p->backward, "# backward\n");
    return tjc_text_finish(&t);
}
