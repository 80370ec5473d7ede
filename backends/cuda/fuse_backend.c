/* fuse_backend.c — the `cuda` fuser backend (fusion.h): kernels written at
 * compile(), compiled in batches at their first launch, launched with the
 * entry point the call's pointers and sizes allow.
 *
 * Why batches: one NVRTC run costs tens of milliseconds and one host-compiler
 * run (the harness) hundreds, mostly for the shared headers; a program's
 * groups (or a test's hundreds of random groups) compiled together cost about
 * one run. The first launch of a pending kernel therefore compiles every
 * pending kernel of the process in modules of at most BATCH kernels. A module
 * that fails to compile is split until the failing kernel is alone; that one
 * is marked failed (its launches return TJ_ERR_UNSUPPORTED with the
 * compiler's message and the offending source line, and fuser/group.c runs
 * its group op by op), the others load. Modules live as long as the process,
 * as the backend's other modules do; identical kernels (the same group and
 * spec in two programs) share one. A row group's kernel (fuse_rows.c) has
 * no vectorised entry and launches a row per warp or per block. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/cuda.h"
#include "backends/cuda/driver.h"
#include "backends/cuda/fusion.h"
#include "backends/cuda/internal.h"
#include "backends/cuda/pointwise.h"
#include "backends/cuda/nvrtc.h"
#include "core/alloc.h"

enum { BATCH = 256, MAX_DEVICES = 16, ENTRY_VEC = 0, ENTRY_I32, ENTRY_I64, N_ENTRIES };
static const char *const entry_suffix[N_ENTRIES] = {"vec", "i32", "i64"};

typedef struct module {
    char key[48];
    char *source;
    struct module *next;
} module;

/* A kernel's names and module, kept for the process: error reports name the
 * last kernel launched on a stream long after its program may be gone. */
typedef struct loaded {
    char name[40];
    char entry[N_ENTRIES][48];
    const module *mod;
    char *error; /* NULL when it compiled */
    struct loaded *next;
} loaded;

typedef enum state { PENDING, READY } state;

struct tjf_kernel {
    char name[40];
    char *text;             /* PENDING: the kernel text */
    tjcu_fuse_layout L;
    _Atomic int state;
    const loaded *done;     /* READY: where it lives, or why it failed */
    _Atomic(void *) fn[N_ENTRIES][MAX_DEVICES];
    struct tjf_kernel *prev, *next; /* the pending list */
};

static struct {
    pthread_mutex_t lock;
    tjf_kernel *pending;
    module *modules;
    loaded *kernels;
    tjcu_fuse_stats stats;
} F = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t fnv1a(const char *s, uint64_t h) {
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static const loaded *find_loaded(const char *name) {
    for (const loaded *l = F.kernels; l; l = l->next)
        if (!strcmp(l->name, name)) return l;
    return NULL;
}

static _Atomic(const char *) fault;

void tjcu_fuse_set_fault(const char *function) { atomic_store(&fault, function); }

/* A kernel text that calls fn (the fault a test asked for) */
static char *with_fault(char *text, const char *name, const char *fn) {
    size_t n = strlen(text) + strlen(name) + strlen(fn) + 64;
    char *s = tjc_malloc(n);
    if (s) snprintf(s, n, "__device__ void %s_fault() {\n    %s();\n}\n%s", name, fn, text);
    else tjc_error(TJ_ERR_MEMORY, "out of memory");
    tjc_free(text);
    return s;
}

static tjf_kernel *compile(const tj_graph *subgraph, const tjf_spec *spec) {
    tjf_kernel *k = tjc_calloc(1, sizeof *k);
    if (!k) return tjc_error(TJ_ERR_MEMORY, "out of memory"), NULL;
    /* named by its own text: identical kernels share a name and a module */
    char *draft = tjcu_fuse_kernel_text(subgraph, spec, "tjf_kernel", &k->L);
    if (!draft) {
        tjc_free(k);
        return NULL;
    }
    snprintf(k->name, sizeof k->name, "tjf_%016llx", (unsigned long long)fnv1a(draft, 14695981039346656037ull));
    tjc_free(draft);
    const char *broken = atomic_load(&fault);
    if (broken) k->name[4] = 'f'; /* not the name of the kernel without the fault */
    k->text = tjcu_fuse_kernel_text(subgraph, spec, k->name, &k->L);
    if (k->text && broken) k->text = with_fault(k->text, k->name, broken);
    if (!k->text) {
        tjc_free(k);
        return NULL;
    }
    pthread_mutex_lock(&F.lock);
    F.stats.kernels++;
    const loaded *l = find_loaded(k->name);
    if (l) {
        k->done = l;
        atomic_store(&k->state, READY);
        tjc_free(k->text);
        k->text = NULL;
    } else {
        k->next = F.pending;
        if (F.pending) F.pending->prev = k;
        F.pending = k;
    }
    pthread_mutex_unlock(&F.lock);
    return k;
}

static void unlink_pending(tjf_kernel *k) {
    if (k->prev) k->prev->next = k->next;
    else if (F.pending == k) F.pending = k->next;
    if (k->next) k->next->prev = k->prev;
    k->prev = k->next = NULL;
}

static void release(tjf_kernel *k) {
    if (!k) return;
    pthread_mutex_lock(&F.lock);
    if (atomic_load(&k->state) == PENDING) unlink_pending(k);
    pthread_mutex_unlock(&F.lock);
    tjc_free(k->text);
    tjc_free(k);
}

/* The line of source that a compiler's message points at ("name(123): error"
 * from NVRTC, "name:123:4: error" from the host compiler), appended to msg. */
static void append_source_line(char *msg, size_t n, const char *source) {
    const char *p = strstr(msg, "error");
    long line = 0;
    for (const char *q = msg; q < (p ? p : msg + strlen(msg)) && !line; q++)
        if ((*q == '(' || *q == ':') && q[1] >= '0' && q[1] <= '9') line = strtol(q + 1, NULL, 10);
    if (line <= 0) return;
    const char *s = source;
    for (long i = 1; i < line && s; i++) s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL;
    if (!s) return;
    size_t len = strcspn(s, "\n"), used = strlen(msg);
    if (used + 32 < n)
        snprintf(msg + used, n - used, "; line %ld: %.*s", line, (int)(len < 300 ? len : 300), s);
}

static loaded *new_loaded(const tjf_kernel *k, const module *mod, const char *error) {
    loaded *l = tjc_calloc(1, sizeof *l);
    if (!l) return NULL;
    snprintf(l->name, sizeof l->name, "%s", k->name);
    for (int e = 0; e < N_ENTRIES; e++) snprintf(l->entry[e], sizeof l->entry[e], "%s_%s", k->name, entry_suffix[e]);
    l->mod = mod;
    if (error && !(l->error = tjc_strdup(error))) {
        tjc_free(l);
        return NULL;
    }
    l->next = F.kernels;
    F.kernels = l;
    return l;
}

static int first_of_name(tjf_kernel *const *ks, int i) {
    for (int j = 0; j < i; j++)
        if (!strcmp(ks[j]->name, ks[i]->name)) return j;
    return i;
}

/* The source of a module of ks[0..n): the preamble and each distinct
 * kernel once; its cache key in key. NULL when out of memory. */
static char *compose(tjf_kernel *const *ks, int n, char key[48]) {
    const char *pre = tjcu_pw_preamble();
    if (!pre) return NULL;
    size_t len = strlen(pre) + 1;
    for (int i = 0; i < n; i++) len += strlen(ks[i]->text) + 1;
    char *src = tjc_malloc(len);
    if (!src) return tjc_error(TJ_ERR_MEMORY, "out of memory"), NULL;
    size_t at = strlen(pre);
    memcpy(src, pre, at);
    for (int i = 0; i < n; i++) {
        if (first_of_name(ks, i) != i) continue; /* the same kernel twice: once in the module */
        size_t t = strlen(ks[i]->text);
        memcpy(src + at, ks[i]->text, t);
        at += t;
        src[at++] = '\n';
    }
    src[at] = 0;
    snprintf(key, 48, "fuse_%016llx.cu", (unsigned long long)fnv1a(src, 14695981039346656037ull));
    return src;
}

/* Compiles and loads ks[0..n) as one module on dev (F.lock held), whose
 * source (compose's, owned from here on) is src, or is made here when NULL;
 * on a compile error, halves until the failing kernels are alone. */
static tj_status load_batch(tj_device dev, tjf_kernel **ks, int n, char *src, const char *key) {
    module *m = tjc_calloc(1, sizeof *m);
    if (m && src) snprintf(m->key, sizeof m->key, "%s", key);
    else if (m) src = compose(ks, n, m->key);
    if (!m || !src) {
        tjc_free(m);
        tjc_free(src);
        return tj_last_status() ? tj_last_status() : tjc_error(TJ_ERR_MEMORY, "out of memory");
    }
    m->source = src;
    char entry[48];
    snprintf(entry, sizeof entry, "%s_i32", ks[0]->name);
    F.stats.modules++;
    void *fn = tjcu_function("cuda fuser", dev, m->key, src, entry);
    if (!fn && tj_last_status() != TJ_ERR_UNSUPPORTED && tj_last_status() != TJ_ERR_INTERNAL) {
        tjc_free(src);
        tjc_free(m);
        return tj_last_status(); /* memory or the device: not the kernels' fault */
    }
    if (!fn && n > 1) {
        tjc_free(src);
        tjc_free(m);
        tj_clear_error();
        tj_status st = load_batch(dev, ks, n / 2, NULL, NULL);
        return st ? st : load_batch(dev, ks + n / 2, n - n / 2, NULL, NULL);
    }
    char why[2048] = "";
    if (!fn) {
        snprintf(why, sizeof why, "%s", tj_last_error());
        append_source_line(why, sizeof why, src);
        tjc_free(src);
        tjc_free(m);
        m = NULL;
        tj_clear_error();
        F.stats.failed++;
    } else {
        m->next = F.modules;
        F.modules = m;
    }
    for (int i = 0; i < n; i++) {
        int first = first_of_name(ks, i);
        const loaded *l = first == i ? new_loaded(ks[i], m, fn ? NULL : why) : ks[first]->done;
        if (!l) return tjc_error(TJ_ERR_MEMORY, "out of memory");
        ks[i]->done = l;
        unlink_pending(ks[i]);
        tjc_free(ks[i]->text);
        ks[i]->text = NULL;
        atomic_store(&ks[i]->state, READY);
    }
    return TJ_OK;
}

/* Compiles every pending kernel (k among them, in the first module): the
 * modules' compilers run on all cores at once (the driver's precompile),
 * then each module loads. */
static tj_status load_pending(tj_device dev, tjf_kernel *k) {
    pthread_mutex_lock(&F.lock);
    int total = 0;
    for (tjf_kernel *p = F.pending; p; p = p->next) total++;
    int n_batches = (total + BATCH - 1) / BATCH;
    tjf_kernel **order = tjc_malloc(sizeof *order * (size_t)(total ? total : 1));
    char **sources = tjc_calloc((size_t)(n_batches ? n_batches : 1), sizeof *sources);
    char (*keys)[48] = tjc_calloc((size_t)(n_batches ? n_batches : 1), sizeof *keys);
    tj_status st = order && sources && keys ? TJ_OK : tjc_error(TJ_ERR_MEMORY, "out of memory");
    if (st == TJ_OK) {
        int n = 0;
        if (atomic_load(&k->state) == PENDING) order[n++] = k;
        for (tjf_kernel *p = F.pending; p; p = p->next)
            if (p != k) order[n++] = p;
        total = n;
        n_batches = (total + BATCH - 1) / BATCH;
        for (int b = 0; b < n_batches; b++) {
            int from = b * BATCH, count = total - from < BATCH ? total - from : BATCH;
            if (!(sources[b] = compose(order + from, count, keys[b]))) st = tj_last_status();
        }
        const tjcu_driver *drv = tjcu_state_driver();
        const char **names = st == TJ_OK && n_batches > 1 ? tjc_malloc(sizeof *names * (size_t)n_batches) : NULL;
        for (int b = 0; names && b < n_batches; b++) names[b] = keys[b];
        if (names && drv->precompile)
            drv->precompile(dev.index, names, (const char *const *)sources, n_batches);
        tjc_free(names);
        for (int b = 0; b < n_batches && st == TJ_OK; b++) {
            int from = b * BATCH, count = total - from < BATCH ? total - from : BATCH;
            st = load_batch(dev, order + from, count, sources[b], keys[b]);
            sources[b] = NULL; /* load_batch's now */
        }
    }
    for (int b = 0; sources && b < n_batches; b++) tjc_free(sources[b]);
    tjc_free(sources);
    tjc_free(keys);
    tjc_free(order);
    pthread_mutex_unlock(&F.lock);
    return st;
}

static tj_device device_of(tj_tensor *const *outputs, tj_tensor *const *inputs, int n_in) {
    if (outputs[0]) return outputs[0]->storage->device;
    return n_in ? inputs[0]->storage->device : (tj_device){TJ_CUDA, 0};
}

/* The largest element offset an operand reaches, for the index width. */
static int64_t reach(const tj_tensor *t) {
    int64_t r = t->offset;
    for (int d = 0; d < t->ndim; d++) r += (t->sizes[d] - 1) * (t->strides[d] < 0 ? -t->strides[d] : t->strides[d]);
    return r;
}

static tj_status launch(const tjf_kernel *kc, tj_tensor *const *inputs, tj_tensor *const *outputs) {
    tjf_kernel *k = (tjf_kernel *)kc;
    const tjcu_fuse_layout *L = &k->L;
    if (L->numel == 0) return TJ_OK;
    tj_device dev = device_of(outputs, inputs, L->n_operands ? 1 : 0);
    if (dev.type != TJ_CUDA || dev.index < 0 || dev.index >= MAX_DEVICES)
        return tjc_error(TJ_ERR_ARG, "cuda fuser: outputs not on a CUDA device");
    if (atomic_load(&k->state) == PENDING) {
        tj_status st = load_pending(dev, k);
        if (st) return st;
    }
    if (k->done->error)
        return tjc_error(TJ_ERR_UNSUPPORTED, "cuda fuser: kernel %s did not compile: %s", k->name,
                         k->done->error);

    /* the argument block: output and operand pointers, run-time strides, n */
    long long block[512];
    memset(block, 0, sizeof block);
    void **ptr = (void **)block;
    int n_ptr = L->n_outputs + L->n_operands;
    long long *st = block + n_ptr, cols = L->ndim ? L->ndim : 1;
    bool aligned = true, narrow = L->numel < INT32_MAX;
    for (int o = 0; o < L->n_outputs; o++) {
        ptr[o] = tjc_data_ptr(outputs[o]);
        aligned = aligned && (uintptr_t)ptr[o] % (4 * tj_dtype_size(L->output_dtype[o])) == 0;
    }
    int rt = 0;
    for (int k2 = 0; k2 < L->n_operands; k2++) {
        const tjcu_fuse_operand *op = &L->operand[k2];
        const tj_tensor *in = inputs[op->input];
        char *p = tjc_data_ptr(in);
        int64_t sizes[TJ_MAX_DIMS];
        memcpy(sizes, in->sizes, sizeof(int64_t) * (size_t)in->ndim);
        if (op->chunk_dim >= 0) {
            sizes[op->chunk_dim] /= op->chunks;
            p += (size_t)(op->chunk_index * sizes[op->chunk_dim] * in->strides[op->chunk_dim]) *
                 tj_dtype_size(in->dtype);
        }
        ptr[L->n_outputs + k2] = p;
        aligned = aligned && (uintptr_t)p % (4 * tj_dtype_size(in->dtype)) == 0;
        narrow = narrow && reach(in) < INT32_MAX;
        if (!op->runtime) continue;
        /* strides over the iteration's dims that are not 1 (no coalescing with run-time strides) */
        int kept = 0;
        for (int d = 0; d < L->it_ndim; d++) {
            if (L->it_sizes[d] == 1) continue;
            int od = d - (L->it_ndim - in->ndim);
            st[rt * cols + kept++] = od >= 0 && sizes[od] == L->it_sizes[d] ? in->strides[od] : 0;
        }
        rt++;
    }
    st[L->n_runtime * cols] = L->numel; /* without stride rows, n follows the pointers */
    int e = L->vectorisable && aligned ? ENTRY_VEC : narrow ? ENTRY_I32 : ENTRY_I64;
    void *fn = atomic_load(&k->fn[e][dev.index]);
    if (!fn) {
        fn = tjcu_function("cuda fuser", dev, k->done->mod->key, k->done->mod->source, k->done->entry[e]);
        if (!fn) return tj_last_status();
        atomic_store(&k->fn[e][dev.index], fn);
    }
    void *args[1] = {block};
    if (L->row.kind != TJF_ROW_NONE) /* rows of lanes threads, per_block rows a block (fuse_rows.c) */
        return tjcu_launch_function("cuda fuser", dev, fn, k->done->entry[e],
                                    tjcu_grid_for(dev, L->row.rows, L->row.per_block),
                                    (tjcu_dim3){L->row.lanes, L->row.per_block, 1}, 0, args);
    int64_t work = e == ENTRY_VEC ? (L->numel + 3) / 4 : L->numel;
    unsigned threads = 256;
    tjcu_dim3 grid = tjcu_grid_for(dev, work, threads);
    return tjcu_launch_function("cuda fuser", dev, fn, k->done->entry[e], grid,
                                (tjcu_dim3){threads, 1, 1}, 0, args);
}

static const tjf_backend backend = {"cuda", compile, launch, release};

const tjf_backend *tjcu_fuse_backend(void) { return &backend; }

void tjcu_fuse_for_each_module(bool (*fn)(void *ctx, const char *key, const char *source), void *ctx) {
    pthread_mutex_lock(&F.lock);
    for (const module *m = F.modules; m; m = m->next)
        if (!fn(ctx, m->key, m->source)) break;
    pthread_mutex_unlock(&F.lock);
}

void tjcu_fuse_get_stats(tjcu_fuse_stats *s) {
    pthread_mutex_lock(&F.lock);
    *s = F.stats;
    pthread_mutex_unlock(&F.lock);
}

/* ---- `tjit dump --kernels --device cuda` ------------------------------------------------- */


tj_status tjcu_fuse_dump(const tj_graph *g, const char *arch, FILE *out) {
    const char *pre = tjcu_pw_preamble();
    if (!pre) return tj_last_status();
    int k = 0;
    for (tj_node *n = tj_block_first(tj_graph_block((tj_graph *)g)); n; n = tj_node_next(n)) {
        if (tj_node_kind_of(n) != TJ_NODE_FUSION_GROUP) continue;
        tjf_spec spec;
        tjf_spec_of_types(n, &spec);
        char name[32];
        snprintf(name, sizeof name, "tjf_group%d", tj_node_id(n));
        tjcu_fuse_layout L;
        char *text = tjcu_fuse_kernel_text(tj_node_subgraph(n), &spec, name, &L);
        if (!text) {
            fprintf(out, "# fusion group %%%d: no CUDA kernel: %s\n\n", tj_node_id(n), tj_last_error());
            tj_clear_error();
            continue;
        }
        fprintf(out, "# fusion group %%%d: CUDA C (after the %zu bytes of tjcu_builtins.h and the "
                "device headers every module starts with)\n%s\n", tj_node_id(n), strlen(pre), text);
        size_t len = strlen(pre) + strlen(text) + 1;
        char *src = tjc_malloc(len), *ptx = NULL;
        size_t size = 0;
        tj_status st = src ? TJ_OK : tjc_error(TJ_ERR_MEMORY, "out of memory");
        if (!st) {
            snprintf(src, len, "%s%s", pre, text);
            st = tjcu_nvrtc_compile(name, src, arch, false, &ptx, &size);
        }
        if (!st) fprintf(out, "# fusion group %%%d: PTX for %s\n%.*s\n", tj_node_id(n), arch, (int)size, ptx);
        tjc_free(src);
        tjc_free(text);
        free(ptx);
        if (st) return st;
        k++;
    }
    if (!k) fprintf(out, "# no fusion groups\n");
    return TJ_OK;
}
