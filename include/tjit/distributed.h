/* distributed.h — data-parallel training across processes and machines
 * (distributed/, docs/distributed.md): a process group over MPI (CPU tensors)
 * or NCCL (CUDA tensors), collectives on tensors, and DistributedDataParallel
 * over a training program.
 *
 *   tj_dist_init("mpi", NULL);              // under mpirun -np N
 *   tj_ddp *d = tj_ddp_wrap(prog, NULL, NULL); // parameters broadcast from rank 0
 *   tj_run(prog, batch_shard, &loss);
 *   tj_backward(prog, NULL, NULL);          // returns with averaged gradients
 *
 * MPI is used through a small plugin library (libtjit_mpi.so, built when MPI
 * is found: TJIT_MPI) and NCCL through dlopen, so a binary without either
 * starts and tj_dist_init says what is missing. A collective that has not
 * completed within the group's timeout (a peer that left or never came) fails
 * with TJ_ERR_COMM naming the collective; after such a failure the group can
 * only be finalized.
 */
/* the umbrella header first, outside this guard: it includes every public
 * header in dependency order, whichever of them a user includes first */
#include "tjit/tjit.h"
#ifndef TJIT_DISTRIBUTED_H
#define TJIT_DISTRIBUTED_H

/* tjit.h first: it includes the other public headers in the order they need */
#include "tjit/tjit.h"
#include "tjit/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- process groups ----------------------------------------------------------- */

typedef struct tj_dist_options {
    /* Seconds a collective may take before it fails with TJ_ERR_COMM; 0 takes
     * TJIT_DIST_TIMEOUT from the environment, else 300. */
    double timeout_s;
} tj_dist_options;

typedef struct tj_dist_group tj_dist_group;

/* Joins this process to the world group: "mpi" (rank and world size from MPI;
 * CPU tensors) or "nccl" (CUDA tensors on the tensor's stream; the NCCL id is
 * shared over MPI when the process runs under mpirun, else through rank 0 at
 * MASTER_ADDR:MASTER_PORT with RANK and WORLD_SIZE, as torchrun sets them).
 * One world group per process; opts may be NULL. */
tj_status tj_dist_init(const char *backend, const tj_dist_options *opts);
/* Leaves the group (after a failed collective without waiting for peers). */
tj_status tj_dist_finalize(void);
bool tj_dist_is_initialized(void);
tj_dist_group *tj_dist_world(void); /* NULL before tj_dist_init */
int tj_dist_rank(void);             /* 0 without a group */
int tj_dist_world_size(void);       /* 1 without a group */
const char *tj_dist_backend(void);  /* "mpi", "nccl", or NULL */

/* ---- collectives -----------------------------------------------------------------
 * Every rank calls the same collectives in the same order with tensors of the
 * same dtype and sizes; group NULL is the world. With work NULL the call
 * blocks until this rank's part is done; otherwise it returns at once with a
 * handle that tj_dist_wait completes (and frees). A tensor must stay alive,
 * and must not be written, until its collective completes. */

typedef enum tj_reduce_op { TJ_REDUCE_SUM, TJ_REDUCE_AVG, TJ_REDUCE_MAX, TJ_REDUCE_MIN } tj_reduce_op;

typedef struct tj_dist_work tj_dist_work;

/* t becomes the reduction of every rank's t (in place). */
tj_status tj_dist_all_reduce(tj_tensor *t, tj_reduce_op op, tj_dist_group *group,
                             tj_dist_work **work);
/* t becomes root's t. */
tj_status tj_dist_broadcast(tj_tensor *t, int root, tj_dist_group *group, tj_dist_work **work);
/* out (world_size * numel(in) elements) holds every rank's in, in rank order. */
tj_status tj_dist_all_gather(tj_tensor *out, const tj_tensor *in, tj_dist_group *group,
                             tj_dist_work **work);
/* in holds world_size * numel(out) elements; out becomes the reduction over
 * the ranks of this rank's share (share r is elements [r*n, (r+1)*n)). */
tj_status tj_dist_reduce_scatter(tj_tensor *out, const tj_tensor *in, tj_reduce_op op,
                                 tj_dist_group *group, tj_dist_work **work);
tj_status tj_dist_barrier(tj_dist_group *group, tj_dist_work **work);
/* Completes a non-blocking collective and frees its handle (NULL is ignored). */
tj_status tj_dist_wait(tj_dist_work *work);
/* Whether it has completed, without waiting (the handle stays). */
tj_status tj_dist_test(tj_dist_work *work, bool *done);

/* ---- data-parallel training ------------------------------------------------------- */

typedef struct tj_ddp_options {
    /* Gradient bytes per bucket; 0 for 25 MiB, with the first bucket to fill
     * (the first gradients backward finishes) at most 1 MiB, as PyTorch's
     * DDP does with its defaults. */
    int64_t bucket_bytes;
    /* The program's accumulated gradients (tj_program_grad) are views into the
     * buckets, which are all-reduced in place: no copy back. */
    bool gradient_as_bucket_view;
    /* A parameter that receives no gradient from the program is left out of
     * the buckets; without this, tj_ddp_wrap refuses it, naming it. */
    bool find_unused_parameters;
} tj_ddp_options;

typedef struct tj_ddp tj_ddp;

/* Wraps a program compiled with gradients (grad_parameters): checks that
 * every rank wraps the same parameters (refused naming both ranks' counts
 * otherwise), broadcasts rank 0's parameter values to every rank, and
 * installs a gradient hook, so that every later tj_backward all-reduces the
 * parameters' gradients bucket by bucket as the backward pass finishes them
 * and returns with their average. group NULL is the world; opts may be NULL.
 * The program must outlive the wrapper. */
tj_ddp *tj_ddp_wrap(tj_program *program, tj_dist_group *group, const tj_ddp_options *opts);
/* While on, tj_backward accumulates gradients locally without communicating
 * (gradient accumulation); the next backward with it off averages the sum. */
tj_status tj_ddp_set_no_sync(tj_ddp *ddp, bool no_sync);

typedef struct tj_ddp_stats {
    int buckets;                /* buckets the parameters were packed into */
    int parameters;             /* parameters in the buckets */
    int64_t steps;              /* synchronised backward passes */
    int64_t bytes_reduced;      /* gradient bytes all-reduced, summed over steps */
    double comm_s;              /* all-reduce time: each bucket from its start to completion, summed */
    double exposed_s;           /* time tj_backward waited for all-reduces after the backward program ended */
    /* buckets whose all-reduce started while backward instructions were still to run */
    int64_t buckets_started_early;
} tj_ddp_stats;
tj_status tj_ddp_get_stats(const tj_ddp *ddp, tj_ddp_stats *out);
/* Removes the hook (the program trains alone again) and frees the wrapper. */
void tj_ddp_free(tj_ddp *ddp);

#ifdef __cplusplus
}
#endif

#endif
