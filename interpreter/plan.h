/* plan.h — static execution plans: what replay of one input signature needs,
 * computed once. Prefix tji_.
 *
 * The register code (code.h) is what a graph lowers to; a plan is that code
 * specialised to one signature of the graph inputs (dtype, device, sizes and
 * strides of each, parameters included). Building it runs, once, everything
 * replay used to redo per op: the argument checks, each node's shape rule,
 * the choice of kernel (and of a fusion group's compiled kernel), and the
 * placement of every value in memory:
 *
 *   - every value of the code gets a value number; values that are the same
 *     tensor (an in-place op's result is its input) share a slot;
 *   - a value is an input (or a view of one), a constant, absent, or a
 *     buffer: a fresh result of some node, or a view of one;
 *   - buffers that a graph output reaches are external: they get storage of
 *     their own at every replay (from the storage cache), since the caller
 *     keeps them; all other buffers live in the frame's arena, one per
 *     device, at offsets chosen by liveness (memory_plan.c): buffers whose
 *     lifetimes do not overlap share bytes, and a pointwise op whose input
 *     buffer dies at that op writes its result over it;
 *   - views take no bytes: their geometry relative to their root is fixed.
 *
 * A frame (plan_run.c) is one replaying thread's copy of the plan's mutable
 * part: a tensor header per slot, a storage header per buffer, the arena,
 * and the prepared kernel calls (tjc_call) whose argument arrays point at the
 * slots. Replay binds the inputs' storages into their slots (the guard has
 * already matched their geometry), allocates the external buffers, runs the
 * prepared calls in order, and hands out the outputs. Nothing is checked or
 * allocated per op. Frames are pooled per plan, so threads replaying one
 * program at once each use a frame of their own.
 *
 * A program compiled with cuda_graph replays a plan whose inputs are all on
 * one CUDA device as a device graph (cuda_graph.c): the first replay runs
 * as above (compiling kernels, warming the allocator), the second captures
 * the steps over a frame of the graph's own, with input and output buffers
 * of its own, and every later one copies the inputs in, launches the graph
 * once and copies the outputs out into the caller's new tensors. Parameters
 * are read in place by the graph; one whose data moved is captured again.
 * The graph serves one thread at a time; a replay that finds it busy, or a
 * plan that cannot be captured (the reason is kept for the plan stats),
 * replays as above.
 */
#ifndef TJIT_INTERPRETER_PLAN_H
#define TJIT_INTERPRETER_PLAN_H

#include <pthread.h>

#include "code.h"

/* One graph input's geometry, as the guard compares it. */
typedef struct tji_sig_entry {
    bool present; /* false: the input is NULL/unused by the code */
    tj_dtype dtype;
    tj_device device;
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
    int64_t strides[TJ_MAX_DIMS];
} tji_sig_entry;

typedef enum tji_root_kind {
    TJI_ROOT_NONE,     /* an absent optional tensor: NULL */
    TJI_ROOT_CONST,    /* a constant of the graph */
    TJI_ROOT_INPUT,    /* graph input `index` (or a view of it) */
    TJI_ROOT_ARENA,    /* buffer `index` in its device's arena (or a view of it) */
    TJI_ROOT_EXTERNAL, /* buffer `index`, allocated at every replay */
} tji_root_kind;

/* A slot: one tensor header of the frame. */
typedef struct tji_slot {
    tji_root_kind root;
    int index;          /* input, or buffer */
    tj_tensor *constant; /* TJI_ROOT_CONST, borrowed from the graph */
    tj_dtype dtype;
    int ndim;
    int64_t sizes[TJ_MAX_DIMS], strides[TJ_MAX_DIMS];
    int64_t offset;     /* in elements: from the root's offset (input) or absolute (buffer) */
} tji_slot;

typedef struct tji_buffer {
    tj_device device;
    int64_t bytes;
    int64_t offset;     /* in the arena (arena buffers) */
    int first, last;    /* live range: the steps that define and last read it */
    bool external;
    bool reused;        /* holds a result written over a dead input (pointwise, addmm) */
} tji_buffer;

/* One kernel call, prepared. */
typedef struct tji_step {
    tjc_kernel_fn kernel;          /* NULL for fused groups */
    const tj_op_info *op;
    const tj_attr *attrs;
    tjc_meta *meta;                /* the shape rule's results (owned by the plan) */
    tjf_group *group;              /* fused groups: the launch goes through it */
    const tjf_kernel *fused;       /* the group's kernel for this signature */
    tj_device device;
    int instr;                     /* index of the instruction in the code */
    int n_in, n_out;
    int in_at, out_at;             /* into the plan's in_slots / out_slots */
    tj_attr chunk_attrs[2];        /* prim::ConstantChunk's, as aten::chunk's attributes */
} tji_step;

typedef struct tji_frame tji_frame;
typedef struct tji_graph_state tji_graph_state;

typedef struct tji_plan {
    const tji_code *code;
    int n_sig;
    tji_sig_entry *sig;     /* by graph input */
    int n_slots, n_buffers, n_steps;
    tji_slot *slots;
    tji_buffer *buffers;
    tji_step *steps;
    int *in_slots, *out_slots;  /* argument slots of the steps, -1 for NULL */
    int n_in_slots, n_out_slots;
    int *value_slot;            /* by value number (for dumps and profiles) */
    int n_values;
    int *instr_in_values, *instr_out_values; /* by instruction: value numbers */
    int *instr_in_at, *instr_out_at;
    int *output_slot;           /* by graph output */
    int *output_first;          /* earlier output with the same slot, else -1 */
    /* by output: the step after which it is final (the last step writing
     * its slot's root: in place, through a view, or as an argument the op
     * writes), -1 before the first; ready_order: the outputs by that step */
    int *output_final, *ready_order;
    /* what a replay binds: slots over inputs, slots over external buffers */
    int *input_bound, n_input_bound;
    int *external_bound, n_external_bound;
    int *external_buffers, n_external_buffers;
    /* arenas: one per device the buffers live on */
    int n_arenas;
    tj_device arena_device[4];
    int64_t arena_bytes[4];
    int *buffer_arena;          /* by buffer: index into the arenas */
    /* figures for dumps */
    int64_t intermediate_bytes; /* every arena buffer's bytes, summed */
    int64_t peak_live_bytes;    /* the most that are live at once */
    int64_t external_bytes;
    int n_reused;
    /* frames not in use */
    pthread_mutex_t lock;
    tji_frame *free_frames;
    _Atomic(tji_frame *) spare; /* one frame taken without the lock */
    /* replay as a device graph (cuda_graph.c): made at the first replay that asks */
    _Atomic(tji_graph_state *) graph;
} tji_plan;

/* The signature of the graph inputs in[] (n of them; NULL entries allowed). */
void tji_signature_of(tj_tensor *const *in, int n, tji_sig_entry *sig);
/* Whether in[] matches the plan's signature (the replay guard). */
bool tji_plan_matches(const tji_plan *plan, tj_tensor *const *in);

/* Builds the plan of code for inputs of signature sig (code->n_inputs
 * entries). NULL with an error when the code cannot be planned (a node whose
 * results' sizes depend on data or that crosses devices). */
tji_plan *tji_plan_build(const tji_code *code, const tji_sig_entry *sig);
void tji_plan_free(tji_plan *plan);
/* Frees the plan's idle frames (plan_run.c). */
void tji_plan_free_frames(tji_plan *plan);
/* Places the buffers (memory_plan.c): fills offsets, arenas and figures. */
tj_status tji_plan_memory(tji_plan *plan);
/* Checks that no two arena buffers whose live ranges overlap share bytes;
 * an error naming them when two do. */
tj_status tji_plan_verify(const tji_plan *plan);

/* Runs the plan on the graph inputs in[] (matching its signature); outputs
 * receive new references. ready (NULL: none) is called for each non-NULL
 * output right after the step that makes it final. */
tj_status tji_plan_execute(tji_plan *plan, tj_tensor *const *in, tj_tensor **outputs,
                           const tji_ready *ready);

/* A frame of its own (plan_run.c), for a replay that keeps one (a device
 * graph); NULL with an error when memory is short. */
tji_frame *tji_frame_new(const tji_plan *plan);
void tji_frame_free(const tji_plan *plan, tji_frame *frame);
/* Points the frame's slots over graph inputs at in[] (NULL: at nothing), and
 * its slots over external buffers at by_buffer[buffer]. */
void tji_frame_bind_inputs(const tji_plan *plan, tji_frame *frame, tj_tensor *const *in);
void tji_frame_bind_externals(const tji_plan *plan, tji_frame *frame, tjc_storage *const *by_buffer);
/* Runs the bound frame's steps in order. */
tj_status tji_frame_run(const tji_plan *plan, tji_frame *frame);
/* The graph outputs of the bound frame, as tji_plan_execute hands them out
 * (in[] gives the outputs that are inputs); all NULL on error. */
tj_status tji_frame_hand_out(const tji_plan *plan, tji_frame *frame, tj_tensor *const *in,
                             tj_tensor **outputs);

/* tji_plan_execute through the plan's device graph (cuda_graph.c): bound
 * (by graph input: the program's parameter, or NULL) says which inputs the
 * graph reads in place. Falls back to tji_plan_execute when the plan cannot
 * be captured, at the first replay, and when another thread uses the
 * graph. With ready, every output is handed to it after the launch. */
tj_status tji_plan_execute_graph(tji_plan *plan, tj_tensor *const *in, tj_tensor *const *bound,
                                 tj_tensor **outputs, const tji_ready *ready);
/* Frees the plan's graph state (tji_plan_free calls it). */
void tji_plan_graph_free(tji_plan *plan);
/* The graph's figures for the plan stats: whether replay launches a graph,
 * why not (NULL when it does; owned by the plan), graph launches so far and
 * captures made. */
void tji_plan_graph_stats(const tji_plan *plan, bool *captured, const char **why_not,
                          int64_t *launches, int *captures);

/* The memory plan as text: one line per buffer (offset, bytes, live range,
 * the values it holds), the arena sizes, and peak against the sum. */
char *tji_plan_to_string(const tji_plan *plan, const tj_graph *graph);

#endif
