/* driver_host.c — the host execution harness as a driver: device memory is
 * host memory, a stream is a token (launches run to completion, in order),
 * and modules are the same CUDA C compiled by the host C++ compiler and run by
 * the harness's fiber runner (harness.h). TJIT_CUDA_HOST_DEVICES sets how
 * many devices it shows (1 to 16; 1 by default). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "backends/cuda/driver.h"
#include "backends/cuda/harness.h"
#include "core/core.h"

enum { ALIGN = 256 }; /* what cuMemAlloc guarantees, so vectorised kernels may rely on it */

static int device_count(void) {
    const char *s = getenv("TJIT_CUDA_HOST_DEVICES");
    int n = s ? atoi(s) : 1;
    return n < 1 ? 1 : n > 16 ? 16 : n;
}

static void arch(int device, char *buf, size_t n) {
    (void)device;
    snprintf(buf, n, "host");
}

static int sm_count(int device) {
    (void)device;
    return omp_get_max_threads();
}

static tj_status mem_alloc(void *ctx, int device, size_t bytes, void **ptr) {
    (void)ctx, (void)device;
    *ptr = tjc_aligned_alloc(ALIGN, (bytes + ALIGN - 1) / ALIGN * ALIGN);
    return *ptr ? TJ_OK : tjc_error(TJ_ERR_MEMORY, "host harness: out of memory for %zu bytes",
                                    bytes);
}

static tj_status mem_free(void *ctx, int device, void *ptr) {
    (void)ctx, (void)device;
    tjc_free(ptr);
    return TJ_OK;
}

static char stream_token;
static tj_status stream_new(int device, void **stream) {
    (void)device;
    *stream = &stream_token;
    return TJ_OK;
}
static void stream_free(int device, void *stream) { (void)device, (void)stream; }
static tj_status stream_sync(int device, void *stream) {
    (void)device, (void)stream;
    return TJ_OK;
}

static tj_status copy(int device, void *dst, const void *src, size_t bytes, tjcu_copy_kind kind,
                      void *stream) {
    (void)device, (void)kind, (void)stream;
    memmove(dst, src, bytes);
    return TJ_OK;
}

static tj_status memset_d8(int device, void *dst, int byte, size_t bytes, void *stream) {
    (void)device, (void)stream;
    memset(dst, byte, bytes);
    return TJ_OK;
}

static tj_status module_load(int device, const char *name, const char *source, void **module) {
    (void)device; /* every device shares the host's compiled modules */
    return tjh_module_load(name, source, (tjh_module **)module);
}

static void module_unload(int device, void *module) {
    (void)device;
    tjh_module_unload(module);
}

static tj_status function(void *module, const char *kernel, void **fn) {
    return tjh_get_function(module, kernel, (tjh_function **)fn);
}

static tj_status launch(int device, void *fn, tjcu_dim3 grid, tjcu_dim3 block, size_t shared,
                        void *stream, void **args) {
    (void)device, (void)stream;
    return tjh_launch(fn, grid, block, shared, args);
}

/* Work is done when it is queued: an event is a token, always complete. */
static char event_token;
static tj_status event_new(int device, void **event) {
    (void)device;
    *event = &event_token;
    return TJ_OK;
}
static void event_free(int device, void *event) { (void)device, (void)event; }
static tj_status event_record(int device, void *event, void *stream) {
    (void)device, (void)event, (void)stream;
    return TJ_OK;
}
static tj_status event_query(int device, void *event, bool *done) {
    (void)device, (void)event;
    *done = true;
    return TJ_OK;
}
static tj_status stream_wait_event(int device, void *stream, void *event) {
    (void)device, (void)stream, (void)event;
    return TJ_OK;
}
static tj_status make_current(int device) {
    (void)device;
    return TJ_OK;
}

const tjcu_driver *tjcu_host_driver(void) {
    static const tjcu_driver driver = {
        .name = "host", .device_count = device_count, .arch = arch, .sm_count = sm_count,
        .mem_alloc = mem_alloc, .mem_free = mem_free, .stream_new = stream_new,
        .stream_free = stream_free, .stream_sync = stream_sync, .copy = copy,
        .memset = memset_d8, .module_load = module_load, .module_unload = module_unload,
        .function = function, .launch = launch, .event_new = event_new,
        .event_free = event_free, .event_record = event_record, .event_query = event_query,
        .stream_wait_event = stream_wait_event, .make_current = make_current,
        .has_libraries = false,
    };
    return &driver;
}
