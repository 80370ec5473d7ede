/* graph.c — the CUDA backend's graphs (core.h's capture hooks): capturing
 * the work a thread queues on its stream into the driver's executable
 * graph, keeping the memory that work released for as long as the graph
 * lives (every launch reuses it), and ordering launches made from different
 * threads' streams: each use of a graph ends with an event that the next
 * use, on whichever stream, waits for first. */
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "backends/cuda/internal.h"

struct tjcu_graph {
    int device;
    void *exec;  /* the driver's executable graph; NULL while capturing */
    void *done;  /* recorded at the end of each use */
    bool used;   /* done has been recorded */
    void **kept; /* blocks released while capturing: the graph's own */
    int n_kept, cap_kept;
    bool keep_failed; /* a block could not be kept: the capture is refused */
};

static tj_device dev_of(int index) { return (tj_device){TJ_CUDA, index}; }

void tjcu_graph_keep(tjcu_graph *g, void *ptr) {
    if (g->n_kept == g->cap_kept) {
        int cap = g->cap_kept ? 2 * g->cap_kept : 16;
        void **kept = tjc_realloc(g->kept, (size_t)cap * sizeof *kept);
        if (!kept) {
            /* the block goes back now, which the capture cannot allow:
             * capture_end refuses the graph */
            g->keep_failed = true;
            tjcu_release_block(dev_of(g->device), ptr);
            return;
        }
        g->kept = kept;
        g->cap_kept = cap;
    }
    g->kept[g->n_kept++] = ptr;
}

/* Waits for the graph's last use, then gives its memory back. */
static void destroy(tjcu_graph *g) {
    const tjcu_driver *drv = tjcu_state_driver();
    tj_device dev = dev_of(g->device);
    void *stream = tjcu_stream(dev);
    if (g->used && stream && !drv->stream_wait_event(g->device, stream, g->done))
        drv->stream_sync(g->device, stream);
    if (g->exec) drv->graph_free(g->device, g->exec);
    if (g->done) drv->event_free(g->device, g->done);
    for (int i = 0; i < g->n_kept; i++) tjcu_release_block(dev, g->kept[i]);
    tjc_free(g->kept);
    tjc_free(g);
}

tj_status tjcu_graph_capture_begin(int index) {
    tj_device dev = dev_of(index);
    if (tjcu_check_device("graph capture", dev)) return tj_last_status();
    if (tjcu_capturing(dev))
        return tjc_error(TJ_ERR_ARG, "graph capture: this thread already captures on cuda:%d", index);
    const tjcu_driver *drv = tjcu_state_driver();
    void *stream = tjcu_stream(dev);
    if (!stream) return tj_last_status();
    tjcu_graph *g = tjc_calloc(1, sizeof *g);
    if (!g) return tjc_error(TJ_ERR_MEMORY, "graph capture: out of memory");
    g->device = index;
    tj_status st = drv->event_new(index, &g->done);
    if (!st) st = drv->capture_begin(index, stream);
    if (!st) st = tjcu_set_capturing(dev, g);
    if (st) {
        if (g->done) drv->event_free(index, g->done);
        tjc_free(g);
    }
    return st;
}

tj_status tjcu_graph_capture_end(int index, void **graph) {
    tj_device dev = dev_of(index);
    *graph = NULL;
    tjcu_graph *g = tjcu_capturing(dev);
    if (!g) return tjc_error(TJ_ERR_ARG, "graph capture: this thread does not capture on cuda:%d", index);
    tjcu_set_capturing(dev, NULL);
    const tjcu_driver *drv = tjcu_state_driver();
    tj_status st = drv->capture_end(index, tjcu_stream(dev), &g->exec);
    if (!st && g->keep_failed)
        st = tjc_error(TJ_ERR_MEMORY, "graph capture: out of memory keeping the graph's scratch memory");
    if (st) {
        destroy(g);
        return st;
    }
    *graph = g;
    return TJ_OK;
}

tj_status tjcu_graph_acquire(int index, void *graph) {
    tjcu_graph *g = graph;
    if (!g->used) return TJ_OK;
    void *stream = tjcu_stream(dev_of(index));
    if (!stream) return tj_last_status();
    return tjcu_state_driver()->stream_wait_event(index, stream, g->done);
}

tj_status tjcu_graph_launch(int index, void *graph) {
    tjcu_graph *g = graph;
    tj_device dev = dev_of(index);
    void *stream = tjcu_stream(dev);
    if (!stream) return tj_last_status();
    tj_status st = tjcu_state_driver()->graph_launch(index, g->exec, stream);
    if (st) return st;
    tjcu_note_graph_launch(dev);
    return TJ_OK;
}

tj_status tjcu_graph_release(int index, void *graph) {
    tjcu_graph *g = graph;
    void *stream = tjcu_stream(dev_of(index));
    if (!stream) return tj_last_status();
    tj_status st = tjcu_state_driver()->event_record(index, g->done, stream);
    if (!st) g->used = true;
    return st;
}

void tjcu_graph_free(int index, void *graph) {
    (void)index;
    if (graph) destroy(graph);
}
