/* run.c — executing register code (see code.h) and printing it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "code.h"
#include "profile.h"
#include "core/text.h"

/* Wraps the op's own message with the node it came from. */
static tj_status node_failed(const tji_instr *I) {
    char cause[768];
    snprintf(cause, sizeof cause, "%s", tj_last_error());
    tj_status st = tj_last_status() ? tj_last_status() : TJ_ERR_INTERNAL;
    return tjc_error(st, "replaying node %%%d (%s): %s", tj_node_id(I->node),
                     tj_node_name(I->node), cause);
}

/* One instruction's argument and result arrays, on the stack unless it has
 * more than SMALL of either; args are gathered from the registers. */
enum { SMALL = 16 };
typedef struct instr_io {
    tj_tensor *args_small[SMALL], *res_small[SMALL];
    tj_tensor **args, **res;
} instr_io;

static tj_status io_open(instr_io *io, const tji_instr *I, tj_tensor **R) {
    io->args = I->n_in <= SMALL ? io->args_small : tjc_malloc(sizeof(tj_tensor *) * (size_t)I->n_in);
    io->res = I->n_out <= SMALL ? io->res_small : tjc_malloc(sizeof(tj_tensor *) * (size_t)I->n_out);
    if (!io->args || !io->res) return tjc_error(TJ_ERR_MEMORY, "out of memory replaying");
    for (int j = 0; j < I->n_in; j++) io->args[j] = R[I->in[j]];
    return TJ_OK;
}

static void io_close(instr_io *io) {
    if (io->args != io->args_small) tjc_free(io->args);
    if (io->res != io->res_small) tjc_free(io->res);
}

/* Stores an op's n results in the instruction's output registers, or, when
 * there are not as many as the trace had, releases them and says so. */
static tj_status store_results(const tji_instr *I, tj_tensor **res, int n, tj_tensor **R) {
    if (n < 0) return node_failed(I);
    if (n != I->n_out) {
        for (int j = 0; j < n; j++) tj_release(res[j]);
        return tjc_error(TJ_ERR_SHAPE, "replaying node %%%d (%s): it made %d outputs where "
                         "the trace had %d; the inputs' sizes changed what it computes",
                         tj_node_id(I->node), tj_node_name(I->node), n, I->n_out);
    }
    for (int j = 0; j < n; j++) R[I->out[j]] = res[j];
    return TJ_OK;
}

static tj_status call(const tji_instr *I, tj_tensor **R) {
    instr_io io;
    tj_status st = io_open(&io, I, R);
    if (!st) {
        int n = tjc_invoke_nested(I->op, io.args, I->n_in, I->attrs, io.res, I->n_out);
        st = store_results(I, io.res, n, R);
    }
    io_close(&io);
    return st;
}

static tj_status chunk(const tji_instr *I, tj_tensor **R) {
    instr_io io;
    tj_status st = io_open(&io, I, R);
    if (!st) {
        /* through the table, nested like every replayed op: the public tj_chunk
         * would hand the pieces to the caller's scope and to an active tracer */
        tj_attr attrs[2] = {{.i = I->chunks}, {.i = I->dim}};
        int n = tjc_invoke_nested(tjc_op(TJ_OP_chunk), io.args, 1, attrs, io.res, I->n_out);
        st = store_results(I, io.res, n, R);
    }
    io_close(&io);
    return st;
}

static tj_status fused(const tji_instr *I, tj_tensor **R) {
    instr_io io;
    tj_status st = io_open(&io, I, R);
    if (!st) {
        st = tjf_group_run(I->group, io.args, io.res);
        st = store_results(I, io.res, st ? -1 : I->n_out, R);
    }
    io_close(&io);
    return st;
}

/* Hands the outputs final after instruction k (k = -1: before the first) to
 * ready, in ready_order from *next on; they are created now and returned as
 * usual at the end. */
static tj_status hand_ready(const tji_code *code, int k, int *next, tj_tensor **R,
                            tj_tensor **outputs, const tji_ready *ready) {
    tj_status st = TJ_OK;
    for (; *next < code->n_outputs && !st; ++*next) {
        int i = code->ready_order[*next];
        if (code->output_final[i] != k) break;
        outputs[i] = tj_retain(R[code->output_regs[i]]);
        if (outputs[i]) st = ready->fn(ready->ctx, i, outputs[i], code->n_instrs - 1 - k);
    }
    return st;
}

tj_status tji_execute(const tji_code *code, tj_tensor *const *in, tj_tensor **R,
                      tj_tensor **outputs, const tji_ready *ready) {
    for (int i = 0; i < code->n_inputs; i++)
        if (code->input_regs[i] >= 0) R[code->input_regs[i]] = tj_retain(in[i]);
    tj_status st = TJ_OK;
    int next_ready = 0;
    if (ready) {
        for (int i = 0; i < code->n_outputs; i++) outputs[i] = NULL;
        st = hand_ready(code, -1, &next_ready, R, outputs, ready);
    }
    tji_profile_run prof;
    bool profiling = tji_profile_begin(code, &prof);
    for (int k = 0; k < code->n_instrs && st == TJ_OK; k++) {
        const tji_instr *I = &code->instrs[k];
        int64_t started = profiling ? tji_now_ns() : 0;
        switch (I->code) {
        case TJI_CALL: st = call(I, R); break;
        case TJI_CONST: R[I->out[0]] = tj_retain(I->constant); break;
        case TJI_NONE: R[I->out[0]] = NULL; break;
        case TJI_CHUNK: st = chunk(I, R); break;
        case TJI_FUSED: st = fused(I, R); break;
        }
        if (st != TJ_OK) break;
        if (profiling) tji_profile_instr(&prof, k, started, R);
        for (int d = 0; d < I->n_dead; d++) {
            tj_release(R[I->dead[d]]);
            R[I->dead[d]] = NULL;
        }
        if (ready) st = hand_ready(code, k, &next_ready, R, outputs, ready);
    }
    for (int i = 0; i < code->n_outputs; i++) {
        if (ready) { /* already handed out: kept on success */
            if (st == TJ_OK) continue;
            tj_release(outputs[i]);
        }
        outputs[i] = st == TJ_OK ? tj_retain(R[code->output_regs[i]]) : NULL;
    }
    for (int r = 0; r < code->n_regs; r++) {
        tj_release(R[r]);
        R[r] = NULL;
    }
    if (profiling) tji_profile_end(&prof);
    return st;
}

/* ---- printing ------------------------------------------------------------------ */


static void regs(tjc_text *t, const int *r, int n) {
    for (int i = 0; i < n; i++) tjc_put(t, i ? ", R%d" : "R%d", r[i]);
}

char *tji_code_to_string(const tji_code *code) {
    tjc_text t = {0};
    tjc_put(&t, "registers: %d\ninputs: ", code->n_regs);
    for (int i = 0; i < code->n_inputs; i++)
        tjc_put(&t, code->input_regs[i] < 0 ? "%s-" : "%sR%d", i ? ", " : "", code->input_regs[i]);
    tjc_put(&t, "\n");
    for (int k = 0; k < code->n_instrs; k++) {
        const tji_instr *I = &code->instrs[k];
        tjc_put(&t, "%4d: ", k);
        regs(&t, I->out, I->n_out);
        switch (I->code) {
        case TJI_CALL: tjc_put(&t, " = call %s(", tj_op_name(I->op)); break;
        case TJI_CONST: tjc_put(&t, " = const %%%d(", tj_node_id(I->node)); break;
        case TJI_NONE: tjc_put(&t, " = none("); break;
        case TJI_CHUNK: tjc_put(&t, " = chunk[chunks=%lld, dim=%lld](", (long long)I->chunks,
                            (long long)I->dim); break;
        case TJI_FUSED: tjc_put(&t, " = fused %%%d(", tj_node_id(I->node)); break;
        }
        regs(&t, I->in, I->n_in);
        tjc_put(&t, ")");
        if (I->n_dead) {
            tjc_put(&t, "  free ");
            regs(&t, I->dead, I->n_dead);
        }
        tjc_put(&t, "\n");
    }
    tjc_put(&t, "outputs: ");
    regs(&t, code->output_regs, code->n_outputs);
    tjc_put(&t, "\n");
    return tjc_text_finish(&t);
}
