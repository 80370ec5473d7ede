/* mpi.c — the MPI backend: finds libtjit_mpi.so (mpi_plugin.c), loads it
 * with dlopen and wraps its table as a tjd_backend. Where the plugin or
 * libmpi is missing, tjd_mpi_open says so and what to install; nothing of
 * MPI is linked into libtjit.
 *
 * The plugin is looked for, in order: at $TJIT_MPI_PLUGIN; beside the file
 * that holds this code (libtjit.so, or the program libtjit.a was linked
 * into); in the library directory tjit was configured to install into; by
 * its plain name (the loader's search path).
 */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "distributed/backend.h"

#ifdef TJIT_HAVE_MPI
#include "distributed/mpi_plugin.h"

typedef struct mpi_state {
    void *dl;
    const tjd_mpi_plugin *api;
} mpi_state;

static tj_status mpi_start(tjd_backend *b, const tjd_coll_args *a, void **req, char *err, size_t errlen) {
    const tjd_mpi_plugin *api = ((mpi_state *)b->impl)->api;
    int rc = 1;
    switch (a->kind) {
    case TJD_ALL_REDUCE:
        rc = api->allreduce(a->recv, a->count, (int)a->dtype, (int)a->op, req, err, errlen);
        break;
    case TJD_BROADCAST: rc = api->bcast(a->recv, a->count, (int)a->dtype, a->root, req, err, errlen); break;
    case TJD_ALL_GATHER:
        rc = api->allgather(a->send, a->recv, a->count, (int)a->dtype, req, err, errlen);
        break;
    case TJD_REDUCE_SCATTER:
        rc = api->reduce_scatter_block(a->send, a->recv, a->count, (int)a->dtype, (int)a->op, req, err,
                                       errlen);
        break;
    case TJD_BARRIER: rc = api->barrier(req, err, errlen); break;
    default: snprintf(err, errlen, "unknown collective %d", (int)a->kind); break;
    }
    return rc ? TJ_ERR_COMM : TJ_OK;
}

static tj_status mpi_test(tjd_backend *b, void *req, bool *done, char *err, size_t errlen) {
    int d = 0;
    int rc = ((mpi_state *)b->impl)->api->test(req, &d, err, errlen);
    *done = d != 0;
    return rc ? TJ_ERR_COMM : TJ_OK;
}

static void mpi_abandon(tjd_backend *b, void *req) { ((mpi_state *)b->impl)->api->abandon(req); }

/* After a failure MPI is left as it is: MPI_Comm_free and MPI_Finalize would
 * wait for the peer that is gone. The plugin stays loaded either way (MPI's
 * exit handlers live in the libraries it brought). */
static tj_status mpi_finalize(tjd_backend *b, bool failed) {
    mpi_state *s = b->impl;
    char err[256] = "";
    int rc = failed ? 0 : s->api->finalize(err, sizeof err);
    free(s);
    free(b);
    if (rc) return tjc_error(TJ_ERR_COMM, "tj_dist_finalize: %s", err);
    return TJ_OK;
}

/* Each attempt's failure, as the loader words it, goes into why; the path
 * that loads, into loaded. */
static char loaded[4096];

static void *try_load(const char *path, char *why, size_t n) {
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (dl) {
        snprintf(loaded, sizeof loaded, "%s", path);
    } else {
        size_t used = strlen(why);
        snprintf(why + used, n - used, "%s%s", used ? "; " : "", dlerror());
    }
    return dl;
}

static void *load_plugin(char *why, size_t n) {
    const char *env = getenv("TJIT_MPI_PLUGIN");
    char path[4096];
    void *dl = NULL;
    why[0] = '\0';
    if (env && env[0]) return try_load(env, why, n); /* an explicit choice is the only one tried */
    Dl_info info;
    if (dladdr((void *)tjd_mpi_open, &info) && info.dli_fname && strchr(info.dli_fname, '/')) {
        const char *slash = strrchr(info.dli_fname, '/');
        snprintf(path, sizeof path, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
                 TJD_MPI_PLUGIN_NAME);
        if ((dl = try_load(path, why, n))) return dl;
    }
#ifdef TJIT_MPI_PLUGIN_DIR
    snprintf(path, sizeof path, "%s/%s", TJIT_MPI_PLUGIN_DIR, TJD_MPI_PLUGIN_NAME);
    if ((dl = try_load(path, why, n))) return dl;
#endif
    return try_load(TJD_MPI_PLUGIN_NAME, why, n);
}

tj_status tjd_mpi_open(tjd_backend **out) {
    char why[4096];
    void *dl = load_plugin(why, sizeof why);
    if (!dl)
        return tjc_error(TJ_ERR_UNSUPPORTED,
                         "tj_dist_init(\"mpi\"): cannot load the MPI plugin %s: %s. It is built "
                         "with tjit where MPI is found and needs Open MPI's library at run time "
                         "(Debian: apt-get install libopenmpi3 openmpi-bin; libopenmpi-dev to "
                         "build it); TJIT_MPI_PLUGIN names its path", TJD_MPI_PLUGIN_NAME, why);
    tjd_mpi_plugin_fn get = (tjd_mpi_plugin_fn)dlsym(dl, TJD_MPI_PLUGIN_SYMBOL);
    const tjd_mpi_plugin *api = get ? get() : NULL;
    if (!api || api->version != TJD_MPI_PLUGIN_VERSION) {
        dlclose(dl);
        if (!api)
            return tjc_error(TJ_ERR_UNSUPPORTED, "tj_dist_init(\"mpi\"): %s is not tjit's MPI "
                             "plugin: it has no %s", loaded, TJD_MPI_PLUGIN_SYMBOL);
        return tjc_error(TJ_ERR_UNSUPPORTED, "tj_dist_init(\"mpi\"): %s is another tjit's MPI "
                         "plugin: its table has version %d, this tjit needs %d", loaded,
                         api->version, TJD_MPI_PLUGIN_VERSION);
    }
    tjd_backend *b = calloc(1, sizeof *b);
    mpi_state *s = calloc(1, sizeof *s);
    if (!b || !s) {
        free(b);
        free(s);
        return tjc_error(TJ_ERR_MEMORY, "tj_dist_init(\"mpi\"): out of memory");
    }
    char err[512] = "";
    int level = 0;
    if (api->init(&b->rank, &b->world_size, &level, err, sizeof err)) {
        free(b);
        free(s);
        return tjc_error(TJ_ERR_COMM, "tj_dist_init(\"mpi\"): %s", err);
    }
    s->dl = dl;
    s->api = api;
    b->name = "mpi";
    b->device = TJ_CPU;
    b->max_count = INT_MAX; /* MPI's counts are int */
    b->start = mpi_start;
    b->test = mpi_test;
    b->abandon = mpi_abandon;
    b->finalize = mpi_finalize;
    b->impl = s;
    *out = b;
    return TJ_OK;
}

#else

tj_status tjd_mpi_open(tjd_backend **out) {
    *out = NULL;
    return tjc_error(TJ_ERR_UNSUPPORTED,
                     "tj_dist_init(\"mpi\"): this tjit was built without MPI (TJIT_MPI off, or MPI "
                     "not found when it was configured): install libopenmpi-dev and openmpi-bin "
                     "and configure again");
}

#endif
