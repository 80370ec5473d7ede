/* device.c — the TJ_CUDA device backend: the driver in use, per-device state
 * (a caching allocator, launch counts), one stream per device per thread
 * (and the graph it captures, if any), copies, and the kernel table it
 * registers with core/. Launching lives in launch.c, graphs in graph.c. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "backends/cuda/alloc.h"
#include "backends/cuda/cuda.h"
#include "backends/cuda/driver.h"
#include "backends/cuda/fusion.h"
#include "backends/cuda/internal.h"

typedef struct device_state {
    tjcu_allocator *_Atomic alloc; /* made on first use */
    atomic_uint_fast64_t kernel_launches, graph_launches;
} device_state;

static struct {
    pthread_once_t once;
    const tjcu_driver *drv;
    int n_devices;
    device_state dev[TJCU_MAX_DEVICES];
    pthread_key_t streams_key;
} S = {.once = PTHREAD_ONCE_INIT};

/* The calling thread's streams and the last kernel it launched on each (an
 * asynchronous error found at the next synchronisation is named by it). */
typedef struct thread_streams {
    void *stream[TJCU_MAX_DEVICES];
    const char *last_kernel[TJCU_MAX_DEVICES];
    tjcu_graph *capturing[TJCU_MAX_DEVICES]; /* the graph this thread records on the stream */
} thread_streams;
static _Thread_local thread_streams *my_streams;

static void free_thread_streams(void *p) {
    thread_streams *ts = p;
    for (int d = 0; d < TJCU_MAX_DEVICES; d++)
        if (ts->stream[d]) S.drv->stream_free(d, ts->stream[d]);
    tjc_free(ts);
}

static void init_state(void) {
    S.drv = tjcu_current_driver();
    S.n_devices = S.drv ? S.drv->device_count() : 0;
    if (S.n_devices > TJCU_MAX_DEVICES) S.n_devices = TJCU_MAX_DEVICES;
    pthread_key_create(&S.streams_key, free_thread_streams);
}

const tjcu_driver *tjcu_state_driver(void) {
    pthread_once(&S.once, init_state);
    return S.drv;
}

static int device_count(void) {
    pthread_once(&S.once, init_state);
    if (S.n_devices == 0 && !tj_last_status())
        tjc_error(TJ_ERR_DEVICE, "no CUDA device: %s", tjcu_driver_unavailable_reason());
    return S.n_devices;
}

tj_status tjcu_check_device(const char *what, tj_device dev) {
    pthread_once(&S.once, init_state);
    if (dev.type != TJ_CUDA || dev.index < 0 || dev.index >= S.n_devices)
        return tjc_error(TJ_ERR_DEVICE, "%s: cuda:%d is not an available CUDA device (%d found%s%s)",
                         what, dev.index, S.n_devices, S.n_devices ? "" : ": ",
                         S.n_devices ? "" : tjcu_driver_unavailable_reason());
    return TJ_OK;
}

/* ---- streams ------------------------------------------------------------------------ */

void *tjcu_stream(tj_device dev) {
    if (tjcu_check_device("tjcu_stream", dev)) return NULL;
    if (!my_streams) {
        my_streams = tjc_calloc(1, sizeof *my_streams);
        if (!my_streams) return tjc_error(TJ_ERR_MEMORY, "out of memory"), NULL;
        pthread_setspecific(S.streams_key, my_streams);
    }
    void **s = &my_streams->stream[dev.index];
    if (!*s && S.drv->stream_new(dev.index, s)) return NULL;
    return *s;
}

void tjcu_note_launch(tj_device dev, const char *kernel) {
    if (!my_streams) return;
    my_streams->last_kernel[dev.index] = kernel;
    if (!my_streams->capturing[dev.index])
        atomic_fetch_add_explicit(&S.dev[dev.index].kernel_launches, 1, memory_order_relaxed);
}

void tjcu_note_graph_launch(tj_device dev) {
    if (my_streams) my_streams->last_kernel[dev.index] = "a captured graph";
    atomic_fetch_add_explicit(&S.dev[dev.index].graph_launches, 1, memory_order_relaxed);
}

tjcu_launch_counts tjcu_get_launch_counts(tj_device dev) {
    if (tjcu_check_device("tjcu_get_launch_counts", dev)) return (tjcu_launch_counts){0, 0};
    return (tjcu_launch_counts){atomic_load(&S.dev[dev.index].kernel_launches),
                                atomic_load(&S.dev[dev.index].graph_launches)};
}

tjcu_graph *tjcu_capturing(tj_device dev) {
    return my_streams ? my_streams->capturing[dev.index] : NULL;
}

tj_status tjcu_set_capturing(tj_device dev, tjcu_graph *g) {
    if (!tjcu_stream(dev)) return tj_last_status(); /* makes my_streams */
    my_streams->capturing[dev.index] = g;
    return TJ_OK;
}

static tj_status sync_stream(tj_device dev) {
    void *s = tjcu_stream(dev);
    if (!s) return tj_last_status();
    tj_status st = S.drv->stream_sync(dev.index, s);
    if (st && my_streams->last_kernel[dev.index]) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tj_last_error());
        tjc_error(st, "cuda:%d: an asynchronous error (the last kernel launched on this thread's "
                  "stream was %s): %s", dev.index, my_streams->last_kernel[dev.index], msg);
    }
    if (st == TJ_OK) my_streams->last_kernel[dev.index] = NULL;
    return st;
}

static tj_status synchronize(int index) { return sync_stream((tj_device){TJ_CUDA, index}); }

/* ---- memory -------------------------------------------------------------------------- */

static tj_status raw_alloc(void *ctx, int device, size_t bytes, void **ptr) {
    (void)ctx;
    return S.drv->mem_alloc(NULL, device, bytes, ptr);
}
static tj_status raw_free(void *ctx, int device, void *ptr) {
    (void)ctx;
    return S.drv->mem_free(NULL, device, ptr);
}

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

static device_state *state_of(tj_device dev) {
    if (tjcu_check_device("cuda", dev)) return NULL;
    device_state *ds = &S.dev[dev.index];
    tjcu_allocator *a = atomic_load_explicit(&ds->alloc, memory_order_acquire);
    if (!a) {
        pthread_mutex_lock(&init_lock);
        if (!(a = atomic_load_explicit(&ds->alloc, memory_order_relaxed))) {
            tjcu_raw_allocator raw = {.ctx = NULL, .alloc = raw_alloc, .free = raw_free};
            a = tjcu_allocator_new(&raw, dev.index);
            atomic_store_explicit(&ds->alloc, a, memory_order_release);
        }
        pthread_mutex_unlock(&init_lock);
    }
    if (!a) return tjc_error(TJ_ERR_MEMORY, "cuda:%d: out of memory", dev.index), NULL;
    return ds;
}

void *tjcu_malloc(tj_device dev, size_t bytes) {
    device_state *ds = state_of(dev);
    void *stream = ds ? tjcu_stream(dev) : NULL;
    void *p = NULL;
    if (!stream || tjcu_allocator_malloc(ds->alloc, bytes, stream, &p) != TJ_OK) return NULL;
    return p;
}

void tjcu_release_block(tj_device dev, void *ptr) {
    if (ptr) tjcu_allocator_release(S.dev[dev.index].alloc, ptr);
}

void tjcu_free(tj_device dev, void *ptr) {
    if (!ptr) return;
    tjcu_graph *g = tjcu_capturing(dev);
    if (g) tjcu_graph_keep(g, ptr);
    else tjcu_release_block(dev, ptr);
}

static void *backend_alloc(int index, size_t nbytes) {
    /* an empty tensor still gets a block: storage data is never NULL */
    return tjcu_malloc((tj_device){TJ_CUDA, index}, nbytes ? nbytes : 1);
}
static void backend_release(int index, void *data) {
    tjcu_free((tj_device){TJ_CUDA, index}, data);
}

static tj_status memory_stats(int index, tj_memory_stats *out) {
    device_state *ds = state_of((tj_device){TJ_CUDA, index});
    if (!ds) return tj_last_status();
    tjcu_memory_stats s;
    tjcu_allocator_stats(ds->alloc, &s);
    *out = (tj_memory_stats){.allocated = s.allocated, .reserved = s.reserved,
                             .peak_allocated = s.peak_allocated, .peak_reserved = s.peak_reserved,
                             .driver_allocs = s.n_alloc_calls, .driver_frees = s.n_free_calls,
                             .cache_hits = s.n_cache_hits, .oom_retries = s.n_oom_retries};
    return TJ_OK;
}

static tj_status empty_cache(int index) {
    device_state *ds = state_of((tj_device){TJ_CUDA, index});
    if (!ds) return tj_last_status();
    tj_status st = synchronize(index); /* cached blocks may still be read by queued work */
    return st ? st : tjcu_allocator_empty_cache(ds->alloc);
}

/* ---- copies ---------------------------------------------------------------------------- */

static tj_status copy_on(tj_device dev, void *dst, const void *src, size_t bytes,
                         tjcu_copy_kind kind) {
    void *s = tjcu_stream(dev);
    if (!s) return tj_last_status();
    return S.drv->copy(dev.index, dst, src, bytes, kind, s);
}

tj_status tjcu_copy_to_host(tj_device dev, void *dst, const void *src, size_t bytes) {
    return bytes ? copy_on(dev, dst, src, bytes, TJCU_D2H) : TJ_OK;
}
tj_status tjcu_copy_from_host(tj_device dev, void *dst, const void *src, size_t bytes) {
    return bytes ? copy_on(dev, dst, src, bytes, TJCU_H2D) : TJ_OK;
}
tj_status tjcu_copy_d2d(tj_device dev, void *dst, const void *src, size_t bytes) {
    return bytes ? copy_on(dev, dst, src, bytes, TJCU_D2D) : TJ_OK;
}
tj_status tjcu_memset(tj_device dev, void *dst, int byte, size_t bytes) {
    void *s = bytes ? tjcu_stream(dev) : NULL;
    if (bytes && !s) return tj_last_status();
    return bytes ? S.drv->memset(dev.index, dst, byte, bytes, s) : TJ_OK;
}

static tj_status backend_copy(void *dst, tj_device dd, const void *src, tj_device sd,
                              size_t nbytes) {
    if (dd.type == TJ_CUDA && sd.type == TJ_CUDA) {
        if (dd.index == sd.index) return tjcu_copy_d2d(dd, dst, src, nbytes);
        /* between two devices: through the host, after the source's work */
        void *host = tjc_malloc(nbytes);
        if (!host) return tjc_error(TJ_ERR_MEMORY, "copy between CUDA devices: out of memory");
        tj_status st = tjcu_copy_to_host(sd, host, src, nbytes);
        if (!st) st = tjcu_copy_from_host(dd, dst, host, nbytes);
        if (!st) st = sync_stream(dd);
        tjc_free(host);
        return st;
    }
    if (dd.type == TJ_CUDA) {
        tj_status st = tjcu_copy_from_host(dd, dst, src, nbytes);
        return st ? st : sync_stream(dd); /* the host buffer may be freed on return */
    }
    return tjcu_copy_to_host(sd, dst, src, nbytes);
}

bool tjcu_has_libraries(tj_device dev) {
    return tjcu_check_device("cuda", dev) == TJ_OK && S.drv->has_libraries;
}

int tjcu_sm_count(tj_device dev) {
    return tjcu_check_device("cuda", dev) == TJ_OK ? S.drv->sm_count(dev.index) : 1;
}

/* ---- registration ---------------------------------------------------------------------- */

void tjcu_register(void) {
    static tjc_device_backend cuda = {
        .type = TJ_CUDA,
        .name = "cuda",
        .device_count = device_count,
        .alloc = backend_alloc,
        .release = backend_release,
        .copy = backend_copy,
        .synchronize = synchronize,
        .memory_stats = memory_stats,
        .empty_cache = empty_cache,
        .capture_begin = tjcu_graph_capture_begin,
        .capture_end = tjcu_graph_capture_end,
        .graph_acquire = tjcu_graph_acquire,
        .graph_launch = tjcu_graph_launch,
        .graph_release = tjcu_graph_release,
        .graph_free = tjcu_graph_free,
    };
    cuda.fusion = tjcu_fuse_backend();
#define REGISTER_FAMILY(f) tjcu_register_##f(cuda.kernels);
    TJCU_FAMILIES(REGISTER_FAMILY)
    tjc_register_device_backend(&cuda);
}
