/* sources.h — tjit's CUDA C sources as the library holds them: every
 * .cu file of backends/cuda/kernels and tjcu_builtins.h, embedded at build time
 * (embed.cmake writes the table), and the sources other modules generate at
 * run time, which they list through a provider. Every kernel source is
 * compiled both by NVRTC (nvrtc.h) and by the host execution harness
 * (harness.h); the NVRTC test walks them all with tjcu_for_each_source.
 * Prefix tjcu_.
 */
#ifndef TJIT_CUDA_SOURCES_H
#define TJIT_CUDA_SOURCES_H

#include <stdbool.h>

#include "tjit/tjit.h"

typedef struct tjcu_source {
    const char *name; /* the file's name: "selftest.cu", "tjcu_builtins.h" */
    const char *text;
} tjcu_source;

/* the generated table (build/generated/cuda_sources.c) */
extern const tjcu_source tjcu_embedded_sources[];
extern const int tjcu_n_embedded_sources;

/* The embedded file of that name, or NULL. */
const char *tjcu_source_text(const char *name);
/* The embedded headers (tjcu_builtins.h and the kernels' shared .h files),
 * which both compilers get so that a source may include any of them: up to
 * cap names and texts; returns how many there are. */
int tjcu_headers(const char **names, const char **texts, int cap);
#define TJCU_MAX_HEADERS 16

/* Called with each kernel source; returns false to stop the walk. */
typedef bool (*tjcu_source_fn)(void *ctx, const char *name, const char *text);
/* A provider calls fn with each source it generates and returns false when fn did. */
typedef bool (*tjcu_source_provider)(tjcu_source_fn fn, void *ctx);

/* Walks the embedded .cu sources, then each provider's, in the order the
 * providers were added. Returns false when fn stopped the walk. */
bool tjcu_for_each_source(tjcu_source_fn fn, void *ctx);
/* At most TJCU_MAX_PROVIDERS; adding one twice adds it once. */
#define TJCU_MAX_PROVIDERS 16
tj_status tjcu_add_source_provider(tjcu_source_provider p);
void tjcu_remove_source_provider(tjcu_source_provider p);

/* Calls fn(ctx, i) for every i in [0, n) on the machine's cores (at most 16
 * threads, the caller's among them): compilers of many sources at once. */
void tjcu_parallel_for(int n, void (*fn)(void *ctx, int i), void *ctx);

#endif
