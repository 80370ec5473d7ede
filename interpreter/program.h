/* program.h — the compiled program's struct, shared by program.c (plain
 * replay) and training.c (programs that also derive gradients). */
#ifndef TJIT_INTERPRETER_PROGRAM_H
#define TJIT_INTERPRETER_PROGRAM_H

#include <pthread.h>

#include "code.h"
#include "plan.h"

enum { TJI_MAX_PLANS = 8 }; /* input signatures planned per program */

struct tj_program {
    tj_graph *graph;   /* the copy the code points into */
    tji_code code;
    int n_user;        /* unbound inputs, which tj_run receives */
    int *user_input;   /* graph input index of each */
    tj_tensor **bound; /* by graph input: the parameter, or NULL */
    int n_graph_inputs;
    tj_compile_options opts;

    /* static plans by input signature (plan.h): appended, never removed
     * before the program is freed, so replays read them without the lock */
    pthread_mutex_t plan_lock;
    tji_plan *plans[TJI_MAX_PLANS];
    _Atomic int n_plans;
    bool plan_refused;       /* a signature could not be planned: replay op by op */
    char *plan_error;        /* why (for dumps) */

    /* gradients (training.c); backward is NULL for a plain program */
    struct tj_program *backward;
    int n_user_outputs;      /* what tj_run returns; the code's other outputs are saved values */
    int n_grads;
    int *grad_of;            /* graph input index of each backward output */
    pthread_mutex_t tape_lock;
    tj_tensor **tape;        /* the last tj_run's saved values, until tj_backward uses them */
    int n_tape;
    bool tape_full;          /* a tj_run's tape that tj_backward has not used */
    bool ran;                /* some tj_run stored a tape */
    tj_tensor **param_grad;  /* by graph input: accumulated gradients of parameters */
    tj_grad_hook hook;       /* tj_program_set_grad_hook's, when has_hook */
    bool has_hook;
};

/* tj_run, with ready (NULL: none) called for each output as soon as it is
 * final (code.h); the outputs are the caller's, in no scope. For programs
 * without gradients (the outputs are the code's). */
tj_status tji_run_ready(const tj_program *p, tj_tensor *const *inputs, tj_tensor **outputs,
                        const tji_ready *ready);
tj_program *tji_compile_plain(const tj_graph *g, const tj_compile_options *opts);
/* Compiles own, which the program takes (and frees, on failure too), with
 * g's input bindings (g may be own). own is well formed (a copy of a graph
 * tj_compile verified, or autodiff's): the passes do not check it again. passes: the pipeline to run (NULL: the
 * options' or the default one; "": none, for a graph already optimised). */
tj_program *tji_compile_owned(tj_graph *own, const tj_graph *g, const tj_compile_options *opts,
                              const char *passes);
tj_program *tji_compile_training(const tj_graph *g, const tj_compile_options *opts);
void tji_training_free(tj_program *p);
/* Takes the references in saved[0..n) as the program's tape; when memory is short,
 * releases them and returns TJ_ERR_MEMORY (the previous tape stays). */
tj_status tji_tape_store(tj_program *p, tj_tensor **saved, int n);

#endif
