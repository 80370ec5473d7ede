/* function.c — tj_function: a model that traces itself once per input
 * signature (dtypes, sizes, devices) and keeps a bounded cache of compiled
 * programs, least recently used dropped first. Lookups hold a lock; runs do
 * not, so calls on several threads run concurrently. A program dropped while
 * a call is running it is freed by the last call that holds it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/core.h"
#include "tjit/runtime.h"

typedef struct signature {
    tj_dtype dtype;
    tj_device_type device;
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
} signature;

typedef struct entry {
    signature *sig; /* n_in of them */
    tj_program *program;
    uint64_t last_used;
    int users;      /* calls running the program now */
    bool dropped;   /* evicted: freed when users reaches 0 */
} entry;

struct tj_function {
    tj_model_fn fn;
    void *ctx;
    int n_in, n_out, capacity;
    tj_compile_options opts;
    entry **entries;
    int n_entries;
    uint64_t clock;
    tj_function_stats stats;
    pthread_mutex_t lock;
};

static void entry_free(entry *e) {
    tj_program_free(e->program);
    tjc_free(e->sig);
    tjc_free(e);
}

tj_function *tj_function_new(tj_model_fn fn, void *ctx, int n_in, int n_out, int capacity,
                             const tj_compile_options *opts) {
    if (!fn) return tjc_error(TJ_ERR_ARG, "tj_function_new: the model function is NULL"), NULL;
    if (n_in < 0 || n_out < 1 || capacity < 1)
        return tjc_error(TJ_ERR_ARG, "tj_function_new: needs n_in >= 0, n_out >= 1 and capacity "
                         ">= 1 (got %d, %d, %d)", n_in, n_out, capacity), NULL;
    tj_function *f = tjc_calloc(1, sizeof *f);
    if (f) f->entries = tjc_calloc((size_t)capacity, sizeof(entry *));
    if (!f || !f->entries) {
        tjc_free(f);
        return tjc_error(TJ_ERR_MEMORY, "tj_function_new: out of memory"), NULL;
    }
    f->fn = fn;
    f->ctx = ctx;
    f->n_in = n_in;
    f->n_out = n_out;
    f->capacity = capacity;
    if (opts) f->opts = *opts;
    pthread_mutex_init(&f->lock, NULL);
    return f;
}

void tj_function_free(tj_function *f) {
    if (!f) return;
    for (int i = 0; i < f->n_entries; i++) entry_free(f->entries[i]);
    tjc_free(f->entries);
    pthread_mutex_destroy(&f->lock);
    tjc_free(f);
}

tj_function_stats tj_function_get_stats(const tj_function *f) {
    tj_function_stats s = {0};
    if (!f) return tjc_last_or(TJ_ERR_ARG, "tj_function_get_stats: function is NULL"), s;
    pthread_mutex_lock((pthread_mutex_t *)&f->lock);
    s = f->stats;
    s.cached = f->n_entries;
    pthread_mutex_unlock((pthread_mutex_t *)&f->lock);
    return s;
}

static void signature_of(tj_tensor *const *in, int n, signature *sig) {
    memset(sig, 0, sizeof *sig * (size_t)n);
    for (int i = 0; i < n; i++) {
        sig[i].dtype = tj_tensor_dtype(in[i]);
        sig[i].device = tj_tensor_device(in[i]).type;
        sig[i].ndim = tj_ndim(in[i]);
        memcpy(sig[i].sizes, tj_sizes(in[i]), sizeof(int64_t) * (size_t)sig[i].ndim);
    }
}

/* The entry for sig, with a user counted; NULL when there is none. Locked. */
static entry *find(tj_function *f, const signature *sig) {
    for (int i = 0; i < f->n_entries; i++) {
        entry *e = f->entries[i];
        if (memcmp(e->sig, sig, sizeof *sig * (size_t)f->n_in) == 0) {
            e->last_used = ++f->clock;
            e->users++;
            return e;
        }
    }
    return NULL;
}

/* Adds e (with a user counted), dropping the least recently used. Locked. */
static void insert(tj_function *f, entry *e) {
    if (f->n_entries == f->capacity) {
        int lru = 0;
        for (int i = 1; i < f->n_entries; i++)
            if (f->entries[i]->last_used < f->entries[lru]->last_used) lru = i;
        entry *old = f->entries[lru];
        f->entries[lru] = f->entries[--f->n_entries];
        f->stats.evictions++;
        if (old->users == 0) entry_free(old);
        else old->dropped = true;
    }
    e->last_used = ++f->clock;
    e->users = 1;
    f->entries[f->n_entries++] = e;
}

static void done_with(tj_function *f, entry *e) {
    pthread_mutex_lock(&f->lock);
    bool free_it = --e->users == 0 && e->dropped;
    pthread_mutex_unlock(&f->lock);
    if (free_it) entry_free(e);
}

tj_status tj_function_call(tj_function *f, tj_tensor *const *inputs, tj_tensor **outputs) {
    if (!f) return tjc_last_or(TJ_ERR_ARG, "tj_function_call: function is NULL");
    for (int i = 0; i < f->n_in; i++)
        if (!inputs || !inputs[i]) return tjc_last_or(TJ_ERR_ARG, "tj_function_call: input %d is NULL", i);
    size_t n_sig = f->n_in > 0 ? (size_t)f->n_in : 1;
    signature *sig = tjc_calloc(n_sig, sizeof *sig);
    if (!sig) return tjc_error(TJ_ERR_MEMORY, "tj_function_call: out of memory");
    signature_of(inputs, f->n_in, sig);

    pthread_mutex_lock(&f->lock);
    f->stats.calls++;
    entry *e = find(f, sig);
    if (e) f->stats.hits++;
    pthread_mutex_unlock(&f->lock);

    if (!e) { /* trace outside the lock: a model may take long */
        tj_graph *g = tj_trace(f->fn, f->ctx, inputs, f->n_in, f->n_out, NULL);
        tj_program *p = g ? tj_compile(g, &f->opts) : NULL;
        tj_graph_free(g);
        if (!p) {
            tjc_free(sig);
            return tj_last_status();
        }
        e = tjc_calloc(1, sizeof *e);
        if (!e) {
            tj_program_free(p);
            tjc_free(sig);
            return tjc_error(TJ_ERR_MEMORY, "tj_function_call: out of memory");
        }
        e->sig = sig;
        e->program = p;
        sig = NULL;
        pthread_mutex_lock(&f->lock);
        f->stats.misses++;
        if (f->stats.misses > 1) f->stats.retraces++;
        /* another thread may have traced the same signature meanwhile: keep
         * one entry per signature, so that a duplicate does not take the
         * place of another signature's program */
        entry *same = find(f, e->sig);
        if (!same) insert(f, e);
        pthread_mutex_unlock(&f->lock);
        if (same) {
            entry_free(e);
            e = same;
        }
    }
    tjc_free(sig);
    tj_status st = tj_run(e->program, inputs, outputs);
    done_with(f, e);
    return st;
}
