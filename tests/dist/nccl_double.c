/* nccl_double.c — libtjit_test_nccl.so: a stand-in for NCCL in tests, so
 * that the nccl backend (distributed/nccl.c) runs without a GPU. It exports
 * the NCCL functions the backend resolves, for a world of one, on host
 * memory: the CUDA backend's host harness, whose device memory is host
 * memory (the backend accepts the harness only with a library exporting
 * tjit_nccl_on_host_memory). Like a non-blocking NCCL communicator, creation,
 * every enqueue and finalization first answer ncclInProgress and complete
 * after a few ncclCommGetAsyncError polls. It refuses what NCCL would (an
 * unknown dtype or op, a config not made the NCCL way, a call on an aborted
 * communicator), keeps the last call in tjit_nccl_double for the test to
 * read, and on request makes the next enqueue never complete, or the
 * communicator fail once it has completed (an asynchronous error), for the
 * timeout and error paths. A communicator of more
 * than one rank never completes (no peer can join it).
 *
 * It is NCCL 2.28.9, and does what that version does on a GPU where a
 * backend could go wrong: a one-rank ncclAvg runs NCCL's oneRankReduce
 * kernel, whose blocks leave the last elements of the result unwritten (see
 * one_rank_avg_written), so a backend that hands NCCL avg in a world of one
 * fails here as it does on a GPU. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct { char internal[128]; } ncclUniqueId;
enum { SUCCESS = 0, INTERNAL = 3, INVALID_ARGUMENT = 4, INVALID_USAGE = 5, REMOTE = 6, IN_PROGRESS = 7 };
enum { UINT8 = 1, INT64 = 4, FLOAT32 = 7, FLOAT64 = 8 };
enum { SUM = 0, MAX = 2, MIN = 3, AVG = 4 };

typedef struct config {
    size_t size;
    unsigned int magic, version;
    int blocking;
} config;

typedef struct comm {
    int polls_left; /* ncclInProgress answers before the last call completes */
    int hang;       /* the last call never completes */
    int failed;     /* ncclCommGetAsyncError reports a remote error */
    int fail_after; /* ... from the poll after the last call completed */
} comm;

/* What the test reads (the same layout in test_dist_nccl_double.c). */
typedef struct nccl_double_state {
    int inits, calls, aborts, destroys, finalizes;
    char last[32];
    int dtype, op, root;
    size_t count;
    int hang_next, fail_next; /* set by the test */
} nccl_double_state;

EXPORT const int tjit_nccl_on_host_memory = 1;
EXPORT nccl_double_state tjit_nccl_double;

EXPORT int ncclGetVersion(int *v) {
    *v = 22809;
    return SUCCESS;
}

EXPORT int ncclGetUniqueId(ncclUniqueId *id) {
    memset(id, 0, sizeof *id);
    memcpy(id->internal, "double", 6);
    return SUCCESS;
}

EXPORT int ncclCommInitRankConfig(comm **out, int nranks, ncclUniqueId id, int rank, config *cfg) {
    if (!cfg || cfg->magic != 0xcafebeefu || cfg->version < 21400 || cfg->blocking != 0 ||
        cfg->size < sizeof *cfg || rank < 0 || rank >= nranks || memcmp(id.internal, "double", 6))
        return INVALID_ARGUMENT;
    comm *c = calloc(1, sizeof *c);
    if (!c) return INTERNAL;
    c->polls_left = 3;
    c->hang = nranks > 1;
    *out = c;
    tjit_nccl_double.inits++;
    return IN_PROGRESS;
}

EXPORT int ncclCommGetAsyncError(comm *c, int *r) {
    if (c->failed) *r = REMOTE;
    else if (c->hang) *r = IN_PROGRESS;
    else if (c->polls_left > 0) c->polls_left--, *r = IN_PROGRESS;
    else {
        *r = SUCCESS;
        if (c->fail_after) c->fail_after = 0, c->failed = 1;
    }
    return SUCCESS;
}

EXPORT int ncclCommFinalize(comm *c) {
    tjit_nccl_double.finalizes++;
    c->polls_left = 2;
    return IN_PROGRESS;
}

EXPORT int ncclCommDestroy(comm *c) {
    tjit_nccl_double.destroys++;
    free(c);
    return SUCCESS;
}

EXPORT int ncclCommAbort(comm *c) {
    tjit_nccl_double.aborts++;
    free(c);
    return SUCCESS;
}

EXPORT const char *ncclGetErrorString(int r) {
    switch (r) {
    case SUCCESS: return "no error";
    case INVALID_ARGUMENT: return "invalid argument";
    case REMOTE: return "remote process exited or there was a network error";
    case IN_PROGRESS: return "NCCL operation in progress";
    default: return "unhandled error";
    }
}

EXPORT const char *ncclGetLastError(comm *c) {
    (void)c;
    return "";
}

static size_t dtype_size(int dtype) {
    switch (dtype) {
    case UINT8: return 1;
    case FLOAT32: return 4;
    case INT64:
    case FLOAT64: return 8;
    default: return 0;
    }
}

/* How many leading elements NCCL before 2.29.7 writes in a one-rank ncclAvg
 * (ncclLaunchOneRank, NVIDIA/nccl issue 1950): min(32, bytes / 16 KiB
 * rounded up) blocks, each over count / blocks elements rounded down, then
 * up to a 16-byte pack. */
static size_t one_rank_avg_written(size_t count, size_t elt_size) {
    size_t blocks = (count * elt_size + (16u << 10) - 1) / (16u << 10);
    if (blocks > 32) blocks = 32;
    if (blocks == 0) return 0;
    size_t pack = 16 / elt_size, per = (count / blocks + pack - 1) / pack * pack;
    return per * blocks < count ? per * blocks : count;
}

/* Checks and records one collective, then answers as a non-blocking
 * communicator does. The data moves at once (the harness has no streams). */
static int collective(comm *c, const char *name, int dtype, int op, int root, size_t count,
                      void *dst, const void *src) {
    if (!dtype_size(dtype) || (op != SUM && op != MAX && op != MIN && op != AVG) ||
        (op == AVG && dtype != FLOAT32 && dtype != FLOAT64) || root != 0)
        return INVALID_ARGUMENT;
    if (c->hang || c->polls_left > 0) return INVALID_USAGE; /* the last call is not done */
    nccl_double_state *s = &tjit_nccl_double;
    s->calls++;
    snprintf(s->last, sizeof s->last, "%s", name);
    s->dtype = dtype, s->op = op, s->root = root, s->count = count;
    size_t moved = op == AVG ? one_rank_avg_written(count, dtype_size(dtype)) : count;
    if (dst != src) memmove(dst, src, moved * dtype_size(dtype));
    if (s->hang_next) s->hang_next = 0, c->hang = 1;
    if (s->fail_next) s->fail_next = 0, c->fail_after = 1;
    c->polls_left = 2;
    return IN_PROGRESS;
}

EXPORT int ncclAllReduce(const void *send, void *recv, size_t count, int dtype, int op, comm *c,
                         void *stream) {
    (void)stream;
    return collective(c, "ncclAllReduce", dtype, op, 0, count, recv, send);
}

EXPORT int ncclBroadcast(const void *send, void *recv, size_t count, int dtype, int root, comm *c,
                         void *stream) {
    (void)stream;
    return collective(c, "ncclBroadcast", dtype, SUM, root, count, recv, send);
}

EXPORT int ncclAllGather(const void *send, void *recv, size_t count, int dtype, comm *c, void *stream) {
    (void)stream;
    return collective(c, "ncclAllGather", dtype, SUM, 0, count, recv, send);
}

EXPORT int ncclReduceScatter(const void *send, void *recv, size_t count, int dtype, int op, comm *c,
                             void *stream) {
    (void)stream;
    return collective(c, "ncclReduceScatter", dtype, op, 0, count, recv, send);
}
