/* backend.h — what a communication backend gives distributed/: collectives
 * on raw, contiguous buffers, started non-blocking and tested for
 * completion. Prefix: tjd_.
 *
 * group.c owns the process group and its communication thread; the thread is
 * the only caller of start/test, in the order the collectives were called,
 * so a backend needs no locking of its own. collectives.c checks tensors and
 * turns them into tjd_coll_args. mpi.c is the MPI backend (its MPI calls live
 * in the plugin libtjit_mpi.so, distributed/mpi_plugin.h); a second backend
 * (NCCL on CUDA streams) provides another tjd_backend.
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
    void *impl;
};

/* The MPI backend (distributed/mpi.c): loads the plugin and joins the world. */
tj_status tjd_mpi_open(tjd_backend **out);

#endif
