/* plan_run.c — replaying a static execution plan (plan.h): frames, binding,
 * the prepared calls, and handing out the outputs.
 *
 * A frame owns one tensor header per slot, one storage header per arena
 * buffer (pointing into the frame's arena), the argument arrays, and one
 * prepared tjc_call per step. Headers hold one reference each, kept for the
 * frame's life, so a kernel that retains and releases its arguments never
 * frees them. A replay writes only the slots over inputs (storage and
 * offset) and over external buffers (a fresh storage each), then runs.
 * With a tji_ready, each output is made and handed to it right after the
 * step that makes it final (plan.h's output_final), and tj_backward's
 * gradient hook starts on a gradient while later steps still run; without
 * one, the step loop is the plain one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/storage.h"
#include "plan.h"

struct tji_frame {
    tji_frame *next;
    tj_tensor *tensors;       /* by slot */
    tjc_storage *storages;    /* by buffer: arena buffers' headers */
    tjc_storage *arena[4];    /* by arena */
    tjc_storage **external;   /* by buffer: this replay's storage of an external one */
    tj_tensor **in_ptrs, **out_ptrs;
    tjc_call *calls;          /* by step */
};

void tji_frame_free(const tji_plan *P, tji_frame *F) {
    if (!F) return;
    for (int a = 0; a < P->n_arenas; a++)
        if (F->arena[a]) tjc_storage_release(F->arena[a]);
    tjc_free(F->tensors);
    tjc_free(F->storages);
    tjc_free(F->external);
    tjc_free(F->in_ptrs);
    tjc_free(F->out_ptrs);
    tjc_free(F->calls);
    tjc_free(F);
}

static void *array(size_t n, size_t size) { return tjc_calloc(n ? n : 1, size); }

tji_frame *tji_frame_new(const tji_plan *P) {
    tji_frame *F = tjc_calloc(1, sizeof *F);
    if (!F) return tjc_error(TJ_ERR_MEMORY, "replay: out of memory for a frame"), NULL;
    F->tensors = array((size_t)P->n_slots, sizeof(tj_tensor));
    F->storages = array((size_t)P->n_buffers, sizeof(tjc_storage));
    F->external = array((size_t)P->n_buffers, sizeof(tjc_storage *));
    F->in_ptrs = array((size_t)P->n_in_slots, sizeof(tj_tensor *));
    F->out_ptrs = array((size_t)P->n_out_slots, sizeof(tj_tensor *));
    F->calls = array((size_t)P->n_steps, sizeof(tjc_call));
    if (!F->tensors || !F->storages || !F->external || !F->in_ptrs || !F->out_ptrs || !F->calls) {
        tji_frame_free(P, F);
        return tjc_error(TJ_ERR_MEMORY, "replay: out of memory for a frame"), NULL;
    }
    for (int a = 0; a < P->n_arenas; a++)
        if (!(F->arena[a] = tjc_storage_new_on(P->arena_device[a], (size_t)P->arena_bytes[a]))) {
            tji_frame_free(P, F);
            return tjc_error(TJ_ERR_MEMORY, "replay: out of memory for an arena of %lld bytes",
                             (long long)P->arena_bytes[a]), NULL;
        }
    for (int b = 0; b < P->n_buffers; b++) {
        const tji_buffer *B = &P->buffers[b];
        if (B->external || B->bytes < 0) continue;
        tjc_storage *s = &F->storages[b];
        atomic_init(&s->refcount, 1);
        s->data = (char *)F->arena[P->buffer_arena[b]]->data + B->offset;
        s->nbytes = (size_t)B->bytes;
        s->device = B->device;
    }
    for (int i = 0; i < P->n_slots; i++) {
        const tji_slot *sl = &P->slots[i];
        tj_tensor *t = &F->tensors[i];
        atomic_init(&t->refcount, 1);
        t->dtype = sl->dtype;
        t->ndim = sl->ndim;
        t->offset = sl->offset;
        memcpy(t->sizes, sl->sizes, sizeof t->sizes);
        memcpy(t->strides, sl->strides, sizeof t->strides);
        if (sl->root == TJI_ROOT_ARENA) t->storage = &F->storages[sl->index];
        else if (sl->root == TJI_ROOT_CONST) t->storage = sl->constant->storage;
    }
    for (int i = 0; i < P->n_in_slots; i++)
        F->in_ptrs[i] = P->in_slots[i] >= 0 ? &F->tensors[P->in_slots[i]] : NULL;
    for (int i = 0; i < P->n_out_slots; i++) F->out_ptrs[i] = &F->tensors[P->out_slots[i]];
    for (int s = 0; s < P->n_steps; s++) {
        const tji_step *S = &P->steps[s];
        F->calls[s] = (tjc_call){.op = S->op, .device = S->device, .in = &F->in_ptrs[S->in_at],
                                 .n_in = S->n_in, .attr = S->attrs,
                                 .n_attr = S->op ? S->op->schema.n_attrs : 0, .meta = S->meta,
                                 .meta_cap = S->n_out, .out = &F->out_ptrs[S->out_at],
                                 .n_out = S->n_out};
    }
    return F;
}

static tji_frame *take_frame(tji_plan *P) {
    tji_frame *F = atomic_exchange_explicit(&P->spare, NULL, memory_order_acquire);
    if (F) return F;
    pthread_mutex_lock(&P->lock);
    F = P->free_frames;
    if (F) P->free_frames = F->next;
    pthread_mutex_unlock(&P->lock);
    return F ? F : tji_frame_new(P);
}

static void give_frame(tji_plan *P, tji_frame *F) {
    tji_frame *none = NULL;
    if (atomic_compare_exchange_strong_explicit(&P->spare, &none, F, memory_order_release,
                                                memory_order_relaxed))
        return;
    pthread_mutex_lock(&P->lock);
    F->next = P->free_frames;
    P->free_frames = F;
    pthread_mutex_unlock(&P->lock);
}

void tji_plan_free_frames(tji_plan *P) {
    tji_frame_free(P, atomic_exchange(&P->spare, NULL));
    while (P->free_frames) {
        tji_frame *F = P->free_frames;
        P->free_frames = F->next;
        tji_frame_free(P, F);
    }
}

static tj_status step_failed(const tji_plan *P, const tji_step *S) {
    char cause[768];
    snprintf(cause, sizeof cause, "%s", tj_last_error());
    tj_status st = tj_last_status() ? tj_last_status() : TJ_ERR_INTERNAL;
    const tj_node *n = P->code->instrs[S->instr].node;
    return tjc_error(st, "replaying node %%%d (%s): %s", tj_node_id(n), tj_node_name(n), cause);
}

static void drop_externals(const tji_plan *P, tji_frame *F) {
    for (int i = 0; i < P->n_external_buffers; i++) {
        int b = P->external_buffers[i];
        if (F->external[b]) tjc_storage_release(F->external[b]);
        F->external[b] = NULL;
    }
}

/* The caller's tensor for slot s: an input or constant itself, or a new
 * header over the same storage. */
static tj_tensor *output_tensor(const tji_plan *P, tji_frame *F, int s, tj_tensor *const *in) {
    const tji_slot *sl = &P->slots[s];
    if (sl->root == TJI_ROOT_INPUT && P->value_slot[sl->index] == s) return tj_retain(in[sl->index]);
    if (sl->root == TJI_ROOT_CONST && sl->constant->offset == sl->offset &&
        sl->constant->ndim == sl->ndim &&
        !memcmp(sl->constant->sizes, sl->sizes, sizeof(int64_t) * (size_t)sl->ndim) &&
        !memcmp(sl->constant->strides, sl->strides, sizeof(int64_t) * (size_t)sl->ndim))
        return tj_retain(sl->constant);
    tj_tensor *t = &F->tensors[s];
    return tjc_make_view(t, t->sizes, t->strides, t->ndim, t->offset);
}

/* outputs[i] for the caller: an earlier output's tensor again, or its own. */
static tj_status hand_out(const tji_plan *P, tji_frame *F, int i, tj_tensor *const *in,
                          tj_tensor **outputs) {
    if (P->output_first[i] >= 0) outputs[i] = tj_retain(outputs[P->output_first[i]]);
    else if (!(outputs[i] = output_tensor(P, F, P->output_slot[i], in))) return tj_last_status();
    return TJ_OK;
}

/* Hands the outputs final after step k (k = -1: before the first) to ready,
 * in ready_order from *next on; the kernels' depth is left for the call, so
 * that what it runs is the caller's own. */
static tj_status hand_ready(const tji_plan *P, tji_frame *F, int k, int *next,
                            tj_tensor *const *in, tj_tensor **outputs, const tji_ready *ready) {
    tj_status st = TJ_OK;
    for (; *next < P->code->n_outputs && !st; ++*next) {
        int i = P->ready_order[*next];
        if (P->output_final[i] != k) break;
        if (P->output_slot[i] < 0) continue;
        if ((st = hand_out(P, F, i, in, outputs))) break;
        tjc_op_leave();
        st = ready->fn(ready->ctx, i, outputs[i], P->n_steps - 1 - k);
        tjc_op_enter();
    }
    return st;
}

static inline tj_status run_step(const tji_plan *P, const tji_frame *F, int k) {
    const tji_step *S = &P->steps[k];
    const tjc_call *c = &F->calls[k];
    tj_status st = S->kernel ? S->kernel(c) : tjf_group_launch(S->group, S->fused, c->in, c->out);
    return st ? step_failed(P, S) : TJ_OK;
}

static tj_status run_steps(const tji_plan *P, const tji_frame *F) {
    tj_status st = TJ_OK;
    for (int k = 0; k < P->n_steps && !st; k++) st = run_step(P, F, k);
    return st;
}

/* The same steps, handing each output to ready as soon as it is final. */
static tj_status run_steps_ready(const tji_plan *P, tji_frame *F, tj_tensor *const *in,
                                 tj_tensor **outputs, const tji_ready *ready) {
    int next = 0;
    tj_status st = hand_ready(P, F, -1, &next, in, outputs, ready);
    for (int k = 0; k < P->n_steps && !st; k++)
        if (!(st = run_step(P, F, k))) st = hand_ready(P, F, k, &next, in, outputs, ready);
    return st;
}

void tji_frame_bind_inputs(const tji_plan *P, tji_frame *F, tj_tensor *const *in) {
    for (int i = 0; i < P->n_input_bound; i++) {
        int s = P->input_bound[i];
        const tj_tensor *src = in ? in[P->slots[s].index] : NULL;
        F->tensors[s].storage = src ? src->storage : NULL;
        F->tensors[s].offset = (src ? src->offset : 0) + P->slots[s].offset;
    }
}

void tji_frame_bind_externals(const tji_plan *P, tji_frame *F, tjc_storage *const *by_buffer) {
    for (int i = 0; i < P->n_external_bound; i++) {
        int s = P->external_bound[i];
        F->tensors[s].storage = by_buffer[P->slots[s].index];
    }
}

tj_status tji_frame_run(const tji_plan *P, tji_frame *F) {
    tjc_op_enter();
    tj_status st = run_steps(P, F);
    tjc_op_leave();
    return st;
}

tj_status tji_frame_hand_out(const tji_plan *P, tji_frame *F, tj_tensor *const *in,
                             tj_tensor **outputs) {
    const tji_code *code = P->code;
    tj_status st = TJ_OK;
    for (int i = 0; i < code->n_outputs; i++) outputs[i] = NULL;
    for (int i = 0; i < code->n_outputs && !st; i++)
        if (P->output_slot[i] >= 0) st = hand_out(P, F, i, in, outputs);
    if (st)
        for (int i = 0; i < code->n_outputs; i++) {
            tj_release(outputs[i]);
            outputs[i] = NULL;
        }
    return st;
}

tj_status tji_plan_execute(tji_plan *P, tj_tensor *const *in, tj_tensor **outputs,
                           const tji_ready *ready) {
    tji_frame *F = take_frame(P);
    if (!F) return tj_last_status();
    tji_frame_bind_inputs(P, F, in);
    const tji_code *code = P->code;
    for (int i = 0; i < code->n_outputs; i++) outputs[i] = NULL;
    tj_status st = TJ_OK;
    for (int i = 0; i < P->n_external_buffers && !st; i++) {
        int b = P->external_buffers[i];
        F->external[b] = tjc_storage_new_on(P->buffers[b].device, (size_t)P->buffers[b].bytes);
        if (!F->external[b])
            st = tjc_error(TJ_ERR_MEMORY, "replay: out of memory for an output of %lld bytes",
                           (long long)P->buffers[b].bytes);
    }
    if (!st) tji_frame_bind_externals(P, F, F->external);
    if (!st && ready) {
        tjc_op_enter();
        st = run_steps_ready(P, F, in, outputs, ready);
        tjc_op_leave();
        if (st)
            for (int i = 0; i < code->n_outputs; i++) {
                tj_release(outputs[i]);
                outputs[i] = NULL;
            }
    } else if (!st) {
        st = tji_frame_run(P, F);
        if (!st) st = tji_frame_hand_out(P, F, in, outputs);
    }
    drop_externals(P, F);
    tji_frame_bind_inputs(P, F, NULL);
    give_frame(P, F);
    return st;
}
