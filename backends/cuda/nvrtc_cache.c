/* nvrtc_cache.c — a module's cubin for a GPU: from the disk kernel cache when
 * TJIT_CACHE_DIR names a trusted directory (fuser/disk_cache.h: the same
 * mechanism as the LLVM backend's), else compiled by NVRTC and stored there.
 * The key holds the whole source, the architecture, NVRTC's options and its
 * version, so a second process compiles nothing, and a changed toolkit or a
 * changed option (--fmad) compiles again. */
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

tj_status tjcu_nvrtc_compile_cached(const char *name, const char *source, const char *arch,
                                    void **image, size_t *size) {
    /* the key holds every header a source may include, so a changed header
     * never loads a stale cubin */
    const char *header_names[TJCU_MAX_HEADERS], *headers[TJCU_MAX_HEADERS];
    int n_headers = tjcu_headers(header_names, headers, TJCU_MAX_HEADERS);
    if (n_headers > TJCU_MAX_HEADERS) n_headers = TJCU_MAX_HEADERS;
    size_t n = strlen(source) + strlen(arch) + strlen(tjcu_nvrtc_options()) + 64;
    for (int i = 0; i < n_headers; i++) n += strlen(header_names[i]) + strlen(headers[i]) + 2;
    char *key = tjc_malloc(n);
    if (!key) return tjc_error(TJ_ERR_MEMORY, "%s: out of memory", name);
    size_t k = (size_t)snprintf(key, n, "cubin %s nvrtc %s %s\n%s", arch, tjcu_nvrtc_version(),
                                tjcu_nvrtc_options(), source);
    for (int i = 0; i < n_headers; i++)
        k += (size_t)snprintf(key + k, n - k, "\n%s\n%s", header_names[i], headers[i]);
    char file[64];
    snprintf(file, sizeof file, "cu-%s-%016llx.cubin", arch, (unsigned long long)fnv1a(key));
    tj_status st = TJ_OK;
    if (tjf_disk_cache_read(file, key, image, size)) {
        atomic_fetch_add(&n_read, 1);
    } else {
        char *cubin = NULL;
        atomic_fetch_add(&n_built, 1);
        st = tjcu_nvrtc_compile(name, source, arch, true, &cubin, size);
        if (st == TJ_OK) {
            tjf_disk_cache_write(file, key, cubin, *size); /* best effort: a miss next time */
            *image = cubin;
        }
    }
    tjc_free(key);
    return st;
}
