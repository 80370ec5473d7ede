/* launch.c — modules of CUDA C compiled once per device and kept, kernel
 * lookup, launching on the calling thread's stream, and the helpers op
 * kernels use to describe tensors and grids. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "backends/cuda/internal.h"
#include "backends/cuda/sources.h"

/* One compiled module per (device, key) and one function per kernel name in
 * it, in a hash table that only grows (modules live as long as the process:
 * they are few and small, and a kernel may be queued at any time). */
typedef struct entry {
    int device;
    char *key;          /* module key, '\n', kernel name */
    const char *source; /* the module's text, to catch two sources under one key */
    void *fn;
    struct entry *next;
} entry;

typedef struct module {
    int device;
    char *key;
    char *source;
    void *handle;
    struct module *next;
} module;

enum { BUCKETS = 1024 };
static struct {
    pthread_mutex_t lock;
    entry *bucket[BUCKETS];
    module *modules;
} M = {.lock = PTHREAD_MUTEX_INITIALIZER};

static unsigned hash_str(const char *s, unsigned h) {
    while (*s) h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

/* The loaded module for (device, key), compiling it on first use. Called
 * with M.lock held: a module is compiled once even when threads race. */
static void *module_for(const tjcu_driver *drv, const char *what, int device, const char *key,
                        const char *source) {
    for (module *m = M.modules; m; m = m->next) {
        if (m->device != device || strcmp(m->key, key)) continue;
        if (strcmp(m->source, source))
            return tjc_error(TJ_ERR_INTERNAL, "%s: two different sources share the module key '%s'",
                             what, key), NULL;
        return m->handle;
    }
    module *m = tjc_calloc(1, sizeof *m);
    if (m) m->key = tjc_strdup(key);
    if (m) m->source = tjc_strdup(source);
    if (!m || !m->key || !m->source) {
        if (m) tjc_free(m->key), tjc_free(m->source), tjc_free(m);
        return tjc_error(TJ_ERR_MEMORY, "%s: out of memory", what), NULL;
    }
    if (drv->module_load(device, key, source, &m->handle) != TJ_OK) {
        char msg[2048];
        snprintf(msg, sizeof msg, "%s", tj_last_error());
        tjc_free(m->key), tjc_free(m->source), tjc_free(m);
        return tjc_error(tj_last_status(), "%s: compiling the kernels of '%s' for cuda:%d: %s", what,
                         key, device, msg), NULL;
    }
    m->device = device;
    m->next = M.modules;
    M.modules = m;
    return m->handle;
}

static void *function_for(const tjcu_driver *drv, const char *what, int device, const char *key,
                          const char *source, const char *kernel) {
    char name[256];
    snprintf(name, sizeof name, "%s\n%s", key, kernel);
    unsigned h = hash_str(name, 2166136261u ^ (unsigned)device) % BUCKETS;
    pthread_mutex_lock(&M.lock);
    void *fn = NULL;
    for (entry *e = M.bucket[h]; e && !fn; e = e->next)
        if (e->device == device && !strcmp(e->key, name)) fn = e->fn;
    if (!fn) {
        void *mod = module_for(drv, what, device, key, source);
        entry *e = mod ? tjc_calloc(1, sizeof *e) : NULL;
        if (mod && !e) tjc_error(TJ_ERR_MEMORY, "%s: out of memory", what);
        if (e && !(e->key = tjc_strdup(name))) {
            tjc_free(e);
            e = NULL;
            tjc_error(TJ_ERR_MEMORY, "%s: out of memory", what);
        }
        if (e && drv->function(mod, kernel, &e->fn) != TJ_OK) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", tj_last_error());
            tjc_error(TJ_ERR_INTERNAL, "%s: module '%s' has no kernel %s: %s", what, key, kernel, msg);
            tjc_free(e->key);
            tjc_free(e);
            e = NULL;
        }
        if (e) {
            e->device = device;
            e->source = source;
            e->next = M.bucket[h];
            M.bucket[h] = e;
            fn = e->fn;
        }
    }
    pthread_mutex_unlock(&M.lock);
    return fn;
}

tj_status tjcu_launch_source(const char *what, tj_device dev, const char *key, const char *source,
                             const char *kernel, tjcu_dim3 grid, tjcu_dim3 block,
                             size_t dynamic_shared, void **args) {
    if (tjcu_check_device(what, dev)) return tj_last_status();
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) return TJ_OK; /* nothing to do */
    void *fn = function_for(tjcu_state_driver(), what, dev.index, key, source, kernel);
    if (!fn) return tj_last_status();
    return tjcu_launch_function(what, dev, fn, kernel, grid, block, dynamic_shared, args);
}

void *tjcu_function(const char *what, tj_device dev, const char *key, const char *source,
                    const char *kernel) {
    if (tjcu_check_device(what, dev)) return NULL;
    return function_for(tjcu_state_driver(), what, dev.index, key, source, kernel);
}

tj_status tjcu_launch_function(const char *what, tj_device dev, void *fn, const char *kernel,
                               tjcu_dim3 grid, tjcu_dim3 block, size_t dynamic_shared, void **args) {
    if (grid.x == 0 || grid.y == 0 || grid.z == 0) return TJ_OK;
    void *stream = tjcu_stream(dev);
    if (!stream) return tj_last_status();
    tj_status st = tjcu_state_driver()->launch(dev.index, fn, grid, block, dynamic_shared, stream, args);
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", tj_last_error());
        return tjc_error(st, "%s: launching %s (grid %u x %u x %u, block %u x %u x %u) on cuda:%d: "
                         "%s", what, kernel, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                         dev.index, msg);
    }
    tjcu_note_launch(dev, kernel);
    return TJ_OK;
}

tj_status tjcu_launch(const char *what, tj_device dev, const char *module, const char *kernel,
                      tjcu_dim3 grid, tjcu_dim3 block, size_t dynamic_shared, void **args) {
    /* modules are named by file name without .cu (cuda.h), the table by file name */
    char file[128];
    const char *source = tjcu_source_text(module);
    if (!source && snprintf(file, sizeof file, "%s.cu", module) < (int)sizeof file)
        source = tjcu_source_text(file);
    if (!source)
        return tjc_error(TJ_ERR_INTERNAL, "%s: the CUDA backend has no kernel source '%s'", what,
                         module);
    return tjcu_launch_source(what, dev, module, source, kernel, grid, block, dynamic_shared, args);
}

/* ---- arguments and grids ------------------------------------------------------------- */

tjcu_tensor_arg tjcu_arg(const tj_tensor *t) {
    tjcu_tensor_arg a;
    memset(&a, 0, sizeof a);
    a.data = tjc_data_ptr(t);
    a.ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) {
        a.sizes[d] = t->sizes[d];
        a.strides[d] = t->strides[d];
    }
    a.contiguous = tj_is_contiguous(t);
    return a;
}

tjcu_tensor_arg tjcu_arg_broadcast(const tj_tensor *t, const int64_t *sizes, int ndim) {
    tjcu_tensor_arg a;
    memset(&a, 0, sizeof a);
    a.data = tjc_data_ptr(t);
    a.ndim = ndim;
    bool same = t->ndim == ndim;
    for (int d = 0; d < ndim; d++) {
        int td = d - (ndim - t->ndim);
        a.sizes[d] = sizes[d];
        bool has = td >= 0 && t->sizes[td] == sizes[d];
        a.strides[d] = has ? t->strides[td] : 0;
        same = same && has;
    }
    a.contiguous = same && tj_is_contiguous(t);
    return a;
}

tjcu_dim3 tjcu_grid_for(tj_device dev, int64_t n, unsigned block) {
    if (n <= 0) return (tjcu_dim3){0, 1, 1};
    int64_t blocks = (n + block - 1) / block;
    int64_t cap = (int64_t)tjcu_sm_count(dev) * 32; /* enough to fill the device, then loop */
    if (blocks > cap) blocks = cap;
    return (tjcu_dim3){(unsigned)blocks, 1, 1};
}
