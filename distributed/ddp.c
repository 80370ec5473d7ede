/* ddp.c — data-parallel training over a program compiled with gradients
 * (tj_ddp_*, tjit/distributed.h, docs/distributed.md). The parameters are the
 * program's bound floating-point graph inputs; they are packed, in reverse
 * graph-input order (the order the backward pass finishes them in), into flat
 * buckets of at most bucket_bytes each (by default 25 MB, the first 1 MiB),
 * one dtype and device per bucket. The
 * gradient hook copies each gradient into its bucket slice as the backward
 * program hands it over and starts a bucket's non-blocking all-reduce as soon
 * as the bucket is full and every earlier bucket has started, so every rank
 * launches the same collectives in the same order while the rest of backward
 * still runs. finish() waits for them and sets the program's gradients to the
 * averages. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/core.h"
#include "tjit/distributed.h"

enum { DEFAULT_BUCKET_BYTES = 25 * 1024 * 1024 }; /* PyTorch's 25 "MB" */
/* With the default bucket size the first bucket to fill is kept small, as
 * PyTorch's DDP keeps it with its defaults (1 MiB): it holds the first
 * gradients the backward pass finishes, and its all-reduce then starts while
 * the rest of the pass runs. */
enum { FIRST_BUCKET_BYTES = 1024 * 1024 };

typedef struct ddp_param {
    int input;          /* graph input index */
    const char *name;   /* the graph input's name, owned by the program's graph */
    tj_tensor *tensor;  /* the bound parameter (the graph holds it) */
    int bucket;         /* -1: left out (receives no gradient) */
    int64_t offset;     /* in elements, within the bucket */
    tj_tensor *slice;   /* the parameter's sizes, viewing its part of the bucket */
    tj_tensor *published; /* the gradient last handed to the program (without bucket views) */
    bool ready;         /* its gradient of this backward pass is in the bucket */
} ddp_param;

typedef struct ddp_bucket {
    tj_tensor *flat; /* 1-D, one dtype and device */
    int n_params, n_ready;
    int64_t bytes;
    tj_dist_work *work;
    bool started, completed;
    double t_start, t_done;
} ddp_bucket;

struct tj_ddp {
    tj_program *program;
    tj_dist_group *group;
    tj_ddp_options opts;
    ddp_param *params; /* graph-input order */
    int n_params;
    int *param_of_input; /* graph input -> index into params, or -1 */
    int n_inputs;
    ddp_bucket *buckets;
    int n_buckets;
    int next_bucket; /* the first bucket of this pass not yet started */
    int *order, n_order;     /* the bucketed parameters in packing order */
    int *arrival, n_arrived; /* in the order this pass handed their gradients over */
    bool repacked;
    bool no_sync;
    tj_status failed; /* a communication failure: the group can only be finalized */
    char failure[512];
    tj_ddp_stats stats;
};

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "1,234,567" */
static const char *grouped(char *buf, size_t n, int64_t v) {
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%" PRId64, v < 0 ? -v : v);
    size_t at = 0;
    if (v < 0 && at + 1 < n) buf[at++] = '-';
    for (int i = 0; i < len && at + 1 < n; i++) {
        if (i && (len - i) % 3 == 0 && at + 1 < n) buf[at++] = ',';
        buf[at++] = digits[i];
    }
    buf[at] = '\0';
    return buf;
}

static uint64_t fnv1a(uint64_t h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h;
}

static bool same_device(tj_device a, tj_device b) { return a.type == b.type && a.index == b.index; }

static int64_t param_numel(const ddp_param *p) { return tj_numel(p->tensor); }

static int64_t param_bytes(const ddp_param *p) {
    return param_numel(p) * (int64_t)tj_dtype_size(tj_tensor_dtype(p->tensor));
}

/* ---- which bound inputs are parameters, and which of them receive a gradient ---- */

/* Whether the forward graph reads input v in a computation (a value only
 * saved for the backward graph, which differentiates to zeros, is not read). */
static bool read_by_forward(const tj_value *v) {
    for (int u = 0; u < tj_value_num_uses(v); u++)
        if (tj_node_kind_of(tj_value_use(v, u).user) != TJ_NODE_RETURN) return true;
    return false;
}

static tj_status collect_params(tj_ddp *d) {
    const tj_graph *g = tj_program_graph(d->program);
    d->n_inputs = tj_graph_num_inputs((tj_graph *)g);
    d->params = tjc_calloc((size_t)(d->n_inputs ? d->n_inputs : 1), sizeof *d->params);
    d->param_of_input = tjc_malloc(sizeof(int) * (size_t)(d->n_inputs ? d->n_inputs : 1));
    if (!d->params || !d->param_of_input) return tjc_error(TJ_ERR_MEMORY, "tj_ddp_wrap: out of memory");
    for (int i = 0; i < d->n_inputs; i++) {
        d->param_of_input[i] = -1;
        tj_tensor *t = tj_graph_input_binding(g, i);
        if (!t || !tj_dtype_is_float(tj_tensor_dtype(t))) continue; /* an input, or a constant table */
        tj_value *v = tj_graph_input((tj_graph *)g, i);
        const char *name = tj_value_name(v);
        if (!name) return tjc_error(TJ_ERR_ARG, "tj_ddp_wrap: parameter %d of the graph has no name", i);
        if (!read_by_forward(v) && !d->opts.find_unused_parameters)
            return tjc_error(TJ_ERR_ARG, "tj_ddp_wrap: parameter '%s' receives no gradient from the "
                             "program (set find_unused_parameters to leave it out)", name);
        if (!tj_is_contiguous(t))
            return tjc_error(TJ_ERR_ARG, "tj_ddp_wrap: parameter '%s' is not contiguous", name);
        ddp_param *p = &d->params[d->n_params];
        *p = (ddp_param){.input = i, .name = name, .tensor = t, .bucket = read_by_forward(v) ? 0 : -1};
        d->param_of_input[i] = d->n_params++;
    }
    return TJ_OK;
}

/* ---- buckets ------------------------------------------------------------------------ */

/* Packs the parameters order[0..n) into buckets in that order; a bucket is
 * closed when the next parameter of its dtype and device would take it past
 * bucket_bytes (a larger parameter has one of its own). */
static tj_status make_buckets(tj_ddp *d, const int *order, int n) {
    int64_t limit = d->opts.bucket_bytes ? d->opts.bucket_bytes : DEFAULT_BUCKET_BYTES;
    size_t cap = (size_t)(n ? n : 1);
    d->n_buckets = 0;
    d->buckets = tjc_calloc(cap, sizeof *d->buckets);
    int *open = tjc_malloc(sizeof(int) * cap); /* per dtype and device: the bucket filling */
    tj_tensor **kind = tjc_malloc(sizeof(tj_tensor *) * cap); /* a parameter of that dtype and device */
    int64_t *numel = tjc_calloc(cap, sizeof(int64_t));
    tj_status st = d->buckets && open && kind && numel ? TJ_OK : tjc_error(TJ_ERR_MEMORY, "tj_ddp: out of memory");
    int n_open = 0;
    for (int i = 0; !st && i < n; i++) {
        ddp_param *p = &d->params[order[i]];
        int o = 0;
        while (o < n_open && !(tj_tensor_dtype(kind[o]) == tj_tensor_dtype(p->tensor) &&
                               same_device(tj_tensor_device(kind[o]), tj_tensor_device(p->tensor))))
            o++;
        if (o == n_open) {
            kind[n_open++] = p->tensor;
            open[o] = d->n_buckets++;
        } else if (d->buckets[open[o]].bytes + param_bytes(p) >
                   (open[o] == 0 && !d->opts.bucket_bytes ? FIRST_BUCKET_BYTES : limit)) {
            open[o] = d->n_buckets++;
        }
        ddp_bucket *bk = &d->buckets[open[o]];
        p->bucket = open[o];
        p->offset = numel[open[o]];
        numel[open[o]] += param_numel(p);
        bk->bytes += param_bytes(p);
        bk->n_params++;
    }
    tj_scope_begin(); /* the buckets and views are kept (retained); the steps to them are not */
    for (int i = 0; !st && i < n; i++) { /* each bucket made when its first parameter comes */
        ddp_param *p = &d->params[order[i]];
        ddp_bucket *bk = &d->buckets[p->bucket];
        if (!bk->flat)
            bk->flat = tj_retain(tj_zeros_on(&numel[p->bucket], 1, tj_tensor_dtype(p->tensor),
                                             tj_tensor_device(p->tensor)));
        if (!bk->flat) st = tj_last_status();
    }
    for (int i = 0; !st && i < n; i++) {
        ddp_param *p = &d->params[order[i]];
        tj_tensor *part = tj_narrow(d->buckets[p->bucket].flat, 0, p->offset, param_numel(p));
        tj_tensor *view = part ? tj_view(part, tj_sizes(p->tensor), tj_ndim(p->tensor)) : NULL;
        p->slice = view ? tj_retain(view) : NULL;
        if (!p->slice) st = tj_last_status();
    }
    tj_scope_end();
    tjc_free(open);
    tjc_free(kind);
    tjc_free(numel);
    if (!st) d->stats.buckets = d->n_buckets;
    return st;
}

static void free_buckets(tj_ddp *d) {
    for (int k = 0; d->params && k < d->n_params; k++) {
        tj_release(d->params[k].slice);
        tj_release(d->params[k].published);
        d->params[k].slice = d->params[k].published = NULL;
    }
    for (int b = 0; d->buckets && b < d->n_buckets; b++) tj_release(d->buckets[b].flat);
    tjc_free(d->buckets);
    d->buckets = NULL;
    d->n_buckets = 0;
}

/* The first packing: last graph input first, the reverse of the forward pass. */
static tj_status make_first_buckets(tj_ddp *d) {
    d->order = tjc_malloc(sizeof(int) * (size_t)(d->n_params ? d->n_params : 1));
    d->arrival = tjc_malloc(sizeof(int) * (size_t)(d->n_params ? d->n_params : 1));
    if (!d->order || !d->arrival) return tjc_error(TJ_ERR_MEMORY, "tj_ddp_wrap: out of memory");
    d->n_order = 0;
    for (int k = d->n_params - 1; k >= 0; k--)
        if (d->params[k].bucket >= 0) d->order[d->n_order++] = k;
    d->stats.parameters = d->n_order;
    return make_buckets(d, d->order, d->n_order);
}

/* ---- the gradient hook --------------------------------------------------------------- */

/* The program's accumulated gradient of p (new reference), or NULL when it has none. */
static tj_tensor *accumulated(tj_ddp *d, const ddp_param *p) {
    tj_status before = tj_last_status();
    tj_tensor *acc = tj_program_grad(d->program, p->name);
    if (!acc && before == TJ_OK) tj_clear_error(); /* "no gradient yet" is not a failure here */
    return acc;
}

/* Adds grad to the program's own accumulated gradient of p, as the program
 * would without a hook (no_sync, and parameters left out of the buckets). */
static tj_status accumulate_locally(tj_ddp *d, const ddp_param *p, tj_tensor *grad) {
    tj_scope_begin();
    tj_tensor *acc = accumulated(d, p);
    /* the program's gradient is a new tensor: grad itself, or a sum (never
     * written into: grad may be a value the replay shares) */
    tj_tensor *sum = acc ? tj_add(acc, grad, 1.0) : grad;
    tj_status st = sum ? tj_program_set_grad(d->program, p->name, sum) : tj_last_status();
    tj_scope_end();
    return st;
}

/* The bucket slice of p becomes its accumulated gradient plus grad (grad NULL: plus nothing). */
static tj_status fill_slice(tj_ddp *d, ddp_param *p, tj_tensor *grad) {
    tj_scope_begin();
    tj_tensor *acc = accumulated(d, p), *value = grad ? grad : acc;
    if (acc && grad) value = tj_add(acc, grad, 1.0);
    else if (!value) value = tj_zeros_on(tj_sizes(p->slice), tj_ndim(p->slice), tj_tensor_dtype(p->slice),
                                         tj_tensor_device(p->slice));
    tj_status st = value && tj_copy_(p->slice, value) ? TJ_OK : tj_last_status();
    tj_scope_end();
    return st;
}

static tj_status fail(tj_ddp *d, tj_status st, const char *what) {
    if (!d->failed) {
        d->failed = st;
        snprintf(d->failure, sizeof d->failure, "%s: %s", what, tj_last_error());
    }
    return tjc_error(st, "tj_ddp: %s", d->failure);
}

/* Notes which in-flight all-reduces have completed (their end time). */
static tj_status poll(tj_ddp *d) {
    for (int b = 0; b < d->next_bucket; b++) {
        ddp_bucket *bk = &d->buckets[b];
        if (!bk->work || bk->completed) continue;
        bool done = false;
        tj_status st = tj_dist_test(bk->work, &done);
        if (st) return fail(d, st, "an all-reduce of gradients failed");
        if (done) {
            bk->completed = true;
            bk->t_done = now_s();
        }
    }
    return TJ_OK;
}

/* Starts every full bucket whose predecessors have all started. */
static tj_status start_ready_buckets(tj_ddp *d, int remaining, bool force) {
    while (d->next_bucket < d->n_buckets) {
        ddp_bucket *bk = &d->buckets[d->next_bucket];
        if (!force && bk->n_ready < bk->n_params) break;
        bk->t_start = now_s();
        tj_status st = tj_dist_all_reduce(bk->flat, TJ_REDUCE_AVG, d->group, &bk->work);
        if (st) return fail(d, st, "starting an all-reduce of gradients failed");
        bk->started = true;
        if (remaining > 0) d->stats.buckets_started_early++;
        d->next_bucket++;
    }
    return TJ_OK;
}

/* A world of one: the average of the gradients is this rank's own, so they
 * are handed to the program as it would take them without the wrapper, with
 * no bucket, copy or collective (unless the gradients must be bucket views). */
static bool alone(const tj_ddp *d) { return tj_dist_world_size() == 1 && !d->opts.gradient_as_bucket_view; }

static tj_status hook_ready(void *ctx, int input, tj_tensor *grad, int remaining) {
    tj_ddp *d = ctx;
    if (input < 0 || input >= d->n_inputs || d->param_of_input[input] < 0)
        return tjc_error(TJ_ERR_INTERNAL, "tj_ddp: a gradient for graph input %d, which is not a "
                         "parameter", input);
    ddp_param *p = &d->params[d->param_of_input[input]];
    if (d->no_sync || p->bucket < 0 || alone(d)) return accumulate_locally(d, p, grad);
    if (d->failed) return tjc_error(d->failed, "tj_ddp: %s (the group can only be finalized)", d->failure);
    if (p->ready)
        return tjc_error(TJ_ERR_INTERNAL, "tj_ddp: parameter '%s' was handed two gradients in one "
                         "backward pass", p->name);
    tj_status st = fill_slice(d, p, grad);
    if (st) return st;
    p->ready = true;
    d->arrival[d->n_arrived++] = d->param_of_input[input];
    d->buckets[p->bucket].n_ready++;
    st = start_ready_buckets(d, remaining, false);
    return st ? st : poll(d);
}

/* Back to the start of a pass: no bucket started, no gradient in. */
static void reset_pass(tj_ddp *d) {
    for (int k = 0; k < d->n_params; k++) d->params[k].ready = false;
    for (int b = 0; b < d->n_buckets; b++) {
        ddp_bucket *bk = &d->buckets[b];
        bk->n_ready = 0;
        bk->work = NULL;
        bk->started = bk->completed = false;
    }
    d->next_bucket = 0;
    d->n_arrived = 0;
}

/* Completes every started all-reduce; the first failure is returned, and the
 * rest are still completed or failed (their handles freed). */
static tj_status wait_all(tj_ddp *d) {
    tj_status first = TJ_OK;
    for (int b = 0; b < d->next_bucket; b++) {
        ddp_bucket *bk = &d->buckets[b];
        if (!bk->work) continue;
        tj_status st = tj_dist_wait(bk->work);
        bk->work = NULL;
        if (!bk->completed) bk->t_done = now_s();
        bk->completed = true;
        d->stats.comm_s += bk->t_done - bk->t_start;
        if (st && !first) first = fail(d, st, "an all-reduce of gradients failed");
    }
    /* the later handles' messages ("abandoned") do not replace the cause */
    return first ? tjc_error(first, "tj_ddp: %s", d->failure) : TJ_OK;
}

static bool held_by_ddp_alone(const tj_tensor *t) {
    return atomic_load(&((tj_tensor *)t)->refcount) == 1 && atomic_load(&t->storage->refcount) == 1;
}

/* The averaged slice of p in a tensor of its own. The one handed over at the
 * previous step is written again when nothing but this wrapper holds it any
 * more (the program's gradient was cleared and nobody kept it or a view of
 * it), so that a training loop's steady state allocates nothing here; a
 * gradient someone still holds is never overwritten. */
static tj_tensor *reusable_copy(ddp_param *p) {
    if (p->published && held_by_ddp_alone(p->published))
        return tj_copy_(p->published, p->slice) ? p->published : NULL;
    tj_release(p->published);
    p->published = NULL;
    tj_tensor *g = tj_clone(p->slice); /* owned by publish()'s scope */
    if (g) p->published = tj_retain(g);
    return g;
}

static tj_status publish(tj_ddp *d) {
    tj_status st = TJ_OK;
    tj_scope_begin();
    for (int k = 0; !st && k < d->n_params; k++) {
        ddp_param *p = &d->params[k];
        if (p->bucket < 0) continue;
        tj_tensor *g = d->opts.gradient_as_bucket_view ? p->slice : reusable_copy(p);
        st = g ? tj_program_set_grad(d->program, p->name, g) : tj_last_status();
    }
    tj_scope_end();
    return st;
}

static tj_device meta_device(const tj_ddp *d);

/* After the first synchronised pass, the buckets are packed again in the
 * order the gradients came (rank 0's, so that every rank packs alike), when
 * it differs from the first packing: a backward program may finish the
 * gradients in another order than the reverse of the forward pass, and a
 * bucket can only start once it is full. */
static tj_status repack_in_arrival_order(tj_ddp *d) {
    d->repacked = true;
    int n = d->n_order;
    int64_t *order = tjc_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    bool *taken = tjc_calloc((size_t)(d->n_params ? d->n_params : 1), sizeof(bool));
    tj_status st = order && taken ? TJ_OK : tjc_error(TJ_ERR_MEMORY, "tj_ddp: out of memory");
    int at = 0;
    for (int i = 0; !st && i < d->n_arrived; i++) {
        order[at++] = d->arrival[i];
        taken[d->arrival[i]] = true;
    }
    for (int i = 0; !st && i < n; i++) /* handed nothing this pass: where they were */
        if (!taken[d->order[i]]) order[at++] = d->order[i];
    int64_t len = n;
    tj_scope_begin();
    tj_tensor *t = st ? NULL : tj_to_device(tj_from_array(order, &len, 1, TJ_I64), meta_device(d));
    if (!st && !t) st = tj_last_status();
    if (!st && (st = tj_dist_broadcast(t, 0, d->group, NULL)))
        st = fail(d, st, "agreeing on the order of the buckets failed");
    tj_tensor *host = st ? NULL : tj_to_device(t, (tj_device){TJ_CPU, 0});
    if (!st && !host) st = tj_last_status();
    bool same = true;
    for (int i = 0; !st && i < n; i++) {
        int64_t k = ((const int64_t *)tj_data(host))[i];
        if (k < 0 || k >= d->n_params || d->params[k].bucket < 0)
            st = tjc_error(TJ_ERR_INTERNAL, "tj_ddp: rank 0's bucket order names parameter %lld, "
                           "which this rank does not bucket", (long long)k);
        else if (k != d->order[i]) same = false;
        if (!st) d->order[i] = (int)k;
    }
    tj_scope_end();
    tjc_free(order);
    tjc_free(taken);
    if (st || same) return st;
    free_buckets(d);
    st = make_buckets(d, d->order, n);
    return st ? fail(d, st, "packing the buckets again failed") : TJ_OK;
}

static tj_status hook_finish(void *ctx, tj_status backward_status) {
    tj_ddp *d = ctx;
    if (d->no_sync) return backward_status;
    if (alone(d)) {
        if (!backward_status) d->stats.steps++;
        return backward_status;
    }
    tj_status st = TJ_OK;
    if (!backward_status && !d->failed) {
        /* a parameter the pass handed nothing to contributes its accumulated gradient (or zeros) */
        for (int k = 0; !st && k < d->n_params; k++) {
            ddp_param *p = &d->params[k];
            if (p->bucket < 0 || p->ready || p->bucket < d->next_bucket) continue;
            st = fill_slice(d, p, NULL);
            if (!st) {
                p->ready = true;
                d->buckets[p->bucket].n_ready++;
            }
        }
        if (!st) st = start_ready_buckets(d, 0, true);
    }
    /* started all-reduces are completed even when the pass failed: their
     * tensors must not be touched while a peer may still read them */
    double t0 = now_s();
    tj_status waited = wait_all(d);
    d->stats.exposed_s += now_s() - t0;
    if (!st) st = waited;
    if (!st && !backward_status && !d->failed) {
        st = publish(d);
        if (!st) {
            d->stats.steps++;
            for (int b = 0; b < d->n_buckets; b++) d->stats.bytes_reduced += d->buckets[b].bytes;
        }
        if (!st && !d->repacked) st = repack_in_arrival_order(d);
    }
    reset_pass(d);
    if (backward_status) return backward_status;
    if (!st && d->failed) st = tjc_error(d->failed, "tj_ddp: %s (the group can only be finalized)", d->failure);
    return st;
}

/* ---- wrapping ------------------------------------------------------------------------- */

enum { META_OK, META_COUNT, META_ELEMENTS, META_HASH, META_N };

/* What every rank must agree on: its own state, then the parameters. */
static void describe(const tj_ddp *d, bool ok, int64_t meta[META_N]) {
    uint64_t h = 0xcbf29ce484222325ULL;
    int64_t elements = 0;
    for (int k = 0; ok && k < d->n_params; k++) {
        const ddp_param *p = &d->params[k];
        int32_t dtype = (int32_t)tj_tensor_dtype(p->tensor), ndim = (int32_t)tj_ndim(p->tensor);
        h = fnv1a(h, p->name, strlen(p->name) + 1);
        h = fnv1a(h, &dtype, sizeof dtype);
        h = fnv1a(h, &ndim, sizeof ndim);
        h = fnv1a(h, tj_sizes(p->tensor), sizeof(int64_t) * (size_t)ndim);
        elements += param_numel(p);
    }
    meta[META_OK] = ok;
    meta[META_COUNT] = ok ? d->n_params : 0;
    meta[META_ELEMENTS] = elements;
    meta[META_HASH] = (int64_t)h;
}

/* Where the group's collectives take tensors: NCCL's on the GPU. */
static tj_device meta_device(const tj_ddp *d) {
    const char *backend = tj_dist_backend();
    tj_device dev = {TJ_CPU, 0};
    if (backend && !strcmp(backend, "nccl")) {
        dev = (tj_device){TJ_CUDA, 0};
        if (d->n_params) dev = tj_tensor_device(d->params[0].tensor);
    }
    return dev;
}

/* All-gathers every rank's description; refuses (on every rank alike) when a
 * rank failed or describes other parameters. */
static tj_status agree(tj_ddp *d, bool ok, const char *local_error) {
    int world = tj_dist_world_size();
    int64_t mine[META_N];
    describe(d, ok, mine);
    int64_t n_all = (int64_t)world * META_N, n_mine = META_N;
    tj_status st = TJ_OK;
    tj_scope_begin();
    tj_device dev = meta_device(d);
    tj_tensor *in = tj_to_device(tj_from_array(mine, &n_mine, 1, TJ_I64), dev);
    tj_tensor *out = tj_zeros_on(&n_all, 1, TJ_I64, dev);
    if (!in || !out) st = tj_last_status();
    if (!st) st = tj_dist_all_gather(out, in, d->group, NULL);
    tj_tensor *host = st ? NULL : tj_to_device(out, (tj_device){TJ_CPU, 0});
    if (!st && !host) st = tj_last_status();
    char msg[600];
    if (st) snprintf(msg, sizeof msg, "tj_ddp_wrap: comparing the ranks' parameters failed: %s",
                     tj_last_error());
    const int64_t *all = host ? tj_data(host) : NULL;
    if (!st && !ok) { /* this rank's own reason first */
        st = TJ_ERR_ARG;
        snprintf(msg, sizeof msg, "%s", local_error);
    }
    for (int r = 0; !st && r < world; r++) {
        if (all[(size_t)r * META_N + META_OK]) continue;
        st = TJ_ERR_ARG;
        snprintf(msg, sizeof msg, "tj_ddp_wrap: rank %d could not wrap its program", r);
    }
    for (int r = 1; !st && r < world; r++) {
        const int64_t *a = all, *b = all + (size_t)r * META_N;
        if (a[META_COUNT] == b[META_COUNT] && a[META_ELEMENTS] == b[META_ELEMENTS] &&
            a[META_HASH] == b[META_HASH])
            continue;
        char ea[32], eb[32];
        bool same_counts = a[META_COUNT] == b[META_COUNT] && a[META_ELEMENTS] == b[META_ELEMENTS];
        snprintf(msg, sizeof msg, "tj_ddp_wrap: rank 0 has %" PRId64 " parameters (%s elements), "
                 "rank %d has %" PRId64 " (%s elements)%s", a[META_COUNT],
                 grouped(ea, sizeof ea, a[META_ELEMENTS]), r, b[META_COUNT],
                 grouped(eb, sizeof eb, b[META_ELEMENTS]),
                 same_counts ? " with other names, shapes or dtypes" : "");
        st = TJ_ERR_ARG;
    }
    tj_scope_end();
    if (st) tjc_error(st, "%s", msg);
    return st;
}

static void ddp_destroy(tj_ddp *d) {
    if (!d) return;
    free_buckets(d);
    tjc_free(d->params);
    tjc_free(d->param_of_input);
    tjc_free(d->order);
    tjc_free(d->arrival);
    tjc_free(d);
}

/* The checks of this rank alone; they are shared with the others before
 * anything is communicated, so a rank's bad argument fails every rank. */
static tj_status prepare(tj_ddp *d, tj_program *program, const tj_ddp_options *opts) {
    if (!program) return tjc_error(TJ_ERR_ARG, "tj_ddp_wrap: program is NULL");
    if (opts && opts->bucket_bytes < 0)
        return tjc_error(TJ_ERR_ARG, "tj_ddp_wrap: bucket_bytes is %" PRId64 "; give a positive "
                         "size, or 0 for 25 MB", opts->bucket_bytes);
    if (!tj_program_backward_graph(program))
        return tjc_error(TJ_ERR_ARG, "tj_ddp_wrap: the program was compiled without gradients "
                         "(set grad_parameters in tj_compile_options)");
    tj_status st = collect_params(d);
    if (!st) st = make_first_buckets(d);
    if (!st) {
        tj_grad_hook hook = {.ctx = d, .ready = hook_ready, .finish = hook_finish};
        st = tj_program_set_grad_hook(program, &hook);
    }
    return st;
}

tj_ddp *tj_ddp_wrap(tj_program *program, tj_dist_group *group, const tj_ddp_options *opts) {
    if (!group) group = tj_dist_world();
    if (!group)
        return tjc_error(TJ_ERR_ARG, "tj_ddp_wrap: no process group (call tj_dist_init first)"), NULL;
    tj_ddp *d = tjc_calloc(1, sizeof *d);
    if (!d) return tjc_error(TJ_ERR_MEMORY, "tj_ddp_wrap: out of memory"), NULL;
    d->program = program;
    d->group = group;
    if (opts) d->opts = *opts;
    tj_status st = prepare(d, program, opts);
    bool hooked = !st;
    char local_error[512] = "";
    if (st) snprintf(local_error, sizeof local_error, "%s", tj_last_error());
    /* every rank takes part in the comparison, including one that failed its own checks */
    st = agree(d, !st, local_error);
    for (int k = 0; !st && k < d->n_params; k++) {
        st = tj_dist_broadcast(d->params[k].tensor, 0, group, NULL);
        if (st) tjc_error(st, "tj_ddp_wrap: broadcasting parameter '%s' from rank 0 failed: %s",
                          d->params[k].name, tj_last_error());
    }
    if (st) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", tj_last_error());
        if (hooked) tj_program_set_grad_hook(program, NULL);
        ddp_destroy(d);
        tjc_error(st, "%s", msg);
        return NULL;
    }
    return d;
}

tj_status tj_ddp_set_no_sync(tj_ddp *ddp, bool no_sync) {
    if (!ddp) return tjc_error(TJ_ERR_ARG, "tj_ddp_set_no_sync: ddp is NULL");
    ddp->no_sync = no_sync;
    return TJ_OK;
}

tj_status tj_ddp_get_stats(const tj_ddp *ddp, tj_ddp_stats *out) {
    if (!ddp || !out) return tjc_error(TJ_ERR_ARG, "tj_ddp_get_stats: %s is NULL", ddp ? "out" : "ddp");
    *out = ddp->stats;
    return TJ_OK;
}

void tj_ddp_free(tj_ddp *ddp) {
    if (!ddp) return;
    tj_program_set_grad_hook(ddp->program, NULL);
    ddp_destroy(ddp);
}
