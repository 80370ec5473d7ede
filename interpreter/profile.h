/* profile.h — recording replays for tj_program_profile (tjit/profile.h):
 * each instruction's wall time, bytes and flops, per instruction and as
 * events on the replaying thread's track. Prefix tji_.
 *
 * tji_execute (run.c) brackets a replay with tji_profile_begin/end and each
 * instruction with tji_now_ns and tji_profile_instr. A replay collects its
 * events in a buffer of its own and adds them to the code's profile under
 * its lock once, at the end, so replays on several threads do not contend
 * per instruction. profile_report.c turns a profile into the table and the
 * trace file.
 */
#ifndef TJIT_INTERPRETER_PROFILE_H
#define TJIT_INTERPRETER_PROFILE_H

#include <pthread.h>
#include <time.h>

#include "code.h"

/* One executed instruction, or a whole replay (instr TJI_REPLAY). */
enum { TJI_REPLAY = -1 };
typedef struct tji_event {
    int64_t start_ns, dur_ns; /* CLOCK_MONOTONIC */
    double bytes, flops;      /* < 0: not known */
    int instr;
    int thread;               /* a small number per replaying thread, from 1 */
    int64_t replay;           /* which replay of this code, from 0 */
} tji_event;

/* An instruction's sums over its calls. */
typedef struct tji_instr_stats {
    int64_t calls, ns;
    double bytes, flops; /* < 0: not known */
} tji_instr_stats;

struct tji_profile {
    atomic_bool on;
    const char *phase; /* "forward" or "backward" */
    const tji_code *code;
    pthread_mutex_t lock; /* guards everything below */
    tji_instr_stats *stats; /* one per instruction */
    int64_t replays, replay_ns;
    tji_event *events;
    int64_t n_events, cap_events;
    int64_t dropped; /* events beyond TJI_MAX_EVENTS, counted but not kept */
};

/* Events kept per code: a long profile keeps its first replays' events for
 * the trace (the table counts every replay). */
enum { TJI_MAX_EVENTS = 1 << 20 };

/* A replay being recorded, on the replaying thread's stack. */
typedef struct tji_profile_run {
    tji_profile *prof;
    int64_t start_ns;
    tji_event *events; /* one per instruction run so far */
    int n;
} tji_profile_run;

static inline int64_t tji_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Whether replays of code are being recorded now. */
static inline bool tji_profiling(const tji_code *code) {
    tji_profile *p = atomic_load_explicit((_Atomic(tji_profile *) *)&code->profile,
                                          memory_order_acquire);
    return p && atomic_load_explicit(&p->on, memory_order_relaxed);
}

bool tji_profile_begin_slow(tji_profile *p, tji_profile_run *run);
/* Whether this replay of code is recorded (then run is set up). */
static inline bool tji_profile_begin(const tji_code *code, tji_profile_run *run) {
    tji_profile *p = atomic_load_explicit((_Atomic(tji_profile *) *)&code->profile,
                                          memory_order_acquire);
    if (!p || !atomic_load_explicit(&p->on, memory_order_relaxed)) return false;
    return tji_profile_begin_slow(p, run);
}
/* Instruction k ran from started until now; R holds its inputs and outputs. */
void tji_profile_instr(tji_profile_run *run, int k, int64_t started, tj_tensor *const *R);
/* Adds the replay to the profile. */
void tji_profile_end(tji_profile_run *run);

/* Makes code's profile when on and there is none, and turns it on or off. */
tj_status tji_profile_enable(tji_code *code, const char *phase, bool on);
void tji_profile_clear(tji_profile *p);
void tji_profile_free(tji_profile *p);

/* The label of instruction I in tables and traces ("aten::linear", "fusion
 * %34: sigmoid x3, tanh x2, mul x3, add x2"), and the backend that ran it
 * ("cpu", "llvm", or "-" for constants). */
void tji_instr_label(const tji_instr *I, char *buf, size_t n);
const char *tji_instr_backend(const tji_instr *I);

#endif
