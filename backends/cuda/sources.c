/* sources.c — lookups in the embedded table and the walk over every kernel
 * source, embedded and generated (sources.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "core/core.h"
#include "sources.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static tjcu_source_provider providers[TJCU_MAX_PROVIDERS];
static int n_providers;

const char *tjcu_source_text(const char *name) {
    for (int i = 0; name && i < tjcu_n_embedded_sources; i++)
        if (!strcmp(tjcu_embedded_sources[i].name, name)) return tjcu_embedded_sources[i].text;
    return NULL;
}

static bool is_kernel_source(const char *name) {
    size_t n = strlen(name);
    return n > 3 && !strcmp(name + n - 3, ".cu");
}

int tjcu_headers(const char **names, const char **texts, int cap) {
    int n = 0;
    for (int i = 0; i < tjcu_n_embedded_sources; i++) {
        const char *name = tjcu_embedded_sources[i].name;
        size_t len = strlen(name);
        if (len < 2 || strcmp(name + len - 2, ".h")) continue;
        if (n < cap) {
            names[n] = name;
            texts[n] = tjcu_embedded_sources[i].text;
        }
        n++;
    }
    return n;
}

bool tjcu_for_each_source(tjcu_source_fn fn, void *ctx) {
    for (int i = 0; i < tjcu_n_embedded_sources; i++)
        if (is_kernel_source(tjcu_embedded_sources[i].name) &&
            !fn(ctx, tjcu_embedded_sources[i].name, tjcu_embedded_sources[i].text))
            return false;
    /* a snapshot, so a provider may take its time without holding the lock */
    pthread_mutex_lock(&lock);
    tjcu_source_provider list[TJCU_MAX_PROVIDERS];
    int n = n_providers;
    memcpy(list, providers, sizeof list);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < n; i++)
        if (!list[i](fn, ctx)) return false;
    return true;
}

tj_status tjcu_add_source_provider(tjcu_source_provider p) {
    if (!p) return tjc_error(TJ_ERR_ARG, "tjcu_add_source_provider: no provider");
    tj_status s = TJ_OK;
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < n_providers && providers[i] != p) i++;
    if (i == n_providers) {
        if (n_providers == TJCU_MAX_PROVIDERS)
            s = tjc_error(TJ_ERR_UNSUPPORTED, "tjcu_add_source_provider: already %d providers", TJCU_MAX_PROVIDERS);
        else
            providers[n_providers++] = p;
    }
    pthread_mutex_unlock(&lock);
    return s;
}

void tjcu_remove_source_provider(tjcu_source_provider p) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_providers; i++)
        if (providers[i] == p) {
            memmove(providers + i, providers + i + 1, (size_t)(n_providers - i - 1) * sizeof *providers);
            n_providers--;
            break;
        }
    pthread_mutex_unlock(&lock);
}

typedef struct parallel_job {
    void (*fn)(void *ctx, int i);
    void *ctx;
    int n;
    atomic_int next;
} parallel_job;

static void *parallel_worker(void *arg) {
    parallel_job *job = arg;
    for (int i; (i = atomic_fetch_add(&job->next, 1)) < job->n;) job->fn(job->ctx, i);
    return NULL;
}

void tjcu_parallel_for(int n, void (*fn)(void *ctx, int i), void *ctx) {
    enum { MAX_THREADS = 16 };
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = (int)(cpus < 1 ? 1 : cpus > MAX_THREADS ? MAX_THREADS : cpus);
    if (threads > n) threads = n;
    parallel_job job = {fn, ctx, n, 0};
    pthread_t t[MAX_THREADS];
    int started = 0;
    for (int i = 1; i < threads; i++)
        if (pthread_create(&t[started], NULL, parallel_worker, &job) == 0) started++;
    parallel_worker(&job); /* when no thread starts, the caller does it all */
    for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
}
