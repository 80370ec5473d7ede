/* rendezvous.h — how ranks started without mpirun (torchrun's variables)
 * meet: rank 0 listens on MASTER_PORT and hands a few bytes (NCCL's unique
 * id) to every other rank that connects to MASTER_ADDR:MASTER_PORT. Owned by
 * distributed/rendezvous.c; used by the NCCL backend (nccl.c). Prefix: tjd_.
 *
 * Every wait is bounded by a timeout, and every failure is a clear error
 * naming tj_dist_init("nccl"), the address and what went wrong: an address
 * that does not resolve, a port rank 0 cannot listen on, nothing listening
 * (a peer keeps retrying until the timeout, since rank 0 may start later), a
 * rank 0 that accepts but never answers, ranks that never come.
 */
#ifndef TJIT_DISTRIBUTED_RENDEZVOUS_H
#define TJIT_DISTRIBUTED_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>

#include "tjit/tjit.h"

/* The variables torchrun sets. */
typedef struct tjd_launch_env {
    int rank, world_size;
    int local_rank;     /* -1 when LOCAL_RANK is unset */
    char addr[256];     /* MASTER_ADDR */
    int port;           /* MASTER_PORT */
} tjd_launch_env;

/* Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT. *found is
 * false (and TJ_OK returned) when neither RANK nor WORLD_SIZE is set; a
 * variable set to something unusable, or one of them missing, is an error
 * naming it. */
tj_status tjd_launch_env_read(tjd_launch_env *env, bool *found);

/* Rank 0 sends bytes (n of them, at most 4096) to each of the other
 * world_size - 1 ranks; every other rank receives them into bytes. Returns
 * once this rank's part is done, or fails after timeout_s. */
tj_status tjd_rendezvous_share(const char *addr, int port, int rank, int world_size, void *bytes,
                               size_t n, double timeout_s);

#endif
