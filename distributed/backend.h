/* backend.h — what a communication backend gives distributed/: collectives
 * on raw, contiguous buffers, started non-blocking and tested for
 * completion. Prefix: tjd_.
 *
 * group.c owns the process group and its communication thread; the thread is
 * the only caller of start/test, in the order the collectives were called,
 * so a backend needs no locking of its own. collectives.c checks tensors and
 * turns them into tjd_coll_args. mpi.c is the MPI backend (its MPI calls live
 * in the plugin libtjit_mpi.so, distributed/mpi_plugin.h); nccl.c is the
 * NCCL backend (CUDA tensors; the library loaded with dlopen), which also
 * checks tensors and orders each collective after the caller's stream on the
 * caller's thread (check_tensor, prepare).
 */
#ifndef TJIT_DISTRIBUTED_BACKEND_H
#define TJIT_DISTRIBUTED_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tjit/distributed.h"

typedef enum tjd_coll_kind {
    TJD_ALL_REDUCE,
    TJD_BROADCAST,
    TJD_ALL_GATHER,
    TJD_REDUCE_SCATTER,
    TJD_BARRIER,
    TJD_NUM_COLLS
} tjd_coll_kind;

/* The public function's name, for messages ("tj_dist_all_reduce"). */
const char *tjd_coll_name(tjd_coll_kind k);

/* One collective on contiguous buffers. The reduction is SUM, MAX or MIN
 * (AVG is SUM followed by a division, done by collectives.c); bool buffers
 * hold bytes 0 or 1 and reduce as logical or (SUM, MAX) and and (MIN).
 *   all_reduce:     recv (count elements) reduced in place; send is NULL
 *   broadcast:      recv (count) becomes root's
 *   all_gather:     send (count) from every rank into recv (world * count)
 *   reduce_scatter: send (world * count) reduced, share `rank` into recv (count)
 *   barrier:        no buffers */
typedef struct tjd_coll_args {
    tjd_coll_kind kind;
    tj_dtype dtype;
    tj_reduce_op op;
    const void *send;
    void *recv;
    int64_t count;
    int root;
    /* the buffers are host memory even on a device backend (group.c's own
     * comparison of the ranks' arguments) */
    bool host_buffers;
    /* set by the backend's prepare on the caller's thread (what start orders
     * the collective after); the work item owns it and releases it with
     * ready_free */
    void *ready;
    void (*ready_free)(void *ready);
} tjd_coll_args;

/* Messages written by a backend go to err (errlen bytes, NUL-terminated); the
 * caller adds the collective's name and the rank. */
typedef struct tjd_backend tjd_backend;
struct tjd_backend {
    const char *name;         /* "mpi" */
    tj_device_type device;    /* the device whose tensors it takes */
    int rank, world_size;
    int64_t max_count; /* the most elements one rank's buffer may hold */
    /* Starts a collective; *req is what test takes. */
    tj_status (*start)(tjd_backend *b, const tjd_coll_args *a, void **req, char *err, size_t errlen);
    /* Sets *done once req has completed, and then frees it. */
    tj_status (*test)(tjd_backend *b, void *req, bool *done, char *err, size_t errlen);
    /* Forgets a request that will never complete (after a timeout) without
     * waiting on it. */
    void (*abandon)(tjd_backend *b, void *req);
    /* Leaves the group and frees b. After a failure (failed true) it must not
     * wait for peers. */
    tj_status (*finalize)(tjd_backend *b, bool failed);
    /* Optional, on the caller's thread (collectives.c): refuses a tensor the
     * backend cannot take beyond the common checks (the error names coll and
     * arg), before anything is copied. */
    tj_status (*check_tensor)(tjd_backend *b, const char *coll, const char *arg, const tj_tensor *t);
    /* Optional, on the caller's thread just before the collective is queued:
     * may set a->ready (a point in the caller's stream the collective must
     * follow). */
    tj_status (*prepare)(tjd_backend *b, tjd_coll_args *a);
    /* start takes TJ_REDUCE_AVG for floating dtypes itself (no division
     * afterwards by collectives.c) */
    bool native_avg;
    void *impl;
};

/* The MPI backend (distributed/mpi.c): loads the plugin and joins the world. */
tj_status tjd_mpi_open(tjd_backend **out);

/* MPI as the NCCL backend's way to share its communicator's id under mpirun
 * (distributed/mpi.c): join loads the plugin and joins MPI's world; share
 * broadcasts n bytes from rank 0 (failing after timeout_s); leave frees what
 * join took (after a failure without waiting for peers). Errors are set,
 * naming tj_dist_init("nccl"). */
tj_status tjd_mpi_join(int *rank, int *world_size);
tj_status tjd_mpi_share(void *bytes, size_t n, double timeout_s);
void tjd_mpi_leave(bool failed);

/* The NCCL backend (distributed/nccl.c): picks this rank's GPU, shares the
 * communicator's id (over MPI under mpirun, else through the TCP rendezvous
 * of distributed/rendezvous.h) and creates the communicator; the group's
 * timeout bounds every wait. */
tj_status tjd_nccl_open(tjd_backend **out, double timeout_s);
/* Loads the NCCL library (TJIT_NCCL_LIBRARY, libnccl.so.2, the CUDA
 * toolkit's directory), resolves every function the backend uses and gives
 * its version (e.g. 22809 for 2.28.9) and the file it came from. Needs no
 * GPU. */
tj_status tjd_nccl_load(int *version, char *path, size_t pathlen);

#endif
