/* harness.h — the host execution harness: tjit's own CUDA kernels, compiled
 * by the host C++ compiler against kernels/tjcu_builtins.h and run on the CPU
 * with a GPU's execution model, so every kernel is executed and checked on
 * machines without a GPU. Prefix tjh_. The calls mirror the driver's module
 * API (cuModuleLoadData, cuModuleGetFunction, cuLaunchKernel).
 *
 * Owns: compiling a kernel source to a shared object (cached on disk by a
 * hash of the source, the builtins header, the compiler and its flags),
 * loading it with dlopen, and the runner: a launch runs its blocks on the
 * OpenMP threads, one block per OS thread at a time, each block's threads as
 * cooperative fibers (warp size 32), so __syncthreads, __shared__ memory and
 * warp collectives behave as on a device. A barrier or warp collective that
 * some of its threads never reach is an error naming the kernel, not a hang.
 *
 * Files: harness_module.c (compile, cache, load), harness_run.c (the runner:
 * fibers and the launch), harness_sync.c (barriers and warp collectives).
 * The compiler is $TJIT_HOST_CXX, else $CXX, else c++; the cache directory is
 * $TJIT_CACHE_DIR when it is the user's own and not writable by others, else
 * a private temporary directory removed at exit. Fiber stacks are 64 KiB
 * (TJIT_HARNESS_STACK_KIB sets another size). Every function is thread-safe.
 */
#ifndef TJIT_CUDA_HARNESS_H
#define TJIT_CUDA_HARNESS_H

#include <stddef.h>

#include "backends/cuda/dim3.h"
#include "tjit/tjit.h"

typedef struct tjh_module tjh_module;
typedef struct tjh_function tjh_function;

/* Compiles (or finds in the cache) and loads a CUDA source; name names the
 * module in messages. A compile error returns TJ_ERR_UNSUPPORTED with the
 * compiler's first lines. Loading the same source again shares the module. */
tj_status tjh_module_load(const char *name, const char *source, tjh_module **out);
/* Compiles the n sources into the cache on the machine's cores (each a
 * compiler process), so that their tjh_module_load finds them there; errors
 * are left for that load to report. */
void tjh_precompile(const char *const *names, const char *const *sources, int n);
/* Drops one reference; the last one unloads the module and its functions. */
void tjh_module_unload(tjh_module *m);
/* The kernel exported by TJCU_EXPORT(kernel); owned by the module. */
tj_status tjh_get_function(tjh_module *m, const char *kernel, tjh_function **out);
const char *tjh_function_name(const tjh_function *f);
/* The kernel's parameters: returns their count and points *sizes at the bytes
 * of each (the first TJH_MAX_PARAMS; a kernel with more cannot be captured). */
#define TJH_MAX_PARAMS 64
int tjh_function_params(const tjh_function *f, const size_t **sizes);

/* Runs the grid to completion. args is CUDA's kernelParams: one pointer to
 * each parameter's value. Limits as a device's: at most 1024 threads a block
 * (z at most 64), grid y and z at most 65535, dynamic shared memory at most
 * TJH_MAX_DYNAMIC_SHARED bytes. */
#define TJH_MAX_DYNAMIC_SHARED (227u * 1024u)
tj_status tjh_launch(const tjh_function *f, tjcu_dim3 grid, tjcu_dim3 block, size_t dynamic_shared,
                     void **args);

typedef struct tjh_stats {
    long compiles;    /* sources compiled by the host compiler */
    long disk_hits;   /* shared objects found in the cache directory */
    long memory_hits; /* loads of a module already loaded */
    long launches;
} tjh_stats;
tjh_stats tjh_get_stats(void);

#endif
