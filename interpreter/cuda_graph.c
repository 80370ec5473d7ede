/* cuda_graph.c — replaying a static plan as one device graph (plan.h;
 * docs/cuda.md, "Replay as a CUDA graph"). Owns the plan's graph state: the
 * captured graph, the frame it was captured over (its arena is the graph's),
 * the graph's own input buffers (one per unbound input, which each replay
 * fills by a device copy) and output buffers (the plan's external buffers,
 * which each replay copies into the caller's new storages), and the data
 * pointers of the parameters it reads in place.
 *
 * The first replay of a plan runs it plainly: kernels get compiled, library
 * handles and workspaces made and the allocator's cache filled, none of
 * which a capture may do. The second captures and launches; later ones only
 * launch. Capture refusals that will not change (inputs off the device, a
 * step that does work a graph cannot hold) are kept, and every replay then
 * runs plainly; the reason shows in the plan stats. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/storage.h"
#include "plan.h"

struct tji_graph_state {
    pthread_mutex_t use;       /* held by the replay that uses the graph */
    int replays;               /* replays that asked for the graph, before the first capture */
    char *_Atomic refused;     /* why the plan is never captured (set once) */
    const tjc_device_backend *backend;
    tj_device device;
    void *graph;               /* the backend's graph, NULL before capture */
    tji_frame *frame;          /* the frame it was captured over */
    tj_tensor **input;         /* by graph input: the graph's buffer of an unbound input */
    int64_t *input_bytes;      /* the bytes an input's elements span */
    bool *input_written;       /* a step writes the input in place: copied back */
    const void **param_data;   /* by graph input: a parameter's data when captured */
    tjc_storage **output;      /* by buffer: the graph's external buffers */
    tjc_storage **fresh;       /* by buffer: this replay's copies of them */
    _Atomic int64_t launches;
    _Atomic int captures;
};

static const char *const not_yet = "not captured yet: the first replay runs the plan to warm it up";

/* ---- the state ------------------------------------------------------------------- */

/* What the captured graph holds; the state itself stays. */
static void drop_capture(const tji_plan *P, tji_graph_state *G) {
    if (G->graph) G->backend->graph_free(G->device.index, G->graph);
    G->graph = NULL;
    if (G->frame) tji_frame_free(P, G->frame);
    G->frame = NULL;
    for (int i = 0; i < P->n_sig; i++) {
        tj_release(G->input[i]);
        G->input[i] = NULL;
    }
    for (int b = 0; b < P->n_buffers; b++) {
        if (G->output[b]) tjc_storage_release(G->output[b]);
        G->output[b] = NULL;
    }
}

static void state_free(const tji_plan *P, tji_graph_state *G) {
    if (!G) return;
    if (G->input) drop_capture(P, G);
    pthread_mutex_destroy(&G->use);
    tjc_free(G->refused);
    tjc_free(G->input);
    tjc_free(G->input_bytes);
    tjc_free(G->input_written);
    tjc_free(G->param_data);
    tjc_free(G->output);
    tjc_free(G->fresh);
    tjc_free(G);
}

static tji_graph_state *state_new(const tji_plan *P) {
    tji_graph_state *G = tjc_calloc(1, sizeof *G);
    if (!G) return NULL;
    pthread_mutex_init(&G->use, NULL);
    size_t n = (size_t)(P->n_sig ? P->n_sig : 1), nb = (size_t)(P->n_buffers ? P->n_buffers : 1);
    G->input = tjc_calloc(n, sizeof *G->input);
    G->input_bytes = tjc_calloc(n, sizeof *G->input_bytes);
    G->input_written = tjc_calloc(n, sizeof *G->input_written);
    G->param_data = tjc_calloc(n, sizeof *G->param_data);
    G->output = tjc_calloc(nb, sizeof *G->output);
    G->fresh = tjc_calloc(nb, sizeof *G->fresh);
    if (!G->input || !G->input_bytes || !G->input_written || !G->param_data || !G->output ||
        !G->fresh) {
        state_free(P, G);
        return NULL;
    }
    return G;
}

/* The plan's state, made by the first replay that asks (NULL: out of memory). */
static tji_graph_state *state_of(tji_plan *P) {
    tji_graph_state *G = atomic_load_explicit(&P->graph, memory_order_acquire);
    if (G) return G;
    tji_graph_state *made = state_new(P), *none = NULL;
    if (!made) return NULL;
    if (atomic_compare_exchange_strong(&P->graph, &none, made)) return made;
    state_free(P, made); /* another thread's came first */
    return none;
}

void tji_plan_graph_free(tji_plan *P) {
    state_free(P, atomic_exchange(&P->graph, NULL));
}

void tji_plan_graph_stats(const tji_plan *P, bool *captured, const char **why_not,
                          int64_t *launches, int *captures) {
    const tji_graph_state *G = atomic_load_explicit(&P->graph, memory_order_acquire);
    *launches = G ? atomic_load(&G->launches) : 0;
    *captures = G ? atomic_load(&G->captures) : 0;
    const char *refused = G ? atomic_load(&G->refused) : NULL;
    *captured = *captures > 0 && !refused;
    *why_not = refused ? refused : *captured ? NULL : not_yet;
}

/* ---- capture ---------------------------------------------------------------------- */

/* Why the plan cannot be captured on any replay, into buf; false when it can. */
static bool never_capturable(const tji_plan *P, tj_tensor *const *bound, tj_device *device,
                             char *buf, size_t n) {
    bool found = false;
    for (int i = 0; i < P->n_sig; i++) {
        const tji_sig_entry *e = &P->sig[i];
        if (!e->present) continue;
        if (e->device.type != TJ_CUDA) {
            snprintf(buf, n, "%s %d is on the CPU", bound[i] ? "parameter (graph input)" : "input", i);
            return true;
        }
        if (found && e->device.index != device->index) {
            snprintf(buf, n, "the inputs are on more than one CUDA device (cuda:%d and cuda:%d)",
                     device->index, e->device.index);
            return true;
        }
        *device = e->device;
        found = true;
        for (int d = 0; d < e->ndim; d++)
            if (e->strides[d] < 0) {
                snprintf(buf, n, "input %d has a negative stride", i);
                return true;
            }
    }
    if (!found) return snprintf(buf, n, "the program has no CUDA input"), true;
    for (int k = 0; k < P->n_steps; k++)
        if (!tjc_same_device(P->steps[k].device, *device))
            return snprintf(buf, n, "step %d runs on another device than cuda:%d", k, device->index), true;
    for (int a = 0; a < P->n_arenas; a++)
        if (!tjc_same_device(P->arena_device[a], *device))
            return snprintf(buf, n, "intermediates live on another device than cuda:%d", device->index), true;
    const tjc_device_backend *b = tjc_device_backend_of(TJ_CUDA);
    if (!b || !b->capture_begin)
        return snprintf(buf, n, "the CUDA backend cannot capture graphs"), true;
    return false;
}

/* The bytes the elements of geometry e span from its first. */
static int64_t span_bytes(const tji_sig_entry *e) {
    int64_t last = 0;
    for (int d = 0; d < e->ndim; d++) {
        if (e->sizes[d] == 0) return 0;
        last += (e->sizes[d] - 1) * e->strides[d];
    }
    return (last + 1) * (int64_t)tj_dtype_size(e->dtype);
}

/* Which unbound inputs a step writes in place (their bytes are copied back
 * to the caller's tensors after each launch, as a plain replay writes them). */
static void find_written_inputs(const tji_plan *P, tj_tensor *const *bound, bool *written) {
    for (int k = 0; k < P->n_steps; k++) {
        const tji_step *S = &P->steps[k];
        bool writes_inputs = S->op && (S->op->schema.mutates_self || S->op->schema.mutates_inputs);
        for (int j = 0; j < S->n_out + (writes_inputs ? S->n_in : 0); j++) {
            int s = j < S->n_out ? P->out_slots[S->out_at + j] : P->in_slots[S->in_at + j - S->n_out];
            if (s >= 0 && P->slots[s].root == TJI_ROOT_INPUT && !bound[P->slots[s].index])
                written[P->slots[s].index] = true;
        }
    }
}

/* The graph's own buffers and frame, made before the capture so that
 * nothing is allocated inside it. */
static tj_status make_buffers(const tji_plan *P, tji_graph_state *G, tj_tensor *const *in,
                              tj_tensor *const *bound, tj_tensor **graph_in) {
    for (int i = 0; i < P->n_sig; i++) {
        const tji_sig_entry *e = &P->sig[i];
        graph_in[i] = in[i];
        if (!e->present || bound[i]) {
            G->param_data[i] = e->present && in[i] ? tjc_data_ptr(in[i]) : NULL;
            continue;
        }
        G->input_bytes[i] = span_bytes(e);
        tjc_storage *s = tjc_storage_new_on(G->device, (size_t)G->input_bytes[i]);
        tj_tensor base = {.storage = s, .dtype = e->dtype, .ndim = e->ndim};
        memcpy(base.sizes, e->sizes, sizeof base.sizes);
        memcpy(base.strides, e->strides, sizeof base.strides);
        G->input[i] = s ? tjc_make_view(&base, e->sizes, e->strides, e->ndim, 0) : NULL;
        if (s) tjc_storage_release(s);
        if (!G->input[i])
            return tjc_error(TJ_ERR_MEMORY, "graph capture: out of memory for input %d's buffer", i);
        graph_in[i] = G->input[i];
    }
    for (int k = 0; k < P->n_external_buffers; k++) {
        int b = P->external_buffers[k];
        if (!(G->output[b] = tjc_storage_new_on(G->device, (size_t)P->buffers[b].bytes)))
            return tjc_error(TJ_ERR_MEMORY, "graph capture: out of memory for an output buffer of "
                             "%lld bytes", (long long)P->buffers[b].bytes);
    }
    if (!(G->frame = tji_frame_new(P))) return tj_last_status();
    tji_frame_bind_inputs(P, G->frame, graph_in);
    tji_frame_bind_externals(P, G->frame, G->output);
    return TJ_OK;
}

static tj_status capture(const tji_plan *P, tji_graph_state *G, tj_tensor *const *in,
                         tj_tensor *const *bound) {
    tj_tensor *small[64], **graph_in = P->n_sig <= 64 ? small : tjc_calloc((size_t)P->n_sig, sizeof *graph_in);
    if (!graph_in) return tjc_error(TJ_ERR_MEMORY, "graph capture: out of memory");
    tj_status st = make_buffers(P, G, in, bound, graph_in);
    if (!st) st = G->backend->capture_begin(G->device.index);
    if (!st) {
        tj_status run = tji_frame_run(P, G->frame);
        char cause[768];
        snprintf(cause, sizeof cause, "%s", tj_last_error());
        st = G->backend->capture_end(G->device.index, &G->graph); /* ends the capture in any case */
        if (run) st = tjc_error(run, "%s", cause); /* the step's refusal says more */
    }
    if (graph_in != small) tjc_free(graph_in);
    if (st) drop_capture(P, G);
    else atomic_fetch_add(&G->captures, 1);
    return st;
}

/* A parameter whose data moved (its storage replaced) since the capture. */
static bool parameters_moved(const tji_plan *P, const tji_graph_state *G, tj_tensor *const *in,
                             tj_tensor *const *bound) {
    for (int i = 0; i < P->n_sig; i++)
        if (bound[i] && P->sig[i].present && tjc_data_ptr(in[i]) != G->param_data[i]) return true;
    return false;
}

/* ---- replay ----------------------------------------------------------------------- */

static tj_status copy_on_device(const tji_graph_state *G, void *dst, const void *src, int64_t bytes) {
    return bytes ? tjc_copy_bytes(dst, G->device, src, G->device, (size_t)bytes) : TJ_OK;
}

/* Inputs in, one launch, written inputs back, and the outputs' buffers
 * copied into new storages; the graph's frame hands the outputs out over
 * those and over the caller's inputs, as a plain replay would. */
static tj_status launch(const tji_plan *P, tji_graph_state *G, tj_tensor *const *in,
                        tj_tensor **outputs) {
    int dev = G->device.index;
    tj_status st = G->backend->graph_acquire(dev, G->graph);
    for (int i = 0; i < P->n_sig && !st; i++)
        if (G->input[i]) st = copy_on_device(G, tjc_data_ptr(G->input[i]), tjc_data_ptr(in[i]), G->input_bytes[i]);
    if (!st) st = G->backend->graph_launch(dev, G->graph);
    if (!st) atomic_fetch_add(&G->launches, 1);
    for (int i = 0; i < P->n_sig && !st; i++)
        if (G->input[i] && G->input_written[i])
            st = copy_on_device(G, tjc_data_ptr(in[i]), tjc_data_ptr(G->input[i]), G->input_bytes[i]);
    for (int k = 0; k < P->n_external_buffers && !st; k++) {
        int b = P->external_buffers[k];
        size_t bytes = (size_t)P->buffers[b].bytes;
        if (!(G->fresh[b] = tjc_storage_new_on(G->device, bytes)))
            st = tjc_error(TJ_ERR_MEMORY, "replay: out of memory for an output of %zu bytes", bytes);
        else st = copy_on_device(G, G->fresh[b]->data, G->output[b]->data, (int64_t)bytes);
    }
    tj_status released = G->backend->graph_release(dev, G->graph);
    if (!st) st = released;
    /* the frame's slots were read only by the capture: now they give the
     * outputs their geometry over the caller's inputs and the new storages */
    if (!st) {
        tji_frame_bind_inputs(P, G->frame, in);
        tji_frame_bind_externals(P, G->frame, G->fresh);
        st = tji_frame_hand_out(P, G->frame, in, outputs);
    }
    for (int k = 0; k < P->n_external_buffers; k++) {
        int b = P->external_buffers[k];
        if (G->fresh[b]) tjc_storage_release(G->fresh[b]); /* the outputs hold theirs */
        G->fresh[b] = NULL;
    }
    return st;
}

static tj_status hand_to_ready(const tji_plan *P, tj_tensor **outputs, const tji_ready *ready) {
    tj_status st = TJ_OK;
    for (int k = 0; k < P->code->n_outputs && !st; k++) {
        int i = P->ready_order[k];
        if (outputs[i]) st = ready->fn(ready->ctx, i, outputs[i], 0);
    }
    return st;
}

tj_status tji_plan_execute_graph(tji_plan *P, tj_tensor *const *in, tj_tensor *const *bound,
                                 tj_tensor **outputs, const tji_ready *ready) {
    tji_graph_state *G = state_of(P);
    if (!G || atomic_load_explicit(&G->refused, memory_order_relaxed) || pthread_mutex_trylock(&G->use))
        return tji_plan_execute(P, in, outputs, ready);
    if (!G->graph && G->replays++ == 0) { /* the warm-up */
        pthread_mutex_unlock(&G->use);
        return tji_plan_execute(P, in, outputs, ready);
    }
    if (G->graph && parameters_moved(P, G, in, bound)) drop_capture(P, G);
    if (!G->graph) {
        char why[512];
        tj_status st = TJ_OK;
        if (never_capturable(P, bound, &G->device, why, sizeof why)) {
            st = TJ_ERR_UNSUPPORTED;
        } else {
            G->backend = tjc_device_backend_of(TJ_CUDA);
            memset(G->input_written, 0, sizeof *G->input_written * (size_t)(P->n_sig ? P->n_sig : 1));
            find_written_inputs(P, bound, G->input_written);
            st = capture(P, G, in, bound);
            snprintf(why, sizeof why, "capturing the plan failed: %s", tj_last_error());
        }
        if (st) {
            /* out of memory may pass; anything else would fail again */
            if (st != TJ_ERR_MEMORY) atomic_store(&G->refused, tjc_strdup(why));
            tj_clear_error();
            pthread_mutex_unlock(&G->use);
            return tji_plan_execute(P, in, outputs, ready);
        }
    }
    tj_status st = launch(P, G, in, outputs);
    pthread_mutex_unlock(&G->use);
    if (!st && ready) st = hand_to_ready(P, outputs, ready);
    if (st && ready)
        for (int i = 0; i < P->code->n_outputs; i++) {
            tj_release(outputs[i]);
            outputs[i] = NULL;
        }
    return st;
}
