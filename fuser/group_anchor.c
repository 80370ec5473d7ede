/* group_anchor.c — running an epilogue group (fuser.h): its anchor, a
 * matrix product or convolution, block of rows by block of rows, each block
 * followed at once by the epilogue's kernel on that block while it is still
 * in cache. The epilogue is the group's other members, compiled by the
 * group's backend as an ordinary pointwise group over [the anchor's result,
 * the inputs it reads]; its kernels are compiled for the block's geometry.
 *
 * Per input spec the group keeps a plan: the row split, the block size, how
 * each input is seen by a block (its rows, or whole when it broadcasts along
 * them), the anchor's prepared call and the epilogue's kernel for a full
 * block and for the last, shorter one. Inputs a block cannot slice (rows
 * that do not collapse to one stride, an operand of other leading sizes, an
 * epilogue that chunks) make the whole result one block: still one group,
 * the epilogue then one sweep after the product. The anchor's result lives
 * in the group's output when the group returns it, else in a per-thread
 * scratch block. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "group_internal.h"

enum { WHOLE, ROWS, BROADCAST }; /* how a block sees an input */

typedef struct anchored_plan {
    tjf_spec *spec; /* the key: tjf_spec_bytes of it */
    int nd, split;  /* the result's dims; the first split of them are the rows */
    int64_t sizes[TJ_MAX_DIMS];
    int64_t rows, inner, block_rows, n_blocks; /* inner: elements a row */
    bool blocked;                              /* false: one block, every operand whole */
    signed char *how;                          /* per epilogue input after the first */
    int64_t *row_stride;                       /* for ROWS */
    int64_t x_stride;                          /* the anchor's first operand's row stride */
    tjc_prepared anchor[2];                    /* a full block, the last one */
    const tjf_kernel *epilogue[2];
    const tjf_backend *backend;
} anchored_plan;

struct tjf_anchored {
    int anchor; /* index of the anchor among the group's nodes */
    tjf_anchor_kind kind;
    int result_output; /* the group output that is the anchor's result, or -1 */
    tjf_group *epilogue; /* NULL when the group returns only the anchor's result */
    int n_epi_in;        /* epilogue inputs after the first (the anchor's result) */
    int *epi_in;         /* the group input each one is */
    int *epi_out;        /* per group output: its epilogue output, -1 for the anchor's result */
    bool chunks;         /* the epilogue chunks an input: one block */
    int64_t forced_rows; /* TJIT_EPILOGUE_ROWS: rows a block, for tests and tuning */
    anchored_plan **plans;
    int n_plans, cap_plans;
};

/* A block's result aims at this many bytes, and a matrix product's block
 * has at least MIN_PRODUCT_ROWS rows: each OpenBLAS call packs the weight
 * again and splits its rows over the threads, so cache-sized blocks (512 KB,
 * 128-512 rows) made a [4096, 1024] x [1024, 1024] product 7-29% slower on
 * Zen 5 (bench/fusion); most groups are therefore one block. */
enum { BLOCK_BYTES = 16 << 20, MIN_PRODUCT_ROWS = 2048 };

/* ---- per-thread scratch for a result the group does not return ----------------- */

typedef struct scratch {
    void *data;
    size_t bytes;
} scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p) {
    scratch *s = p;
    if (s) tjc_free(s->data);
    tjc_free(s);
}

static void scratch_init(void) { (void)pthread_key_create(&scratch_key, scratch_free); }

static void *scratch_get(size_t bytes) {
    pthread_once(&scratch_once, scratch_init);
    scratch *s = pthread_getspecific(scratch_key);
    if (!s) {
        if (!(s = tjc_calloc(1, sizeof *s))) return NULL;
        if (pthread_setspecific(scratch_key, s)) {
            tjc_free(s);
            return NULL;
        }
    }
    if (s->bytes < bytes) {
        void *grown = tjc_aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!grown) return NULL;
        tjc_free(s->data);
        s->data = grown;
        s->bytes = bytes;
    }
    return s->data;
}

/* ---- setting up: the epilogue's own subgraph ---------------------------------------- */

static void plan_free(struct anchored_plan *p);

void tjf_anchored_free(tjf_anchored *a) {
    if (!a) return;
    tjf_group_free(a->epilogue);
    for (int i = 0; i < a->n_plans; i++) plan_free(a->plans[i]);
    tjc_free(a->plans);
    tjc_free(a->epi_in);
    tjc_free(a->epi_out);
    tjc_free(a);
}

static tj_status refuse(tjf_group *g, const char *why) {
    return tjc_error(TJ_ERR_UNSUPPORTED, "fusion group %%%d: %s", g->node_id, why);
}

/* The epilogue graph: the anchor's result and the inputs the other members
 * read, then those members, returning the group's outputs but the result. */
static tj_status build_epilogue(tjf_group *g, tjf_anchored *a, const tj_node *anchor) {
    tj_block *b = tj_graph_block((tj_graph *)g->sub);
    const tj_value *result = tj_node_output(anchor, 0);
    tj_graph *e = tj_graph_new();
    tj_value_map *map = tj_value_map_new();
    tj_status st = e && map ? TJ_OK : tjc_error(TJ_ERR_MEMORY, "out of memory");
    tj_value *v0 = st ? NULL : tj_graph_add_input(e, tj_value_type(result), NULL);
    if (!st && (!v0 || tj_value_map_set(map, result, v0))) st = tj_last_status();
    for (int j = 0; !st && j < g->n_inputs; j++) {
        tj_value *in = tj_block_input(b, j);
        bool used = false;
        for (int u = 0; u < tj_value_num_uses(in); u++) {
            const tj_node *user = tj_value_use(in, u).user;
            used |= user != anchor && tj_node_kind_of(user) != TJ_NODE_RETURN;
        }
        if (!used) continue;
        tj_value *ev = tj_graph_add_input(e, tj_value_type(in), NULL);
        if (!ev || tj_value_map_set(map, in, ev)) st = tj_last_status();
        else a->epi_in[a->n_epi_in++] = j;
    }
    for (tj_node *n = tj_block_first(b); !st && n; n = tj_node_next(n)) {
        if (n == anchor) continue;
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK) a->chunks = true;
        tj_node *copy = tj_node_clone(e, n, map);
        if (!copy || tj_block_append(tj_graph_block(e), copy)) st = tj_last_status();
    }
    int n_epi_out = 0;
    for (int i = 0; !st && i < g->n_outputs; i++) {
        tj_value *v = tj_block_output(b, i);
        if (v == result) {
            if (a->result_output >= 0) st = refuse(g, "it returns its matrix product twice");
            a->result_output = i;
            a->epi_out[i] = -1;
            continue;
        }
        tj_value *ev = tj_value_map_get(map, v);
        if (!ev || tj_node_kind_of(tj_value_node(v)) == TJ_NODE_PARAM)
            st = refuse(g, "an output of an epilogue group is one of its inputs");
        else if (!(st = tj_graph_add_output(e, ev)))
            a->epi_out[i] = n_epi_out++;
    }
    tj_value_map_free(map);
    if (st || n_epi_out == 0) {
        tj_graph_free(e);
        return st;
    }
    a->epilogue = tjf_group_of_subgraph(e, true, g->node_id, g->backend);
    return a->epilogue ? TJ_OK : tj_last_status();
}

tj_status tjf_anchored_new(tjf_group *g, int k) {
    tjf_anchored *a = tjc_calloc(1, sizeof *a);
    if (a) {
        a->epi_in = tjc_calloc((size_t)(g->n_inputs ? g->n_inputs : 1), sizeof(int));
        a->epi_out = tjc_calloc((size_t)(g->n_outputs ? g->n_outputs : 1), sizeof(int));
    }
    if (!a || !a->epi_in || !a->epi_out) {
        tjf_anchored_free(a);
        return tjc_error(TJ_ERR_MEMORY, "out of memory");
    }
    a->anchor = k;
    a->result_output = -1;
    const char *rows = getenv("TJIT_EPILOGUE_ROWS");
    a->forced_rows = rows ? atoll(rows) : 0;
    tj_node *n = tj_block_first(tj_graph_block((tj_graph *)g->sub));
    for (int i = 0; i < k; i++) n = tj_node_next(n);
    a->kind = tjf_anchor_op(n);
    for (int i = 0; i < g->nodes[k].n_in; i++)
        if (g->nodes[k].in[i] >= g->n_inputs) {
            tjf_anchored_free(a);
            return refuse(g, "its matrix product reads a value made inside the group");
        }
    tj_status st = build_epilogue(g, a, n);
    if (st) {
        tjf_anchored_free(a);
        return st;
    }
    g->anchored = a;
    return TJ_OK;
}

/* ---- plans: how blocks see the inputs ------------------------------------------------ */

/* The stride of one step through the first lead dims of t taken as one
 * (their sizes given by want), or false when they do not collapse. */
static bool rows_collapse(const tj_tensor *t, const int64_t *want, int lead, int64_t *stride) {
    if (t->ndim < lead) return false;
    int last = -1;
    *stride = 0;
    for (int d = lead - 1; d >= 0; d--) {
        if (t->sizes[d] != want[d]) return false;
        if (t->sizes[d] == 1) continue;
        if (last < 0) *stride = t->strides[d];
        else if (t->strides[d] != t->strides[last] * t->sizes[last]) return false;
        last = d;
    }
    return true;
}

/* How a block sees input t of an epilogue over a result of nd dims whose
 * first split are rows. */
static signed char input_how(const tj_tensor *t, const anchored_plan *p, int64_t *stride) {
    int inner_dims = p->nd - p->split, lead = t->ndim - inner_dims;
    bool broadcast = true;
    for (int d = 0; d < lead; d++) broadcast &= t->sizes[d] == 1;
    if (broadcast) return BROADCAST;
    if (t->ndim == p->nd && rows_collapse(t, p->sizes, p->split, stride)) return ROWS;
    return WHOLE;
}

/* A view of t for rows [r0, r0 + nr), as how says: its rows from r0 on
 * and its other dims (ROWS), or its dims past the rows (BROADCAST). */
static const tj_tensor *block_view(tj_tensor *view, const tj_tensor *t, signed char how, int64_t stride,
                                   int split, int inner_dims, int64_t r0, int64_t nr) {
    if (how == WHOLE) return t;
    int64_t sizes[TJ_MAX_DIMS], strides[TJ_MAX_DIMS];
    int k = 0, from = how == ROWS ? split : (t->ndim > inner_dims ? t->ndim - inner_dims : 0);
    if (how == ROWS) {
        sizes[k] = nr;
        strides[k++] = stride;
    }
    for (int d = from; d < t->ndim; d++) {
        sizes[k] = t->sizes[d];
        strides[k++] = t->strides[d];
    }
    tjc_view_on_stack(view, t, sizes, strides, k, t->offset + (how == ROWS ? r0 * stride : 0));
    return view;
}

/* A contiguous tensor header over storage from offset on (no reference taken). */
static tj_tensor *contiguous_on(tj_tensor *view, tjc_storage *storage, int64_t offset, tj_dtype dtype,
                                const int64_t *sizes, int ndim) {
    memset(view, 0, sizeof *view);
    atomic_init(&view->refcount, 1);
    view->storage = storage;
    view->offset = offset;
    view->dtype = dtype;
    view->ndim = ndim;
    memcpy(view->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
    tjc_contiguous_strides(sizes, ndim, view->strides);
    return view;
}

/* The sizes of a block of nr rows: [nr, the inner sizes...], or all the
 * result's sizes when the plan is one whole block. */
static int block_sizes(const anchored_plan *p, int64_t nr, int64_t *sizes) {
    if (!p->blocked) {
        memcpy(sizes, p->sizes, sizeof(int64_t) * (size_t)p->nd);
        return p->nd;
    }
    sizes[0] = nr;
    memcpy(sizes + 1, p->sizes + p->split, sizeof(int64_t) * (size_t)(p->nd - p->split));
    return 1 + p->nd - p->split;
}

static void plan_free(anchored_plan *p) {
    if (!p) return;
    tjc_free(p->spec);
    tjc_free(p->how);
    tjc_free(p->row_stride);
    tjc_free(p->anchor[0].meta);
    tjc_free(p->anchor[1].meta);
    tjc_free(p);
}

/* The epilogue's inputs for a block of nr rows from r0 (views in views). */
static void epilogue_inputs(const tjf_anchored *a, const anchored_plan *p, tj_tensor *const *inputs,
                            tj_tensor *result, int64_t r0, int64_t nr, tj_tensor *views, tj_tensor **ein) {
    ein[0] = result;
    for (int e = 0; e < a->n_epi_in; e++)
        ein[1 + e] = (tj_tensor *)block_view(&views[e], inputs[a->epi_in[e]], p->how[e], p->row_stride[e],
                                             p->split, p->nd - p->split, r0, nr);
}

/* The plan for inputs like these (their data is not read). */
static tj_status make_plan(tjf_group *g, tj_tensor *const *inputs, const tjf_spec *spec,
                           anchored_plan **out) {
    tjf_anchored *a = g->anchored;
    const gnode *an = &g->nodes[a->anchor];
    anchored_plan *p = tjc_calloc(1, sizeof *p);
    size_t spec_bytes = tjf_spec_bytes(spec);
    int n_how = a->n_epi_in ? a->n_epi_in : 1;
    if (p) {
        p->spec = tjc_malloc(spec_bytes);
        p->how = tjc_calloc((size_t)n_how, 1);
        p->row_stride = tjc_calloc((size_t)n_how, sizeof(int64_t));
    }
    if (!p || !p->spec || !p->how || !p->row_stride) {
        plan_free(p);
        return tjc_error(TJ_ERR_MEMORY, "out of memory");
    }
    memcpy(p->spec, spec, spec_bytes);
    p->backend = g->backend;
    tj_tensor *ain[TJF_MAX_ARGS];
    for (int i = 0; i < an->n_in; i++) ain[i] = inputs[an->in[i]];
    tjc_prepared whole;
    tj_status st = tjc_prepare_call(an->op, ain, an->n_in, an->attrs, &whole);
    if (st) {
        plan_free(p);
        return st;
    }
    p->nd = whole.meta[0].ndim;
    memcpy(p->sizes, whole.meta[0].sizes, sizeof(int64_t) * (size_t)p->nd);
    tj_dtype dtype = whole.meta[0].dtype;
    p->split = tjf_anchor_row_dims(a->kind, p->nd);
    p->rows = 1;
    p->inner = 1;
    for (int d = 0; d < p->nd; d++) *(d < p->split ? &p->rows : &p->inner) *= p->sizes[d];
    int64_t row_bytes = p->inner * (int64_t)tj_dtype_size(dtype), br = a->forced_rows;
    if (br <= 0) {
        br = row_bytes > 0 ? BLOCK_BYTES / row_bytes : p->rows;
        if (a->kind != TJF_ANCHOR_CONV2D && br < MIN_PRODUCT_ROWS) br = MIN_PRODUCT_ROWS;
        if (br < 1) br = 1;
        if (p->rows <= br + br / 2) br = p->rows; /* a short last block is not worth a call */
    }
    p->blocked = !a->chunks && br < p->rows && rows_collapse(ain[0], p->sizes, p->split, &p->x_stride);
    for (int e = 0; p->blocked && e < a->n_epi_in; e++) {
        p->how[e] = input_how(inputs[a->epi_in[e]], p, &p->row_stride[e]);
        p->blocked = p->how[e] != WHOLE;
    }
    if (!p->blocked) {
        memset(p->how, WHOLE, (size_t)n_how);
        br = p->rows;
        p->anchor[0] = whole;
    } else {
        tjc_free(whole.meta);
    }
    p->block_rows = br > 0 ? br : 1;
    p->n_blocks = p->rows ? (p->rows + p->block_rows - 1) / p->block_rows : 0;
    int geometries = p->blocked && p->rows % p->block_rows ? 2 : 1;
    tjc_storage none = {.device = {TJ_CPU, 0}};
    for (int gi = 0; gi < geometries && !st; gi++) {
        int64_t nr = gi == 0 ? p->block_rows : p->rows % p->block_rows;
        tj_tensor x_view, result, views[TJF_MAX_ARGS], *ein[TJF_MAX_ARGS + 1];
        if (p->blocked) {
            ain[0] = (tj_tensor *)block_view(&x_view, inputs[an->in[0]], ROWS, p->x_stride, p->split,
                                             p->nd - p->split, 0, nr);
            st = tjc_prepare_call(an->op, ain, an->n_in, an->attrs, &p->anchor[gi]);
        }
        if (st || !a->epilogue) continue;
        int64_t sizes[TJ_MAX_DIMS];
        int nd = block_sizes(p, nr, sizes);
        epilogue_inputs(a, p, inputs, contiguous_on(&result, &none, 0, dtype, sizes, nd), 0, nr, views, ein);
        tjf_kernel *k = tjf_group_cached_kernel(a->epilogue, p->backend, ein);
        if (!k) st = tj_last_status() ? tj_last_status() : TJ_ERR_INTERNAL;
        p->epilogue[gi] = k;
    }
    if (st) {
        plan_free(p);
        return st;
    }
    *out = p;
    return TJ_OK;
}

tj_status tjf_anchored_kernel(tjf_group *g, tj_tensor *const *inputs, const tjf_kernel **kernel) {
    tjf_anchored *a = g->anchored;
    if (inputs[0]->storage->device.type != TJ_CPU)
        return refuse(g, "an epilogue group runs op by op off the CPU, which is not planned");
    tjf_spec *spec = tjc_malloc(sizeof *spec);
    if (!spec) return tjc_error(TJ_ERR_MEMORY, "out of memory");
    tjf_spec_of(inputs, g->n_inputs, spec);
    size_t used = tjf_spec_bytes(spec);
    anchored_plan *found = NULL;
    pthread_mutex_lock(&g->lock);
    for (int i = 0; i < a->n_plans && !found; i++)
        if (!memcmp(a->plans[i]->spec, spec, used)) found = a->plans[i];
    pthread_mutex_unlock(&g->lock);
    tj_status st = TJ_OK;
    if (!found) {
        anchored_plan *made = NULL;
        st = make_plan(g, inputs, spec, &made); /* outside the lock: it may compile */
        pthread_mutex_lock(&g->lock);
        for (int i = 0; !st && i < a->n_plans && !found; i++) /* another thread's, made meanwhile */
            if (!memcmp(a->plans[i]->spec, spec, used)) found = a->plans[i];
        if (!st && !found && a->n_plans == a->cap_plans) {
            int cap = a->cap_plans ? 2 * a->cap_plans : 2;
            anchored_plan **grown = tjc_realloc(a->plans, sizeof *grown * (size_t)cap);
            if (grown) {
                a->plans = grown;
                a->cap_plans = cap;
            }
        }
        if (!st && !found && a->n_plans < a->cap_plans) {
            a->plans[a->n_plans++] = found = made;
            made = NULL;
        } else if (!st && !found) {
            st = tjc_error(TJ_ERR_MEMORY, "out of memory");
        }
        pthread_mutex_unlock(&g->lock);
        plan_free(made);
    }
    tjc_free(spec);
    if (!st) *kernel = (const tjf_kernel *)(const void *)found;
    return st;
}

tj_status tjf_anchored_launch(tjf_group *g, const tjf_kernel *k, tj_tensor *const *inputs,
                              tj_tensor *const *outputs) {
    const anchored_plan *p = (const anchored_plan *)(const void *)k;
    const tjf_anchored *a = g->anchored;
    const gnode *an = &g->nodes[a->anchor];
    tj_dtype dtype = inputs[an->in[0]]->dtype;
    tjc_storage scratch_storage = {.device = {TJ_CPU, 0}};
    if (a->result_output < 0) {
        size_t bytes = (size_t)(p->block_rows * p->inner) * tj_dtype_size(dtype);
        if (!(scratch_storage.data = scratch_get(bytes ? bytes : 1)))
            return tjc_error(TJ_ERR_MEMORY, "fusion group %%%d: out of memory for its matrix product's "
                             "block", g->node_id);
        scratch_storage.nbytes = bytes;
        atomic_init(&scratch_storage.refcount, 1);
    }
    for (int64_t blk = 0; blk < p->n_blocks; blk++) {
        int64_t r0 = blk * p->block_rows, nr = p->rows - r0 < p->block_rows ? p->rows - r0 : p->block_rows;
        int gi = nr == p->block_rows ? 0 : 1;
        int64_t sizes[TJ_MAX_DIMS], at = p->blocked ? r0 * p->inner : 0;
        int nd = block_sizes(p, nr, sizes);
        tj_tensor x_view, result, views[TJF_MAX_ARGS], outs[TJF_MAX_ARGS];
        tj_tensor *ain[TJF_MAX_ARGS], *ein[TJF_MAX_ARGS + 1], *eout[TJF_MAX_ARGS];
        for (int i = 0; i < an->n_in; i++) ain[i] = inputs[an->in[i]];
        if (p->blocked)
            ain[0] = (tj_tensor *)block_view(&x_view, ain[0], ROWS, p->x_stride, p->split, p->nd - p->split, r0, nr);
        tj_tensor *res = a->result_output >= 0
                             ? contiguous_on(&result, outputs[a->result_output]->storage,
                                             outputs[a->result_output]->offset + at, dtype, sizes, nd)
                             : contiguous_on(&result, &scratch_storage, 0, dtype, sizes, nd);
        tjc_call c = {.op = an->op, .device = p->anchor[gi].device, .in = ain, .n_in = an->n_in,
                      .attr = an->attrs, .n_attr = an->op->schema.n_attrs, .meta = p->anchor[gi].meta,
                      .meta_cap = p->anchor[gi].n_out, .out = &res, .n_out = 1};
        tj_status st = p->anchor[gi].kernel(&c);
        if (st) return st;
        if (!a->epilogue) continue;
        epilogue_inputs(a, p, inputs, res, r0, nr, views, ein);
        for (int i = 0; i < g->n_outputs; i++) {
            int e = a->epi_out[i];
            if (e < 0) continue;
            eout[e] = p->blocked ? contiguous_on(&outs[e], outputs[i]->storage, outputs[i]->offset + at,
                                                 outputs[i]->dtype, sizes, nd)
                                 : outputs[i];
        }
        st = p->backend->launch(p->epilogue[gi], ein, eout);
        if (st == TJ_ERR_UNSUPPORTED) { /* a lazily compiling backend's failure: op by op */
            tjf_group_note_fallback(g, tj_last_error());
            tj_clear_error();
            return tjf_group_run_op_by_op_into(g, inputs, outputs);
        }
        if (st) return st;
    }
    return TJ_OK;
}
