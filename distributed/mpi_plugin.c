/* mpi_plugin.c — libtjit_mpi.so: tjit's collectives as non-blocking MPI
 * calls on a duplicate of MPI_COMM_WORLD (its errors returned, not fatal).
 * The only file linked to MPI; libtjit loads it with dlopen (mpi.c), so
 * programs without MPI installed still start. The table it exports is
 * described in mpi_plugin.h.
 */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "distributed/mpi_plugin.h"
#include "tjit/distributed.h"

static MPI_Comm comm = MPI_COMM_NULL;
static int initialised_here; /* MPI_Init_thread was ours: so is MPI_Finalize */

static int mpi_fail(int rc, const char *what, char *err, size_t errlen) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "MPI error %d", rc);
    snprintf(err, errlen, "%s: %s", what, text);
    return 1;
}

static MPI_Datatype mpi_type(int dtype) {
    switch (dtype) {
    case TJ_F32: return MPI_FLOAT;
    case TJ_F64: return MPI_DOUBLE;
    case TJ_I64: return MPI_INT64_T;
    default: return MPI_UINT8_T; /* bool: bytes 0 or 1 */
    }
}

/* On bytes 0 and 1, MAX is logical or and MIN logical and; SUM would count. */
static MPI_Op mpi_op(int dtype, int op) {
    if (op == TJ_REDUCE_MIN) return MPI_MIN;
    if (op == TJ_REDUCE_MAX || dtype == TJ_BOOL) return MPI_MAX;
    return MPI_SUM;
}

static int count_fits(int64_t count, char *err, size_t errlen) {
    if (count <= INT_MAX) return 0;
    snprintf(err, errlen, "%lld elements is more than MPI's int count allows (%d)",
             (long long)count, INT_MAX);
    return 1;
}

static int plugin_init(int *rank, int *size, int *thread_level, char *err, size_t errlen) {
    int ready = 0, rc;
    MPI_Initialized(&ready);
    if (!ready) {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (finalized) {
            snprintf(err, errlen, "MPI was finalised earlier in this process and cannot start again");
            return 1;
        }
        rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, thread_level);
        if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Init_thread", err, errlen);
        initialised_here = 1;
        /* Open MPI reports an error found while testing a non-blocking
         * collective (a truncation where ranks passed different counts) on
         * MPI_COMM_WORLD, not on the request's communicator: with MPI's
         * default handler that would abort the job instead of failing the
         * collective. (A program that initialised MPI itself keeps its own
         * handler.) */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    } else {
        MPI_Query_thread(thread_level);
    }
    if (*thread_level < MPI_THREAD_SERIALIZED) {
        snprintf(err, errlen, "MPI gives thread level %d; tjit's communication thread needs "
                 "MPI_THREAD_SERIALIZED or more", *thread_level);
        return 1;
    }
    rc = MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Comm_dup", err, errlen);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, rank);
    MPI_Comm_size(comm, size);
    return 0;
}

static int new_request(MPI_Request **r, char *err, size_t errlen) {
    *r = malloc(sizeof **r);
    if (!*r) snprintf(err, errlen, "out of memory for an MPI request");
    return *r == NULL;
}

/* Keeps the request when the call started, frees it when it did not. */
static int started(int rc, MPI_Request *r, void **req, const char *what, char *err, size_t errlen) {
    if (rc != MPI_SUCCESS) {
        free(r);
        return mpi_fail(rc, what, err, errlen);
    }
    *req = r;
    return 0;
}

static int plugin_allreduce(void *buf, int64_t count, int dtype, int op, void **req, char *err,
                            size_t errlen) {
    MPI_Request *r;
    if (count_fits(count, err, errlen) || new_request(&r, err, errlen)) return 1;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, mpi_type(dtype), mpi_op(dtype, op), comm, r);
    return started(rc, r, req, "MPI_Iallreduce", err, errlen);
}

static int plugin_bcast(void *buf, int64_t count, int dtype, int root, void **req, char *err,
                        size_t errlen) {
    MPI_Request *r;
    if (count_fits(count, err, errlen) || new_request(&r, err, errlen)) return 1;
    int rc = MPI_Ibcast(buf, (int)count, mpi_type(dtype), root, comm, r);
    return started(rc, r, req, "MPI_Ibcast", err, errlen);
}

static int plugin_allgather(const void *send, void *recv, int64_t count, int dtype, void **req,
                            char *err, size_t errlen) {
    MPI_Request *r;
    if (count_fits(count, err, errlen) || new_request(&r, err, errlen)) return 1;
    int rc = MPI_Iallgather(send, (int)count, mpi_type(dtype), recv, (int)count, mpi_type(dtype), comm, r);
    return started(rc, r, req, "MPI_Iallgather", err, errlen);
}

static int plugin_reduce_scatter_block(const void *send, void *recv, int64_t count, int dtype, int op,
                                       void **req, char *err, size_t errlen) {
    MPI_Request *r;
    if (count_fits(count, err, errlen) || new_request(&r, err, errlen)) return 1;
    int rc = MPI_Ireduce_scatter_block(send, recv, (int)count, mpi_type(dtype), mpi_op(dtype, op),
                                       comm, r);
    return started(rc, r, req, "MPI_Ireduce_scatter_block", err, errlen);
}

static int plugin_barrier(void **req, char *err, size_t errlen) {
    MPI_Request *r;
    if (new_request(&r, err, errlen)) return 1;
    return started(MPI_Ibarrier(comm, r), r, req, "MPI_Ibarrier", err, errlen);
}

static int plugin_test(void *req, int *done, char *err, size_t errlen) {
    MPI_Request *r = req;
    MPI_Status status;
    int rc = MPI_Test(r, done, &status);
    if (rc != MPI_SUCCESS) {
        free(r);
        *done = 1;
        return mpi_fail(rc, "MPI_Test", err, errlen);
    }
    if (*done) free(r);
    return 0;
}

/* A non-blocking collective's request may not be freed or cancelled (MPI
 * 3.1, 5.12): MPI keeps it; only the wrapper goes. */
static void plugin_abandon(void *req) { free(req); }

static int plugin_finalize(char *err, size_t errlen) {
    int rc = MPI_SUCCESS;
    if (comm != MPI_COMM_NULL) rc = MPI_Comm_free(&comm);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Comm_free", err, errlen);
    if (initialised_here) {
        initialised_here = 0;
        rc = MPI_Finalize();
        if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Finalize", err, errlen);
    }
    return 0;
}

static void plugin_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

static const tjd_mpi_plugin table = {
    .version = TJD_MPI_PLUGIN_VERSION,
    .init = plugin_init,
    .allreduce = plugin_allreduce,
    .bcast = plugin_bcast,
    .allgather = plugin_allgather,
    .reduce_scatter_block = plugin_reduce_scatter_block,
    .barrier = plugin_barrier,
    .test = plugin_test,
    .abandon = plugin_abandon,
    .finalize = plugin_finalize,
    .abort = plugin_abort,
};

__attribute__((visibility("default"))) const tjd_mpi_plugin *tjd_mpi_plugin_v1(void) { return &table; }
