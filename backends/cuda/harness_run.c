/* harness_run.c — the runner: a launch's blocks spread over the OpenMP
 * threads, and within a block, the fibers that run its threads (the model is
 * described in harness_internal.h). Each OS thread keeps its state (tjh_exec):
 * the thread records, the dynamic shared buffer and the fibers, whose stacks
 * are reused by later blocks and launches.
 *
 * Fibers run on mmap'd stacks with a guard page below, so an overflow faults
 * instead of corrupting a neighbour. They switch with ucontext (makecontext,
 * swapcontext), except on x86-64, where a dozen instructions save and load
 * the registers the ABI preserves across calls: swapcontext also sets the
 * signal mask, a system call that made a barrier of 256 threads cost about
 * 100 us instead of 15. (The x86-64 switch steps aside where the process runs with
 * a shadow stack, or when TJIT_HARNESS_UCONTEXT=1, as one ctest run sets.)
 * Under AddressSanitizer every switch is announced
 * (__sanitizer_start/finish_switch_fiber), and a stack abandoned by a failed
 * block is unpoisoned before it is used again.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_STACK */
#include <omp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/core.h"
#include "harness_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define TJH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TJH_ASAN 1
#endif
#endif
#ifdef TJH_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define TJH_DEFAULT_STACK_KIB 256 /* instrumented frames are larger */
#else
#define TJH_DEFAULT_STACK_KIB 64
#endif

static _Thread_local tjh_exec *tls_exec;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t exec_key;
static pthread_mutex_t execs_lock = PTHREAD_MUTEX_INITIALIZER;
static tjh_exec *execs; /* every OS thread's state, until that thread exits */
static size_t stack_bytes;
static atomic_long launches;
static bool fast_switch;

/* ---- switching stacks --------------------------------------------------------- */

static void fiber_main(void);

#if defined(__x86_64__) && defined(__linux__)
/* tjh_stack_switch(save, to): pushes the callee-saved registers and the
 * MXCSR and x87 control words (which the SysV ABI also preserves), stores the
 * stack pointer in *save, loads `to` and pops the same from there. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl tjh_stack_switch\n"
        ".hidden tjh_stack_switch\n"
        ".type tjh_stack_switch, @function\n"
        "tjh_stack_switch:\n"
        "    pushq %rbp\n"
        "    pushq %rbx\n"
        "    pushq %r12\n"
        "    pushq %r13\n"
        "    pushq %r14\n"
        "    pushq %r15\n"
        "    subq $8, %rsp\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    popq %r15\n"
        "    popq %r14\n"
        "    popq %r13\n"
        "    popq %r12\n"
        "    popq %rbx\n"
        "    popq %rbp\n"
        "    ret\n"
        ".size tjh_stack_switch, .-tjh_stack_switch\n");
void tjh_stack_switch(void **save, void *to);

/* A new stack, laid out as tjh_stack_switch leaves one, whose first switch
 * "returns" into fiber_main with the stack aligned as at a call. */
static void *initial_frame(char *stack, size_t size) {
    uint64_t *sp = (uint64_t *)((uintptr_t)(stack + size) & ~(uintptr_t)15);
    *--sp = 0; /* fiber_main's own return address: it never returns */
    *--sp = (uint64_t)(uintptr_t)fiber_main;
    for (int i = 0; i < 6; i++) *--sp = 0; /* rbp, rbx, r12-r15 */
    uint32_t mxcsr = 0;
    uint16_t fpucw = 0;
    __asm__ volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(fpucw));
    *--sp = (uint64_t)fpucw << 32 | mxcsr;
    return sp;
}

/* rdssp reads the shadow stack pointer, and is a no-op (leaving 0) without one. */
static bool shadow_stack_active(void) {
    unsigned long long ssp = 0;
    __asm__ volatile("rdsspq %0" : "+r"(ssp));
    return ssp != 0;
}
#define TJH_HAVE_FAST_SWITCH 1
#endif

/* ---- fibers ------------------------------------------------------------------ */

static void fiber_free(tjh_fiber *f) {
    long page = sysconf(_SC_PAGESIZE);
    munmap(f->stack - page, f->stack_size + (size_t)page);
    tjc_free(f);
}

static tjh_fiber *fiber_new(tjh_exec *e) {
    if (e->n_fibers == e->cap_fibers) {
        int cap = e->cap_fibers ? 2 * e->cap_fibers : 64;
        tjh_fiber **grown = tjc_realloc(e->fibers, (size_t)cap * sizeof *grown);
        if (!grown) return NULL;
        e->fibers = grown;
        e->cap_fibers = cap;
    }
    tjh_fiber *f = tjc_calloc(1, sizeof *f);
    if (!f) return NULL;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *mem = mmap(NULL, stack_bytes + page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (mem == MAP_FAILED) {
        tjc_free(f);
        return NULL;
    }
    mprotect(mem, page, PROT_NONE); /* the guard page */
    f->stack = mem + page;
    f->stack_size = stack_bytes;
    f->fresh = true;
    e->fibers[e->n_fibers++] = f;
    return f;
}

/* An idle fiber (or a new one), off the idle list; NULL when out of memory. */
static tjh_fiber *take_idle(tjh_exec *e) {
    tjh_fiber *f = e->idle;
    if (f) e->idle = f->next_idle;
    else f = fiber_new(e);
    if (f) f->idle = false;
    return f;
}

/* After a switch lands in a fiber or back on the OS thread's stack. */
static void finish_switch(tjh_exec *e, void *fake_stack) {
#ifdef TJH_ASAN
    const void *bottom = NULL;
    size_t size = 0;
    bool from_main = e->current != NULL && e->main_stack_size == 0;
    __sanitizer_finish_switch_fiber(fake_stack, from_main ? &bottom : NULL, from_main ? &size : NULL);
    if (from_main) { /* the first switch of this OS thread comes from its own stack */
        e->main_stack_bottom = bottom;
        e->main_stack_size = size;
    }
#else
    (void)e, (void)fake_stack;
#endif
}

/* Switches from one context to another (NULL: the OS thread's own stack).
 * from_gone: from is abandoned and never resumes. */
static void switch_to(tjh_exec *e, tjh_fiber *from, tjh_fiber *to, bool from_gone) {
    if (to && to->fresh) {
#ifdef TJH_ASAN
        ASAN_UNPOISON_MEMORY_REGION(to->stack, to->stack_size);
#endif
#ifdef TJH_HAVE_FAST_SWITCH
        if (fast_switch) to->sp = initial_frame(to->stack, to->stack_size);
#endif
        if (!fast_switch) {
            getcontext(&to->uc);
            to->uc.uc_stack.ss_sp = to->stack;
            to->uc.uc_stack.ss_size = to->stack_size;
            to->uc.uc_link = NULL;
            makecontext(&to->uc, fiber_main, 0);
        }
        to->fresh = false;
    }
    e->current = to;
#ifdef TJH_ASAN
    void **save = from_gone ? NULL : from ? &from->asan_fake_stack : &e->main_fake_stack;
    __sanitizer_start_switch_fiber(save, to ? to->stack : e->main_stack_bottom,
                                   to ? to->stack_size : e->main_stack_size);
#else
    (void)from_gone;
#endif
#ifdef TJH_HAVE_FAST_SWITCH
    if (fast_switch) tjh_stack_switch(from ? &from->sp : &e->main_sp, to ? to->sp : e->main_sp);
#endif
    if (!fast_switch) swapcontext(from ? &from->uc : &e->main_uc, to ? &to->uc : &e->main_uc);
    finish_switch(e, from ? from->asan_fake_stack : e->main_fake_stack);
}

void tjh_schedule(tjh_exec *e, tjh_fiber *from) {
    tjh_fiber *to = NULL;
    if (!e->failed && e->ready_count) {
        tjh_thread *t = e->ready[e->ready_head];
        e->ready_head = (e->ready_head + 1) % TJH_MAX_THREADS;
        e->ready_count--;
        to = t->fiber;
    } else if (!e->failed && e->next < e->n) {
        to = take_idle(e);
        if (!to) tjh_fail(e, "out of memory for the fibers' stacks");
    }
    if (to != from) switch_to(e, from, to, false);
}

_Noreturn void tjh_fail(tjh_exec *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    e->failed = true;
    switch_to(e, e->current, NULL, true);
    /* unreachable: the block's loop re-makes every abandoned fiber before it runs again */
    abort();
}

const char *tjh_thread_name(const tjh_thread *t, char *buf, size_t n) {
    snprintf(buf, n, "(%u, %u, %u)", t->pub.thread_idx.x, t->pub.thread_idx.y, t->pub.thread_idx.z);
    return buf;
}

static tjh_thread *start_thread(tjh_exec *e, tjh_fiber *f) {
    unsigned i = e->next++;
    tjh_thread *t = &e->threads[i];
    unsigned bx = e->block_dim.x, by = e->block_dim.y;
    t->pub.thread_idx.x = i % bx;
    t->pub.thread_idx.y = i / bx % by;
    t->pub.thread_idx.z = i / (bx * by);
    t->pub.block_idx = e->block_idx;
    t->pub.block_dim = e->block_dim;
    t->pub.grid_dim = e->grid_dim;
    t->pub.dynamic_shared = e->dynamic_shared;
    t->e = e;
    t->fiber = f;
    t->linear = i;
    t->warp = i / TJH_WARP;
    t->lane = i % TJH_WARP;
    t->state = TJH_RUNNING;
    return t;
}

/* Every fiber runs this: threads to completion while there are threads to
 * start; then it waits on the idle list for the next block. */
static void fiber_main(void) {
    tjh_exec *e = tls_exec;
    tjh_fiber *f = e->current;
    finish_switch(e, NULL);
    for (;;) {
        while (e->next < e->n && !e->failed) {
            tjh_thread *t = start_thread(e, f);
            e->entry(&t->pub, e->args);
            tjh_thread_exited(e, t);
        }
        f->idle = true;
        f->next_idle = e->idle;
        e->idle = f;
        tjh_schedule(e, f);
    }
}

/* ---- per OS thread state ----------------------------------------------------- */

static void exec_free(void *p) {
    tjh_exec *e = p;
    pthread_mutex_lock(&execs_lock);
    for (tjh_exec **q = &execs; *q; q = &(*q)->next_exec)
        if (*q == e) {
            *q = e->next_exec;
            break;
        }
    pthread_mutex_unlock(&execs_lock);
    for (int i = 0; i < e->n_fibers; i++) fiber_free(e->fibers[i]);
    tjc_free(e->fibers);
    tjc_free(e->threads);
    tjc_free(e->ready);
    tjc_free(e->dynamic_shared);
    tjc_free(e);
}

static void init_once(void) {
    pthread_key_create(&exec_key, exec_free);
    size_t kib = TJH_DEFAULT_STACK_KIB;
    const char *s = getenv("TJIT_HARNESS_STACK_KIB");
    if (s && atol(s) >= 16) kib = (size_t)atol(s);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    stack_bytes = (kib * 1024 + page - 1) / page * page;
#ifdef TJH_HAVE_FAST_SWITCH
    const char *u = getenv("TJIT_HARNESS_UCONTEXT");
    fast_switch = !(u && !strcmp(u, "1")) && !shadow_stack_active();
#endif
}

static tjh_exec *exec_get(void) {
    if (tls_exec) return tls_exec;
    pthread_once(&once, init_once);
    tjh_exec *e = tjc_calloc(1, sizeof *e);
    if (!e) return NULL;
    e->threads = tjc_calloc(TJH_MAX_THREADS, sizeof *e->threads);
    e->ready = tjc_calloc(TJH_MAX_THREADS, sizeof *e->ready);
    if (!e->threads || !e->ready) {
        tjc_free(e->threads);
        tjc_free(e->ready);
        tjc_free(e);
        return NULL;
    }
    pthread_mutex_lock(&execs_lock);
    e->next_exec = execs;
    execs = e;
    pthread_mutex_unlock(&execs_lock);
    pthread_setspecific(exec_key, e);
    tls_exec = e;
    return e;
}

/* ---- blocks and launches ----------------------------------------------------- */

/* Every fiber that was not idle stopped inside the failed block: re-made before reuse. */
static void abandon_fibers(tjh_exec *e) {
    for (int i = 0; i < e->n_fibers; i++) {
        tjh_fiber *f = e->fibers[i];
        if (f->idle) continue;
        f->fresh = true;
        f->idle = true;
        f->asan_fake_stack = NULL;
        f->next_idle = e->idle;
        e->idle = f;
    }
}

static void run_block(tjh_exec *e) {
    tjh_block_reset(e);
    tjh_fiber *f = take_idle(e);
    if (!f) {
        snprintf(e->message, sizeof e->message, "out of memory for the fibers' stacks");
        e->failed = true;
        return;
    }
    switch_to(e, NULL, f, false);
    if (!e->failed && e->exited < e->n) tjh_describe_deadlock(e);
    if (e->failed) abandon_fibers(e);
}

typedef struct launch {
    const tjh_function *fn;
    tjcu_uint3 grid, block;
    size_t dynamic_shared;
    void **args;
    uint64_t n_blocks;
    atomic_uint_fast64_t next_block;
    atomic_int failed;
    pthread_mutex_t lock;
    char message[1024];
} launch;

static void launch_fail(launch *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void launch_fail(launch *L, const char *fmt, ...) {
    pthread_mutex_lock(&L->lock);
    if (!atomic_load(&L->failed)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(L->message, sizeof L->message, fmt, ap);
        va_end(ap);
        atomic_store(&L->failed, 1);
    }
    pthread_mutex_unlock(&L->lock);
}

/* One OS thread's share: blocks taken one at a time until none is left. */
static void run_blocks(launch *L) {
    const char *kernel = tjh_function_kernel(L->fn);
    tjh_exec *e = exec_get();
    if (!e) {
        launch_fail(L, "tjh_launch: kernel %s: out of memory for the runner's state", kernel);
        return;
    }
    if (L->dynamic_shared > e->dynamic_cap) {
        size_t cap = (L->dynamic_shared + 63) / 64 * 64;
        void *p = tjc_aligned_alloc(64, cap);
        if (!p) {
            launch_fail(L, "tjh_launch: kernel %s: out of memory for %zu bytes of dynamic shared memory",
                        kernel, L->dynamic_shared);
            return;
        }
        tjc_free(e->dynamic_shared);
        e->dynamic_shared = p;
        e->dynamic_cap = cap;
    }
    e->entry = tjh_function_entry(L->fn);
    e->args = L->args;
    e->kernel = kernel;
    e->block_dim = L->block;
    e->grid_dim = L->grid;
    uint64_t gx = L->grid.x, gy = L->grid.y;
    while (!atomic_load(&L->failed)) {
        uint64_t b = atomic_fetch_add(&L->next_block, 1);
        if (b >= L->n_blocks) break;
        e->block_idx.x = (unsigned)(b % gx);
        e->block_idx.y = (unsigned)(b / gx % gy);
        e->block_idx.z = (unsigned)(b / (gx * gy));
        run_block(e);
        if (e->failed) {
            launch_fail(L, "tjh_launch: kernel %s: block (%u, %u, %u): %s", kernel, e->block_idx.x,
                        e->block_idx.y, e->block_idx.z, e->message);
            break;
        }
    }
}

static tj_status check_config(const char *kernel, tjcu_dim3 grid, tjcu_dim3 block, size_t dyn) {
    if (!grid.x || !grid.y || !grid.z || !block.x || !block.y || !block.z)
        return tjc_error(TJ_ERR_ARG, "tjh_launch: kernel %s: grid (%u, %u, %u) or block (%u, %u, %u) "
                         "has a zero extent", kernel, grid.x, grid.y, grid.z, block.x, block.y, block.z);
    if (grid.x > 2147483647u || grid.y > 65535 || grid.z > 65535)
        return tjc_error(TJ_ERR_ARG, "tjh_launch: kernel %s: grid (%u, %u, %u) exceeds (2^31 - 1, "
                         "65535, 65535)", kernel, grid.x, grid.y, grid.z);
    if (block.x > 1024 || block.y > 1024 || block.z > 64 ||
        (uint64_t)block.x * block.y * block.z > TJH_MAX_THREADS)
        return tjc_error(TJ_ERR_ARG, "tjh_launch: kernel %s: block (%u, %u, %u) exceeds (1024, 1024, "
                         "64) or 1024 threads", kernel, block.x, block.y, block.z);
    if (dyn > TJH_MAX_DYNAMIC_SHARED)
        return tjc_error(TJ_ERR_ARG, "tjh_launch: kernel %s: %zu bytes of dynamic shared memory "
                         "exceed %u", kernel, dyn, TJH_MAX_DYNAMIC_SHARED);
    return TJ_OK;
}

tj_status tjh_launch(const tjh_function *f, tjcu_dim3 grid, tjcu_dim3 block, size_t dynamic_shared,
                     void **args) {
    if (!f) return tjc_error(TJ_ERR_ARG, "tjh_launch: no function");
    tj_status s = check_config(tjh_function_kernel(f), grid, block, dynamic_shared);
    if (s != TJ_OK) return s;
    launch L = {.fn = f,
                .grid = {grid.x, grid.y, grid.z},
                .block = {block.x, block.y, block.z},
                .dynamic_shared = dynamic_shared,
                .args = args,
                .n_blocks = (uint64_t)grid.x * grid.y * grid.z};
    atomic_init(&L.next_block, 0);
    atomic_init(&L.failed, 0);
    pthread_mutex_init(&L.lock, NULL);
    atomic_fetch_add(&launches, 1);
    int workers = omp_get_max_threads();
    if ((uint64_t)workers > L.n_blocks) workers = (int)L.n_blocks;
#pragma omp parallel num_threads(workers) if (workers > 1)
    run_blocks(&L);
    pthread_mutex_destroy(&L.lock);
    if (atomic_load(&L.failed)) return tjc_error(TJ_ERR_INTERNAL, "%s", L.message);
    return TJ_OK;
}

long tjh_launch_count(void) { return atomic_load(&launches); }
