/* driver.h — what the CUDA backend needs from a device driver, and the two
 * drivers that provide it (prefix tjcu_):
 *   "cuda"  libcuda, loaded with dlopen (never linked, so binaries start where
 *           no driver is installed); modules are NVRTC's cubin for the
 *           device's architecture (driver_cuda.c);
 *   "host"  the host execution harness: device memory is host memory, and
 *           modules are the same CUDA C compiled by the host C++ compiler and
 *           run with each block's threads as cooperative fibers (driver_host.c,
 *           harness*.c).
 * TJIT_CUDA_DRIVER=host|cuda picks one; unset, "cuda" is used when it finds a
 * GPU and there is no CUDA device otherwise. Everything above this interface
 * (the allocator, streams, module cache, op kernels) is the same for both.
 * Functions return a tj_status with the error set; `what` names the op or
 * call in messages. */
#ifndef TJIT_CUDA_DRIVER_H
#define TJIT_CUDA_DRIVER_H

#include <stdbool.h>
#include <stddef.h>

#include "backends/cuda/dim3.h"
#include "tjit/tjit.h"

typedef enum tjcu_copy_kind { TJCU_H2D, TJCU_D2H, TJCU_D2D } tjcu_copy_kind;

typedef struct tjcu_driver {
    const char *name;
    /* Devices usable now; 0 with the reason in the error state when none. */
    int (*device_count)(void);
    /* NVRTC's architecture ("sm_90"), or "host" */
    void (*arch)(int device, char *buf, size_t n);
    int (*sm_count)(int device);
    /* the caching allocator's raw memory; alloc fails with TJ_ERR_MEMORY */
    tj_status (*mem_alloc)(void *ctx, int device, size_t bytes, void **ptr);
    tj_status (*mem_free)(void *ctx, int device, void *ptr);
    tj_status (*stream_new)(int device, void **stream);
    void (*stream_free)(int device, void *stream);
    /* Waits for the stream's work; an asynchronous kernel error surfaces here
     * (the caller names the last kernel launched on the stream). */
    tj_status (*stream_sync)(int device, void *stream);
    /* Queued on stream; a copy with a host side has finished on return. */
    tj_status (*copy)(int device, void *dst, const void *src, size_t bytes, tjcu_copy_kind kind,
                      void *stream);
    tj_status (*memset)(int device, void *dst, int byte, size_t bytes, void *stream);
    /* Compiles (or finds in the disk cache) and loads CUDA C for device. */
    tj_status (*module_load)(int device, const char *name, const char *source, void **module);
    /* Compiles sources for device on the machine's cores ahead of their
     * module_load, which then only loads (many modules at once: the fuser's
     * batches); errors are left for module_load. */
    void (*precompile)(int device, const char *const *names, const char *const *sources, int n);
    void (*module_unload)(int device, void *module);
    tj_status (*function)(void *module, const char *kernel, void **fn);
    tj_status (*launch)(int device, void *fn, tjcu_dim3 grid, tjcu_dim3 block, size_t shared,
                        void *stream, void **args);
    /* Events mark a point in a stream's work, for work outside the backend
     * (NCCL's collectives, distributed/nccl.c) to be ordered after a
     * thread's stream and to be tested for completion. The harness runs
     * everything at once: its events are always complete. */
    tj_status (*event_new)(int device, void **event);
    void (*event_free)(int device, void *event);
    tj_status (*event_record)(int device, void *event, void *stream);
    /* *done once the work queued before the last record has finished; an
     * asynchronous error of that work surfaces here */
    tj_status (*event_query)(int device, void *event, bool *done);
    /* Work queued on stream later waits for event, without blocking the host. */
    tj_status (*stream_wait_event)(int device, void *stream, void *event);
    /* Makes device current on the calling thread, for libraries that take
     * the device from there (NCCL). */
    tj_status (*make_current)(int device);
    /* Stream capture: between capture_begin and capture_end, the work queued
     * on stream (launches, device-to-device copies, memsets) is recorded
     * into a graph instead of run; capture_end turns it into an executable
     * graph, which graph_launch runs on any stream of the device as one
     * launch and graph_free destroys. Work that cannot be recorded (a copy
     * with a host side, waiting for the stream, events) fails while the
     * stream captures and spoils the capture: capture_end then fails too
     * (and always ends the capture). The real driver captures in relaxed
     * mode (driver_cuda.c says why); the harness records the launches with
     * a copy of their argument blocks and replays them in order. */
    tj_status (*capture_begin)(int device, void *stream);
    tj_status (*capture_end)(int device, void *stream, void **graph);
    tj_status (*graph_launch)(int device, void *graph, void *stream);
    void (*graph_free)(int device, void *graph);
    /* cuBLAS and cuDNN can be used on this driver's devices */
    bool has_libraries;
} tjcu_driver;

/* The drivers; NULL (with the reason set) when one cannot be loaded. */
const tjcu_driver *tjcu_cuda_driver(void);
const tjcu_driver *tjcu_host_driver(void);
/* The driver in use (chosen once, from TJIT_CUDA_DRIVER), or NULL. */
const tjcu_driver *tjcu_current_driver(void);
/* Why no driver is in use ("" when one is). */
const char *tjcu_driver_unavailable_reason(void);

#endif
