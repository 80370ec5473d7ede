/* nvrtc_cache.c — a module's cubin for a GPU: from the disk kernel cache when
 * TJIT_CACHE_DIR names a trusted directory (fuser/disk_cache.h: the same
 * mechanism as the LLVM backend's), else compiled by NVRTC and stored there.
 * The key holds the whole source, the architecture, NVRTC's options and its
 * version, so a second process compiles nothing, and a changed toolkit or a
 * changed option (--fmad) compiles again. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/sources.h"
#include "core/core.h"
#include "fuser/disk_cache.h"

static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static _Atomic long n_built, n_read;

void tjcu_nvrtc_cache_stats(long *built, long *read) {
    *built = atomic_load(&n_built);
    *read = atomic_load(&n_read);
}

/* The key of source's cubin for arch: every header a source may include is
 * in it, so a changed header never loads a stale cubin. malloc'd. */
static char *cubin_key(const char *source, const char *arch) {
    const char *header_names[TJCU_MAX_HEADERS], *headers[TJCU_MAX_HEADERS];
    int n_headers = tjcu_headers(header_names, headers, TJCU_MAX_HEADERS);
    if (n_headers > TJCU_MAX_HEADERS) n_headers = TJCU_MAX_HEADERS;
    size_t n = strlen(source) + strlen(arch) + strlen(tjcu_nvrtc_options()) + 64;
    for (int i = 0; i < n_headers; i++) n += strlen(header_names[i]) + strlen(headers[i]) + 2;
    char *key = tjc_malloc(n);
    if (!key) return NULL;
    size_t k = (size_t)snprintf(key, n, "cubin %s nvrtc %s %s\n%s", arch, tjcu_nvrtc_version(),
                                tjcu_nvrtc_options(), source);
    for (int i = 0; i < n_headers; i++)
        k += (size_t)snprintf(key + k, n - k, "\n%s\n%s", header_names[i], headers[i]);
    return key;
}

/* Cubins compiled ahead (tjcu_nvrtc_precompile), each waiting for the
 * tjcu_nvrtc_compile_cached call that asks for it, by its key's hash. */
typedef struct ahead {
    uint64_t key_hash;
    void *image;
    size_t size;
    struct ahead *next;
} ahead;
static pthread_mutex_t ahead_lock = PTHREAD_MUTEX_INITIALIZER;
static ahead *waiting;

static bool take_ahead(uint64_t key_hash, void **image, size_t *size) {
    pthread_mutex_lock(&ahead_lock);
    ahead **at = &waiting;
    while (*at && (*at)->key_hash != key_hash) at = &(*at)->next;
    ahead *a = *at;
    if (a) *at = a->next;
    pthread_mutex_unlock(&ahead_lock);
    if (!a) return false;
    *image = a->image;
    *size = a->size;
    tjc_free(a);
    return true;
}

/* From the disk cache, or compiled by NVRTC and stored there. */
static tj_status compile_keyed(const char *name, const char *source, const char *arch, const char *key,
                               void **image, size_t *size) {
    char file[64];
    snprintf(file, sizeof file, "cu-%s-%016llx.cubin", arch, (unsigned long long)fnv1a(key));
    if (tjf_disk_cache_read(file, key, image, size)) {
        atomic_fetch_add(&n_read, 1);
        return TJ_OK;
    }
    char *cubin = NULL;
    atomic_fetch_add(&n_built, 1);
    tj_status st = tjcu_nvrtc_compile(name, source, arch, true, &cubin, size);
    if (st == TJ_OK) {
        tjf_disk_cache_write(file, key, cubin, *size); /* best effort: a miss next time */
        *image = cubin;
    }
    return st;
}

tj_status tjcu_nvrtc_compile_cached(const char *name, const char *source, const char *arch,
                                    void **image, size_t *size) {
    char *key = cubin_key(source, arch);
    if (!key) return tjc_error(TJ_ERR_MEMORY, "%s: out of memory", name);
    tj_status st = TJ_OK;
    if (!take_ahead(fnv1a(key), image, size)) st = compile_keyed(name, source, arch, key, image, size);
    tjc_free(key);
    return st;
}

typedef struct precompile_job {
    const char *const *names, *const *sources;
    const char *arch;
} precompile_job;

static void precompile_one(void *ctx, int i) {
    precompile_job *job = ctx;
    char *key = cubin_key(job->sources[i], job->arch);
    ahead *a = key ? tjc_calloc(1, sizeof *a) : NULL;
    if (a && compile_keyed(job->names[i], job->sources[i], job->arch, key, &a->image, &a->size) == TJ_OK) {
        a->key_hash = fnv1a(key);
        pthread_mutex_lock(&ahead_lock);
        a->next = waiting;
        waiting = a;
        pthread_mutex_unlock(&ahead_lock);
    } else {
        tjc_free(a); /* the load compiles it again and reports the error */
        tj_clear_error();
    }
    tjc_free(key);
}

void tjcu_nvrtc_precompile(const char *const *names, const char *const *sources, int n, const char *arch) {
    precompile_job job = {names, sources, arch};
    tjcu_parallel_for(n, precompile_one, &job);
}
