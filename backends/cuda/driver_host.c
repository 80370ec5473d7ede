/* driver_host.c — the host execution harness as a driver: device memory is
 * host memory, a stream is a small record (launches run to completion, in
 * order, when queued), and modules are the same CUDA C compiled by the host
 * C++ compiler and run by the harness's fiber runner (harness.h).
 * TJIT_CUDA_HOST_DEVICES sets how many devices it shows (1 to 16; 1 by
 * default).
 *
 * Stream capture is faithful to the real driver's: while a stream captures,
 * what is queued on it is recorded instead of run (a launch with a copy of
 * its argument block, sized by the kernel's parameter layout; a
 * device-to-device copy; a memset), and work a graph cannot hold (a copy
 * with a host side, a wait for the stream, events) fails and spoils the
 * capture, as cuStreamBeginCapture's does. A graph launch runs the recorded
 * list in order. */
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

/* ---- streams and capture ---------------------------------------------------------- */

typedef enum node_kind { NODE_LAUNCH, NODE_COPY, NODE_MEMSET } node_kind;

/* One recorded piece of work. A launch owns a copy of its arguments: args[i]
 * points into block, as kernelParams points at the caller's values. */
typedef struct graph_node {
    node_kind kind;
    const tjh_function *fn;
    tjcu_dim3 grid, block;
    size_t shared;
    void **args;
    void *dst;
    const void *src;
    int byte;
    size_t bytes;
} graph_node;

typedef struct host_graph {
    graph_node *nodes;
    int n, cap;
    bool spoiled;      /* something queued during the capture could not be recorded */
    char reason[512];  /* what */
} host_graph;

typedef struct host_stream {
    int device;
    host_graph *capturing; /* the graph being recorded, or NULL */
} host_stream;

static void graph_free(int device, void *graph) {
    (void)device;
    host_graph *g = graph;
    if (!g) return;
    for (int i = 0; i < g->n; i++) tjc_free(g->nodes[i].args);
    tjc_free(g->nodes);
    tjc_free(g);
}

static tj_status stream_new(int device, void **stream) {
    host_stream *s = tjc_calloc(1, sizeof *s);
    if (!s) return tjc_error(TJ_ERR_MEMORY, "host harness: out of memory for a stream");
    s->device = device;
    *stream = s;
    return TJ_OK;
}

static void stream_free(int device, void *stream) {
    host_stream *s = stream;
    if (s) graph_free(device, s->capturing);
    tjc_free(s);
}

/* Work the capture cannot hold: an error, and the capture is spoiled. */
static tj_status refuse(host_stream *s, const char *what) {
    host_graph *g = s->capturing;
    if (!g->spoiled) snprintf(g->reason, sizeof g->reason, "%s", what);
    g->spoiled = true;
    return tjc_error(TJ_ERR_UNSUPPORTED, "cuda:%d: %s while the stream is being captured into a "
                     "graph", s->device, what);
}

static graph_node *add_node(host_stream *s) {
    host_graph *g = s->capturing;
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 64;
        graph_node *nodes = tjc_realloc(g->nodes, (size_t)cap * sizeof *nodes);
        if (!nodes) {
            refuse(s, "out of memory for the graph's nodes");
            tjc_error(TJ_ERR_MEMORY, "cuda:%d: out of memory recording a graph", s->device);
            return NULL;
        }
        g->nodes = nodes;
        g->cap = cap;
    }
    graph_node *n = &g->nodes[g->n++];
    memset(n, 0, sizeof *n);
    return n;
}

static tj_status stream_sync(int device, void *stream) {
    (void)device;
    host_stream *s = stream;
    return s->capturing ? refuse(s, "waiting for the stream") : TJ_OK;
}

static tj_status copy(int device, void *dst, const void *src, size_t bytes, tjcu_copy_kind kind,
                      void *stream) {
    (void)device;
    host_stream *s = stream;
    if (!s->capturing) {
        memmove(dst, src, bytes);
        return TJ_OK;
    }
    if (kind != TJCU_D2D) return refuse(s, "a copy between host and device memory");
    graph_node *n = add_node(s);
    if (!n) return tj_last_status();
    *n = (graph_node){.kind = NODE_COPY, .dst = dst, .src = src, .bytes = bytes};
    return TJ_OK;
}

static tj_status memset_d8(int device, void *dst, int byte, size_t bytes, void *stream) {
    (void)device;
    host_stream *s = stream;
    if (!s->capturing) {
        memset(dst, byte, bytes);
        return TJ_OK;
    }
    graph_node *n = add_node(s);
    if (!n) return tj_last_status();
    *n = (graph_node){.kind = NODE_MEMSET, .dst = dst, .byte = byte, .bytes = bytes};
    return TJ_OK;
}

/* The launch's argument values copied into one block after the pointer
 * array, each at a 16-byte aligned offset (what any parameter type needs). */
static tj_status record_launch(host_stream *s, const tjh_function *fn, tjcu_dim3 grid,
                               tjcu_dim3 block, size_t shared, void **args) {
    const size_t *sizes;
    int n_params = tjh_function_params(fn, &sizes);
    if (n_params > TJH_MAX_PARAMS) {
        char what[320];
        snprintf(what, sizeof what, "kernel %s has %d parameters, more than a recorded launch "
                 "holds (%d)", tjh_function_name(fn), n_params, TJH_MAX_PARAMS);
        return refuse(s, what);
    }
    size_t head = ((size_t)n_params * sizeof(void *) + 15) / 16 * 16, bytes = head;
    for (int i = 0; i < n_params; i++) bytes += (sizes[i] + 15) / 16 * 16;
    void **copy = tjc_aligned_alloc(16, bytes ? bytes : 16);
    graph_node *n = copy ? add_node(s) : NULL;
    if (!n) {
        tjc_free(copy);
        if (!copy) refuse(s, "out of memory for a launch's arguments");
        return tjc_error(TJ_ERR_MEMORY, "cuda:%d: out of memory recording a launch of %s",
                         s->device, tjh_function_name(fn));
    }
    size_t at = head;
    for (int i = 0; i < n_params; i++) {
        copy[i] = (char *)copy + at;
        memcpy(copy[i], args[i], sizes[i]);
        at += (sizes[i] + 15) / 16 * 16;
    }
    *n = (graph_node){.kind = NODE_LAUNCH, .fn = fn, .grid = grid, .block = block,
                      .shared = shared, .args = copy};
    return TJ_OK;
}

static tj_status capture_begin(int device, void *stream) {
    host_stream *s = stream;
    if (s->capturing)
        return tjc_error(TJ_ERR_ARG, "cuda:%d: the stream is already being captured", device);
    if (!(s->capturing = tjc_calloc(1, sizeof *s->capturing)))
        return tjc_error(TJ_ERR_MEMORY, "cuda:%d: out of memory for a graph", device);
    return TJ_OK;
}

static tj_status capture_end(int device, void *stream, void **graph) {
    host_stream *s = stream;
    host_graph *g = s->capturing;
    *graph = NULL;
    if (!g) return tjc_error(TJ_ERR_ARG, "cuda:%d: the stream is not being captured", device);
    s->capturing = NULL;
    if (g->spoiled) {
        tj_status st = tjc_error(TJ_ERR_UNSUPPORTED, "cuda:%d: the capture was invalidated: %s",
                                 device, g->reason);
        graph_free(device, g);
        return st;
    }
    *graph = g;
    return TJ_OK;
}

static tj_status graph_launch(int device, void *graph, void *stream) {
    host_stream *s = stream;
    if (s->capturing) return refuse(s, "launching a graph");
    const host_graph *g = graph;
    tj_status st = TJ_OK;
    for (int i = 0; i < g->n && !st; i++) {
        const graph_node *n = &g->nodes[i];
        switch (n->kind) {
        case NODE_LAUNCH: st = tjh_launch(n->fn, n->grid, n->block, n->shared, n->args); break;
        case NODE_COPY: memmove(n->dst, n->src, n->bytes); break;
        case NODE_MEMSET: memset(n->dst, n->byte, n->bytes); break;
        }
    }
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", tj_last_error());
        st = tjc_error(st, "cuda:%d: a graph launch: %s", device, msg);
    }
    return st;
}

static tj_status module_load(int device, const char *name, const char *source, void **module) {
    (void)device; /* every device shares the host's compiled modules */
    return tjh_module_load(name, source, (tjh_module **)module);
}

static void precompile(int device, const char *const *names, const char *const *sources, int n) {
    (void)device;
    tjh_precompile(names, sources, n);
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
    (void)device;
    host_stream *s = stream;
    if (s->capturing) return record_launch(s, fn, grid, block, shared, args);
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
    (void)device, (void)event;
    host_stream *s = stream;
    return s->capturing ? refuse(s, "recording an event") : TJ_OK;
}
static tj_status event_query(int device, void *event, bool *done) {
    (void)device, (void)event;
    *done = true;
    return TJ_OK;
}
static tj_status stream_wait_event(int device, void *stream, void *event) {
    (void)device, (void)event;
    host_stream *s = stream;
    return s->capturing ? refuse(s, "waiting for an event") : TJ_OK;
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
        .memset = memset_d8, .module_load = module_load, .precompile = precompile, .module_unload = module_unload,
        .function = function, .launch = launch, .event_new = event_new,
        .event_free = event_free, .event_record = event_record, .event_query = event_query,
        .stream_wait_event = stream_wait_event, .make_current = make_current,
        .capture_begin = capture_begin, .capture_end = capture_end,
        .graph_launch = graph_launch, .graph_free = graph_free, .has_libraries = false,
    };
    return &driver;
}
