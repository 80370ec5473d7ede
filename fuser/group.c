/* group.c — running a fusion group: its shape rule at run time (broadcasting
 * and chunks through the subgraph), output allocation, and the cache of
 * kernels by input spec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/ptrmap.h"
#include "group_internal.h"

void tjf_spec_of(tj_tensor *const *inputs, int n, tjf_spec *spec) {
    memset(spec, 0, sizeof *spec);
    spec->n_inputs = n;
    spec->device = n ? inputs[0]->storage->device.type : TJ_CPU;
    for (int i = 0; i < n && i < TJF_MAX_ARGS; i++) {
        const tj_tensor *t = inputs[i];
        tjf_input_spec *s = &spec->inputs[i];
        s->dtype = t->dtype;
        s->ndim = t->ndim;
        memcpy(s->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
        s->layout = tj_is_contiguous(t) ? TJF_CONTIGUOUS : TJF_STRIDED;
    }
}

void tjf_spec_of_types(const tj_node *group, tjf_spec *spec) {
    memset(spec, 0, sizeof *spec);
    spec->n_inputs = tj_node_num_inputs(group);
    spec->device = spec->n_inputs ? (tj_device_type)tj_value_type(tj_node_input(group, 0))->device_type : TJ_CPU;
    for (int i = 0; i < spec->n_inputs && i < TJF_MAX_ARGS; i++) {
        const tj_type *t = tj_value_type(tj_node_input(group, i));
        tjf_input_spec *s = &spec->inputs[i];
        s->dtype = (tj_dtype)t->dtype;
        s->ndim = t->ndim;
        memcpy(s->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim);
        int64_t want[TJ_MAX_DIMS];
        tjc_contiguous_strides(t->sizes, t->ndim, want);
        s->layout = TJF_CONTIGUOUS;
        for (int d = 0; d < t->ndim; d++)
            if (t->sizes[d] != 1 && t->strides[d] != TJ_UNKNOWN_DIM && t->strides[d] != want[d])
                s->layout = TJF_STRIDED;
    }
}

void tjf_group_free(tjf_group *g) {
    if (!g) return;
    for (int i = 0; i < g->n_cache; i++) {
        if (g->cache[i].kernel) g->cache[i].backend->release(g->cache[i].kernel);
        tjc_free(g->cache[i].spec);
    }
    tjc_free(g->cache);
    tjc_free(g->fallback);
    for (int i = 0; g->nodes && i < g->n_nodes; i++) {
        tjc_free(g->nodes[i].in);
        tjc_free(g->nodes[i].out);
    }
    tjc_free(g->nodes);
    tjc_free(g->output_slot);
    tjc_free(g->output_dtype);
    tjf_anchored_free(g->anchored);
    tj_graph_free(g->owned);
    pthread_mutex_destroy(&g->lock);
    tjc_free(g);
}

tjf_group *tjf_group_new(const tj_node *node, const tjf_backend *backend) {
    return tjf_group_of_subgraph(tj_node_subgraph(node), false, tj_node_id(node), backend);
}

tjf_group *tjf_group_of_subgraph(const tj_graph *sub, bool own, int node_id, const tjf_backend *backend) {
    tjf_group *g = tjc_calloc(1, sizeof *g);
    if (!g) {
        if (own) tj_graph_free((tj_graph *)sub);
        return tjc_error(TJ_ERR_MEMORY, "out of memory"), NULL;
    }
    pthread_mutex_init(&g->lock, NULL);
    g->sub = sub;
    g->owned = own ? (tj_graph *)sub : NULL;
    g->backend = backend;
    g->node_id = node_id;
    const char *cuda_fusion = getenv("TJIT_CUDA_FUSION");
    g->cuda_fusion = !(cuda_fusion && !strcmp(cuda_fusion, "0"));
    tj_block *b = tj_graph_block((tj_graph *)sub);
    g->n_inputs = tj_block_num_inputs(b);
    g->n_outputs = tj_block_num_outputs(b);
    g->n_nodes = tj_block_num_nodes(b);
    g->nodes = tjc_calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof(gnode));
    g->output_slot = tjc_calloc((size_t)(g->n_outputs ? g->n_outputs : 1), sizeof(int));
    g->output_dtype = tjc_calloc((size_t)(g->n_outputs ? g->n_outputs : 1), sizeof(tj_dtype));
    tjc_ptrmap slot;
    tjc_ptrmap_init(&slot);
    bool ok = g->nodes && g->output_slot && g->output_dtype;
    for (int i = 0; ok && i < g->n_inputs; i++)
        ok = tjc_ptrmap_put(&slot, tj_block_input(b, i), (void *)(intptr_t)(g->n_slots++ + 1));
    int k = 0, anchor = -1;
    for (tj_node *n = tj_block_first(b); ok && n; n = tj_node_next(n), k++) {
        gnode *gn = &g->nodes[k];
        bool pointwise = tj_node_kind_of(n) == TJ_NODE_OP && tjf_fusible_op(tj_node_op(n));
        /* a concatenation of the group's results closes a CUDA group (fuse.c) */
        bool closing_cat = tj_node_kind_of(n) == TJ_NODE_OP && !tj_node_next(n) &&
                           !strcmp(tj_node_name(n), "aten::cat");
        bool row = tjf_row_op(n) != TJF_ROW_NONE;
        bool is_anchor = !pointwise && !row && tjf_anchor_op(n) != TJF_ANCHOR_NONE && anchor < 0;
        if (tj_node_kind_of(n) != TJ_NODE_CONSTANT_CHUNK && !pointwise && !closing_cat && !row && !is_anchor) {
            tjf_group_free(g);
            tjc_ptrmap_free(&slot);
            return tjc_error(TJ_ERR_UNSUPPORTED, "fusion group %%%d: %s cannot run inside a group "
                             "(groups hold pointwise ops, prim::ConstantChunk, and one row op or one "
                             "matrix product of the forms in docs/passes.md)", node_id, tj_node_name(n)), NULL;
        }
        if (is_anchor) anchor = k;
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK) {
            gn->chunks = tj_node_attr(n, tj_node_attr_index(n, "chunks"))->i;
            gn->dim = tj_node_attr(n, tj_node_attr_index(n, "dim"))->i;
        } else {
            gn->op = tj_node_op(n);
            gn->attrs = tj_node_attrs(n);
            gn->row = row;
            gn->anchor = is_anchor;
            gn->reduce = row && tjf_row_reduces(tjf_row_op(n));
            gn->keepdim = gn->reduce && tjf_row_keepdim(n);
        }
        gn->n_in = tj_node_num_inputs(n);
        gn->n_out = tj_node_num_outputs(n);
        gn->in = tjc_calloc((size_t)(gn->n_in ? gn->n_in : 1), sizeof(int));
        gn->out = tjc_calloc((size_t)(gn->n_out ? gn->n_out : 1), sizeof(int));
        ok = gn->in && gn->out;
        for (int i = 0; ok && i < gn->n_in; i++)
            gn->in[i] = (int)(intptr_t)tjc_ptrmap_get(&slot, tj_node_input(n, i)) - 1;
        for (int i = 0; ok && i < gn->n_out; i++) {
            gn->out[i] = g->n_slots++;
            ok = tjc_ptrmap_put(&slot, tj_node_output(n, i), (void *)(intptr_t)(gn->out[i] + 1));
        }
    }
    bool planned = ok;
    for (int i = 0; planned && i < g->n_outputs; i++) {
        tj_value *v = tj_block_output(b, i);
        g->output_slot[i] = (int)(intptr_t)tjc_ptrmap_get(&slot, v) - 1;
        g->output_dtype[i] = (tj_dtype)tj_value_type(v)->dtype;
        planned = g->output_slot[i] >= 0 && (unsigned)g->output_dtype[i] < TJ_NUM_DTYPES;
    }
    tjc_ptrmap_free(&slot);
    if (!ok) {
        tjf_group_free(g);
        return tjc_error(TJ_ERR_MEMORY, "fusion group %%%d: out of memory", node_id), NULL;
    }
    if (!planned) {
        tjf_group_free(g);
        return tjc_error(TJ_ERR_INTERNAL, "fusion group %%%d: its subgraph cannot be planned",
                         node_id), NULL;
    }
    if (anchor >= 0 && tjf_anchored_new(g, anchor) != TJ_OK) {
        tjf_group_free(g);
        return NULL;
    }
    return g;
}

int tjf_group_num_kernels(const tjf_group *g) {
    pthread_mutex_lock((pthread_mutex_t *)&g->lock);
    int n = g->n_cache;
    pthread_mutex_unlock((pthread_mutex_t *)&g->lock);
    return n;
}

const char *tjf_group_backend_name(const tjf_group *g) { return g->backend->name; }

typedef struct shape {
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
} shape;

/* The sizes of every value of the subgraph, from the inputs'. */
static tj_status propagate(const tjf_group *g, tj_tensor *const *inputs, shape *sh) {
    for (int i = 0; i < g->n_inputs; i++) {
        sh[i].ndim = inputs[i]->ndim;
        memcpy(sh[i].sizes, inputs[i]->sizes, sizeof(int64_t) * (size_t)inputs[i]->ndim);
    }
    for (int k = 0; k < g->n_nodes; k++) {
        const gnode *n = &g->nodes[k];
        if (!n->op) {
            shape s = sh[n->in[0]];
            int dim;
            tj_status st = tjc_wrap_dim("prim::ConstantChunk", n->dim, s.ndim, &dim);
            if (st) return st;
            if (s.ndim == 0 || n->chunks <= 0 || s.sizes[dim] % n->chunks != 0)
                return tjc_error(TJ_ERR_SHAPE, "prim::ConstantChunk: size %lld of dim %d does not "
                                 "split into %lld equal chunks", s.ndim ? (long long)s.sizes[dim] : 0LL,
                                 dim, (long long)n->chunks);
            s.sizes[dim] /= n->chunks;
            for (int i = 0; i < n->n_out; i++) sh[n->out[i]] = s;
            continue;
        }
        shape s = {0};
        if (n->anchor) { /* its operands are group inputs: the op's own shape rule */
            tj_tensor *in[TJF_MAX_ARGS];
            for (int i = 0; i < n->n_in; i++) in[i] = inputs[n->in[i]];
            tjc_prepared prep;
            tj_status st = tjc_prepare_call(n->op, in, n->n_in, n->attrs, &prep);
            if (st) return st;
            s.ndim = prep.meta[0].ndim;
            memcpy(s.sizes, prep.meta[0].sizes, sizeof(int64_t) * (size_t)s.ndim);
            tjc_free(prep.meta);
            sh[n->out[0]] = s;
            continue;
        }
        if (n->row) {
            s = sh[n->in[0]];
            if (n->reduce && s.ndim == 0)
                return tjc_error(TJ_ERR_SHAPE, "%s: a fused reduction over the last dim of a 0-dim "
                                 "tensor", n->op->name);
            if (n->reduce && n->keepdim) s.sizes[s.ndim - 1] = 1;
            else if (n->reduce) s.ndim--;
            sh[n->out[0]] = s;
            continue;
        }
        if (!tjf_fusible_op(n->op)) { /* the closing aten::cat: pieces of one size */
            s = sh[n->in[0]];
            int dim;
            tj_status st = tjc_wrap_dim(n->op->name, n->attrs[0].i, s.ndim, &dim);
            if (st) return st;
            s.sizes[dim] *= n->n_in;
            sh[n->out[0]] = s;
            continue;
        }
        for (int i = 0; i < n->n_in; i++) {
            shape next;
            tj_status st = tjc_broadcast_shapes(n->op->name, s.sizes, s.ndim, sh[n->in[i]].sizes,
                                                sh[n->in[i]].ndim, next.sizes, &next.ndim);
            if (st) return st;
            s = next;
        }
        sh[n->out[0]] = s;
    }
    return TJ_OK;
}

/* The backend that compiles for inputs on device type d: the program's
 * on the CPU, the device's own elsewhere (NULL: none, the group runs op by
 * op). TJIT_CUDA_FUSION=0 turns the CUDA one off. */
static const tjf_backend *backend_for(const tjf_group *g, tj_device_type d) {
    if (d == TJ_CPU) return g->backend;
    return d == TJ_CUDA && !g->cuda_fusion ? NULL : tjf_device_backend(d);
}

/* Records why the group runs op by op; said once per reason on stderr when
 * TJIT_DUMP names the fusion report or the kernels. */
void tjf_group_note_fallback(tjf_group *g, const char *why) {
    pthread_mutex_lock(&g->lock);
    bool same = g->fallback && !strcmp(g->fallback, why);
    if (!same) {
        tjc_free(g->fallback);
        g->fallback = tjc_strdup(why);
    }
    pthread_mutex_unlock(&g->lock);
    const char *dump = getenv("TJIT_DUMP");
    if (!same && dump && (strstr(dump, "fusion-report") || strstr(dump, "kernels")))
        fprintf(stderr, "# fusion group %%%d runs op by op: %s\n", g->node_id, why);
}

/* The kernel for inputs like these (compiled now when new); NULL with
 * TJ_ERR_UNSUPPORTED, and the reason noted, when the backend cannot compile
 * it: the caller then runs the group op by op. */
tjf_kernel *tjf_group_cached_kernel(tjf_group *g, const tjf_backend *backend, tj_tensor *const *inputs) {
    tjf_spec *spec = tjc_malloc(sizeof *spec);
    if (!spec) return tjc_error(TJ_ERR_MEMORY, "out of memory"), NULL;
    tjf_spec_of(inputs, g->n_inputs, spec);
    tjf_kernel *k = NULL;
    bool known = false;
    char why[1024] = "";
    pthread_mutex_lock(&g->lock);
    size_t used = tjf_spec_bytes(spec);
    for (int i = 0; i < g->n_cache && !known; i++)
        if (g->cache[i].backend == backend && g->cache[i].spec->n_inputs == spec->n_inputs &&
            memcmp(g->cache[i].spec, spec, used) == 0) {
            k = g->cache[i].kernel;
            known = true;
        }
    if (known && !k) snprintf(why, sizeof why, "%s", g->fallback ? g->fallback : "it did not compile");
    tj_status st = TJ_OK;
    if (!known) {
        k = backend->compile(g->sub, spec);
        if (!k) {
            st = tj_last_status() ? tj_last_status() : TJ_ERR_INTERNAL;
            snprintf(why, sizeof why, "the %s backend cannot compile it: %s", backend->name, tj_last_error());
        }
        /* a refusal is kept (no second try per spec); a failure of memory is not */
        bool keep = k || st == TJ_ERR_UNSUPPORTED;
        tjf_spec *kept = keep ? tjc_malloc(used) : NULL;
        if (kept) memcpy(kept, spec, used);
        if (kept && g->n_cache == g->cap_cache) {
            int cap = g->cap_cache ? 2 * g->cap_cache : 1;
            cached *grown = tjc_realloc(g->cache, sizeof *grown * (size_t)cap);
            if (grown) {
                g->cache = grown;
                g->cap_cache = cap;
            }
        }
        if (kept && g->n_cache < g->cap_cache) {
            g->cache[g->n_cache].spec = kept;
            g->cache[g->n_cache].backend = backend;
            g->cache[g->n_cache++].kernel = k;
        } else if (keep) {
            tjc_free(kept);
            if (k) backend->release(k);
            k = NULL;
            st = tjc_error(TJ_ERR_MEMORY, "out of memory");
        }
    }
    pthread_mutex_unlock(&g->lock);
    tjc_free(spec);
    if (!k && why[0] && (known || st == TJ_ERR_UNSUPPORTED)) {
        tjf_group_note_fallback(g, why);
        tjc_error(TJ_ERR_UNSUPPORTED, "fusion group %%%d: %s", g->node_id, why);
    }
    return k;
}

const char *tjf_group_fallback_reason(const tjf_group *g) { return g->fallback; }

/* A group whose inputs live on a device no fusion backend compiles for runs
 * its subgraph op by op through the dispatcher: the device's own kernels. */
static tj_status run_op_by_op(const tjf_group *g, tj_tensor *const *inputs, tj_tensor **outputs) {
    enum { SMALL = 64 };
    tj_tensor *small[SMALL];
    tj_tensor **slot = g->n_slots <= SMALL ? small : tjc_calloc((size_t)g->n_slots, sizeof *slot);
    if (!slot) return tjc_error(TJ_ERR_MEMORY, "out of memory");
    for (int i = 0; i < g->n_slots; i++) slot[i] = i < g->n_inputs ? tj_retain(inputs[i]) : NULL;
    tj_status st = TJ_OK;
    for (int k = 0; st == TJ_OK && k < g->n_nodes; k++) {
        const gnode *n = &g->nodes[k];
        tj_tensor *in[TJF_MAX_ARGS], *out[TJF_MAX_ARGS];
        for (int i = 0; i < n->n_in; i++) in[i] = slot[n->in[i]];
        int got;
        if (n->op) {
            got = tjc_invoke_nested(n->op, in, n->n_in, n->attrs, out, n->n_out);
        } else {
            tj_attr chunk_attrs[2] = {{.i = n->chunks}, {.i = n->dim}};
            got = tjc_invoke_nested(tjc_op(TJ_OP_chunk), in, 1, chunk_attrs, out, n->n_out);
        }
        if (got != n->n_out) {
            for (int i = 0; i < got; i++) tj_release(out[i]);
            st = got < 0 ? tj_last_status() : tjc_error(TJ_ERR_INTERNAL, "fusion group: a node "
                                                        "gave %d outputs, not %d", got, n->n_out);
            break;
        }
        for (int i = 0; i < n->n_out; i++) slot[n->out[i]] = out[i];
    }
    for (int i = 0; st == TJ_OK && i < g->n_outputs; i++) {
        tj_tensor *v = slot[g->output_slot[i]];
        bool aliases = !tj_is_contiguous(v);
        for (int k = 0; k < g->n_inputs && !aliases; k++) aliases = tj_shares_storage(v, inputs[k]);
        /* outputs are fresh and contiguous, as a fused kernel's are */
        if (!aliases) outputs[i] = tj_retain(v);
        else if (tjc_invoke_nested(tjc_op(TJ_OP_clone), &v, 1, NULL, &outputs[i], 1) != 1)
            st = tj_last_status();
    }
    for (int i = 0; i < g->n_slots; i++) tj_release(slot[i]);
    if (slot != small) tjc_free(slot);
    if (st != TJ_OK)
        for (int i = 0; i < g->n_outputs; i++) {
            tj_release(outputs[i]);
            outputs[i] = NULL;
        }
    return st;
}

/* The backend for the group's inputs; NULL with the planner's error. */
static const tjf_backend *plannable_backend(const tjf_group *g, tj_tensor *const *inputs) {
    tj_device_type dev = g->n_inputs ? inputs[0]->storage->device.type : TJ_CPU;
    const tjf_backend *backend = backend_for(g, dev);
    if (!backend)
        tjc_error(TJ_ERR_UNSUPPORTED, "fusion group: inputs on a device without a "
                  "fusion backend run op by op, which is not planned");
    return backend;
}

tj_status tjf_group_shape(tjf_group *g, tj_tensor *const *inputs, int *ndim, int64_t *sizes) {
    if (!plannable_backend(g, inputs)) return TJ_ERR_UNSUPPORTED;
    enum { SMALL = 64 };
    shape small[SMALL];
    shape *sh = g->n_slots <= SMALL ? small : tjc_malloc(sizeof(shape) * (size_t)g->n_slots);
    if (!sh) return tjc_error(TJ_ERR_MEMORY, "out of memory");
    tj_status st = propagate(g, inputs, sh);
    const shape *it = &sh[g->output_slot[0]];
    for (int i = 0; st == TJ_OK && i < g->n_outputs; i++) {
        const shape *s = &sh[g->output_slot[i]];
        if (s->ndim != it->ndim || memcmp(s->sizes, it->sizes, sizeof(int64_t) * (size_t)s->ndim))
            st = tjc_error(TJ_ERR_INTERNAL, "fusion group: outputs of different sizes");
    }
    if (st == TJ_OK) {
        *ndim = it->ndim;
        memcpy(sizes, it->sizes, sizeof(int64_t) * (size_t)it->ndim);
    }
    if (sh != small) tjc_free(sh);
    return st;
}

tj_status tjf_group_kernel(tjf_group *g, tj_tensor *const *inputs, const tjf_kernel **kernel) {
    if (g->anchored) return tjf_anchored_kernel(g, inputs, kernel);
    const tjf_backend *backend = plannable_backend(g, inputs);
    if (!backend) return TJ_ERR_UNSUPPORTED;
    if (!(*kernel = tjf_group_cached_kernel(g, backend, inputs))) return tj_last_status() ? tj_last_status() : TJ_ERR_INTERNAL;
    return TJ_OK;
}

bool tjf_group_compiles_slowly(const tjf_group *g, tj_device_type d) {
    const tjf_backend *backend = backend_for(g, d);
    return d == TJ_CPU && backend && backend != tjf_portable_backend();
}

tj_status tjf_group_prepare(tjf_group *g, tj_tensor *const *inputs, int *ndim, int64_t *sizes,
                            const tjf_kernel **kernel) {
    tj_status st = tjf_group_shape(g, inputs, ndim, sizes);
    return st ? st : tjf_group_kernel(g, inputs, kernel);
}

int tjf_group_num_outputs(const tjf_group *g) { return g->n_outputs; }
tj_dtype tjf_group_output_dtype(const tjf_group *g, int i) { return g->output_dtype[i]; }

/* A kernel that failed at its first launch (a lazily compiling backend's
 * compile error): the group's ops run one by one into the outputs. */
static tj_status launch_or_fall_back(tjf_group *g, const tjf_backend *backend, const tjf_kernel *k,
                                     tj_tensor *const *inputs, tj_tensor *const *outputs) {
    tj_status st = backend->launch(k, inputs, outputs);
    if (st != TJ_ERR_UNSUPPORTED) return st;
    tjf_group_note_fallback(g, tj_last_error());
    tj_clear_error();
    return tjf_group_run_op_by_op_into(g, inputs, outputs);
}

tj_status tjf_group_run_op_by_op_into(const tjf_group *g, tj_tensor *const *inputs,
                                      tj_tensor *const *outputs) {
    enum { SMALL = 16 };
    tj_tensor *small[SMALL];
    tj_tensor **res = g->n_outputs <= SMALL ? small : tjc_calloc((size_t)g->n_outputs, sizeof *res);
    if (!res) return tjc_error(TJ_ERR_MEMORY, "out of memory");
    tj_status st = run_op_by_op(g, inputs, res);
    for (int i = 0; st == TJ_OK && i < g->n_outputs; i++) {
        tj_tensor *pair[2] = {outputs[i], res[i]}, *same;
        if (tjc_invoke_nested(tjc_op(TJ_OP_copy_), pair, 2, NULL, &same, 1) != 1) st = tj_last_status();
        else tj_release(same);
    }
    for (int i = 0; i < g->n_outputs; i++) tj_release(res[i]);
    if (res != small) tjc_free(res);
    return st;
}

tj_status tjf_group_launch(const tjf_group *g, const tjf_kernel *k, tj_tensor *const *inputs,
                           tj_tensor *const *outputs) {
    if (g->anchored) return tjf_anchored_launch((tjf_group *)g, k, inputs, outputs);
    tj_device_type dev = g->n_inputs ? inputs[0]->storage->device.type : TJ_CPU;
    return launch_or_fall_back((tjf_group *)g, backend_for(g, dev), k, inputs, outputs);
}

tj_status tjf_group_run(tjf_group *g, tj_tensor *const *inputs, tj_tensor **outputs) {
    tj_device device = g->n_inputs ? inputs[0]->storage->device : (tj_device){TJ_CPU, 0};
    const tjf_backend *backend = backend_for(g, device.type);
    for (int i = 0; i < g->n_inputs && backend; i++)
        if (!tjc_same_device(inputs[i]->storage->device, device)) backend = NULL;
    if (!backend || (g->anchored && device.type != TJ_CPU)) return run_op_by_op(g, inputs, outputs);
    enum { SMALL = 64 };
    shape small[SMALL];
    shape *sh = g->n_slots <= SMALL ? small : tjc_malloc(sizeof(shape) * (size_t)g->n_slots);
    if (!sh) return tjc_error(TJ_ERR_MEMORY, "out of memory");
    for (int i = 0; i < g->n_outputs; i++) outputs[i] = NULL;
    tj_status st = propagate(g, inputs, sh);
    const shape *it = &sh[g->output_slot[0]];
    for (int i = 0; st == TJ_OK && i < g->n_outputs; i++) {
        const shape *s = &sh[g->output_slot[i]];
        if (s->ndim != it->ndim || memcmp(s->sizes, it->sizes, sizeof(int64_t) * (size_t)s->ndim))
            st = tjc_error(TJ_ERR_INTERNAL, "fusion group: outputs of different sizes");
        else if (!(outputs[i] = tjc_alloc_on(device, s->sizes, s->ndim, g->output_dtype[i])))
            st = tj_last_status();
    }
    /* an epilogue group's kernel is its plan for these inputs */
    const tjf_kernel *k = NULL;
    bool refused = false; /* the backend cannot compile it: op by op */
    if (st == TJ_OK && g->anchored) {
        st = tjf_anchored_kernel(g, inputs, &k);
        refused = st == TJ_ERR_UNSUPPORTED;
    } else if (st == TJ_OK && !(k = tjf_group_cached_kernel(g, backend, inputs))) {
        st = tj_last_status() ? tj_last_status() : TJ_ERR_INTERNAL;
        refused = st == TJ_ERR_UNSUPPORTED;
    }
    if (refused) {
        tj_clear_error();
        for (int i = 0; i < g->n_outputs; i++) {
            tj_release(outputs[i]);
            outputs[i] = NULL;
        }
        if (sh != small) tjc_free(sh);
        return run_op_by_op(g, inputs, outputs);
    }
    if (st == TJ_OK)
        st = g->anchored ? tjf_anchored_launch(g, k, inputs, outputs)
                         : launch_or_fall_back(g, backend, k, inputs, outputs);
    if (st != TJ_OK)
        for (int i = 0; i < g->n_outputs; i++) {
            tj_release(outputs[i]);
            outputs[i] = NULL;
        }
    if (sh != small) tjc_free(sh);
    return st;
}
