/* mpi_plugin.h — the function table of libtjit_mpi.so (mpi_plugin.c), the one
 * part of tjit linked to MPI. libtjit loads it with dlopen (mpi.c) and looks
 * up TJD_MPI_PLUGIN_SYMBOL, which returns this table; a table of another
 * version is refused, so a plugin from another tjit build is never misread.
 *
 * Buffers are contiguous; dtype is a tj_dtype; op is TJ_REDUCE_SUM, MAX or
 * MIN (bool: logical or, or, and). Every function returning int returns 0 on
 * success, else writes a message into err. Requests are opaque: test frees
 * one when it completes, abandon frees one that never will.
 */
#ifndef TJIT_DISTRIBUTED_MPI_PLUGIN_H
#define TJIT_DISTRIBUTED_MPI_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#define TJD_MPI_PLUGIN_VERSION 1
#define TJD_MPI_PLUGIN_SYMBOL "tjd_mpi_plugin_v1"
#define TJD_MPI_PLUGIN_NAME "libtjit_mpi.so"

typedef struct tjd_mpi_plugin {
    int version; /* TJD_MPI_PLUGIN_VERSION */
    /* MPI_Init_thread asking for MPI_THREAD_MULTIPLE (unless MPI is
     * initialised already, by the program); fails below
     * MPI_THREAD_SERIALIZED. Duplicates MPI_COMM_WORLD, with
     * MPI_ERRORS_RETURN, for tjit's collectives. */
    int (*init)(int *rank, int *size, int *thread_level, char *err, size_t errlen);
    int (*allreduce)(void *buf, int64_t count, int dtype, int op, void **req, char *err, size_t errlen);
    int (*bcast)(void *buf, int64_t count, int dtype, int root, void **req, char *err, size_t errlen);
    int (*allgather)(const void *send, void *recv, int64_t count, int dtype, void **req, char *err,
                     size_t errlen);
    int (*reduce_scatter_block)(const void *send, void *recv, int64_t count, int dtype, int op,
                                void **req, char *err, size_t errlen);
    int (*barrier)(void **req, char *err, size_t errlen);
    /* *done = 1 once complete (req is then freed). */
    int (*test)(void *req, int *done, char *err, size_t errlen);
    void (*abandon)(void *req);
    /* Frees the communicator and calls MPI_Finalize when init called
     * MPI_Init_thread. */
    int (*finalize)(char *err, size_t errlen);
    /* MPI_Abort on the world (the whole job ends). */
    void (*abort)(int code);
} tjd_mpi_plugin;

typedef const tjd_mpi_plugin *(*tjd_mpi_plugin_fn)(void);

#endif
