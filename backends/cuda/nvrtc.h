/* nvrtc.h — compiling tjit's CUDA sources with NVRTC, the toolkit's runtime
 * compiler (a library: it needs neither a GPU nor a driver). Every source is
 * compiled with tjcu_builtins.h as an in-memory header, C++17, without FMA
 * contraction (--fmad=false: the CPU's rounding, operation for operation),
 * for one architecture. Prefix tjcu_nvrtc_.
 */
#ifndef TJIT_CUDA_NVRTC_H
#define TJIT_CUDA_NVRTC_H

#include <stdbool.h>
#include <stddef.h>

#include "tjit/tjit.h"

/* Compiles source (named name in messages) for arch ("sm_90"; "compute_90"
 * for PTX only) to PTX, or to a cubin when want_cubin. *image is malloc'd
 * (the caller frees it) and NUL-terminated; *size does not count that NUL.
 * A compile error returns TJ_ERR_UNSUPPORTED with NVRTC's log. */
tj_status tjcu_nvrtc_compile(const char *name, const char *source, const char *arch, bool want_cubin,
                             char **image, size_t *size);

/* A cubin for arch from the disk kernel cache (fuser/disk_cache.h) when one
 * is configured and trusted, else compiled (and stored there). *image is
 * malloc'd. */
tj_status tjcu_nvrtc_compile_cached(const char *name, const char *source, const char *arch,
                                    void **image, size_t *size);
/* Compiles the n sources for arch on the machine's cores (NVRTC is thread
 * safe); each cubin waits in memory for the tjcu_nvrtc_compile_cached call of
 * the same source and arch, which takes it instead of compiling. Errors are
 * left for that call to report. */
void tjcu_nvrtc_precompile(const char *const *names, const char *const *sources, int n, const char *arch);
/* Since the process started: cubins compiled by NVRTC, and read from the
 * disk cache instead. */
void tjcu_nvrtc_cache_stats(long *built, long *read);

/* The options every source is compiled with besides the architecture,
 * "-std=c++17 --fmad=false" (part of any cache key for NVRTC's output). */
const char *tjcu_nvrtc_options(void);

/* NVRTC's version, "13.0" (part of any cache key for its output). */
const char *tjcu_nvrtc_version(void);

#endif
