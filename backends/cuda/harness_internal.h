/* harness_internal.h — what the harness's files share: the runner's state
 * for one OS thread (tjh_exec), its CUDA threads and fibers, and the calls
 * between the runner (harness_run.c), the collectives (harness_sync.c) and
 * the loader (harness_module.c).
 *
 * Execution model. A block's threads are started in order, linear id
 * x-fastest, by a fiber that runs one thread after another to completion: a
 * kernel that never waits runs its whole block in one fiber, with one switch
 * in and one out. A thread that waits (at a barrier or a warp collective)
 * parks its fiber, and the next fiber to run is a ready one (whose wait was
 * completed), else an idle or new one that starts the next thread. The
 * thread that completes a wait computes every waiter's result and keeps
 * running; the waiters become ready. When nothing is ready and no thread is
 * left to start, the block is done, or deadlocked: an error.
 */
#ifndef TJIT_CUDA_HARNESS_INTERNAL_H
#define TJIT_CUDA_HARNESS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

#include "backends/cuda/harness.h"
#include "backends/cuda/kernels/tjcu_builtins.h"

#define TJH_MAX_THREADS 1024
#define TJH_WARP 32
#define TJH_MAX_WARPS (TJH_MAX_THREADS / TJH_WARP)

typedef struct tjh_fiber {
    ucontext_t uc; /* the portable switch */
    void *sp;      /* the x86-64 switch: the saved stack pointer */
    char *stack; /* usable stack, above a guard page */
    size_t stack_size;
    bool fresh;   /* needs makecontext before it runs (new, or abandoned mid-kernel) */
    bool idle;    /* on the idle list: between threads */
    void *asan_fake_stack;
    struct tjh_fiber *next_idle;
} tjh_fiber;

enum tjh_thread_state { TJH_RUNNING, TJH_AT_BARRIER, TJH_AT_WARP_OP, TJH_EXITED };

typedef struct tjh_thread {
    tjcu_thread pub; /* first: the kernel sees a tjcu_thread * */
    struct tjh_exec *e;
    tjh_fiber *fiber;
    unsigned linear, warp, lane;
    int state;
    int line, op; /* where it waits, and at which warp op */
    unsigned long long value, result; /* a warp collective's operand and result */
    int arg;
    int bar_result;
} tjh_thread;

/* A warp collective in progress: the lanes of mask, arrived so far. */
typedef struct tjh_warp_group {
    unsigned mask, arrived;
    int op, width, line;
} tjh_warp_group;

typedef struct tjh_warp {
    unsigned exist;  /* lanes the block has */
    unsigned exited; /* lanes that returned */
    int n_groups;
    tjh_warp_group groups[TJH_WARP];
} tjh_warp;

typedef struct tjh_exec {
    /* the launch this OS thread works on */
    tjcu_entry entry;
    void **args;
    const char *kernel;
    tjcu_uint3 block_idx, block_dim, grid_dim;
    void *dynamic_shared;
    size_t dynamic_cap;
    /* the block */
    unsigned n, next, exited;
    tjh_thread *threads;
    tjh_warp warps[TJH_MAX_WARPS];
    unsigned bar_arrived;
    int bar_op, bar_line, bar_acc;
    tjh_thread **ready; /* ring of TJH_MAX_THREADS */
    unsigned ready_head, ready_count;
    bool failed;
    char message[768];
    /* fibers */
    ucontext_t main_uc;
    void *main_sp;
    const void *main_stack_bottom;
    size_t main_stack_size;
    void *main_fake_stack;
    tjh_fiber *current; /* NULL: the OS thread's own stack */
    tjh_fiber *idle;
    tjh_fiber **fibers;
    int n_fibers, cap_fibers;
    struct tjh_exec *next_exec;
} tjh_exec;

/* harness_run.c */
/* Runs the next ready fiber, else a fiber that starts the next thread, else
 * goes back to the block's loop (done or deadlocked). Returns when from runs again. */
void tjh_schedule(tjh_exec *e, tjh_fiber *from);
/* Records the block's error and leaves the block; never returns. */
_Noreturn void tjh_fail(tjh_exec *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "(x, y, z)" of a thread, for messages */
const char *tjh_thread_name(const tjh_thread *t, char *buf, size_t n);

/* harness_sync.c */
extern const tjcu_runtime tjh_runtime;
void tjh_block_reset(tjh_exec *e);
/* A thread returned: fails the block if someone waits for it. */
void tjh_thread_exited(tjh_exec *e, tjh_thread *t);
/* Describes the waits of a block that can make no progress. */
void tjh_describe_deadlock(tjh_exec *e);
/* The make-ready call for waiters whose wait completed */
void tjh_make_ready(tjh_exec *e, tjh_thread *t);

long tjh_launch_count(void);

/* harness_module.c */
const char *tjh_function_kernel(const tjh_function *f);
tjcu_entry tjh_function_entry(const tjh_function *f);

#endif
