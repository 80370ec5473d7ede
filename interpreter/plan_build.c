/* plan_build.c — building a static execution plan (plan.h) from register
 * code and an input signature: value numbering, shape rules and kernels run
 * once on shell tensors (geometry without data), aliasing roots, liveness,
 * and in-place reuse. memory_plan.c then places the buffers. Every walk here
 * is linear in instructions and their operands. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/ptrmap.h"
#include "plan.h"

void tji_signature_of(tj_tensor *const *in, int n, tji_sig_entry *sig) {
    for (int i = 0; i < n; i++) {
        tji_sig_entry *e = &sig[i];
        memset(e, 0, sizeof *e);
        const tj_tensor *t = in[i];
        if (!t) continue;
        e->present = true;
        e->dtype = t->dtype;
        e->device = t->storage->device;
        if (e->device.type == TJ_CPU) e->device.index = 0;
        e->ndim = t->ndim;
        memcpy(e->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
        memcpy(e->strides, t->strides, sizeof(int64_t) * (size_t)t->ndim);
    }
}

bool tji_plan_matches(const tji_plan *plan, tj_tensor *const *in) {
    for (int i = 0; i < plan->n_sig; i++) {
        const tji_sig_entry *e = &plan->sig[i];
        const tj_tensor *t = in[i];
        if (!e->present) continue;
        if (!t || t->dtype != e->dtype || t->ndim != e->ndim ||
            !tjc_same_device(t->storage->device, e->device))
            return false;
        for (int d = 0; d < t->ndim; d++)
            if (t->sizes[d] != e->sizes[d] || (t->strides[d] != e->strides[d] && t->sizes[d] > 1))
                return false;
    }
    return true;
}

void tji_plan_free(tji_plan *plan) {
    if (!plan) return;
    tji_plan_graph_free(plan);
    tji_plan_free_frames(plan);
    for (int s = 0; plan->steps && s < plan->n_steps; s++) tjc_free(plan->steps[s].meta);
    tjc_free(plan->sig);
    tjc_free(plan->slots);
    tjc_free(plan->buffers);
    tjc_free(plan->steps);
    tjc_free(plan->in_slots);
    tjc_free(plan->out_slots);
    tjc_free(plan->value_slot);
    tjc_free(plan->instr_in_values);
    tjc_free(plan->instr_out_values);
    tjc_free(plan->instr_in_at);
    tjc_free(plan->instr_out_at);
    tjc_free(plan->output_slot);
    tjc_free(plan->output_first);
    tjc_free(plan->output_final);
    tjc_free(plan->ready_order);
    tjc_free(plan->buffer_arena);
    tjc_free(plan->input_bound);
    tjc_free(plan->external_bound);
    tjc_free(plan->external_buffers);
    pthread_mutex_destroy(&plan->lock);
    tjc_free(plan);
}

/* ---- building ---------------------------------------------------------------- */

typedef struct builder {
    tji_plan *plan;
    const tji_code *code;
    tj_tensor *shell;       /* by slot: geometry, and a storage that stands for the root */
    tjc_storage *root_store;/* by input, then by buffer: fake storages (no data) */
    int *slot_last;         /* by slot: the last instruction reading it */
} builder;

static tj_status no_memory(void) { return tjc_error(TJ_ERR_MEMORY, "planning replay: out of memory"); }

static void *array(size_t n, size_t size) { return tjc_calloc(n ? n : 1, size); }

/* A slot of root kind, with its shell. */
static int new_slot(builder *B, tji_root_kind root, int index, const tjc_storage *store,
                    tj_dtype dtype, int ndim, const int64_t *sizes, const int64_t *strides,
                    int64_t offset) {
    tji_plan *P = B->plan;
    int s = P->n_slots++;
    tji_slot *sl = &P->slots[s];
    *sl = (tji_slot){.root = root, .index = index, .dtype = dtype, .ndim = ndim, .offset = offset};
    if (ndim) {
        memcpy(sl->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
        memcpy(sl->strides, strides, sizeof(int64_t) * (size_t)ndim);
    }
    tj_tensor *t = &B->shell[s];
    memset(t, 0, sizeof *t);
    atomic_init(&t->refcount, 1);
    t->storage = (tjc_storage *)store;
    t->offset = offset;
    t->ndim = ndim;
    t->dtype = dtype;
    memcpy(t->sizes, sl->sizes, sizeof t->sizes);
    memcpy(t->strides, sl->strides, sizeof t->strides);
    B->slot_last[s] = -1;
    return s;
}

static int new_buffer(builder *B, tj_device device, tj_dtype dtype, int ndim, const int64_t *sizes,
                      int instr) {
    tji_plan *P = B->plan;
    int b = P->n_buffers++;
    int64_t strides[TJ_MAX_DIMS];
    int64_t numel = tjc_contiguous_strides(sizes, ndim, strides);
    P->buffers[b] = (tji_buffer){.device = device, .bytes = numel * (int64_t)tj_dtype_size(dtype),
                                 .first = instr, .last = instr};
    tjc_storage *store = &B->root_store[B->code->n_inputs + b];
    atomic_init(&store->refcount, 1);
    store->device = device;
    return new_slot(B, TJI_ROOT_ARENA, b, store, dtype, ndim, sizes, strides, 0);
}

/* The slots and steps of one instruction; args[] are its inputs' slots. */
static tj_status plan_instr(builder *B, int k, const int *args, int *outs) {
    tji_plan *P = B->plan;
    const tji_instr *I = &B->code->instrs[k];
    tj_tensor *in[TJF_MAX_ARGS > 64 ? TJF_MAX_ARGS : 64], **in_heap = NULL, **inp = in;
    if (I->n_in > 64 && !(inp = in_heap = tjc_malloc(sizeof(tj_tensor *) * (size_t)I->n_in)))
        return no_memory();
    for (int j = 0; j < I->n_in; j++) inp[j] = args[j] >= 0 ? &B->shell[args[j]] : NULL;
    tj_status st = TJ_OK;
    tji_step step = {.instr = k, .n_in = I->n_in, .n_out = I->n_out, .in_at = P->n_in_slots,
                     .out_at = P->n_out_slots};
    if (I->code == TJI_FUSED) {
        int ndim;
        int64_t sizes[TJ_MAX_DIMS];
        st = tjf_group_shape(I->group, inp, &ndim, sizes); /* its kernel: compile_kernels */
        step.group = I->group;
        /* a group's outputs live where its inputs do (its kernel's device) */
        step.device = I->n_in && inp[0] ? inp[0]->storage->device : (tj_device){TJ_CPU, 0};
        if (step.device.type == TJ_CPU) step.device.index = 0;
        for (int j = 0; !st && j < I->n_out; j++)
            outs[j] = new_buffer(B, step.device, tjf_group_output_dtype(I->group, j), ndim, sizes, k);
    } else {
        tj_attr chunk_attrs[2] = {{.i = I->chunks}, {.i = I->dim}};
        const tj_op_info *op = I->code == TJI_CHUNK ? tjc_op(TJ_OP_chunk) : I->op;
        tjc_prepared prep;
        step.chunk_attrs[0] = chunk_attrs[0];
        step.chunk_attrs[1] = chunk_attrs[1];
        st = tjc_prepare_call(op, inp, I->n_in, I->code == TJI_CHUNK ? chunk_attrs : I->attrs, &prep);
        if (!st && prep.n_out != I->n_out)
            st = tjc_error(TJ_ERR_SHAPE, "it makes %d outputs for these inputs where the trace "
                           "had %d", prep.n_out, I->n_out);
        for (int j = 0; !st && j < I->n_out; j++) {
            const tjc_meta *m = &prep.meta[j];
            int s0 = args[0];
            switch (m->kind) {
            case TJC_OUT_NEW: outs[j] = new_buffer(B, prep.device, m->dtype, m->ndim, m->sizes, k); break;
            case TJC_OUT_SELF: outs[j] = s0; break;
            case TJC_OUT_VIEW: {
                const tji_slot *base = &P->slots[s0];
                outs[j] = new_slot(B, base->root, base->index, B->shell[s0].storage, base->dtype,
                                   m->ndim, m->sizes, m->strides, m->offset);
                P->slots[outs[j]].constant = base->constant;
                break;
            }
            }
        }
        if (!st && prep.kernel != tjc_view_kernel) {
            step.kernel = prep.kernel;
            step.op = op;
            step.attrs = I->attrs; /* chunks: the step's own, set when it is stored */
            step.device = prep.device;
            step.meta = prep.meta;
            prep.meta = NULL;
        } else {
            step.n_in = -1; /* a pure view: no step */
        }
        tjc_free(prep.meta);
    }
    tjc_free(in_heap);
    if (st) return st;
    if (step.n_in < 0) return TJ_OK;
    for (int j = 0; j < I->n_in; j++) P->in_slots[P->n_in_slots++] = args[j];
    for (int j = 0; j < I->n_out; j++) P->out_slots[P->n_out_slots++] = outs[j];
    P->steps[P->n_steps] = step;
    if (I->code == TJI_CHUNK) P->steps[P->n_steps].attrs = P->steps[P->n_steps].chunk_attrs;
    P->n_steps++;
    return TJ_OK;
}

static int find_rep(int *merged_into, int b) {
    int r = b;
    while (merged_into[r] >= 0) r = merged_into[r];
    while (merged_into[b] >= 0) { /* path compression */
        int next = merged_into[b];
        merged_into[b] = r;
        b = next;
    }
    return r;
}

static bool same_geometry(const tji_slot *a, const tji_slot *b) {
    if (a->ndim != b->ndim || a->offset != b->offset || a->dtype != b->dtype) return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] != b->sizes[d] || a->strides[d] != b->strides[d]) return false;
    return true;
}

/* Whether step S may write its result over its input j: any input of a
 * pointwise op; addmm's self on the CPU (its GEMM then accumulates in place,
 * beta = 1, without copying self first: backends/cpu/matmul.c), when no
 * other operand reads the same buffer, which the GEMM reads while writing. */
static bool may_write_over(const tji_plan *P, const tji_step *S, int j, int rep, int *merged_into) {
    if (S->op->kind == TJ_KIND_POINTWISE) return true;
    if (S->op->id != TJ_OP_addmm || j != 0 || !tjc_same_device(P->buffers[rep].device, TJ_DEVICE_CPU))
        return false;
    for (int q = 1; q < S->n_in; q++) {
        int sq = P->in_slots[S->in_at + q];
        if (sq >= 0 && P->slots[sq].root == TJI_ROOT_ARENA && find_rep(merged_into, P->slots[sq].index) == rep)
            return false;
    }
    return true;
}

/* A pointwise op (or addmm, its self) whose input buffer is read for the
 * last time by it writes its result over that input: the two buffers become
 * one. Steps are visited in order, so chains of such ops keep reusing one
 * buffer. */
static tj_status reuse_dead_inputs(tji_plan *P) {
    int *merged_into = array((size_t)P->n_buffers, sizeof(int));
    if (!merged_into) return no_memory();
    for (int b = 0; b < P->n_buffers; b++) merged_into[b] = -1;
    for (int s = 0; s < P->n_steps; s++) {
        const tji_step *S = &P->steps[s];
        if (!S->op || (S->op->kind != TJ_KIND_POINTWISE && S->op->id != TJ_OP_addmm) ||
            S->op->inplace_of >= 0 || S->n_out != 1)
            continue;
        const tji_slot *out = &P->slots[P->out_slots[S->out_at]];
        if (out->root != TJI_ROOT_ARENA || P->buffers[out->index].first != S->instr) continue;
        tji_buffer *ob = &P->buffers[out->index];
        if (ob->external) continue;
        for (int j = 0; j < S->n_in; j++) {
            int si = P->in_slots[S->in_at + j];
            if (si < 0) continue;
            const tji_slot *in = &P->slots[si];
            if (in->root != TJI_ROOT_ARENA || !same_geometry(in, out)) continue;
            int r = find_rep(merged_into, in->index);
            tji_buffer *ib = &P->buffers[r];
            if (ib->external || ib->last != S->instr || ib->bytes != ob->bytes ||
                !tjc_same_device(ib->device, ob->device) || r == out->index ||
                !may_write_over(P, S, j, r, merged_into))
                continue;
            /* another operand reading the same bytes in another layout (x + x.t())
             * would see elements already overwritten */
            bool clash = false;
            for (int q = 0; q < S->n_in && !clash; q++) {
                int sq = P->in_slots[S->in_at + q];
                clash = sq >= 0 && P->slots[sq].root == TJI_ROOT_ARENA &&
                        find_rep(merged_into, P->slots[sq].index) == r &&
                        !same_geometry(&P->slots[sq], out);
            }
            if (clash) continue;
            merged_into[out->index] = r;
            if (ob->last > ib->last) ib->last = ob->last;
            ob->reused = true;
            P->n_reused++;
            break;
        }
    }
    /* slots name their representative buffer; merged ones take no bytes */
    for (int s = 0; s < P->n_slots; s++)
        if (P->slots[s].root == TJI_ROOT_ARENA)
            P->slots[s].index = find_rep(merged_into, P->slots[s].index);
    for (int b = 0; b < P->n_buffers; b++)
        if (merged_into[b] >= 0) P->buffers[b].bytes = -1; /* lives in its representative */
    tjc_free(merged_into);
    return TJ_OK;
}

/* The slots a replay rebinds: over inputs, and over external buffers. */
static tj_status bind_lists(tji_plan *P) {
    P->input_bound = array((size_t)P->n_slots, sizeof(int));
    P->external_bound = array((size_t)P->n_slots, sizeof(int));
    P->external_buffers = array((size_t)P->n_buffers, sizeof(int));
    if (!P->input_bound || !P->external_bound || !P->external_buffers) return no_memory();
    for (int s = 0; s < P->n_slots; s++) {
        if (P->slots[s].root == TJI_ROOT_INPUT) P->input_bound[P->n_input_bound++] = s;
        if (P->slots[s].root == TJI_ROOT_EXTERNAL) P->external_bound[P->n_external_bound++] = s;
    }
    for (int b = 0; b < P->n_buffers; b++)
        if (P->buffers[b].external && P->buffers[b].bytes >= 0)
            P->external_buffers[P->n_external_buffers++] = b;
    return TJ_OK;
}

/* When each output is final: the last step writing the root under its slot
 * (an input, or a buffer; constants are never written). */
static tj_status find_output_final(tji_plan *P) {
    const tji_code *code = P->code;
    P->output_final = array((size_t)code->n_outputs, sizeof(int));
    P->ready_order = array((size_t)code->n_outputs, sizeof(int));
    int *input_write = array((size_t)code->n_inputs, sizeof(int));
    int *buffer_write = array((size_t)P->n_buffers, sizeof(int));
    tj_status st = TJ_OK;
    if (!P->output_final || !P->ready_order || !input_write || !buffer_write) st = no_memory();
    for (int i = 0; !st && i < code->n_inputs; i++) input_write[i] = -1;
    for (int b = 0; !st && b < P->n_buffers; b++) buffer_write[b] = -1;
    for (int k = 0; !st && k < P->n_steps; k++) {
        const tji_step *S = &P->steps[k];
        bool writes_inputs = S->op && (S->op->schema.mutates_self || S->op->schema.mutates_inputs);
        for (int j = 0; j < S->n_out + (writes_inputs ? S->n_in : 0); j++) {
            int s = j < S->n_out ? P->out_slots[S->out_at + j] : P->in_slots[S->in_at + j - S->n_out];
            if (s < 0) continue;
            const tji_slot *sl = &P->slots[s];
            if (sl->root == TJI_ROOT_INPUT) input_write[sl->index] = k;
            else if (sl->root == TJI_ROOT_ARENA || sl->root == TJI_ROOT_EXTERNAL) buffer_write[sl->index] = k;
        }
    }
    for (int i = 0; !st && i < code->n_outputs; i++) {
        int s = P->output_slot[i];
        const tji_slot *sl = s >= 0 ? &P->slots[s] : NULL;
        P->output_final[i] = !sl                            ? -1
                             : sl->root == TJI_ROOT_INPUT   ? input_write[sl->index]
                             : sl->root == TJI_ROOT_CONST || sl->root == TJI_ROOT_NONE ? -1
                                                            : buffer_write[sl->index];
    }
    if (!st) st = tji_ready_sort(P->output_final, code->n_outputs, P->n_steps, P->ready_order);
    tjc_free(input_write);
    tjc_free(buffer_write);
    return st;
}

/* ---- the fusion groups' kernels ----------------------------------------------
 * Compiled after the walk, all at once: a code generator (LLVM) takes tens of
 * milliseconds per distinct group, so a program of many distinct groups
 * compiles them on the library's threads, each thread taking the next group
 * not yet taken. Each group keeps what it compiled (or its refusal) in its own
 * kernel cache, so the final pass, in this thread, only collects the kernels
 * and meets any error where a sequential compile would have. */

typedef struct kernel_work {
    builder *B;
    int *steps; /* indices into the plan's steps */
    int n;
    atomic_int next;
} kernel_work;

static void step_inputs(builder *B, const tji_step *step, tj_tensor **inp) {
    for (int j = 0; j < step->n_in; j++) {
        int s = B->plan->in_slots[step->in_at + j];
        inp[j] = s >= 0 ? &B->shell[s] : NULL;
    }
}

static void *compile_some(void *arg) {
    kernel_work *W = arg;
    tj_tensor *inp[TJF_MAX_ARGS];
    for (int i; (i = atomic_fetch_add(&W->next, 1)) < W->n;) {
        tji_step *step = &W->B->plan->steps[W->steps[i]];
        const tjf_kernel *k;
        step_inputs(W->B, step, inp);
        if (tjf_group_kernel(step->group, inp, &k)) tj_clear_error(); /* met again below */
    }
    return NULL;
}

static tj_status compile_kernels(builder *B, int *failed_instr) {
    tji_plan *P = B->plan;
    enum { MAX_HELPERS = 15 };
    int n_slow = 0, *slow = array((size_t)P->n_steps, sizeof(int));
    if (!slow) return no_memory();
    for (int i = 0; i < P->n_steps; i++)
        if (P->steps[i].group && P->steps[i].n_in <= TJF_MAX_ARGS &&
            tjf_group_compiles_slowly(P->steps[i].group, P->steps[i].device.type))
            slow[n_slow++] = i;
    int threads = tj_get_num_threads();
    int helpers = (threads < n_slow ? threads : n_slow) - 1;
    if (helpers > MAX_HELPERS) helpers = MAX_HELPERS;
    if (helpers > 0) {
        kernel_work W = {.B = B, .steps = slow, .n = n_slow};
        atomic_init(&W.next, 0);
        pthread_t th[MAX_HELPERS];
        int started = 0;
        while (started < helpers && !pthread_create(&th[started], NULL, compile_some, &W)) started++;
        compile_some(&W);
        for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    }
    tjc_free(slow);
    tj_tensor *small[64], **inp = small;
    tj_status st = TJ_OK;
    for (int i = 0; !st && i < P->n_steps; i++) {
        tji_step *step = &P->steps[i];
        if (!step->group) continue;
        if (step->n_in > 64 && !(inp = tjc_malloc(sizeof(tj_tensor *) * (size_t)step->n_in))) return no_memory();
        step_inputs(B, step, inp);
        if ((st = tjf_group_kernel(step->group, inp, &step->fused))) *failed_instr = step->instr;
        if (inp != small) tjc_free(inp);
        inp = small;
    }
    return st;
}

static tj_status unplannable(const tji_instr *I) {
    char cause[512];
    snprintf(cause, sizeof cause, "%s", tj_last_error());
    tj_status st = tj_last_status() ? tj_last_status() : TJ_ERR_INTERNAL;
    return tjc_error(st, "planning node %%%d (%s): %s", tj_node_id(I->node), tj_node_name(I->node),
                     cause);
}

tji_plan *tji_plan_build(const tji_code *code, const tji_sig_entry *sig) {
    tji_plan *P = tjc_calloc(1, sizeof *P);
    if (!P) return no_memory(), NULL;
    pthread_mutex_init(&P->lock, NULL);
    P->code = code;
    int total_in = 0, total_out = 0;
    for (int k = 0; k < code->n_instrs; k++) {
        total_in += code->instrs[k].n_in;
        total_out += code->instrs[k].n_out;
    }
    int max_slots = code->n_inputs + total_out;
    P->n_sig = code->n_inputs;
    P->n_values = code->n_inputs + total_out;
    builder B = {.plan = P, .code = code};
    P->sig = array((size_t)code->n_inputs, sizeof *P->sig);
    P->slots = array((size_t)max_slots, sizeof *P->slots);
    P->buffers = array((size_t)total_out, sizeof *P->buffers);
    P->steps = array((size_t)code->n_instrs, sizeof *P->steps);
    P->in_slots = array((size_t)total_in, sizeof(int));
    P->out_slots = array((size_t)total_out, sizeof(int));
    P->value_slot = array((size_t)P->n_values, sizeof(int));
    P->instr_in_values = array((size_t)total_in, sizeof(int));
    P->instr_out_values = array((size_t)total_out, sizeof(int));
    P->instr_in_at = array((size_t)code->n_instrs, sizeof(int));
    P->instr_out_at = array((size_t)code->n_instrs, sizeof(int));
    P->output_slot = array((size_t)code->n_outputs, sizeof(int));
    P->output_first = array((size_t)code->n_outputs, sizeof(int));
    B.shell = array((size_t)max_slots, sizeof(tj_tensor));
    B.root_store = array((size_t)(code->n_inputs + total_out), sizeof(tjc_storage));
    B.slot_last = array((size_t)max_slots, sizeof(int));
    int *reg_value = array((size_t)code->n_regs, sizeof(int)); /* register -> value number */
    tj_status st = TJ_OK;
    if (!P->sig || !P->slots || !P->buffers || !P->steps || !P->in_slots || !P->out_slots ||
        !P->value_slot || !P->instr_in_values || !P->instr_out_values || !P->instr_in_at ||
        !P->instr_out_at || !P->output_slot || !P->output_first || !B.shell || !B.root_store ||
        !B.slot_last || !reg_value)
        st = no_memory();
    if (!st) memcpy(P->sig, sig, sizeof *sig * (size_t)code->n_inputs);
    for (int i = 0; !st && i < code->n_inputs; i++) {
        P->value_slot[i] = -1;
        if (code->input_regs[i] < 0) continue;
        const tji_sig_entry *e = &sig[i];
        if (!e->present) {
            st = tjc_error(TJ_ERR_ARG, "planning replay: graph input %d has no tensor", i);
            break;
        }
        tjc_storage *store = &B.root_store[i];
        atomic_init(&store->refcount, 1);
        store->device = e->device;
        P->value_slot[i] = new_slot(&B, TJI_ROOT_INPUT, i, store, e->dtype, e->ndim, e->sizes,
                                    e->strides, 0);
        reg_value[code->input_regs[i]] = i;
    }
    int next_value = code->n_inputs, in_at = 0, out_at = 0;
    int args_small[64], *args = args_small, args_cap = 64;
    for (int k = 0; !st && k < code->n_instrs; k++) {
        const tji_instr *I = &code->instrs[k];
        if (I->n_in > args_cap) {
            int *grown = tjc_malloc(sizeof(int) * (size_t)I->n_in);
            if (!grown) {
                st = no_memory();
                break;
            }
            if (args != args_small) tjc_free(args);
            args = grown;
            args_cap = I->n_in;
        }
        P->instr_in_at[k] = in_at;
        P->instr_out_at[k] = out_at;
        for (int j = 0; j < I->n_in; j++) {
            int v = reg_value[I->in[j]];
            P->instr_in_values[in_at++] = v;
            args[j] = P->value_slot[v];
            if (args[j] >= 0) B.slot_last[args[j]] = k;
        }
        int *outs = &P->value_slot[next_value];
        switch (I->code) {
        case TJI_CONST:
            outs[0] = new_slot(&B, TJI_ROOT_CONST, -1, I->constant->storage, I->constant->dtype,
                               I->constant->ndim, I->constant->sizes, I->constant->strides,
                               I->constant->offset);
            P->slots[outs[0]].constant = I->constant;
            break;
        case TJI_NONE: outs[0] = -1; break;
        default:
            if ((st = plan_instr(&B, k, args, outs))) st = unplannable(I);
            break;
        }
        for (int j = 0; j < I->n_out; j++) {
            P->instr_out_values[out_at++] = next_value;
            reg_value[I->out[j]] = next_value++;
        }
    }
    if (args != args_small) tjc_free(args);
    int failed_instr = -1;
    if (!st && (st = compile_kernels(&B, &failed_instr)) && failed_instr >= 0)
        st = unplannable(&code->instrs[failed_instr]);
    /* graph outputs: their buffers are the caller's, allocated at every replay */
    tjc_ptrmap first_of;
    tjc_ptrmap_init(&first_of);
    for (int i = 0; !st && i < code->n_outputs; i++) {
        int s = P->value_slot[reg_value[code->output_regs[i]]];
        P->output_slot[i] = s;
        P->output_first[i] = -1;
        if (s < 0) continue;
        void *seen = tjc_ptrmap_get(&first_of, (void *)(intptr_t)(s + 1));
        if (seen) P->output_first[i] = (int)(intptr_t)seen - 1;
        else if (!tjc_ptrmap_put(&first_of, (void *)(intptr_t)(s + 1), (void *)(intptr_t)(i + 1)))
            st = no_memory();
        if (P->slots[s].root == TJI_ROOT_ARENA) P->buffers[P->slots[s].index].external = true;
    }
    tjc_ptrmap_free(&first_of);
    /* a buffer lives until the last read of any slot over it */
    for (int s = 0; !st && s < P->n_slots; s++) {
        tji_slot *sl = &P->slots[s];
        if (sl->root != TJI_ROOT_ARENA) continue;
        tji_buffer *b = &P->buffers[sl->index];
        if (B.slot_last[s] > b->last) b->last = B.slot_last[s];
    }
    if (!st) st = reuse_dead_inputs(P);
    for (int s = 0; !st && s < P->n_slots; s++)
        if (P->slots[s].root == TJI_ROOT_ARENA && P->buffers[P->slots[s].index].external)
            P->slots[s].root = TJI_ROOT_EXTERNAL;
    if (!st) st = tji_plan_memory(P);
    if (!st) st = bind_lists(P);
    if (!st) st = find_output_final(P);
    tjc_free(reg_value);
    tjc_free(B.shell);
    tjc_free(B.root_store);
    tjc_free(B.slot_last);
    if (st) {
        tji_plan_free(P);
        return NULL;
    }
    return P;
}
