/* dispatch.c — the op table instance and the one path every op call takes:
 * argument checks, the shape rule, output allocation, the kernel, the tracing
 * hook and scope tracking. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core.h"

/* Declarations of every shape rule that rows name (their CPU kernels are the
 * CPU backend's: backends/cpu/register.c). */
#define TJ_OP(id, name, schema, kind, infer, cpu) tj_status infer(const tjc_call *, int *);
#include "ops.def"

#define ROW_COMMON(id_, name_) .id = TJ_OP_##id_, .name = name_, .scalar_base = -1, \
                               .inplace_of = -1, .inplace_variant = -1
static tj_op_info table[TJ_OP__COUNT] = {
#define TJ_OP(id_, name_, schema_, kind_, infer_, cpu_)                              \
    [TJ_OP_##id_] = {ROW_COMMON(id_, name_), .schema_text = schema_, .kind = kind_, \
                     .infer = infer_},
#define TJ_POINTWISE(id_, name_, schema_, rule_, arity_, expr_)                              \
    [TJ_OP_##id_] = {ROW_COMMON(id_, name_), .schema_text = schema_,                        \
                     .kind = TJ_KIND_POINTWISE, .infer = tjc_infer_pointwise,                \
                     .pw_rule = rule_, .pw_arity = arity_, .pw_expr = #expr_},
#define TJ_POINTWISE_SCALAR(id_, name_, schema_, base_)                                     \
    [TJ_OP_##id_] = {ROW_COMMON(id_, name_), .schema_text = schema_,                        \
                     .kind = TJ_KIND_POINTWISE, .infer = tjc_infer_pointwise,                \
                     .pw_arity = 1},
#define TJ_INPLACE(id_, name_, base_) [TJ_OP_##id_] = {ROW_COMMON(id_, name_)},
#include "ops.def"
};

/* Bases are resolved by a second pass, since designated initialisers cannot
 * refer to other rows' ids and field values at once. */
static const struct { int id, base; } scalar_bases[] = {
#define TJ_OP(id, name, schema, kind, infer, cpu)
#define TJ_POINTWISE(id, name, schema, rule, arity, expr)
#define TJ_POINTWISE_SCALAR(id, name, schema, base) {TJ_OP_##id, TJ_OP_##base},
#define TJ_INPLACE(id, name, base)
#include "ops.def"
    {-1, -1}};
static const struct { int id, base; } inplace_bases[] = {
#define TJ_OP(id, name, schema, kind, infer, cpu)
#define TJ_POINTWISE(id, name, schema, rule, arity, expr)
#define TJ_POINTWISE_SCALAR(id, name, schema, base)
#define TJ_INPLACE(id, name, base) {TJ_OP_##id, TJ_OP_##base},
#include "ops.def"
    {-1, -1}};

static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void init_table(void) {
    for (int k = 0; scalar_bases[k].id >= 0; k++) {
        tj_op_info *op = &table[scalar_bases[k].id];
        const tj_op_info *base = &table[scalar_bases[k].base];
        op->scalar_base = base->id;
        op->pw_rule = base->pw_rule;
        op->pw_expr = base->pw_expr;
    }
    for (int k = 0; inplace_bases[k].id >= 0; k++) {
        tj_op_info *op = &table[inplace_bases[k].id];
        tj_op_info *base = &table[inplace_bases[k].base];
        op->inplace_of = base->id;
        op->kind = base->kind;
        op->infer = base->infer;
        op->pw_rule = base->pw_rule;
        op->pw_arity = base->pw_arity;
        op->pw_expr = base->pw_expr;
        op->scalar_base = base->scalar_base;
        op->schema_text = tjc_inplace_schema_text(base->schema_text);
        base->inplace_variant = op->id;
    }
    for (int i = 0; i < TJ_OP__COUNT; i++) {
        tj_op_info *op = &table[i];
        if (!op->schema_text || tjc_parse_schema(op->schema_text, &op->schema) != TJ_OK) {
            /* a broken row of ops.def is a bug in tjit itself */
            fprintf(stderr, "tjit: op table row %s: %s\n", op->name, tj_last_error());
            abort();
        }
    }
}

const tj_op_info *tjc_op(int id) {
    pthread_once(&table_once, init_table);
    return (id >= 0 && id < TJ_OP__COUNT) ? &table[id] : NULL;
}

int tj_op_count(void) { return TJ_OP__COUNT; }
const tj_op_info *tj_op_at(int id) {
    const tj_op_info *op = tjc_op(id);
    if (!op)
        tjc_error(TJ_ERR_ARG, "tj_op_at: op id %d is out of range (the table has ops 0 to %d)", id,
                  TJ_OP__COUNT - 1);
    return op;
}

const tj_op_info *tjc_op_find(const char *qualified_name) {
    pthread_once(&table_once, init_table);
    if (!qualified_name) return NULL;
    for (int i = 0; i < TJ_OP__COUNT; i++)
        if (strcmp(table[i].name, qualified_name) == 0) return &table[i];
    return NULL;
}

const tj_op_info *tj_op_find(const char *qualified_name) {
    if (!qualified_name) return tjc_error(TJ_ERR_ARG, "tj_op_find: the name is NULL"), NULL;
    const tj_op_info *op = tjc_op_find(qualified_name);
    if (!op)
        tjc_error(TJ_ERR_ARG, "tj_op_find: no op is named '%.200s' (qualified names look like "
                  "\"aten::add.Scalar\"; tjit list prints them)", qualified_name);
    return op;
}

/* A NULL op is what tj_node_op gives for a prim node, so the accessors
 * answer for it (-1, NULL, TJ_NUM_KINDS) without an error: chains such as
 * tj_op_id(tj_node_op(n)) stay quiet, and an error already pending (from a
 * tj_op_find that found nothing) keeps its message. */
int tj_op_id(const tj_op_info *op) { return op ? op->id : -1; }
const char *tj_op_name(const tj_op_info *op) { return op ? op->name : NULL; }
const char *tj_op_schema_text(const tj_op_info *op) { return op ? op->schema_text : NULL; }
const tj_schema *tj_op_schema(const tj_op_info *op) { return op ? &op->schema : NULL; }
tj_op_kind tj_op_kind_of(const tj_op_info *op) { return op ? op->kind : TJ_NUM_KINDS; }
const tj_op_info *tj_op_inplace_variant(const tj_op_info *op) {
    return op && op->inplace_variant >= 0 ? tjc_op(op->inplace_variant) : NULL;
}

const char *tj_op_kind_name(tj_op_kind k) {
    static const char *const names[TJ_NUM_KINDS] = {
        "pointwise", "reduction", "view", "shape", "matmul",
        "conv", "nn", "random", "composite",
    };
    if ((unsigned)k >= TJ_NUM_KINDS)
        return tjc_error(TJ_ERR_ARG, "tj_op_kind_name: invalid kind %d", (int)k), "invalid";
    return names[k];
}

const char *tjc_input_name(const tj_op_info *op, int i) {
    const tj_schema *s = &op->schema;
    if (s->has_tensor_list) return s->args[s->tensor_pos[0]].name;
    return i < s->n_tensor_args ? s->args[s->tensor_pos[i]].name : "?";
}

bool tjc_op_is_random(const tj_op_info *op) {
    const tj_schema *s = tj_op_schema(op);
    if (tj_op_kind_of(op) == TJ_KIND_RANDOM) return true;
    for (int i = 0; i < s->n_args; i++)
        if (s->args[i].type == TJ_ARG_GENERATOR) return true;
    return false;
}

tj_status tjc_view_kernel(const tjc_call *c) {
    (void)c; /* the dispatcher made the views from the shape rule's result */
    return TJ_OK;
}

/* ---- per-thread state ------------------------------------------------------- */

static _Thread_local int op_depth;
static _Thread_local const tj_record_hook *record_hook;

int tjc_op_depth(void) { return op_depth; }
void tjc_op_enter(void) { op_depth++; }
void tjc_op_leave(void) { op_depth--; }
const tj_record_hook *tjc_record_hook(void) { return record_hook; }

const tj_record_hook *tj_set_record_hook(const tj_record_hook *hook) {
    const tj_record_hook *old = record_hook;
    record_hook = hook;
    return old;
}

/* ---- argument checks -------------------------------------------------------- */

int tjc_choice_index(const tj_arg *arg, const char *value) {
    const char *p = arg->choices;
    size_t n = strlen(value);
    for (int k = 0; p && *p; k++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && strncmp(p, value, n) == 0) return k;
        p = bar ? bar + 1 : NULL;
    }
    return -1;
}

static tj_status check_attrs(const tj_op_info *op, const tj_attr *attrs) {
    const tj_schema *s = &op->schema;
    for (int k = 0; k < s->n_attrs; k++) {
        const tj_arg *arg = &s->args[s->attr_pos[k]];
        const tj_attr *a = &attrs[k];
        switch (arg->type) {
        case TJ_ARG_STR:
            if (!a->s) return tjc_error(TJ_ERR_ARG, "%s: argument '%s' is NULL", op->name, arg->name);
            if (arg->choices && tjc_choice_index(arg, a->s) < 0)
                return tjc_error(TJ_ERR_ARG, "%s: argument '%s' must be one of %s; got '%s'",
                                 op->name, arg->name, arg->choices, a->s);
            break;
        case TJ_ARG_INTS:
            if (a->ints.n < 0 || (a->ints.n > 0 && !a->ints.data))
                return tjc_error(TJ_ERR_ARG, "%s: argument '%s' is not a valid list", op->name,
                                 arg->name);
            if (arg->fixed_len && a->ints.n != arg->fixed_len && a->ints.n != 1)
                return tjc_error(TJ_ERR_ARG, "%s: argument '%s' takes %d values (or one for "
                                 "all); got %d", op->name, arg->name, arg->fixed_len, a->ints.n);
            break;
        case TJ_ARG_FLOATS:
            if (a->floats.n < 0 || (a->floats.n > 0 && !a->floats.data))
                return tjc_error(TJ_ERR_ARG, "%s: argument '%s' is not a valid list", op->name,
                                 arg->name);
            break;
        case TJ_ARG_DTYPE:
            if ((unsigned)a->dtype >= TJ_NUM_DTYPES)
                return tjc_error(TJ_ERR_DTYPE, "%s: argument '%s' is not a valid dtype (%d)",
                                 op->name, arg->name, (int)a->dtype);
            break;
        default:
            break;
        }
    }
    return TJ_OK;
}

/* Checks the tensor inputs and finds the device the call runs on: the one
 * all of them live on (copy_ alone crosses devices: it runs where self is). */
static tj_status check_inputs(const tj_op_info *op, tj_tensor *const *in, int n_in,
                              tj_device *device) {
    const tj_schema *s = &op->schema;
    if (s->has_tensor_list) {
        if (n_in < 0 || (n_in > 0 && !in))
            return tjc_error(TJ_ERR_ARG, "%s: the tensor list '%s' is NULL", op->name,
                             s->args[s->tensor_pos[0]].name);
    } else if (n_in != s->n_tensor_args) {
        return tjc_error(TJ_ERR_ARG, "%s: takes %d tensor inputs, got %d", op->name,
                         s->n_tensor_args, n_in);
    } else if (n_in > 0 && !in) {
        return tjc_error(TJ_ERR_ARG, "%s: the input array is NULL", op->name);
    }
    int first = -1;
    for (int i = 0; i < n_in; i++) {
        bool optional = !s->has_tensor_list &&
                        s->args[s->tensor_pos[i]].type == TJ_ARG_TENSOR_OPT;
        if (!in[i]) {
            if (optional) continue;
            if (s->has_tensor_list)
                return tjc_last_or(TJ_ERR_ARG, "%s: element %d of '%s' is NULL", op->name, i,
                                   tjc_input_name(op, i));
            return tjc_last_or(TJ_ERR_ARG, "%s: argument '%s' is NULL", op->name,
                               tjc_input_name(op, i));
        }
        tjc_check_live(in[i], op->name);
        if (first < 0) {
            first = i;
            *device = in[i]->storage->device;
        } else if (!tjc_same_device(in[i]->storage->device, *device) && op->id != TJ_OP_copy_) {
            char a[TJC_DEVICE_BUF], b[TJC_DEVICE_BUF];
            return tjc_error(TJ_ERR_DEVICE, "%s: expected all tensors on one device, got %s and "
                             "%s", op->name, tjc_fmt_device(a, sizeof a, *device),
                             tjc_fmt_device(b, sizeof b, in[i]->storage->device));
        }
    }
    if (first < 0) *device = (tj_device){TJ_CPU, 0};
    return TJ_OK;
}

/* The kernel of op on device, or NULL with an error. */
static tjc_kernel_fn kernel_for(const tj_op_info *op, tj_device device) {
    const tjc_device_backend *b = tjc_device_backend_of(device.type);
    tjc_kernel_fn k = b ? b->kernels[op->id] : NULL;
    if (!k) {
        char d[TJC_DEVICE_BUF];
        tjc_error(b ? TJ_ERR_UNSUPPORTED : TJ_ERR_DEVICE, "%s: no kernel for %s%s", op->name,
                  tjc_fmt_device(d, sizeof d, device),
                  b ? "" : " (its backend is not built into this library)");
    }
    return k;
}

/* ---- the dispatcher ---------------------------------------------------------- */

void tjc_meta_new(tjc_meta *m, tj_dtype dtype, const int64_t *sizes, int ndim) {
    m->kind = TJC_OUT_NEW;
    m->dtype = dtype;
    m->ndim = ndim;
    if (ndim) memcpy(m->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
}

static void release_outputs(tj_tensor **out, int n) {
    for (int i = 0; i < n; i++) {
        tj_release(out[i]);
        out[i] = NULL;
    }
}

static tj_status make_outputs(const tjc_call *c, tj_tensor **out, int n_out) {
    for (int i = 0; i < n_out; i++) {
        const tjc_meta *m = &c->meta[i];
        switch (m->kind) {
        case TJC_OUT_NEW: out[i] = tjc_alloc_on(c->device, m->sizes, m->ndim, m->dtype); break;
        case TJC_OUT_VIEW:
            out[i] = tjc_make_view(c->in[0], m->sizes, m->strides, m->ndim, m->offset);
            break;
        case TJC_OUT_SELF: out[i] = tj_retain(c->in[0]); break;
        }
        if (!out[i]) {
            release_outputs(out, i);
            return tj_last_status() ? tj_last_status() : TJ_ERR_MEMORY;
        }
    }
    return TJ_OK;
}

static int invoke(const tj_op_info *op, tj_device device, tj_tensor *const *in, int n_in,
                  const tj_attr *attrs, tj_tensor **out, int out_cap) {
    tjc_kernel_fn kernel = kernel_for(op, device);
    if (!kernel) return -1;
    tj_tensor *moved = NULL, *copy_in[2];
    if (op->id == TJ_OP_copy_ && n_in == 2 && !tjc_same_device(in[1]->storage->device, device)) {
        if (!(moved = tjc_to_device(in[1], device))) return -1; /* src comes to self */
        copy_in[0] = in[0];
        copy_in[1] = moved;
        in = copy_in;
    }
    enum { STACK_METAS = 8 };
    tjc_meta stack_metas[STACK_METAS];
    tjc_call c = {.op = op, .device = device, .in = in, .n_in = n_in, .attr = attrs,
                  .n_attr = op->schema.n_attrs, .meta = stack_metas, .meta_cap = STACK_METAS};
    int n_out = 0;
    tj_status st = op->infer(&c, &n_out);
    if (st == TJ_OK && n_out > c.meta_cap) { /* chunk, split, unbind into many pieces */
        c.meta = tjc_malloc(sizeof(tjc_meta) * (size_t)n_out);
        if (!c.meta) {
            tj_release(moved);
            return tjc_error(TJ_ERR_MEMORY, "%s: out of memory", op->name), -1;
        }
        c.meta_cap = n_out;
        st = op->infer(&c, &n_out);
    }
    if (st == TJ_OK && n_out > out_cap)
        st = tjc_error(TJ_ERR_ARG, "%s: produces %d outputs but the output array holds %d",
                       op->name, n_out, out_cap);
    if (st == TJ_OK) st = make_outputs(&c, out, n_out);
    if (st == TJ_OK) {
        c.out = out;
        c.n_out = n_out;
        st = kernel(&c);
        if (st != TJ_OK) release_outputs(out, n_out);
    }
    if (c.meta != stack_metas) tjc_free(c.meta);
    tj_release(moved);
    return st == TJ_OK ? n_out : -1;
}

tj_status tjc_prepare_call(const tj_op_info *op, tj_tensor *const *in, int n_in,
                           const tj_attr *attrs, tjc_prepared *out) {
    memset(out, 0, sizeof *out);
    tj_status st = check_inputs(op, in, n_in, &out->device);
    if (!st) st = check_attrs(op, attrs);
    if (st) return st;
    if (op->id == TJ_OP_copy_ && n_in == 2 && !tjc_same_device(in[1]->storage->device, out->device))
        return tjc_error(TJ_ERR_UNSUPPORTED, "%s: a copy across devices is not planned", op->name);
    if (!(out->kernel = kernel_for(op, out->device))) return tj_last_status();
    enum { STACK_METAS = 8 };
    tjc_meta stack_metas[STACK_METAS];
    tjc_call c = {.op = op, .device = out->device, .in = in, .n_in = n_in, .attr = attrs,
                  .n_attr = op->schema.n_attrs, .meta = stack_metas, .meta_cap = STACK_METAS};
    int n_out = 0;
    st = op->infer(&c, &n_out);
    if (st) return st;
    out->meta = tjc_malloc(sizeof(tjc_meta) * (size_t)(n_out ? n_out : 1));
    if (!out->meta) return tjc_error(TJ_ERR_MEMORY, "%s: out of memory", op->name);
    if (n_out > STACK_METAS) {
        c.meta = out->meta;
        c.meta_cap = n_out;
        if ((st = op->infer(&c, &n_out))) {
            tjc_free(out->meta);
            out->meta = NULL;
            return st;
        }
    } else if (n_out) {
        memcpy(out->meta, stack_metas, sizeof(tjc_meta) * (size_t)n_out);
    }
    out->n_out = n_out;
    return TJ_OK;
}

int tjc_invoke_nested(const tj_op_info *op, tj_tensor *const *in, int n_in, const tj_attr *attrs,
                      tj_tensor **out, int out_cap) {
    tj_device device;
    if (check_inputs(op, in, n_in, &device) || check_attrs(op, attrs)) return -1;
    op_depth++;
    int n = invoke(op, device, in, n_in, attrs, out, out_cap);
    op_depth--;
    return n;
}

tj_status tjc_kernel_with_input_as(const tjc_call *c, int k, tj_dtype dtype, tjc_kernel_fn kernel) {
    tj_attr to = {.dtype = dtype};
    tj_tensor *converted = NULL, *in[TJ_MAX_ARGS];
    if (tjc_invoke_nested(tjc_op(TJ_OP_to_dtype), &c->in[k], 1, &to, &converted, 1) != 1)
        return tj_last_status();
    memcpy(in, c->in, sizeof(tj_tensor *) * (size_t)c->n_in);
    in[k] = converted;
    tjc_call as = *c;
    as.in = in;
    tj_status st = kernel(&as);
    tj_release(converted);
    return st;
}

bool tjc_inputs_broadcast(const tjc_call *c, int from, int n, int64_t *sizes, int *ndim) {
    const tj_tensor *a = c->in[from];
    bool differ = false;
    *ndim = a->ndim;
    if (a->ndim) memcpy(sizes, a->sizes, sizeof(int64_t) * (size_t)a->ndim);
    for (int k = from + 1; k < from + n; k++) {
        const tj_tensor *t = c->in[k];
        differ |= t->ndim != *ndim ||
                  (t->ndim && memcmp(t->sizes, sizes, sizeof(int64_t) * (size_t)t->ndim));
        int64_t prev[TJ_MAX_DIMS];
        int np = *ndim;
        if (np) memcpy(prev, sizes, sizeof(int64_t) * (size_t)np);
        if (tjc_broadcast_shapes(c->op->name, prev, np, t->sizes, t->ndim, sizes, ndim)) return false;
    }
    return differ;
}

tj_status tjc_kernel_with_inputs_expanded(const tjc_call *c, int from, int n, const int64_t *sizes,
                                          int ndim, tjc_kernel_fn kernel) {
    tj_tensor views[TJ_MAX_ARGS], *in[TJ_MAX_ARGS];
    memcpy(in, c->in, sizeof(tj_tensor *) * (size_t)c->n_in);
    for (int k = from; k < from + n; k++) {
        const tj_tensor *t = c->in[k];
        int64_t strides[TJ_MAX_DIMS];
        for (int d = 0; d < ndim; d++) {
            int td = d - (ndim - t->ndim);
            strides[d] = td >= 0 && t->sizes[td] == sizes[d] ? t->strides[td] : 0;
        }
        tjc_view_on_stack(&views[k], t, sizes, strides, ndim, t->offset);
        in[k] = &views[k];
    }
    tjc_call as = *c;
    as.in = in;
    return kernel(&as);
}

int tj_invoke(int op_id, tj_tensor *const *in, int n_in, const tj_attr *attrs, int n_attrs,
              tj_tensor **out, int out_cap) {
    const tj_op_info *op = tjc_op(op_id);
    if (!op) return tjc_error(TJ_ERR_ARG, "tj_invoke: no op has id %d", op_id), -1;
    if (n_attrs != op->schema.n_attrs)
        return tjc_error(TJ_ERR_ARG, "%s: takes %d attributes, got %d", op->name,
                         op->schema.n_attrs, n_attrs), -1;
    if (n_attrs > 0 && !attrs)
        return tjc_error(TJ_ERR_ARG, "%s: attributes are NULL", op->name), -1;
    if (out_cap > 0 && !out) return tjc_error(TJ_ERR_ARG, "%s: output array is NULL", op->name), -1;
    tj_device device;
    if (check_inputs(op, in, n_in, &device) || check_attrs(op, attrs)) return -1;

    const tj_record_hook *hook = op_depth == 0 ? record_hook : NULL;
    void *token = hook && hook->before ? hook->before(hook->ctx, op, in, n_in, attrs, n_attrs) : NULL;
    op_depth++;
    int n = invoke(op, device, in, n_in, attrs, out, out_cap);
    op_depth--;
    if (hook && hook->after) hook->after(hook->ctx, token, n > 0 ? out : NULL, n > 0 ? n : 0);
    if (op_depth == 0 && n > 0) {
        if (!tjc_scope_reserve(n)) {
            release_outputs(out, n);
            return -1;
        }
        for (int i = 0; i < n; i++) tjc_scope_track(out[i]);
    }
    return n;
}
