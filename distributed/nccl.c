/* nccl.c — the NCCL backend: collectives on CUDA tensors, NCCL loaded with
 * dlopen (TJIT_NCCL_LIBRARY, else libnccl.so.2 by name, else the CUDA
 * toolkit's library directory tjit was configured with); neither NCCL nor
 * libcuda is linked. Built with the CUDA backend (TJIT_HAVE_CUDA).
 *
 * Joining: the ranks share rank 0's ncclUniqueId over MPI when the process
 * runs under mpirun (the MPI plugin, mpi.c), else through rank 0 at
 * MASTER_ADDR:MASTER_PORT with RANK and WORLD_SIZE (torchrun's variables,
 * rendezvous.c), else the process is a world of one. Each rank uses
 * cuda:LOCAL_RANK (OMPI_COMM_WORLD_LOCAL_RANK under mpirun), else
 * cuda:(rank % devices). The communicator is non-blocking (NCCL >= 2.14), so
 * its creation and every enqueue is polled and bounded by the group's
 * timeout instead of blocking inside NCCL.
 *
 * Streams: a collective must run after the kernels that produced its tensors,
 * which the calling thread queued on its own stream (tjcu_stream), while
 * group.c starts collectives on its communication thread. So the caller's
 * thread records an event on its stream when it calls the collective
 * (prepare); the group's thread makes the backend's own NCCL stream wait for
 * that event, enqueues the collective there and records a completion event,
 * which it then polls (test) beside ncclCommGetAsyncError. Nothing blocks the
 * caller's stream or the host while NCCL runs, collectives start in the same
 * order on every rank (the group thread's queue), and one thread alone calls
 * NCCL on the communicator. A caller learns of completion from the host (the
 * handle), so its later kernels, queued after tj_dist_wait returns, follow
 * the collective.
 *
 * Failures: a collective still running at the timeout, or an error NCCL
 * reports, aborts the communicator (ncclCommAbort), and group.c fails it
 * with TJ_ERR_COMM naming the collective; finalize otherwise flushes and
 * destroys it.
 *
 * The host harness (TJIT_CUDA_DRIVER=host) is refused unless the library
 * loaded exports tjit_nccl_on_host_memory: the tests' stand-in for NCCL
 * (tests/dist/nccl_double.c), which runs this file's logic without a GPU.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"
#include "distributed/backend.h"

#define WHO "tj_dist_init(\"nccl\")"

#ifdef TJIT_HAVE_CUDA
#include "backends/cuda/internal.h"
#include "distributed/rendezvous.h"

/* ---- NCCL's ABI (nccl.h; checked against NCCL 2.28.9's header) -------------------- */

typedef struct ncclComm *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef int nccl_result; /* ncclResult_t, ncclDataType_t, ncclRedOp_t are int-sized enums */
enum { ncclSuccess = 0, ncclInProgress = 7 };
enum { ncclUint8 = 1, ncclInt64 = 4, ncclFloat32 = 7, ncclFloat64 = 8 };
enum { ncclSum = 0, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };
/* ncclConfig_t as NCCL 2.14 laid it out: later versions read a config by its
 * size and version, so the oldest layout with `blocking` serves them all */
typedef struct nccl_config {
    size_t size;
    unsigned int magic, version;
    int blocking, cga_cluster_size, min_ctas, max_ctas;
    const char *net_name;
    int split_share;
} nccl_config;
#define NCCL_CONFIG_MAGIC 0xcafebeefu
#define NCCL_CONFIG_UNDEF (-2147483647 - 1)
#define NCCL_MIN_VERSION 21400 /* non-blocking communicators */

#define NCCL_FUNCTIONS(X)                                                                         \
    X(ncclGetVersion, nccl_result, (int *))                                                       \
    X(ncclGetUniqueId, nccl_result, (ncclUniqueId *))                                             \
    X(ncclCommInitRankConfig, nccl_result, (ncclComm_t *, int, ncclUniqueId, int, nccl_config *)) \
    X(ncclCommGetAsyncError, nccl_result, (ncclComm_t, nccl_result *))                            \
    X(ncclCommFinalize, nccl_result, (ncclComm_t))                                                \
    X(ncclCommDestroy, nccl_result, (ncclComm_t))                                                 \
    X(ncclCommAbort, nccl_result, (ncclComm_t))                                                   \
    X(ncclGetErrorString, const char *, (nccl_result))                                            \
    X(ncclGetLastError, const char *, (ncclComm_t))                                               \
    X(ncclAllReduce, nccl_result, (const void *, void *, size_t, int, int, ncclComm_t, void *))   \
    X(ncclBroadcast, nccl_result, (const void *, void *, size_t, int, int, ncclComm_t, void *))   \
    X(ncclAllGather, nccl_result, (const void *, void *, size_t, int, ncclComm_t, void *))        \
    X(ncclReduceScatter, nccl_result, (const void *, void *, size_t, int, int, ncclComm_t, void *))

static struct {
    pthread_once_t once;
    bool loaded;
    bool on_host_memory; /* a stand-in for tests that runs on the host harness */
    int version;
    char path[1024];
    char why[3072];
#define DECLARE(name, ret, params) ret(*name) params;
    NCCL_FUNCTIONS(DECLARE)
#undef DECLARE
} L = {.once = PTHREAD_ONCE_INIT};

static void *try_open(const char *path, char *tried, size_t n) {
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    size_t used = strlen(tried);
    snprintf(tried + used, n - used, "%s%s%s%s", used ? "; " : "", path, dl ? "" : ": ",
             dl ? "" : dlerror());
    if (dl) snprintf(L.path, sizeof L.path, "%s", path);
    return dl;
}

static void load_library(void) {
    char tried[2048] = "";
    const char *env = getenv("TJIT_NCCL_LIBRARY");
    void *dl;
    if (env && env[0]) {
        dl = try_open(env, tried, sizeof tried); /* an explicit choice is the only one tried */
    } else {
        dl = try_open("libnccl.so.2", tried, sizeof tried);
#ifdef TJIT_NCCL_DIR
        if (!dl) dl = try_open(TJIT_NCCL_DIR "/libnccl.so.2", tried, sizeof tried);
#endif
    }
    if (!dl) {
        snprintf(L.why, sizeof L.why, "cannot load NCCL (tried %s); it ships with the CUDA toolkit "
                 "(lib/libnccl.so.2) or as libnccl2; set TJIT_NCCL_LIBRARY to its path", tried);
        return;
    }
#define RESOLVE(name, ret, params)                                                               \
    if (!(L.name = (ret(*) params)dlsym(dl, #name))) {                                           \
        snprintf(L.why, sizeof L.why, "%s lacks %s (NCCL 2.14 or later is needed)", L.path, #name); \
        return;                                                                                  \
    }
    NCCL_FUNCTIONS(RESOLVE)
#undef RESOLVE
    if (L.ncclGetVersion(&L.version) != ncclSuccess || L.version < NCCL_MIN_VERSION) {
        snprintf(L.why, sizeof L.why, "%s is NCCL version %d; tjit needs 2.14 or later (%d)", L.path,
                 L.version, NCCL_MIN_VERSION);
        return;
    }
    L.on_host_memory = dlsym(dl, "tjit_nccl_on_host_memory") != NULL;
    L.loaded = true; /* kept loaded for the process's life: NCCL's threads live in it */
}

tj_status tjd_nccl_load(int *version, char *path, size_t pathlen) {
    pthread_once(&L.once, load_library);
    if (!L.loaded) return tjc_error(TJ_ERR_UNSUPPORTED, WHO ": %s", L.why);
    if (version) *version = L.version;
    if (path && pathlen) snprintf(path, pathlen, "%s", L.path);
    return TJ_OK;
}

/* ---- the backend's state ----------------------------------------------------------- */

typedef struct nccl_state {
    const tjcu_driver *drv;
    ncclComm_t comm;
    int device;      /* the index of this rank's GPU */
    void *stream;    /* the collectives' own stream */
    void *scratch;   /* device bytes for barriers and host-buffer collectives */
    double timeout_s;
    bool aborted;
    bool via_mpi;    /* the id came over MPI, which stays joined until finalize */
} nccl_state;

enum { SCRATCH_BYTES = 4096 };

/* A point in the caller's stream (prepare) and a started collective (start). */
typedef struct nccl_ready {
    const tjcu_driver *drv;
    int device;
    void *event;
} nccl_ready;

typedef struct nccl_req {
    void *done;      /* recorded on the NCCL stream after the collective */
    void *host_dst;  /* a host-buffer collective: where the result goes when done */
    size_t host_bytes;
} nccl_req;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* NCCL's words for r, with its last message when it has one. */
static void nccl_message(char *err, size_t n, const char *call, nccl_result r, ncclComm_t comm) {
    const char *last = L.ncclGetLastError(comm);
    snprintf(err, n, "%s: %s%s%s", call, L.ncclGetErrorString(r), last && last[0] ? ": " : "",
             last && last[0] ? last : "");
}

/* Polls a non-blocking communicator until its last call is done (ncclSuccess),
 * fails, or the deadline passes (ncclInProgress returned). */
static nccl_result settle(ncclComm_t comm, double deadline) {
    nccl_result r = ncclInProgress;
    while (L.ncclCommGetAsyncError(comm, &r) == ncclSuccess && r == ncclInProgress && now_s() < deadline)
        nanosleep(&(struct timespec){0, 20000L}, NULL);
    return r;
}

static void abort_comm(nccl_state *s) {
    if (s->aborted) return;
    s->aborted = true;
    s->drv->make_current(s->device);
    L.ncclCommAbort(s->comm);
}

/* ---- the collectives --------------------------------------------------------------- */

static int nccl_dtype(tj_dtype d) {
    switch (d) {
    case TJ_F32: return ncclFloat32;
    case TJ_F64: return ncclFloat64;
    case TJ_I64: return ncclInt64;
    default: return ncclUint8; /* bool: bytes 0 or 1 */
    }
}

/* bool reduces as logic: SUM and MAX are or, MIN is and (as over MPI) */
static int nccl_op(tj_dtype d, tj_reduce_op op) {
    if (op == TJ_REDUCE_MIN) return ncclMin;
    if (op == TJ_REDUCE_MAX || d == TJ_BOOL) return ncclMax;
    return op == TJ_REDUCE_AVG ? ncclAvg : ncclSum;
}

static void free_req(nccl_state *s, nccl_req *r) {
    if (r->done) s->drv->event_free(s->device, r->done);
    free(r);
}

/* Enqueues a's collective on the NCCL stream (buffers on the device). */
static nccl_result enqueue(nccl_state *s, const tjd_coll_args *a, const void *send, void *recv,
                           const char **call) {
    size_t count = (size_t)a->count;
    int dt = nccl_dtype(a->dtype);
    switch (a->kind) {
    case TJD_ALL_REDUCE:
        *call = "ncclAllReduce";
        return L.ncclAllReduce(recv, recv, count, dt, nccl_op(a->dtype, a->op), s->comm, s->stream);
    case TJD_BROADCAST:
        *call = "ncclBroadcast";
        return L.ncclBroadcast(recv, recv, count, dt, a->root, s->comm, s->stream);
    case TJD_ALL_GATHER:
        *call = "ncclAllGather";
        return L.ncclAllGather(send, recv, count, dt, s->comm, s->stream);
    case TJD_REDUCE_SCATTER:
        *call = "ncclReduceScatter";
        return L.ncclReduceScatter(send, recv, count, dt, nccl_op(a->dtype, a->op), s->comm, s->stream);
    default: /* a barrier: every rank's byte reduced, so none finishes before all started */
        *call = "ncclAllReduce (barrier)";
        return L.ncclAllReduce(s->scratch, s->scratch, 1, ncclUint8, ncclMax, s->comm, s->stream);
    }
}

static tj_status nccl_start(tjd_backend *b, const tjd_coll_args *a, void **out, char *err, size_t errlen) {
    nccl_state *s = b->impl;
    const tjcu_driver *drv = s->drv;
    size_t bytes = (size_t)a->count * tj_dtype_size(a->dtype);
    if (a->host_buffers && (a->kind != TJD_ALL_REDUCE || bytes > SCRATCH_BYTES)) {
        snprintf(err, errlen, "the nccl backend takes host buffers only for small all-reduces");
        return TJ_ERR_ARG;
    }
    nccl_req *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return TJ_ERR_MEMORY;
    }
    tj_status st = drv->make_current(s->device);
    if (!st && a->ready) st = drv->stream_wait_event(s->device, s->stream, ((nccl_ready *)a->ready)->event);
    if (!st) st = drv->event_new(s->device, &r->done);
    void *recv = a->recv;
    if (!st && a->host_buffers) {
        recv = s->scratch;
        r->host_dst = a->recv;
        r->host_bytes = bytes;
        st = drv->copy(s->device, s->scratch, a->recv, bytes, TJCU_H2D, s->stream);
    }
    if (st) {
        snprintf(err, errlen, "%s", tj_last_error());
        free_req(s, r);
        return TJ_ERR_COMM;
    }
    /* nothing to move: every rank skips NCCL alike (counts agree across ranks) */
    if (a->count > 0 || a->kind == TJD_BARRIER) {
        const char *call = "";
        nccl_result nr = enqueue(s, a, a->send, recv, &call);
        if (nr == ncclInProgress) nr = settle(s->comm, now_s() + s->timeout_s);
        if (nr != ncclSuccess) {
            if (nr == ncclInProgress)
                snprintf(err, errlen, "%s was not enqueued within %g s (the timeout: a peer left or "
                         "never called it)", call, s->timeout_s);
            else
                nccl_message(err, errlen, call, nr, s->comm);
            free_req(s, r);
            abort_comm(s);
            return TJ_ERR_COMM;
        }
    }
    if ((st = drv->event_record(s->device, r->done, s->stream))) {
        snprintf(err, errlen, "%s", tj_last_error());
        free_req(s, r);
        return TJ_ERR_COMM;
    }
    *out = r;
    return TJ_OK;
}

static tj_status nccl_test(tjd_backend *b, void *req, bool *done, char *err, size_t errlen) {
    nccl_state *s = b->impl;
    nccl_req *r = req;
    *done = false;
    nccl_result async = ncclSuccess;
    L.ncclCommGetAsyncError(s->comm, &async);
    tj_status st = TJ_OK;
    if (async != ncclSuccess && async != ncclInProgress) {
        nccl_message(err, errlen, "NCCL reports", async, s->comm);
        st = TJ_ERR_COMM;
    } else if ((st = s->drv->make_current(s->device)) == TJ_OK &&
               (st = s->drv->event_query(s->device, r->done, done)) == TJ_OK && *done && r->host_dst) {
        st = s->drv->copy(s->device, r->host_dst, s->scratch, r->host_bytes, TJCU_D2H, s->stream);
    }
    if (st && st != TJ_ERR_COMM) snprintf(err, errlen, "%s", tj_last_error());
    if (st) {
        *done = true;
        abort_comm(s); /* the ranks are out of step: nothing more can pass */
        st = TJ_ERR_COMM;
    }
    if (*done) free_req(s, r);
    return st;
}

/* After a timeout: aborting the communicator ends NCCL's kernels still
 * waiting for the peer, which would otherwise keep the GPU busy. */
static void nccl_abandon(tjd_backend *b, void *req) {
    nccl_state *s = b->impl;
    abort_comm(s);
    free_req(s, req);
}

static void free_state(nccl_state *s) {
    if (s->stream) {
        s->drv->stream_sync(s->device, s->stream);
        s->drv->stream_free(s->device, s->stream);
    }
    if (s->scratch) s->drv->mem_free(NULL, s->device, s->scratch);
    free(s);
}

static tj_status nccl_finalize(tjd_backend *b, bool failed) {
    nccl_state *s = b->impl;
    char err[512] = "";
    s->drv->make_current(s->device);
    if (failed) {
        abort_comm(s);
    } else if (!s->aborted) {
        /* flushes what was issued; a peer that left makes it time out */
        nccl_result r = L.ncclCommFinalize(s->comm);
        if (r == ncclInProgress) r = settle(s->comm, now_s() + s->timeout_s);
        if (r != ncclSuccess) {
            if (r == ncclInProgress) snprintf(err, sizeof err, "ncclCommFinalize: not complete "
                                              "within %g s (the timeout)", s->timeout_s);
            else nccl_message(err, sizeof err, "ncclCommFinalize", r, s->comm);
            abort_comm(s);
        } else {
            L.ncclCommDestroy(s->comm);
        }
    }
    bool via_mpi = s->via_mpi;
    free_state(s);
    free(b);
    if (via_mpi) tjd_mpi_leave(failed || err[0]);
    if (err[0]) return tjc_error(TJ_ERR_COMM, "tj_dist_finalize: %s", err);
    return TJ_OK;
}

/* ---- the caller's side -------------------------------------------------------------- */

static tj_status nccl_check_tensor(tjd_backend *b, const char *coll, const char *arg, const tj_tensor *t) {
    nccl_state *s = b->impl;
    tj_device dev = tj_tensor_device(t);
    if (dev.index != s->device)
        return tjc_error(TJ_ERR_DEVICE, "%s: %s is on cuda:%d; this rank's NCCL communicator is on "
                         "cuda:%d (LOCAL_RANK, else the rank modulo the device count, picks it)",
                         coll, arg, dev.index, s->device);
    if (!tj_is_contiguous(t))
        return tjc_error(TJ_ERR_ARG, "%s: %s is not contiguous; the nccl backend takes contiguous "
                         "CUDA tensors (tj_contiguous makes one)", coll, arg);
    return TJ_OK;
}

static void ready_free(void *p) {
    nccl_ready *r = p;
    if (r->event) r->drv->event_free(r->device, r->event);
    free(r);
}

/* Marks where the caller's stream is now: the collective waits for it. */
static tj_status nccl_prepare(tjd_backend *b, tjd_coll_args *a) {
    nccl_state *s = b->impl;
    const char *coll = tjd_coll_name(a->kind);
    void *stream = tjcu_stream((tj_device){TJ_CUDA, s->device});
    if (!stream) return tjc_error(tj_last_status(), "%s: this thread's CUDA stream: %s", coll,
                                  tj_last_error());
    nccl_ready *r = calloc(1, sizeof *r);
    if (!r) return tjc_error(TJ_ERR_MEMORY, "%s: out of memory", coll);
    r->drv = s->drv;
    r->device = s->device;
    tj_status st = s->drv->event_new(s->device, &r->event);
    if (!st) st = s->drv->event_record(s->device, r->event, stream);
    if (st) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tj_last_error());
        ready_free(r);
        return tjc_error(st, "%s: ordering it after this thread's stream: %s", coll, msg);
    }
    a->ready = r;
    a->ready_free = ready_free;
    return TJ_OK;
}

/* ---- joining --------------------------------------------------------------------------- */

static bool under_mpirun(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (getenv(vars[i])) return true;
    return false;
}

/* This rank's place and the shared id: over MPI, the TCP rendezvous, or
 * alone; *local_rank is -1 when nothing names it. */
static tj_status share_id(ncclUniqueId *id, int *rank, int *world, int *local_rank, bool *via_mpi,
                          double timeout_s) {
    *via_mpi = false;
    *local_rank = -1;
    nccl_result r;
    if (under_mpirun()) {
        tj_status st = tjd_mpi_join(rank, world);
        if (st) return st;
        *via_mpi = true;
        if (*rank == 0 && (r = L.ncclGetUniqueId(id)) != ncclSuccess)
            st = tjc_error(TJ_ERR_COMM, WHO ": ncclGetUniqueId: %s", L.ncclGetErrorString(r));
        /* rank 0 still takes part in the broadcast, so the others do not wait for nothing */
        tj_status shared = tjd_mpi_share(id, sizeof *id, timeout_s);
        if (!st) st = shared;
        const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
        if (lr && lr[0]) *local_rank = atoi(lr);
        if (st) tjd_mpi_leave(true);
        return st;
    }
    tjd_launch_env env;
    bool found;
    tj_status st = tjd_launch_env_read(&env, &found);
    if (st) return st;
    *rank = found ? env.rank : 0;
    *world = found ? env.world_size : 1;
    *local_rank = found ? env.local_rank : -1;
    if (*rank == 0 && (r = L.ncclGetUniqueId(id)) != ncclSuccess)
        return tjc_error(TJ_ERR_COMM, WHO ": ncclGetUniqueId: %s", L.ncclGetErrorString(r));
    if (*world == 1) return TJ_OK;
    return tjd_rendezvous_share(env.addr, env.port, *rank, *world, id, sizeof *id, timeout_s);
}

static tj_status pick_device(int rank, int local_rank, int *device) {
    int n = tj_device_count(TJ_CUDA);
    const char *lr = getenv("LOCAL_RANK");
    if (lr && lr[0]) {
        char *end;
        long v = strtol(lr, &end, 10);
        if (*end || v < 0 || v >= n)
            return tjc_error(TJ_ERR_DEVICE, WHO ": LOCAL_RANK=\"%s\" names no CUDA device of this "
                             "machine (%d found)", lr, n);
        *device = (int)v;
    } else if (local_rank >= 0) {
        if (local_rank >= n)
            return tjc_error(TJ_ERR_DEVICE, WHO ": this process is rank %d on its machine, which "
                             "has %d CUDA devices (one rank per GPU)", local_rank, n);
        *device = local_rank;
    } else {
        *device = rank % n;
    }
    return TJ_OK;
}

/* Creates the communicator, waiting at most the timeout for the others. */
static tj_status init_comm(nccl_state *s, ncclUniqueId id, int rank, int world) {
    nccl_config config = {.size = sizeof config, .magic = NCCL_CONFIG_MAGIC, .version = 21403,
                          .blocking = 0, .cga_cluster_size = NCCL_CONFIG_UNDEF,
                          .min_ctas = NCCL_CONFIG_UNDEF, .max_ctas = NCCL_CONFIG_UNDEF,
                          .net_name = NULL, .split_share = NCCL_CONFIG_UNDEF};
    nccl_result r = L.ncclCommInitRankConfig(&s->comm, world, id, rank, &config);
    if (r == ncclInProgress) r = settle(s->comm, now_s() + s->timeout_s);
    if (r == ncclSuccess) return TJ_OK;
    char err[512];
    if (r == ncclInProgress)
        snprintf(err, sizeof err, "the NCCL communicator of %d ranks was not complete after %g s (the "
                 "timeout: a rank never joined)", world, s->timeout_s);
    else
        nccl_message(err, sizeof err, "ncclCommInitRankConfig", r, s->comm);
    if (s->comm) abort_comm(s);
    return tjc_error(TJ_ERR_COMM, WHO ": rank %d on cuda:%d: %s", rank, s->device, err);
}

tj_status tjd_nccl_open(tjd_backend **out, double timeout_s) {
    *out = NULL;
    if (!tj_cuda_is_available())
        return tjc_error(TJ_ERR_DEVICE, WHO ": NCCL runs collectives on CUDA tensors and this "
                         "process has no CUDA device (%s); use \"mpi\" with CPU tensors",
                         tjcu_driver_unavailable_reason());
    tj_status st = tjd_nccl_load(NULL, NULL, 0);
    if (st) return st;
    /* the harness's device memory is host memory, which only the tests'
     * stand-in for NCCL (tests/dist/nccl_double.c) works on */
    const tjcu_driver *drv = tjcu_state_driver();
    if (!drv || (strcmp(drv->name, "cuda") && !L.on_host_memory))
        return tjc_error(TJ_ERR_UNSUPPORTED, WHO ": NCCL needs a GPU, and the CUDA backend runs on "
                         "the host execution harness (TJIT_CUDA_DRIVER=host)");
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    int rank = 0, world = 1, local_rank = -1;
    bool via_mpi = false;
    if ((st = share_id(&id, &rank, &world, &local_rank, &via_mpi, timeout_s))) return st;
    nccl_state *s = calloc(1, sizeof *s);
    tjd_backend *b = calloc(1, sizeof *b);
    if (!s || !b) {
        free(s);
        free(b);
        if (via_mpi) tjd_mpi_leave(true);
        return tjc_error(TJ_ERR_MEMORY, WHO ": out of memory");
    }
    s->drv = drv;
    s->timeout_s = timeout_s;
    s->via_mpi = via_mpi;
    st = pick_device(rank, local_rank, &s->device);
    if (!st) st = drv->make_current(s->device);
    if (!st) st = drv->stream_new(s->device, &s->stream);
    if (!st) st = drv->mem_alloc(NULL, s->device, SCRATCH_BYTES, &s->scratch);
    if (!st) st = init_comm(s, id, rank, world);
    if (st) {
        free_state(s);
        free(b);
        if (via_mpi) tjd_mpi_leave(true);
        return st;
    }
    b->name = "nccl";
    b->device = TJ_CUDA;
    b->rank = rank;
    b->world_size = world;
    b->max_count = INT64_MAX; /* NCCL's counts are size_t */
    b->start = nccl_start;
    b->test = nccl_test;
    b->abandon = nccl_abandon;
    b->finalize = nccl_finalize;
    b->check_tensor = nccl_check_tensor;
    b->prepare = nccl_prepare;
    /* In a world of one, avg is the value itself and goes to NCCL as a sum,
     * which NCCL copies. As ncclAvg NCCL runs its one-rank kernel, which
     * before 2.29.7 (NVIDIA/nccl issue 1950) splits the count over up to 32
     * blocks rounding down and leaves the last count % blocks elements of an
     * out-of-place result unwritten: reduce_scatter avg of 2^20 + 3 f32. */
    b->native_avg = world > 1;
    b->impl = s;
    *out = b;
    return TJ_OK;
}

#else /* no CUDA backend */

tj_status tjd_nccl_load(int *version, char *path, size_t pathlen) {
    (void)version, (void)path, (void)pathlen;
    return tjc_error(TJ_ERR_UNSUPPORTED, WHO ": this tjit was built without the CUDA backend "
                     "(TJIT_CUDA off, or no CUDA toolkit when it was configured)");
}

tj_status tjd_nccl_open(tjd_backend **out, double timeout_s) {
    (void)timeout_s;
    *out = NULL;
    return tjc_error(TJ_ERR_UNSUPPORTED, WHO ": this tjit was built without the CUDA backend "
                     "(TJIT_CUDA off, or no CUDA toolkit when it was configured), so it has no "
                     "NCCL backend; use \"mpi\" with CPU tensors");
}

#endif
