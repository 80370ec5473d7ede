/* internal.h — what the CUDA backend's own files share beyond cuda.h: the
 * driver in use and the bookkeeping of launches. */
#ifndef TJIT_CUDA_INTERNAL_H
#define TJIT_CUDA_INTERNAL_H

#include "backends/cuda/cuda.h"
#include "backends/cuda/driver.h"

#define TJCU_MAX_DEVICES 16

/* The driver the backend runs on (NULL without one). */
const tjcu_driver *tjcu_state_driver(void);
/* TJ_OK when dev is an available CUDA device, else an error naming what. */
tj_status tjcu_check_device(const char *what, tj_device dev);
/* Remembers the last kernel launched on this thread's stream of dev, and
 * counts it (a launch recorded into a graph is not counted). */
void tjcu_note_launch(tj_device dev, const char *kernel);

/* ---- graphs (graph.c) ----------------------------------------------------------
 * The device backend's capture hooks (core.h's tjc_device_backend). While
 * the calling thread captures on dev, tjcu_free hands each block to the
 * graph (tjcu_graph_keep) instead of the cache: the graph's kernels use it
 * at every launch, so it is released only by graph_free. */
typedef struct tjcu_graph tjcu_graph;
tj_status tjcu_graph_capture_begin(int index);
tj_status tjcu_graph_capture_end(int index, void **graph);
tj_status tjcu_graph_acquire(int index, void *graph);
tj_status tjcu_graph_launch(int index, void *graph);
tj_status tjcu_graph_release(int index, void *graph);
void tjcu_graph_free(int index, void *graph);
void tjcu_graph_keep(tjcu_graph *g, void *ptr);
/* The graph the calling thread captures on dev (NULL: none); device.c keeps it. */
tjcu_graph *tjcu_capturing(tj_device dev);
tj_status tjcu_set_capturing(tj_device dev, tjcu_graph *g);
/* Gives a block back to dev's cache at once (tjcu_free, never deferred). */
void tjcu_release_block(tj_device dev, void *ptr);
/* Counts a graph launch on dev (and names it as the stream's last work). */
void tjcu_note_graph_launch(tj_device dev);

#endif
