/* driver_cuda.c — the real driver: libcuda loaded with dlopen (binaries never
 * link it, so they start on machines without a driver), each device's primary
 * context, streams, memory, copies, and modules compiled by NVRTC to cubin for
 * the device's architecture (kept in the disk kernel cache when one is set). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h> /* types and constants only: every entry point comes from dlsym */

#include "core/alloc.h"
#include "backends/cuda/driver.h"
#include "backends/cuda/nvrtc.h"
#include "core/core.h"

#define DRIVER_FUNCTIONS(X)                                                                      \
    X(cuInit, (unsigned))                                                                        \
    X(cuDeviceGetCount, (int *))                                                                 \
    X(cuDeviceGet, (CUdevice *, int))                                                            \
    X(cuDeviceGetAttribute, (int *, CUdevice_attribute, CUdevice))                               \
    X(cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                                         \
    X(cuCtxSetCurrent, (CUcontext))                                                              \
    X(cuMemAlloc_v2, (CUdeviceptr *, size_t))                                                    \
    X(cuMemFree_v2, (CUdeviceptr))                                                               \
    X(cuStreamCreate, (CUstream *, unsigned))                                                    \
    X(cuStreamDestroy_v2, (CUstream))                                                            \
    X(cuStreamSynchronize, (CUstream))                                                           \
    X(cuMemcpyHtoDAsync_v2, (CUdeviceptr, const void *, size_t, CUstream))                       \
    X(cuMemcpyDtoHAsync_v2, (void *, CUdeviceptr, size_t, CUstream))                             \
    X(cuMemcpyDtoDAsync_v2, (CUdeviceptr, CUdeviceptr, size_t, CUstream))                        \
    X(cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream))                           \
    X(cuModuleLoadData, (CUmodule *, const void *))                                              \
    X(cuModuleUnload, (CUmodule))                                                                \
    X(cuModuleGetFunction, (CUfunction *, CUmodule, const char *))                               \
    X(cuFuncSetAttribute, (CUfunction, CUfunction_attribute, int))                               \
    X(cuLaunchKernel, (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,   \
                       unsigned, CUstream, void **, void **))                                    \
    X(cuEventCreate, (CUevent *, unsigned))                                                      \
    X(cuEventDestroy_v2, (CUevent))                                                              \
    X(cuEventRecord, (CUevent, CUstream))                                                        \
    X(cuEventQuery, (CUevent))                                                                   \
    X(cuStreamWaitEvent, (CUstream, CUevent, unsigned))                                          \
    X(cuStreamBeginCapture_v2, (CUstream, CUstreamCaptureMode))                                  \
    X(cuStreamEndCapture, (CUstream, CUgraph *))                                                 \
    X(cuGraphInstantiateWithFlags, (CUgraphExec *, CUgraph, unsigned long long))                 \
    X(cuGraphLaunch, (CUgraphExec, CUstream))                                                    \
    X(cuGraphExecDestroy, (CUgraphExec))                                                         \
    X(cuGraphDestroy, (CUgraph))                                                                 \
    X(cuGetErrorString, (CUresult, const char **))                                               \
    X(cuGetErrorName, (CUresult, const char **))

#define DECLARE(name, params) static CUresult (*p_##name) params;
DRIVER_FUNCTIONS(DECLARE)

enum { MAX_DEVICES = 16 };
static struct {
    pthread_once_t once;
    int n_devices;
    char reason[256];
    CUcontext ctx[MAX_DEVICES];
    int major[MAX_DEVICES], minor[MAX_DEVICES], sm_count[MAX_DEVICES];
} D = {.once = PTHREAD_ONCE_INIT};

static tj_status cu_error(CUresult r, const char *call) {
    const char *name = NULL, *text = NULL;
    if (p_cuGetErrorName) p_cuGetErrorName(r, &name);
    if (p_cuGetErrorString) p_cuGetErrorString(r, &text);
    tj_status st = r == CUDA_ERROR_OUT_OF_MEMORY ? TJ_ERR_MEMORY : TJ_ERR_DEVICE;
    return tjc_error(st, "%s: %s (%s)", call, text ? text : "unknown CUDA error",
                     name ? name : "?");
}
#define CU(call, args) ((r = p_##call args) == CUDA_SUCCESS ? TJ_OK : cu_error(r, #call))

static void load(void) {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(D.reason, sizeof D.reason, "the CUDA driver (libcuda.so.1) is not installed");
        return;
    }
#define RESOLVE(name, params)                                                                  \
    if (!(p_##name = (CUresult(*) params)dlsym(lib, #name))) {                                 \
        snprintf(D.reason, sizeof D.reason, "libcuda.so.1 lacks %s (driver too old)", #name);  \
        return;                                                                                \
    }
    DRIVER_FUNCTIONS(RESOLVE)
    CUresult r = p_cuInit(0);
    int n = 0;
    if (r == CUDA_SUCCESS) r = p_cuDeviceGetCount(&n);
    if (r != CUDA_SUCCESS) {
        const char *text = NULL;
        p_cuGetErrorString(r, &text);
        snprintf(D.reason, sizeof D.reason, "the CUDA driver found no usable GPU: %s",
                 text ? text : "unknown error");
        return;
    }
    if (n == 0) snprintf(D.reason, sizeof D.reason, "the CUDA driver reports no GPU");
    if (n > MAX_DEVICES) n = MAX_DEVICES;
    for (int i = 0; i < n; i++) {
        CUdevice dev;
        if (p_cuDeviceGet(&dev, i) || p_cuDevicePrimaryCtxRetain(&D.ctx[i], dev) ||
            p_cuDeviceGetAttribute(&D.major[i], CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) ||
            p_cuDeviceGetAttribute(&D.minor[i], CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) ||
            p_cuDeviceGetAttribute(&D.sm_count[i], CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) {
            snprintf(D.reason, sizeof D.reason, "GPU %d could not be opened", i);
            n = i;
            break;
        }
    }
    D.n_devices = n;
}

/* Every call works in the device's primary context, made current per thread. */
static tj_status use(int device) {
    CUresult r;
    return CU(cuCtxSetCurrent, (D.ctx[device]));
}

static int device_count(void) {
    pthread_once(&D.once, load);
    if (D.n_devices == 0) tjc_error(TJ_ERR_DEVICE, "%s", D.reason);
    return D.n_devices;
}

static void arch(int device, char *buf, size_t n) {
    snprintf(buf, n, "sm_%d%d", D.major[device], D.minor[device]);
}
static int sm_count(int device) { return D.sm_count[device]; }

static tj_status mem_alloc(void *ctx, int device, size_t bytes, void **ptr) {
    (void)ctx;
    CUresult r;
    CUdeviceptr p = 0;
    tj_status st = use(device);
    if (!st) st = CU(cuMemAlloc_v2, (&p, bytes ? bytes : 1));
    *ptr = (void *)(uintptr_t)p;
    return st;
}

static tj_status mem_free(void *ctx, int device, void *ptr) {
    (void)ctx;
    CUresult r;
    tj_status st = use(device);
    return st ? st : CU(cuMemFree_v2, ((CUdeviceptr)(uintptr_t)ptr));
}

static tj_status stream_new(int device, void **stream) {
    CUresult r;
    tj_status st = use(device);
    return st ? st : CU(cuStreamCreate, ((CUstream *)stream, CU_STREAM_NON_BLOCKING));
}

static void stream_free(int device, void *stream) {
    if (use(device) == TJ_OK) p_cuStreamDestroy_v2((CUstream)stream);
}

static tj_status stream_sync(int device, void *stream) {
    CUresult r;
    tj_status st = use(device);
    return st ? st : CU(cuStreamSynchronize, ((CUstream)stream));
}

static tj_status copy(int device, void *dst, const void *src, size_t bytes, tjcu_copy_kind kind,
                      void *stream) {
    CUresult r;
    tj_status st = use(device);
    CUstream s = (CUstream)stream;
    if (st) return st;
    switch (kind) {
    case TJCU_H2D: st = CU(cuMemcpyHtoDAsync_v2, ((CUdeviceptr)(uintptr_t)dst, src, bytes, s)); break;
    case TJCU_D2H:
        st = CU(cuMemcpyDtoHAsync_v2, (dst, (CUdeviceptr)(uintptr_t)src, bytes, s));
        if (!st) st = CU(cuStreamSynchronize, (s)); /* the host may read dst on return */
        break;
    case TJCU_D2D:
        st = CU(cuMemcpyDtoDAsync_v2, ((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src,
                                       bytes, s));
        break;
    }
    return st;
}

static tj_status memset_d8(int device, void *dst, int byte, size_t bytes, void *stream) {
    CUresult r;
    tj_status st = use(device);
    return st ? st : CU(cuMemsetD8Async, ((CUdeviceptr)(uintptr_t)dst, (unsigned char)byte, bytes,
                                          (CUstream)stream));
}

static void precompile(int device, const char *const *names, const char *const *sources, int n) {
    char sm[16];
    arch(device, sm, sizeof sm);
    tjcu_nvrtc_precompile(names, sources, n, sm);
}

static tj_status module_load(int device, const char *name, const char *source, void **module) {
    char sm[16];
    arch(device, sm, sizeof sm);
    void *image = NULL;
    size_t size = 0;
    tj_status st = tjcu_nvrtc_compile_cached(name, source, sm, &image, &size);
    if (st) return st;
    CUresult r;
    st = use(device);
    if (!st) st = CU(cuModuleLoadData, ((CUmodule *)module, image));
    tjc_free(image);
    return st;
}

static void module_unload(int device, void *module) {
    if (use(device) == TJ_OK) p_cuModuleUnload((CUmodule)module);
}

static tj_status function(void *module, const char *kernel, void **fn) {
    CUresult r;
    return CU(cuModuleGetFunction, ((CUfunction *)fn, (CUmodule)module, kernel));
}

static tj_status launch(int device, void *fn, tjcu_dim3 g, tjcu_dim3 b, size_t shared,
                        void *stream, void **args) {
    CUresult r;
    tj_status st = use(device);
    if (!st && shared > 48 * 1024) /* dynamic shared memory beyond the default needs opting in */
        st = CU(cuFuncSetAttribute, ((CUfunction)fn,
                                     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared));
    if (!st)
        st = CU(cuLaunchKernel, ((CUfunction)fn, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)shared,
                                 (CUstream)stream, args, NULL));
    return st;
}

static tj_status event_new(int device, void **event) {
    CUresult r;
    tj_status st = use(device);
    return st ? st : CU(cuEventCreate, ((CUevent *)event, CU_EVENT_DISABLE_TIMING));
}

static void event_free(int device, void *event) {
    if (use(device) == TJ_OK) p_cuEventDestroy_v2((CUevent)event);
}

static tj_status event_record(int device, void *event, void *stream) {
    CUresult r;
    tj_status st = use(device);
    return st ? st : CU(cuEventRecord, ((CUevent)event, (CUstream)stream));
}

static tj_status event_query(int device, void *event, bool *done) {
    CUresult r;
    *done = false;
    tj_status st = use(device);
    if (st) return st;
    r = p_cuEventQuery((CUevent)event);
    if (r == CUDA_ERROR_NOT_READY) return TJ_OK;
    *done = true;
    return r == CUDA_SUCCESS ? TJ_OK : cu_error(r, "cuEventQuery");
}

static tj_status stream_wait_event(int device, void *stream, void *event) {
    CUresult r;
    tj_status st = use(device);
    return st ? st : CU(cuStreamWaitEvent, ((CUstream)stream, (CUevent)event, 0));
}

/* Relaxed capture mode. The captured region is the plan's kernels on the
 * capturing thread's own stream; the modes differ only in which other CUDA
 * calls they forbid while it runs. GLOBAL would make every other thread's
 * cuMemAlloc (another program's replay, a tensor allocated meanwhile) fail
 * and spoil this capture; THREAD_LOCAL still forbids them on the capturing
 * thread, where the caching allocator may have to take a new segment for a
 * kernel's scratch memory (the graph keeps that memory; backends/cuda/device.c).
 * Neither call touches the captured stream, so nothing is lost by allowing
 * them; what does conflict with the capture (a synchronisation, a host copy
 * on the stream) still fails in relaxed mode. */
static tj_status capture_begin(int device, void *stream) {
    CUresult r;
    tj_status st = use(device);
    return st ? st : CU(cuStreamBeginCapture_v2, ((CUstream)stream, CU_STREAM_CAPTURE_MODE_RELAXED));
}

static tj_status capture_end(int device, void *stream, void **graph) {
    CUresult r;
    CUgraph g = NULL;
    CUgraphExec exec = NULL;
    *graph = NULL;
    tj_status st = use(device);
    if (!st) st = CU(cuStreamEndCapture, ((CUstream)stream, &g)); /* ends even a spoiled capture */
    if (!st) st = CU(cuGraphInstantiateWithFlags, (&exec, g, 0));
    if (g) p_cuGraphDestroy(g); /* the executable graph is a copy */
    if (!st) *graph = exec;
    return st;
}

static tj_status graph_launch(int device, void *graph, void *stream) {
    CUresult r;
    tj_status st = use(device);
    return st ? st : CU(cuGraphLaunch, ((CUgraphExec)graph, (CUstream)stream));
}

static void graph_free(int device, void *graph) {
    if (graph && use(device) == TJ_OK) p_cuGraphExecDestroy((CUgraphExec)graph);
}

const tjcu_driver *tjcu_cuda_driver(void) {
    static const tjcu_driver driver = {
        .name = "cuda", .device_count = device_count, .arch = arch, .sm_count = sm_count,
        .mem_alloc = mem_alloc, .mem_free = mem_free, .stream_new = stream_new,
        .stream_free = stream_free, .stream_sync = stream_sync, .copy = copy,
        .memset = memset_d8, .module_load = module_load, .precompile = precompile, .module_unload = module_unload,
        .function = function, .launch = launch, .event_new = event_new,
        .event_free = event_free, .event_record = event_record, .event_query = event_query,
        .stream_wait_event = stream_wait_event, .make_current = use,
        .capture_begin = capture_begin, .capture_end = capture_end, .graph_launch = graph_launch,
        .graph_free = graph_free, .has_libraries = true,
    };
    pthread_once(&D.once, load);
    if (D.n_devices == 0) {
        tjc_error(TJ_ERR_DEVICE, "%s", D.reason);
        return NULL;
    }
    return &driver;
}

const char *tjcu_cuda_driver_reason(void) {
    pthread_once(&D.once, load);
    return D.reason;
}
