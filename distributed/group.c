/* group.c — the world process group (tj_dist_init/finalize and the queries)
 * and its communication thread, which starts, tests and times out every
 * collective (dist.h).
 *
 * Why a thread: MPI makes no progress on a non-blocking collective unless
 * some thread calls into it, and data-parallel training needs a bucket's
 * all-reduce to move while the main thread computes the backward pass. The
 * thread polls with short sleeps, so ranks sharing a few cores leave them to
 * the computation.
 *
 * A collective not complete within the timeout fails with TJ_ERR_COMM; the
 * group is then failed: the collectives in flight and queued fail with it,
 * later ones are refused, and finalize leaves without waiting for peers.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "distributed/dist.h"

#define TJD_DEFAULT_TIMEOUT_S 300.0
#define TJD_POLL_SLEEP_NS 30000L /* between tests of collectives in flight */

struct tj_dist_group {
    tjd_backend *backend;
    double timeout_s;
    bool check; /* TJIT_DIST_CHECK: ranks compare each collective's arguments first */
    pthread_t thread;
    bool stopping;
    bool failed;
    char failure[512];
    tj_dist_work *queue_head, *queue_tail; /* called, not started yet */
};

/* One world group per process. The lock and the condition variables outlive
 * it: a handle may be waited on after tj_dist_finalize. */
static tj_dist_group world;
static bool initialised;
static bool failed_before; /* a failed group left MPI in a state it cannot be restarted from */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_thread = PTHREAD_COND_INITIALIZER;
static pthread_cond_t work_done = PTHREAD_COND_INITIALIZER;

static const char *const coll_names[TJD_NUM_COLLS] = {
    "tj_dist_all_reduce", "tj_dist_broadcast", "tj_dist_all_gather", "tj_dist_reduce_scatter",
    "tj_dist_barrier"};

const char *tjd_coll_name(tjd_coll_kind k) {
    return (unsigned)k < TJD_NUM_COLLS ? coll_names[k] : "collective";
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the communication thread -------------------------------------------------- */

/* Copies what fits (messages are cut, never refused). */
static void copy_text(char *dst, size_t n, const char *src) {
    size_t len = strlen(src);
    if (len >= n) len = n - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

/* Marks w done (under the lock) and wakes its waiters. */
static void finish_locked(tj_dist_work *w, tj_status s, const char *message) {
    w->status = s;
    if (s != TJ_OK) copy_text(w->message, sizeof w->message, message);
    w->done = true;
    pthread_cond_broadcast(&work_done);
}

/* After a timeout: everything in flight or queued fails, naming the cause. */
static void fail_group_locked(tj_dist_group *g, tj_dist_work **active, const char *why) {
    g->failed = true;
    failed_before = true;
    copy_text(g->failure, sizeof g->failure, why);
    char msg[sizeof g->failure + 128];
    for (tj_dist_work *w = *active, *next; w; w = next) {
        next = w->next;
        if (w->req) g->backend->abandon(g->backend, w->req);
        w->req = NULL;
        snprintf(msg, sizeof msg, "%s: rank %d: abandoned, the group failed: %s",
                 tjd_coll_name(w->args.kind), g->backend->rank, why);
        finish_locked(w, TJ_ERR_COMM, msg);
    }
    *active = NULL;
    for (tj_dist_work *w = g->queue_head, *next; w; w = next) {
        next = w->next;
        snprintf(msg, sizeof msg, "%s: rank %d: not started, the group failed: %s",
                 tjd_coll_name(w->args.kind), g->backend->rank, why);
        finish_locked(w, TJ_ERR_COMM, msg);
    }
    g->queue_head = g->queue_tail = NULL;
}

/* ---- TJIT_DIST_CHECK: the ranks compare their arguments --------------------------------- */

enum { CHECK_FIELDS = 5 };
static const char *const check_field_names[CHECK_FIELDS] = {"collective", "dtype", "element count",
                                                             "root", "reduce op"};
/* the comparison's buffer: MPI may still write into it after a timeout */
static int64_t check_buf[2 * CHECK_FIELDS];

static int64_t check_field(const tj_dist_work *w, int f) {
    switch (f) {
    case 0: return w->args.kind;
    case 1: return w->args.dtype;
    case 2: return w->args.count;
    case 3: return w->args.kind == TJD_BROADCAST ? w->args.root : 0;
    default: return w->args.kind == TJD_ALL_REDUCE || w->args.kind == TJD_REDUCE_SCATTER
                        ? (int64_t)w->args.op + (w->avg_divisor > 0 ? 10 : 0) : 0;
    }
}

static void describe(char *out, size_t n, int f, int64_t v) {
    static const char *const ops[] = {"sum", "avg", "max", "min"};
    if (f == 0) snprintf(out, n, "%s", tjd_coll_name((tjd_coll_kind)v));
    else if (f == 1) snprintf(out, n, "%s", v >= 0 && v < TJ_NUM_DTYPES ? tj_dtype_name((tj_dtype)v) : "?");
    else if (f == 4) snprintf(out, n, "%s", ops[v >= 10 ? TJ_REDUCE_AVG : v & 3]);
    else snprintf(out, n, "%lld", (long long)v);
}

/* One small all-reduce (the maximum of each field and of its negation): every
 * rank learns the same minimum and maximum, so all of them refuse a
 * collective they disagree on (refused_alike), and stay in step. Any other
 * failure is the comparison's own (a timeout, an MPI error). */
static tj_status check_agreement(tj_dist_group *g, const tj_dist_work *w, char *msg, size_t n,
                                 bool *refused_alike) {
    tjd_backend *b = g->backend;
    const char *coll = tjd_coll_name(w->args.kind);
    *refused_alike = false;
    for (int f = 0; f < CHECK_FIELDS; f++) {
        check_buf[2 * f] = check_field(w, f);
        check_buf[2 * f + 1] = -check_field(w, f);
    }
    tjd_coll_args a = {.kind = TJD_ALL_REDUCE, .dtype = TJ_I64, .op = TJ_REDUCE_MAX,
                       .recv = check_buf, .count = 2 * CHECK_FIELDS};
    char err[384] = "";
    void *req = NULL;
    bool done = false;
    tj_status s = b->start(b, &a, &req, err, sizeof err);
    double deadline = now_s() + g->timeout_s;
    while (s == TJ_OK && !done) {
        s = b->test(b, req, &done, err, sizeof err);
        if (s == TJ_OK && !done) {
            if (now_s() > deadline) {
                b->abandon(b, req);
                snprintf(msg, n, "%s: rank %d: the ranks' comparison of its arguments "
                         "(TJIT_DIST_CHECK) not complete after %g s (the timeout: a peer left or "
                         "never called it); only tj_dist_finalize works now", coll, b->rank,
                         g->timeout_s);
                return TJ_ERR_COMM;
            }
            nanosleep(&(struct timespec){0, TJD_POLL_SLEEP_NS}, NULL);
        }
    }
    if (s != TJ_OK) {
        snprintf(msg, n, "%s: rank %d: comparing the ranks' arguments: %s", coll, b->rank, err);
        return s;
    }
    for (int f = 0; f < CHECK_FIELDS; f++) {
        int64_t hi = check_buf[2 * f], lo = -check_buf[2 * f + 1];
        if (hi == lo) continue;
        char los[48], his[48], mine[48];
        describe(los, sizeof los, f, lo);
        describe(his, sizeof his, f, hi);
        describe(mine, sizeof mine, f, check_field(w, f));
        snprintf(msg, n, "%s: rank %d: the ranks disagree on the %s (from %s to %s; this rank: "
                 "%s); nothing was sent (TJIT_DIST_CHECK)", coll, b->rank, check_field_names[f],
                 los, his, mine);
        *refused_alike = true;
        return TJ_ERR_COMM;
    }
    return TJ_OK;
}

/* ---- the thread itself ------------------------------------------------------------- */

static void *comm_thread(void *arg) {
    tj_dist_group *g = arg;
    tjd_backend *b = g->backend;
    tj_dist_work *active = NULL, **active_tail = &active; /* started, in start order */
    char err[384], msg[512];
    pthread_mutex_lock(&lock);
    for (;;) {
        if (!g->queue_head && !active) {
            if (g->stopping) break;
            pthread_cond_wait(&wake_thread, &lock);
            continue;
        }
        /* start what was queued, in order; with the comparison on, one at a
         * time (a comparison never runs beside a collective in flight) */
        while (g->queue_head && !g->failed && !(g->check && active)) {
            tj_dist_work *w = g->queue_head;
            g->queue_head = w->next;
            if (!g->queue_head) g->queue_tail = NULL;
            w->next = NULL;
            pthread_mutex_unlock(&lock);
            bool refused_alike = false;
            tj_status s = g->check ? check_agreement(g, w, msg, sizeof msg, &refused_alike) : TJ_OK;
            if (s == TJ_OK) {
                err[0] = '\0';
                s = b->start(b, &w->args, &w->req, err, sizeof err);
                if (s != TJ_OK)
                    snprintf(msg, sizeof msg, "%s: rank %d: %s", tjd_coll_name(w->args.kind), b->rank, err);
            }
            w->deadline = now_s() + g->timeout_s;
            pthread_mutex_lock(&lock);
            if (s != TJ_OK) {
                finish_locked(w, s, msg);
                /* a collective this rank could not start (or compare) leaves
                 * the others waiting for it: the group fails; a disagreement
                 * found by the comparison is refused by every rank alike */
                if (!refused_alike) {
                    fail_group_locked(g, &active, msg);
                    active_tail = &active;
                }
            } else {
                *active_tail = w;
                active_tail = &w->next;
            }
        }
        pthread_mutex_unlock(&lock);
        /* test what is in flight */
        bool progressed = false;
        for (tj_dist_work **p = &active; *p;) {
            tj_dist_work *w = *p;
            bool done = false;
            err[0] = '\0';
            tj_status s = b->test(b, w->req, &done, err, sizeof err);
            if (!done && s == TJ_OK) {
                p = &w->next;
                continue;
            }
            w->req = NULL;
            *p = w->next;
            progressed = true;
            if (s == TJ_OK) {
                tjd_work_complete(w);
                pthread_mutex_lock(&lock);
                finish_locked(w, TJ_OK, "");
                pthread_mutex_unlock(&lock);
                continue;
            }
            /* the ranks are out of step now: the group fails as after a timeout */
            snprintf(msg, sizeof msg, "%s: rank %d: %s (ranks that pass different sizes or dtypes "
                     "fail so; TJIT_DIST_CHECK=1 compares them first)", tjd_coll_name(w->args.kind),
                     b->rank, err);
            pthread_mutex_lock(&lock);
            finish_locked(w, s, msg);
            fail_group_locked(g, &active, msg);
            pthread_mutex_unlock(&lock);
            break;
        }
        active_tail = &active;
        while (*active_tail) active_tail = &(*active_tail)->next;
        pthread_mutex_lock(&lock);
        /* the oldest collective in flight is the one that waits longest */
        if (active && now_s() > active->deadline) {
            snprintf(msg, sizeof msg,
                     "%s: rank %d: not complete after %g s (the timeout: a peer left, never "
                     "called it, or called another collective); only tj_dist_finalize works now",
                     tjd_coll_name(active->args.kind), b->rank, g->timeout_s);
            /* the timed-out one carries this message itself */
            tj_dist_work *late = active;
            active = late->next;
            b->abandon(b, late->req);
            late->req = NULL;
            finish_locked(late, TJ_ERR_COMM, msg);
            fail_group_locked(g, &active, msg);
            active_tail = &active;
            continue;
        }
        if (active && !progressed && (!g->queue_head || g->check)) {
            pthread_mutex_unlock(&lock);
            nanosleep(&(struct timespec){0, TJD_POLL_SLEEP_NS}, NULL);
            pthread_mutex_lock(&lock);
        }
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* ---- the group ------------------------------------------------------------------- */

static double timeout_from(const tj_dist_options *opts, tj_status *st) {
    *st = TJ_OK;
    if (opts && opts->timeout_s != 0) {
        if (!(opts->timeout_s > 0) || opts->timeout_s > 1e9)
            *st = tjc_error(TJ_ERR_ARG, "tj_dist_init: timeout_s %g is not a positive number of "
                            "seconds (0 takes TJIT_DIST_TIMEOUT, else %g)", opts->timeout_s,
                            TJD_DEFAULT_TIMEOUT_S);
        return opts->timeout_s;
    }
    const char *env = getenv("TJIT_DIST_TIMEOUT");
    if (!env || !env[0]) return TJD_DEFAULT_TIMEOUT_S;
    char *end;
    errno = 0;
    double v = strtod(env, &end);
    if (errno || *end || !(v > 0) || v > 1e9)
        *st = tjc_error(TJ_ERR_ARG, "tj_dist_init: TJIT_DIST_TIMEOUT=\"%s\" is not a positive "
                        "number of seconds", env);
    return v;
}

tj_status tj_dist_init(const char *backend, const tj_dist_options *opts) {
    if (!backend)
        return tjc_error(TJ_ERR_ARG, "tj_dist_init: backend is NULL (known backends: \"mpi\", \"nccl\")");
    if (initialised)
        return tjc_error(TJ_ERR_ARG, "tj_dist_init: this process is in a %s group already (one "
                         "world group per process; tj_dist_finalize leaves it)", world.backend->name);
    tj_status st;
    double timeout = timeout_from(opts, &st);
    if (st != TJ_OK) return st;
    if (failed_before)
        return tjc_error(TJ_ERR_COMM, "tj_dist_init: an earlier group of this process failed, and "
                         "MPI cannot be restarted after that");
    tjd_backend *b = NULL;
    if (!strcmp(backend, "mpi")) {
        st = tjd_mpi_open(&b);
    } else if (!strcmp(backend, "nccl")) {
        st = tjc_error(TJ_ERR_UNSUPPORTED, "tj_dist_init(\"nccl\"): this tjit has no NCCL backend "
                       "(CUDA tensors); use \"mpi\" with CPU tensors");
    } else {
        st = tjc_error(TJ_ERR_ARG, "tj_dist_init: unknown backend \"%s\" (known backends: \"mpi\", "
                       "\"nccl\")", backend);
    }
    if (st != TJ_OK) return st;
    memset(&world, 0, sizeof world);
    world.backend = b;
    world.timeout_s = timeout;
    const char *check = getenv("TJIT_DIST_CHECK");
    world.check = check && check[0] && strcmp(check, "0") != 0;
    int rc = pthread_create(&world.thread, NULL, comm_thread, &world);
    if (rc) {
        b->finalize(b, false);
        return tjc_error(TJ_ERR_MEMORY, "tj_dist_init: cannot start the communication thread: %s",
                         strerror(rc));
    }
    initialised = true;
    return TJ_OK;
}

tj_status tj_dist_finalize(void) {
    if (!initialised)
        return tjc_error(TJ_ERR_ARG, "tj_dist_finalize: there is no process group (tj_dist_init was "
                         "not called, or the group was finalised)");
    /* the thread drains the queue first: each collective completes or times out */
    pthread_mutex_lock(&lock);
    world.stopping = true;
    pthread_cond_signal(&wake_thread);
    pthread_mutex_unlock(&lock);
    pthread_join(world.thread, NULL);
    initialised = false;
    tjd_backend *b = world.backend;
    world.backend = NULL;
    return b->finalize(b, world.failed);
}

bool tj_dist_is_initialized(void) { return initialised; }
tj_dist_group *tj_dist_world(void) { return initialised ? &world : NULL; }
int tj_dist_rank(void) { return initialised ? world.backend->rank : 0; }
int tj_dist_world_size(void) { return initialised ? world.backend->world_size : 1; }
const char *tj_dist_backend(void) { return initialised ? world.backend->name : NULL; }

/* ---- what collectives.c uses ----------------------------------------------------- */

tj_status tjd_group_resolve(tj_dist_group *group, const char *coll, tjd_backend **backend) {
    if (!initialised)
        return tjc_error(TJ_ERR_ARG, "%s: no process group: call tj_dist_init first", coll);
    if (group && group != &world)
        return tjc_error(TJ_ERR_ARG, "%s: group is not a live process group (only "
                         "tj_dist_world() is)", coll);
    pthread_mutex_lock(&lock);
    bool failed = world.failed;
    pthread_mutex_unlock(&lock);
    if (failed)
        return tjc_error(TJ_ERR_COMM, "%s: refused: the group failed earlier (%s)", coll, world.failure);
    *backend = world.backend;
    return TJ_OK;
}

tj_status tjd_group_submit(tj_dist_group *group, tj_dist_work *w) {
    (void)group; /* the world: tjd_group_resolve checked it */
    pthread_mutex_lock(&lock);
    if (world.failed) {
        pthread_mutex_unlock(&lock);
        return tjc_error(TJ_ERR_COMM, "%s: refused: the group failed earlier (%s)",
                         tjd_coll_name(w->args.kind), world.failure);
    }
    w->next = NULL;
    if (world.queue_tail) world.queue_tail->next = w;
    else world.queue_head = w;
    world.queue_tail = w;
    pthread_cond_signal(&wake_thread);
    pthread_mutex_unlock(&lock);
    return TJ_OK;
}

tj_status tjd_work_finish(tj_dist_work *w) {
    pthread_mutex_lock(&lock);
    while (!w->done) pthread_cond_wait(&work_done, &lock);
    pthread_mutex_unlock(&lock);
    if (w->status != TJ_OK) return tjc_error(w->status, "%s", w->message);
    return TJ_OK;
}

bool tjd_work_is_done(tj_dist_work *w) {
    pthread_mutex_lock(&lock);
    bool done = w->done;
    pthread_mutex_unlock(&lock);
    return done;
}
