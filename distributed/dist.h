/* dist.h — internals of distributed/ shared by its files: the world group
 * and its communication thread (group.c), the work items that carry a
 * collective from the caller to that thread, and their completion.
 * Prefix: tjd_.
 *
 * Every collective, blocking or not, becomes a tj_dist_work queued to the
 * group's thread, which starts them in the order they were queued (every
 * rank must start the same collectives in the same order), tests them until
 * they complete or the group's timeout passes, and finishes each one (an
 * average's division, the copy into a non-contiguous tensor) before marking
 * it done. A caller that blocks waits on the item; tj_dist_wait does the same
 * later and frees it.
 */
#ifndef TJIT_DISTRIBUTED_DIST_H
#define TJIT_DISTRIBUTED_DIST_H

#include "distributed/backend.h"

struct tj_dist_work {
    tjd_coll_args args;      /* buffers: the tensors' own, or tmp */
    double avg_divisor;      /* AVG: the world size; 0 otherwise */
    tj_tensor *unpack_into;  /* a non-contiguous result tensor, filled from tmp when done */
    void *tmp;               /* contiguous buffers owned by the item (malloc) */
    void *tmp_send;
    tj_tensor *held[2];      /* references kept until the item is freed */
    /* set by the thread, read under the group's lock */
    bool done;
    tj_status status;
    char message[512];
    /* the thread's own */
    void *req;
    double deadline;
    struct tj_dist_work *next;
};

/* The group a collective runs on: group itself, or the world for NULL. Fails
 * (naming coll) before tj_dist_init, after finalize and after a failure. */
tj_status tjd_group_resolve(tj_dist_group *group, const char *coll, tjd_backend **backend);
/* Hands w to the group's thread (which owns it until done). */
tj_status tjd_group_submit(tj_dist_group *group, tj_dist_work *w);
/* Waits until w is done and returns its status, with its message set on
 * this thread; does not free it. */
tj_status tjd_work_finish(tj_dist_work *w);
bool tjd_work_is_done(tj_dist_work *w);
/* What a completed collective still owes its tensors (collectives.c): the
 * average's division, the copy into a non-contiguous result. Called on the
 * group's thread. */
void tjd_work_complete(tj_dist_work *w);
/* Releases what the item holds and frees it. */
void tjd_work_free(tj_dist_work *w);

#endif
