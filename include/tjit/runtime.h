/* runtime.h — tracing a C model into a graph, compiling a graph into a
 * program, replaying it, retracing per input signature, and .npy files.
 *
 *   tj_graph   *g = tj_trace(model, ctx, inputs, n_in, n_out, NULL);
 *   char       *s = tj_graph_to_string(g, TJ_PRINT_CANONICAL);
 *   tj_program *p = tj_compile(g, NULL);
 *   tj_run(p, inputs, outputs);
 */
/* the umbrella header first, outside this guard: it includes every public
 * header in dependency order, whichever of them a user includes first */
#include "tjit/tjit.h"
#ifndef TJIT_RUNTIME_H
#define TJIT_RUNTIME_H

#include "tjit/ir.h"
#include "tjit/tjit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A model: reads n_in inputs (and any tensors it holds in ctx, its
 * parameters), writes n_out new references into out, owned like a tj_
 * function's results: by the innermost open scope when there is one (a model
 * with a scope of its own tj_keeps them), else by the caller. */
typedef tj_status (*tj_model_fn)(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out,
                                 int n_out);

/* ---- tracing ---------------------------------------------------------------- */

typedef struct tj_trace_options {
    /* When set, the model is traced a second time on these inputs (n_in of
     * them) and the two canonical graphs must be equal; tj_trace fails
     * naming the first line that differs. */
    tj_tensor *const *check_inputs;
} tj_trace_options;

/* Runs fn once with tracing on and returns its graph: the function's inputs
 * become the graph's first n_in inputs; tensors it reads that it did not make
 * (weights in ctx) become further inputs bound to those tensors, named by
 * tj_tensor_set_name or param_N. opts may be NULL. NULL on error. */
tj_graph *tj_trace(tj_model_fn fn, void *ctx, tj_tensor *const *inputs, int n_in, int n_out,
                   const tj_trace_options *opts);

/* Parameters: graph inputs bound to tensors (the graph holds a reference). */
tj_status tj_graph_bind_input(tj_graph *g, int input, tj_tensor *t);
tj_tensor *tj_graph_input_binding(const tj_graph *g, int input); /* NULL for a plain input */

/* Warnings the tracer recorded (a host read of a tensor's data, which the
 * trace bakes in). */
tj_status tj_graph_add_warning(tj_graph *g, const char *message);
int tj_graph_num_warnings(const tj_graph *g);
const char *tj_graph_warning(const tj_graph *g, int i);

/* ---- programs ------------------------------------------------------------------ */

typedef struct tj_compile_options {
    /* Replay accepts inputs whose sizes differ from the traced ones (dtype,
     * rank and device must still match). Off by default. */
    bool allow_size_change;
    /* The passes to run, comma-separated (see tjit/passes.h): NULL runs
     * tj_default_pipeline(), "" none. */
    const char *passes;
    /* The code generator of fusion groups on the CPU: "llvm" (machine code
     * from LLVM), "llvm-libm" (the same, with libm's bits), "portable" (the
     * fused-loop runner). NULL: $TJIT_BACKEND when set, else the fastest
     * built ("llvm" where the library has LLVM, else "portable"). */
    const char *backend;
    /* Gradients: requires_grad[k] says whether unbound input k gets one (NULL:
     * none does); grad_parameters gives every floating-point parameter one.
     * Either makes tj_compile derive the backward graph (docs/autodiff.md). */
    const bool *requires_grad;
    bool grad_parameters;
    /* Replay op by op through the register interpreter, checking arguments
     * and allocating every result as it goes, instead of through a static
     * plan (docs/architecture.md). For comparison and debugging: off by
     * default. */
    bool dynamic_replay;
    /* Replay as one CUDA graph (docs/cuda.md, "Replay as a CUDA graph"): a
     * planned input signature whose inputs are all on one CUDA device runs
     * plainly at its first replay, is captured at its second, and from then
     * on replays as one graph launch, inputs copied into the graph's buffers
     * and outputs copied out of them. Parameters are read in place. Off by
     * default: an explicit choice, since it costs the copies and a graph's
     * memory per signature, and suits programs replayed many times. */
    bool cuda_graph;
} tj_compile_options;

typedef struct tj_program tj_program;

/* Lowers a graph to register code. Bound inputs (parameters) are read by
 * reference at every run: an in-place update of a weight is seen by the next
 * tj_run. opts may be NULL. The graph may be freed afterwards. */
tj_program *tj_compile(const tj_graph *g, const tj_compile_options *opts);
/* Runs the program on its unbound inputs; outputs receive new references.
 * Thread-safe: one program may run on several threads at once. */
tj_status tj_run(const tj_program *p, tj_tensor *const *inputs, tj_tensor **outputs);
void tj_program_free(tj_program *p);
int tj_program_num_inputs(const tj_program *p);  /* the unbound inputs */
int tj_program_num_outputs(const tj_program *p);
/* The register code, one instruction a line; malloc'd, free with free(). */
char *tj_program_code_to_string(const tj_program *p);
/* The static plan of the traced input signature (docs/architecture.md):
 * what replay runs, and the memory it lives in. */
typedef struct tj_plan_stats {
    bool planned;               /* false: replay runs op by op (plan_error says why) */
    int steps;                  /* kernel calls per replay (views take none) */
    int buffers;                /* intermediates placed in the arena */
    int reused;                 /* results written over their dead input (pointwise; addmm over self) */
    int64_t arena_bytes;        /* one replay frame's arena */
    int64_t intermediate_bytes; /* the intermediates' bytes, summed */
    int64_t peak_live_bytes;    /* the most intermediate bytes live at one step */
    int64_t output_bytes;       /* allocated per replay for the results */
    /* a program with gradients: its backward program's arena and intermediates */
    int64_t backward_arena_bytes, backward_intermediate_bytes;
    const char *plan_error;     /* owned by the program; NULL when planned */
    /* compiled with cuda_graph: whether replay launches a captured graph now,
     * and why not (NULL when it does; owned by the program); graph launches
     * and captures so far */
    bool cuda_graph;
    const char *cuda_graph_error;
    int64_t cuda_graph_launches;
    int cuda_graph_captures;
} tj_plan_stats;
tj_status tj_program_plan_stats(const tj_program *p, tj_plan_stats *out);
/* The memory plan as text (with the backward program's, when there is one):
 * offset, bytes and live range of every buffer, the arena size, and the peak
 * against the sum of the intermediates. malloc'd. */
char *tj_program_plan_to_string(const tj_program *p);
/* The graph the program runs (owned by the program). */
const tj_graph *tj_program_graph(const tj_program *p);

/* ---- gradients ------------------------------------------------------------------
 * A program compiled with gradients keeps, at each tj_run, the values its
 * backward graph reads (and nothing else). tj_backward uses them once: it
 * takes a gradient per output (NULL, or a NULL entry: ones) and writes the
 * gradients of the unbound inputs that asked for one into grad_inputs (one
 * slot per unbound input, NULL for the others; grad_inputs may be NULL), and
 * ADDS the gradients of the parameters to the program's, which
 * tj_program_grad reads by name and tj_program_zero_grad clears. One
 * forward/backward pair at a time per program. */
tj_status tj_backward(tj_program *p, tj_tensor *const *grad_outputs, tj_tensor **grad_inputs);
tj_tensor *tj_program_grad(const tj_program *p, const char *param_name); /* new reference */
void tj_program_zero_grad(tj_program *p);
/* What the last tj_run keeps for tj_backward. */
tj_status tj_program_saved(const tj_program *p, int *n_tensors, int64_t *n_bytes);
/* The backward graph, after the passes (NULL without gradients). */
const tj_graph *tj_program_backward_graph(const tj_program *p);

/* A gradient hook: what data-parallel training (tjit/distributed.h) builds on.
 * While one is installed, tj_backward hands each parameter's gradient of this
 * backward pass to ready() as soon as it is final (after the backward
 * program's last write to it, while the rest of the program still runs), and
 * does not accumulate it itself: the hook owns the accumulated gradients
 * (tj_program_set_grad). finish() runs once after the backward program, with
 * its status, before tj_backward returns; its status is tj_backward's when
 * the program succeeded. */
typedef struct tj_grad_hook {
    void *ctx;
    /* param: the parameter's graph input index; grad: borrowed, valid during
     * the call; remaining: backward instructions still to run. */
    tj_status (*ready)(void *ctx, int param, tj_tensor *grad, int remaining);
    tj_status (*finish)(void *ctx, tj_status backward_status);
} tj_grad_hook;
/* Installs hook (copied; NULL removes it). Refused on a program without
 * gradients and while a hook is installed (remove it first). */
tj_status tj_program_set_grad_hook(tj_program *p, const tj_grad_hook *hook);
/* Sets the accumulated gradient of a parameter to grad (retained; NULL
 * clears it); grad must have the parameter's sizes, dtype and device. */
tj_status tj_program_set_grad(tj_program *p, const char *param_name, tj_tensor *grad);

/* ---- functions: retrace per input signature --------------------------------- */

typedef struct tj_function tj_function;

typedef struct tj_function_stats {
    int64_t calls;
    int64_t hits;      /* calls that found a program for their input signature */
    int64_t misses;    /* calls that traced and compiled a new program */
    int64_t retraces;  /* misses after the first one */
    int64_t evictions; /* programs dropped to stay within the capacity */
    int cached;        /* programs held now */
} tj_function_stats;

/* Owns fn and ctx (borrowed: ctx must outlive the function). A signature is
 * the dtypes, sizes and devices of the inputs; at most capacity programs are
 * kept, least recently used dropped first. opts may be NULL. */
tj_function *tj_function_new(tj_model_fn fn, void *ctx, int n_in, int n_out, int capacity,
                             const tj_compile_options *opts);
tj_status tj_function_call(tj_function *f, tj_tensor *const *inputs, tj_tensor **outputs);
tj_function_stats tj_function_get_stats(const tj_function *f);
void tj_function_free(tj_function *f);

/* ---- .npy files -------------------------------------------------------------- */

/* NumPy's format, versions 1 to 3: little-endian <f4, <f8, <i8 and |b1, and
 * <i4 widened to i64; C or Fortran order. Other dtypes are refused with a
 * message naming them. Saving writes version 1 in C order. */
tj_tensor *tj_load_npy(const char *path);
tj_status tj_save_npy(const char *path, const tj_tensor *t);

#ifdef __cplusplus
}
#endif

#endif
