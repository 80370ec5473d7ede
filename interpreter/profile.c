/* profile.c — recording replays (see profile.h) and the switches of
 * tjit/profile.h: tj_program_profile and tj_profile_reset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "profile.h"
#include "program.h"

/* ---- threads: a small number each, for the trace's tracks ---------------------- */

static atomic_int threads_seen;
static _Thread_local int this_thread;

static int thread_number(void) {
    if (!this_thread) this_thread = atomic_fetch_add(&threads_seen, 1) + 1;
    return this_thread;
}

/* ---- what an instruction moved and computed -------------------------------------- */

static double tensor_bytes(const tj_tensor *t) {
    return t ? (double)tj_numel(t) * (double)tj_dtype_size(tj_tensor_dtype(t)) : 0.0;
}

/* The bytes an instruction reads and writes: its tensors, once each way;
 * views and constants move none. */
static double instr_bytes(const tji_instr *I, tj_tensor *const *R) {
    if (I->code == TJI_CONST || I->code == TJI_NONE || I->code == TJI_CHUNK) return 0.0;
    if (I->code == TJI_CALL && tj_op_kind_of(I->op) == TJ_KIND_VIEW) return 0.0;
    double b = 0.0;
    for (int j = 0; j < I->n_in; j++) b += tensor_bytes(R[I->in[j]]);
    for (int j = 0; j < I->n_out; j++) b += tensor_bytes(R[I->out[j]]);
    return b;
}

static int64_t last_size(const tj_tensor *t) {
    return t && tj_ndim(t) > 0 ? tj_sizes(t)[tj_ndim(t) - 1] : 1;
}

/* numel(t) / size(t, 0): a weight's elements per output channel */
static double per_channel(const tj_tensor *t) {
    if (!t || tj_ndim(t) == 0 || tj_sizes(t)[0] == 0) return 0.0;
    return (double)tj_numel(t) / (double)tj_sizes(t)[0];
}

/* Multiply-adds times two, for matrix products and convolutions; -1 for
 * other ops. A product's output element sums over the last dimension of its
 * first matrix; a convolution's over a weight's channel. */
static double instr_flops(const tji_instr *I, tj_tensor *const *R) {
    if (I->code != TJI_CALL || I->n_out < 1) return -1.0;
    tj_op_kind kind = tj_op_kind_of(I->op);
    if (kind != TJ_KIND_MATMUL && kind != TJ_KIND_CONV) return -1.0;
    tj_tensor *in0 = I->n_in > 0 ? R[I->in[0]] : NULL, *in1 = I->n_in > 1 ? R[I->in[1]] : NULL;
    tj_tensor *out = R[I->out[0]];
    if (!in0 || !out) return -1.0;
    int id = tj_op_id(I->op);
    if (kind == TJ_KIND_MATMUL) {
        const tj_tensor *a = id == TJ_OP_addmm ? in1 : in0; /* addmm(bias, mat1, mat2) */
        return a ? 2.0 * (double)tj_numel(out) * (double)last_size(a) : -1.0;
    }
    if (!in1) return -1.0;
    if (id == TJ_OP_conv2d_backward_weight) /* (grad_output, input) -> weight */
        return 2.0 * (double)tj_numel(in0) * per_channel(out);
    if (id == TJ_OP_conv_transpose2d || id == TJ_OP_conv2d_backward_input)
        return 2.0 * (double)tj_numel(in0) * per_channel(in1); /* input read per weight channel */
    return 2.0 * (double)tj_numel(out) * per_channel(in1);
}

/* ---- recording ---------------------------------------------------------------------- */

bool tji_profile_begin_slow(tji_profile *p, tji_profile_run *run) {
    run->prof = p;
    run->n = 0;
    run->events = tjc_malloc(sizeof(tji_event) * (size_t)(p->code->n_instrs + 1));
    run->start_ns = tji_now_ns();
    return run->events != NULL; /* without memory the replay just is not recorded */
}

void tji_profile_instr(tji_profile_run *run, int k, int64_t started, tj_tensor *const *R) {
    int64_t now = tji_now_ns();
    const tji_instr *I = &run->prof->code->instrs[k];
    run->events[run->n++] = (tji_event){.start_ns = started, .dur_ns = now - started,
                                        .bytes = instr_bytes(I, R), .flops = instr_flops(I, R),
                                        .instr = k};
}

void tji_profile_end(tji_profile_run *run) {
    int64_t now = tji_now_ns();
    tji_profile *p = run->prof;
    int thread = thread_number();
    pthread_mutex_lock(&p->lock);
    int64_t replay = p->replays++;
    p->replay_ns += now - run->start_ns;
    run->events[run->n++] = (tji_event){.start_ns = run->start_ns, .dur_ns = now - run->start_ns,
                                        .bytes = -1, .flops = -1, .instr = TJI_REPLAY};
    for (int e = 0; e < run->n; e++) {
        tji_event *ev = &run->events[e];
        ev->thread = thread;
        ev->replay = replay;
        if (ev->instr != TJI_REPLAY) {
            tji_instr_stats *s = &p->stats[ev->instr];
            s->calls++;
            s->ns += ev->dur_ns;
            s->bytes = s->bytes < 0 || ev->bytes < 0 ? -1 : s->bytes + ev->bytes;
            s->flops = s->flops < 0 || ev->flops < 0 ? -1 : s->flops + ev->flops;
        }
        if (p->n_events == p->cap_events && p->cap_events < TJI_MAX_EVENTS) {
            int64_t cap = p->cap_events ? 2 * p->cap_events : 1024;
            tji_event *grown = tjc_realloc(p->events, sizeof(tji_event) * (size_t)cap);
            if (grown) {
                p->events = grown;
                p->cap_events = cap;
            }
        }
        if (p->n_events < p->cap_events) p->events[p->n_events++] = *ev;
        else p->dropped++;
    }
    pthread_mutex_unlock(&p->lock);
    tjc_free(run->events);
}

/* ---- profiles --------------------------------------------------------------------- */

void tji_profile_clear(tji_profile *p) {
    pthread_mutex_lock(&p->lock);
    for (int k = 0; k < p->code->n_instrs; k++) p->stats[k] = (tji_instr_stats){0};
    p->replays = p->replay_ns = 0;
    p->n_events = p->dropped = 0;
    pthread_mutex_unlock(&p->lock);
}

void tji_profile_free(tji_profile *p) {
    if (!p) return;
    pthread_mutex_destroy(&p->lock);
    tjc_free(p->stats);
    tjc_free(p->events);
    tjc_free(p);
}

tj_status tji_profile_enable(tji_code *code, const char *phase, bool on) {
    tji_profile *p = atomic_load(&code->profile);
    if (!p && on) {
        tji_profile *made = tjc_calloc(1, sizeof *made);
        tji_instr_stats *stats = tjc_calloc((size_t)(code->n_instrs ? code->n_instrs : 1), sizeof *stats);
        if (!made || !stats) {
            tjc_free(made);
            tjc_free(stats);
            return tjc_error(TJ_ERR_MEMORY, "tj_program_profile: out of memory");
        }
        made->phase = phase;
        made->code = code;
        made->stats = stats;
        pthread_mutex_init(&made->lock, NULL);
        tji_profile *none = NULL;
        if (atomic_compare_exchange_strong(&code->profile, &none, made)) {
            p = made;
        } else { /* another thread made it first */
            tji_profile_free(made);
            p = none;
        }
    }
    if (p) atomic_store(&p->on, on);
    return TJ_OK;
}

tj_status tj_program_profile(tj_program *p, bool on) {
    if (!p) return tjc_last_or(TJ_ERR_ARG, "tj_program_profile: program is NULL");
    tj_status st = tji_profile_enable(&p->code, "forward", on);
    if (!st && p->backward) st = tji_profile_enable(&p->backward->code, "backward", on);
    return st;
}

tj_status tj_profile_reset(tj_program *p) {
    if (!p) return tjc_last_or(TJ_ERR_ARG, "tj_profile_reset: program is NULL");
    tji_profile *f = atomic_load(&p->code.profile);
    if (f) tji_profile_clear(f);
    if (p->backward && (f = atomic_load(&p->backward->code.profile))) tji_profile_clear(f);
    return TJ_OK;
}

/* ---- names ----------------------------------------------------------------------- */

/* "aten::add" -> "add"; prim::ConstantChunk, a fusion group's split of an
 * input, -> "chunk" */
static const char *short_name(const char *op) {
    if (!strcmp(op, "prim::ConstantChunk")) return "chunk";
    const char *colon = strstr(op, "::");
    return colon ? colon + 2 : op;
}

void tji_instr_label(const tji_instr *I, char *buf, size_t n) {
    if (I->code == TJI_CALL) {
        snprintf(buf, n, "%s", tj_op_name(I->op));
        return;
    }
    if (I->code != TJI_FUSED) {
        snprintf(buf, n, "%s", tj_node_name(I->node));
        return;
    }
    /* a fusion kernel: its ops in order of first appearance, with counts */
    enum { MAX_KINDS = 32 };
    const char *names[MAX_KINDS];
    int counts[MAX_KINDS], kinds = 0, more = 0;
    tj_graph *sub = tj_node_subgraph(I->node);
    for (tj_node *m = sub ? tj_block_first(tj_graph_block(sub)) : NULL; m; m = tj_node_next(m)) {
        const char *name = short_name(tj_node_name(m));
        int k = 0;
        while (k < kinds && strcmp(names[k], name) != 0) k++;
        if (k == kinds && kinds == MAX_KINDS) {
            more++;
            continue;
        }
        if (k == kinds) {
            names[kinds] = name;
            counts[kinds++] = 0;
        }
        counts[k]++;
    }
    size_t used = (size_t)snprintf(buf, n, "fusion %%%d:", tj_node_id(I->node));
    for (int k = 0; k < kinds && used < n; k++)
        used += (size_t)snprintf(buf + used, n - used, counts[k] > 1 ? "%s %s x%d" : "%s %s",
                                 k ? "," : "", names[k], counts[k]);
    if (more && used < n) snprintf(buf + used, n - used, ", %d more", more);
}

const char *tji_instr_backend(const tji_instr *I) {
    if (I->code == TJI_FUSED) return tjf_group_backend_name(I->group);
    if (I->code == TJI_CONST || I->code == TJI_NONE || I->n_out < 1) return "-";
    const tj_type *t = tj_value_type(tj_node_output(I->node, 0));
    if (t->kind != TJ_TYPE_TENSOR || t->device_type == TJ_UNKNOWN) return "-";
    return t->device_type == TJ_CUDA ? "cuda" : "cpu";
}
