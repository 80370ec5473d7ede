/* code.h — the interpreter's register code: what a graph lowers to and what
 * a program runs. Prefix tji_.
 *
 * A frame is an array of registers R[0..n_regs), each holding one tensor
 * reference (or NULL). Graph inputs are loaded into their registers before
 * the first instruction; after the last one the outputs are read from theirs.
 * Every instruction reads registers in[], writes registers out[], and then
 * releases the registers in dead[]: the values whose last use it was. A
 * register is reused as soon as its value is dead, so a frame holds only the
 * live values.
 *
 *   TJI_CALL   R[out...] = op(R[in...]; attrs)   one row of the op table,
 *                                                 through tjc_invoke_nested
 *   TJI_CONST  R[out0] = constant                 a tensor constant (retained)
 *   TJI_NONE   R[out0] = NULL                     an absent optional tensor
 *   TJI_CHUNK  R[out...] = chunk(R[in0])          prim::ConstantChunk[chunks, dim]
 *   TJI_FUSED  R[out...] = group(R[in...])         a prim::FusionGroup, through the
 *                                                 kernel its backend compiled for
 *                                                 the inputs' spec (fuser/fuser.h)
 *
 * Instructions point into the program's graph for their op, attributes and
 * constants, so the graph lives as long as the code.
 *
 * tji_execute is the op-by-op replay: it checks, runs the shape rule and
 * allocates at every instruction. Replays normally run a static plan of this
 * code instead (plan.h): the same instructions specialised once to an input
 * signature, with their kernels, arguments and a memory plan prepared. The
 * op-by-op replay remains for programs that cannot be planned, profiled
 * replays, and tj_compile_options.dynamic_replay.
 */
#ifndef TJIT_INTERPRETER_CODE_H
#define TJIT_INTERPRETER_CODE_H

#include "core/core.h"
#include "fuser/fuser.h"
#include "tjit/runtime.h"

typedef enum tji_opcode { TJI_CALL, TJI_CONST, TJI_NONE, TJI_CHUNK, TJI_FUSED } tji_opcode;

typedef struct tji_instr {
    tji_opcode code;
    const tj_op_info *op;   /* TJI_CALL */
    const tj_attr *attrs;   /* TJI_CALL: the node's attributes, schema order */
    tj_tensor *constant;    /* TJI_CONST, borrowed from the graph */
    int64_t chunks, dim;    /* TJI_CHUNK */
    tjf_group *group;       /* TJI_FUSED, owned */
    const tj_node *node;    /* for messages and dumps */
    int n_in, n_out, n_dead;
    int *in, *out, *dead;   /* register numbers */
} tji_instr;

typedef struct tji_profile tji_profile; /* profile.h */

typedef struct tji_code {
    tji_instr *instrs;
    int n_instrs;
    int n_regs;
    int n_inputs;       /* graph inputs, bound ones included */
    int *input_regs;    /* -1 for an input nothing reads */
    int n_outputs;
    int *output_regs;
    /* by output: the instruction after which its value is final (its last
     * write, in place or through a view included), -1 before the first;
     * ready_order lists the outputs by that instruction (for tji_ready) */
    int *output_final;
    int *ready_order;
    /* made by the first tj_program_profile; freed with the code */
    _Atomic(tji_profile *) profile;
} tji_code;

/* A replay's "output ready" callback: output (an index into the outputs)
 * is final, t is it (borrowed; the replay still returns it), and remaining
 * steps or instructions are still to run. A non-OK status stops the replay
 * with it. */
typedef struct tji_ready {
    tj_status (*fn)(void *ctx, int output, tj_tensor *t, int remaining);
    void *ctx;
} tji_ready;

/* Lowers the nodes of g's block (which must be verified) to code; fusion
 * groups run on backend. */
tj_status tji_lower(const tj_graph *g, const tjf_backend *backend, tji_code *code);
void tji_code_free(tji_code *code);
/* Runs code on the graph inputs in[] (n_inputs of them); outputs receive new
 * references. The registers come from the caller's frame (n_regs, zeroed).
 * ready (NULL: none) is called for each non-NULL output right after the
 * instruction that makes it final. */
tj_status tji_execute(const tji_code *code, tj_tensor *const *in, tj_tensor **frame,
                      tj_tensor **outputs, const tji_ready *ready);
/* Sorts outputs 0..n by final[] (ascending, stable) into order; final[i]
 * is -1 or an instruction (or plan step) index below n_instrs. */
tj_status tji_ready_sort(const int *final, int n, int n_instrs, int *order);
/* One line per instruction. */
char *tji_code_to_string(const tji_code *code);

#endif
