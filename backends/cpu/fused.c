/* fused.c — the portable fused-loop runner: a backend (fuser/fuser.h) that
 * runs a fusion group's subgraph elementwise without full-size
 * intermediates.
 *
 * "Compiling" a group makes a step list over value slots: for each node the
 * same typed loop the unfused kernel runs (tjcpu_pw_loop), plus conversions
 * where a node computes in another dtype than an operand holds. Launching
 * walks the group's iteration space with tjcpu_iter (collapsed dims, OpenMP
 * across ranges) and splits each inner run into blocks of BLOCK elements:
 * group inputs and outputs are read and written in place (at whatever stride
 * they have), intermediates live in per-thread scratch of BLOCK elements each,
 * small enough to stay in L1/L2. Chunks of an input are pointer offsets into
 * it: views built on the stack, no new tensors.
 *
 * A row group (one softmax, log_softmax or layer_norm over the last dim:
 * fuser.h) runs row by row instead: each row of the iteration space is one
 * block, its prologue steps fill the row's scratch, the row op's step reads
 * the whole row, and the epilogue steps follow. A reduction's group (sum,
 * mean, amax, amin or logsumexp over the last dim) iterates the rows of its
 * input's sizes: its step reads the whole row and writes one value, and the
 * steps of the members of the reduced sizes run over that one element per
 * row (their temporaries are read with step 0 by the full-size steps, the
 * broadcast along the row that keepdim gives).
 */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/ptrmap.h"
#include "core/pw_math.h"
#include "cpu.h"
#include "nn.h"
#include "fuser/fuser.h"
#include "tjit/ir.h"

enum { BLOCK = 512 };

typedef enum slot_kind { SLOT_OPERAND, SLOT_TEMP, SLOT_CONST } slot_kind;

typedef struct slot {
    slot_kind kind;
    int index;      /* operand number, temp number, or const number */
    tj_dtype dtype;
    bool per_row;   /* a temp of the reduced sizes: one element a row, read at step 0 */
} slot;

typedef struct step {
    tjcpu_loop_fn fn;
    int n_args;     /* out first */
    int args[4];    /* slots */
    double params[2];
    bool per_row;   /* runs over one element a row (a member of the reduced sizes) */
} step;

typedef struct chunk_view {
    int input;      /* group input it is a view of */
    int dim;
    int64_t chunks, index;
} chunk_view;

struct tjf_kernel {
    bool rows;               /* a row group: blocks are the iteration space's rows */
    bool reduce;             /* ...of a reduction: the rows of its input's sizes, */
    int it_ndim;             /* these (the spec's, propagated) */
    int64_t it_sizes[TJ_MAX_DIMS];
    bool dropped;            /* outputs of the reduced sizes without keepdim: the last dim
                              * is added back as 1 to walk them with the rows */
    int n_inputs, n_outputs, n_views;
    int n_operands;          /* outputs, then inputs read directly, then chunk views */
    int *input_operand;      /* -1 for an input read only through chunks */
    chunk_view *views;
    slot *slots;
    int n_slots, n_temps, n_consts;
    double *consts;          /* one 8-byte cell each, holding the compute dtype's bits */
    step *steps;
    int n_steps, cap_steps;
};

static void kernel_release(tjf_kernel *k) {
    if (!k) return;
    tjc_free(k->input_operand);
    tjc_free(k->views);
    tjc_free(k->slots);
    tjc_free(k->consts);
    tjc_free(k->steps);
    tjc_free(k);
}

static bool add_step(tjf_kernel *k, step s) {
    if (k->n_steps == k->cap_steps) {
        int cap = k->cap_steps ? 2 * k->cap_steps : 16;
        step *grown = tjc_realloc(k->steps, sizeof *grown * (size_t)cap);
        if (!grown) return false;
        k->steps = grown;
        k->cap_steps = cap;
    }
    k->steps[k->n_steps++] = s;
    return true;
}

/* A slot of dtype holding slot src converted (a temp, with its step), for
 * a step that runs per row or over the whole row. */
static int converted(tjf_kernel *k, int src, tj_dtype dtype, bool per_row) {
    if (k->slots[src].dtype == dtype) return src;
    int t = k->n_slots++;
    k->slots[t] = (slot){SLOT_TEMP, k->n_temps++, dtype, per_row};
    step s = {tjcpu_convert_loop(dtype, k->slots[src].dtype), 2, {t, src}, {0, 0}, per_row};
    return add_step(k, s) ? t : -1;
}

static tjf_kernel *fail(tjf_kernel *k, tj_status st, const char *what, const char *op) {
    kernel_release(k);
    tjc_error(st, "fused runner: %s%s%s", what, op ? " in " : "", op ? op : "");
    return NULL;
}

/* ---- row ops: one row of m elements at the given byte strides -------------
 * Contiguous rows (temporaries, outputs, whole inputs) go to the unfused
 * kernels' vectorised row loops (tjcpu_softmax_row, tjcpu_layer_norm_row);
 * a strided input takes these plain loops, with the same arithmetic:
 * softmax's max, its sum of exp(x - max) in double, then the result;
 * layer_norm's mean and biased variance in double, two passes, and
 * (x - mean) * rstd * w + b in double. */

#define ROW_FNS(T, SFX, DT, EXP)                                                                      \
    static void row_softmax_##SFX(int64_t m, char **a, const int64_t *st, bool log_form) {      \
        const T *x = (const T *)a[1];                                                             \
        T *y = (T *)a[0];                                                                         \
        int64_t sx = st[1] / (int64_t)sizeof(T), sy = st[0] / (int64_t)sizeof(T);                \
        if (sx == 1 && sy == 1) {                                                                 \
            tjcpu_softmax_row(x, y, m, DT, log_form);                                             \
            return;                                                                               \
        }                                                                                         \
        T max = -(T)INFINITY; /* a NaN is no maximum: it makes the sum NaN, so the row */        \
        for (int64_t j = 0; j < m; j++) max = x[j * sx] > max ? x[j * sx] : max;                 \
        double sum = 0;                                                                           \
        for (int64_t j = 0; j < m; j++) sum += (double)EXP(x[j * sx] - max);                      \
        T ls = (T)log(sum), inv = (T)(1.0 / sum);                                                 \
        for (int64_t j = 0; j < m; j++)                                                           \
            y[j * sy] = log_form ? (x[j * sx] - max) - ls : EXP(x[j * sx] - max) * inv;           \
    }                                                                                             \
    static void row_layer_norm_##SFX(int64_t m, char **a, const int64_t *st, double eps) {      \
        const T *x = (const T *)a[1], *w = (const T *)a[2], *b = (const T *)a[3];                \
        T *y = (T *)a[0];                                                                         \
        int64_t sy = st[0] / (int64_t)sizeof(T), sx = st[1] / (int64_t)sizeof(T);                \
        int64_t sw = st[2] / (int64_t)sizeof(T), sb = st[3] / (int64_t)sizeof(T);                \
        if (sx == 1 && sy == 1 && sw == 1 && sb == 1) {                                           \
            tjcpu_layer_norm_row(x, w, b, y, m, DT, eps);                                         \
            return;                                                                               \
        }                                                                                         \
        double mean = 0, var = 0;                                                                 \
        for (int64_t j = 0; j < m; j++) mean += (double)x[j * sx];                                \
        mean = tjnn_norm_mean(mean / (double)m);                                                  \
        for (int64_t j = 0; j < m; j++) {                                                         \
            double d = (double)x[j * sx] - mean;                                                  \
            var += d * d;                                                                         \
        }                                                                                         \
        double rstd = tjnn_norm_rstd(var / (double)m, eps);                                       \
        for (int64_t j = 0; j < m; j++)                                                           \
            y[j * sy] = (T)(((double)x[j * sx] - mean) * rstd * (double)w[j * sw] + (double)b[j * sb]); \
    }

ROW_FNS(float, f32, TJ_F32, tjm_expf)
ROW_FNS(double, f64, TJ_F64, exp)

/* params: the dtype, eps; args: out, x (and weight, bias) */
static void row_softmax_fn(int64_t m, char **a, const int64_t *st, const void *ctx) {
    if ((tj_dtype)((const double *)ctx)[0] == TJ_F32) row_softmax_f32(m, a, st, false);
    else row_softmax_f64(m, a, st, false);
}

static void row_log_softmax_fn(int64_t m, char **a, const int64_t *st, const void *ctx) {
    if ((tj_dtype)((const double *)ctx)[0] == TJ_F32) row_softmax_f32(m, a, st, true);
    else row_softmax_f64(m, a, st, true);
}

static void row_layer_norm_fn(int64_t m, char **a, const int64_t *st, const void *ctx) {
    const double *p = ctx;
    if ((tj_dtype)p[0] == TJ_F32) row_layer_norm_f32(m, a, st, p[1]);
    else row_layer_norm_f64(m, a, st, p[1]);
}

/* Reductions of one row of m elements at stride st[1] into *a[0]: sums in
 * double (as the unfused kernels' pairwise sums of f32), NaN wins in amax
 * and amin, logsumexp shifted by the maximum unless that is infinite
 * (PyTorch's rule: a row of -inf gives -inf, one holding +inf gives +inf). */
#define REDUCE_FNS(T, SFX)                                                                          \
    static void row_reduce_##SFX(int64_t m, char **a, const int64_t *st, tjf_row_kind kind) {     \
        const T *x = (const T *)a[1];                                                               \
        int64_t sx = st[1] / (int64_t)sizeof(T);                                                    \
        double r = 0;                                                                               \
        if (kind == TJF_ROW_SUM || kind == TJF_ROW_MEAN) {                                          \
            for (int64_t j = 0; j < m; j++) r += (double)x[j * sx];                                 \
            if (kind == TJF_ROW_MEAN) r /= (double)m;                                               \
        } else {                                                                                    \
            T e = x[0];                                                                             \
            bool max = kind != TJF_ROW_AMIN;                                                        \
            for (int64_t j = 1; j < m && e == e; j++) {                                             \
                T v = x[j * sx];                                                                    \
                if (v != v || (max ? v > e : v < e)) e = v;                                         \
            }                                                                                       \
            r = (double)e;                                                                          \
            if (kind == TJF_ROW_LOGSUMEXP && e == e) {                                              \
                double shift = isinf(r) ? 0 : r, sum = 0;                                           \
                for (int64_t j = 0; j < m; j++) sum += exp((double)x[j * sx] - shift);              \
                r = log(sum) + shift;                                                               \
            }                                                                                       \
        }                                                                                           \
        *(T *)a[0] = (T)r;                                                                          \
    }
REDUCE_FNS(float, f32)
REDUCE_FNS(double, f64)

/* params: the dtype, the kind; args: out (one element), x */
static void row_reduce_fn(int64_t m, char **a, const int64_t *st, const void *ctx) {
    const double *p = ctx;
    if ((tj_dtype)p[0] == TJ_F32) row_reduce_f32(m, a, st, (tjf_row_kind)p[1]);
    else row_reduce_f64(m, a, st, (tjf_row_kind)p[1]);
}

/* The step of row op n, whose result has dtype t. */
static step row_step(const tj_node *n, tjf_row_kind kind, tj_dtype t) {
    step s = {row_softmax_fn, 2, {0}, {(double)t, 0}, false};
    if (kind == TJF_ROW_LOG_SOFTMAX) s.fn = row_log_softmax_fn;
    if (tjf_row_reduces(kind)) {
        s.fn = row_reduce_fn;
        s.params[1] = (double)kind;
    }
    if (kind == TJF_ROW_LAYER_NORM) {
        s.fn = row_layer_norm_fn;
        s.n_args = 4;
        s.params[1] = tj_node_attr((tj_node *)n, tj_node_attr_index((tj_node *)n, "eps"))->f;
    }
    return s;
}

/* The arrays sized for the worst case keep what was used: a program holds
 * a kernel per group, thousands of them in a large graph. */
static void shrink(tjf_kernel *k) {
    slot *slots = tjc_realloc(k->slots, sizeof *slots * (size_t)(k->n_slots ? k->n_slots : 1));
    if (slots) k->slots = slots;
    chunk_view *views = tjc_realloc(k->views, sizeof *views * (size_t)(k->n_views ? k->n_views : 1));
    if (views) k->views = views;
    step *steps = tjc_realloc(k->steps, sizeof *steps * (size_t)(k->n_steps ? k->n_steps : 1));
    if (steps) {
        k->steps = steps;
        k->cap_steps = k->n_steps ? k->n_steps : 1;
    }
}

typedef struct shape {
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
} shape;

static bool same_shape(const shape *a, const shape *b) {
    return a->ndim == b->ndim && !memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)a->ndim);
}

/* A reduction's group: the sizes of its values from the spec's (the graph's
 * types need not be the spec's), the iteration sizes (the reduction's
 * input's) and which values are per row (the reduction's result's sizes).
 * per_row is indexed by the node's place in the block. NULL: the group is
 * not of the form fuser.h describes. */
static const char *plan_reduction(tjf_kernel *k, tj_block *b, const tjf_spec *spec, const tj_node *red,
                                  bool *per_row) {
    int n_values = tj_block_num_inputs(b);
    for (tj_node *n = tj_block_first(b); n; n = tj_node_next(n)) n_values += tj_node_num_outputs(n);
    shape *pool = tjc_calloc((size_t)n_values + 1, sizeof *pool);
    tjc_ptrmap at;
    tjc_ptrmap_init(&at);
    const char *bad = pool ? NULL : "out of memory";
    int used = 0;
    for (int i = 0; !bad && i < tj_block_num_inputs(b); i++) {
        shape *sh = &pool[used++];
        sh->ndim = spec->inputs[i].ndim;
        memcpy(sh->sizes, spec->inputs[i].sizes, sizeof(int64_t) * (size_t)sh->ndim);
        if (!tjc_ptrmap_put(&at, tj_block_input(b, i), sh)) bad = "out of memory";
    }
    shape red_shape = {0};
    for (tj_node *n = tj_block_first(b); n && !bad; n = tj_node_next(n)) {
        shape s = {0};
        const shape *x = tj_node_num_inputs(n) ? tjc_ptrmap_get(&at, tj_node_input(n, 0)) : NULL;
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK) {
            s = *x;
            int dim;
            int64_t chunks = tj_node_attr(n, tj_node_attr_index(n, "chunks"))->i;
            if (tjc_wrap_dim("prim::ConstantChunk", tj_node_attr(n, tj_node_attr_index(n, "dim"))->i,
                             s.ndim, &dim) || chunks <= 0 || s.sizes[dim] % chunks) {
                bad = "an uneven chunk";
                break;
            }
            s.sizes[dim] /= chunks;
        } else if (n == red) {
            if (x->ndim < 1 || x->sizes[x->ndim - 1] < 2) {
                bad = "a reduction of rows shorter than 2";
                break;
            }
            k->it_ndim = x->ndim;
            memcpy(k->it_sizes, x->sizes, sizeof k->it_sizes);
            s = *x;
            if (tjf_row_keepdim(n)) s.sizes[s.ndim - 1] = 1;
            else s.ndim--;
            red_shape = s;
        } else {
            for (int i = 0; i < tj_node_num_inputs(n); i++) {
                const shape *in = tjc_ptrmap_get(&at, tj_node_input(n, i));
                shape next;
                if (tjc_broadcast_shapes(tj_node_name(n), s.sizes, s.ndim, in->sizes, in->ndim,
                                         next.sizes, &next.ndim)) {
                    tj_clear_error();
                    bad = "operands that do not broadcast";
                    break;
                }
                s = next;
            }
        }
        for (int o = 0; !bad && o < tj_node_num_outputs(n); o++) {
            pool[used] = s;
            if (!tjc_ptrmap_put(&at, tj_node_output(n, o), &pool[used++])) bad = "out of memory";
        }
    }
    /* full-size members, per-row ones; a per-row member reads values made
     * outside only as sizes all 1 when the dim is dropped (fuse.c) */
    shape full = {k->it_ndim, {0}};
    memcpy(full.sizes, k->it_sizes, sizeof full.sizes);
    bool keep = tjf_row_keepdim(red);
    int idx = 0;
    for (tj_node *n = tj_block_first(b); n && !bad; n = tj_node_next(n), idx++) {
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK) continue;
        const shape *o = tjc_ptrmap_get(&at, tj_node_output(n, 0));
        per_row[idx] = n == red || same_shape(o, &red_shape);
        for (int i = 0; !keep && per_row[idx] && n != red && i < tj_node_num_inputs(n); i++) {
            const tj_value *v = tj_node_input(n, i);
            const shape *in = tjc_ptrmap_get(&at, v);
            bool ones = true;
            for (int d = 0; d < in->ndim; d++) ones &= in->sizes[d] == 1;
            tj_node_kind from = tj_node_kind_of(tj_value_node(v));
            if (!ones && (from == TJ_NODE_PARAM || from == TJ_NODE_CONSTANT_CHUNK))
                bad = "a value from outside read per row of a reduction without keepdim";
        }
        if (!bad && !per_row[idx] && !same_shape(o, &full)) {
            int64_t it[TJ_MAX_DIMS];
            int nd;
            if (tjc_broadcast_shapes("fused reduction", o->sizes, o->ndim, full.sizes, full.ndim, it, &nd) ||
                nd != full.ndim || memcmp(it, full.sizes, sizeof(int64_t) * (size_t)nd)) {
                tj_clear_error();
                bad = "a member of sizes other than the reduction's";
            }
        }
    }
    for (int i = 0; !bad && i < tj_block_num_outputs(b); i++) {
        const shape *o = tjc_ptrmap_get(&at, tj_block_output(b, i));
        bool reduced = same_shape(o, &red_shape);
        if (!reduced && !same_shape(o, &full)) bad = "an output of sizes other than the reduction's";
        if (i == 0) k->dropped = reduced && !keep;
        else if ((reduced && !keep) != k->dropped) bad = "outputs of different sizes";
    }
    tjc_ptrmap_free(&at);
    tjc_free(pool);
    k->reduce = k->rows = true;
    return bad;
}

static tjf_kernel *compile(const tj_graph *subgraph, const tjf_spec *spec) {
    tj_graph *sub = (tj_graph *)subgraph; /* the IR's accessors take non-const graphs */
    tj_block *b = tj_graph_block(sub);
    tjf_kernel *k = tjc_calloc(1, sizeof *k);
    if (!k) return fail(k, TJ_ERR_MEMORY, "out of memory", NULL);
    k->n_inputs = tj_block_num_inputs(b);
    k->n_outputs = tj_block_num_outputs(b);
    if (k->n_inputs != spec->n_inputs) return fail(k, TJ_ERR_INTERNAL, "spec arity", NULL);
    /* slots: inputs, node outputs, conversions and consts (at most 4 per node) */
    int n_nodes = tj_block_num_nodes(b), max_slots = k->n_inputs + 8 * (n_nodes + 1) + k->n_outputs;
    k->slots = tjc_calloc((size_t)max_slots, sizeof(slot));
    k->consts = tjc_calloc((size_t)(n_nodes + 1), sizeof(double));
    k->input_operand = tjc_calloc((size_t)(k->n_inputs + 1), sizeof(int));
    k->views = tjc_calloc((size_t)(max_slots), sizeof(chunk_view));
    if (!k->slots || !k->consts || !k->input_operand || !k->views)
        return fail(k, TJ_ERR_MEMORY, "out of memory", NULL);
    const tj_node *row_node = tjf_row_node(sub);
    bool small_rows[64] = {false};
    bool *per_row = n_nodes <= 64 ? small_rows : tjc_calloc((size_t)n_nodes, sizeof(bool));
    if (!per_row) return fail(k, TJ_ERR_MEMORY, "out of memory", NULL);
    if (row_node && tjf_row_reduces(tjf_row_op(row_node))) {
        const char *why = plan_reduction(k, b, spec, row_node, per_row);
        if (why) {
            if (per_row != small_rows) tjc_free(per_row);
            return fail(k, strcmp(why, "out of memory") ? TJ_ERR_UNSUPPORTED : TJ_ERR_MEMORY, why, NULL);
        }
    }

    /* operands: outputs first; inputs that some node reads directly next */
    k->n_operands = k->n_outputs;
    tjc_ptrmap slot_of;
    tjc_ptrmap_init(&slot_of);
#define SLOT_OF(v) ((int)(intptr_t)tjc_ptrmap_get(&slot_of, (v)) - 1)
#define SET_SLOT(v, s) tjc_ptrmap_put(&slot_of, (v), (void *)(intptr_t)((s) + 1))
    tj_status st = TJ_OK;
    for (int i = 0; i < k->n_inputs && !st; i++) {
        tj_value *v = tj_block_input(b, i);
        bool direct = false;
        for (int u = 0; u < tj_value_num_uses(v); u++)
            direct |= tj_node_kind_of(tj_value_use(v, u).user) != TJ_NODE_CONSTANT_CHUNK;
        k->input_operand[i] = direct ? k->n_operands++ : -1;
        k->slots[k->n_slots] = (slot){SLOT_OPERAND, k->input_operand[i], spec->inputs[i].dtype, false};
        if (!SET_SLOT(v, k->n_slots++)) st = TJ_ERR_MEMORY;
    }
    /* outputs: the value's slot becomes the output operand when it is a node's
     * first result; otherwise the output is a copy */
    const char *bad = NULL;
    int node_index = -1;
    for (tj_node *n = tj_block_first(b); n && !bad && !st; n = tj_node_next(n)) {
        node_index++;
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK) {
            int in = SLOT_OF(tj_node_input(n, 0));
            int64_t chunks = tj_node_attr(n, tj_node_attr_index(n, "chunks"))->i;
            int64_t dim = tj_node_attr(n, tj_node_attr_index(n, "dim"))->i;
            if (in < 0 || in >= k->n_inputs) {
                bad = "a chunk of something other than a group input";
                break;
            }
            for (int i = 0; i < tj_node_num_outputs(n); i++) {
                k->views[k->n_views] = (chunk_view){in, (int)dim, chunks, i};
                k->slots[k->n_slots] = (slot){SLOT_OPERAND, -1 - k->n_views, spec->inputs[in].dtype, false};
                k->n_views++;
                if (!SET_SLOT(tj_node_output(n, i), k->n_slots++)) st = TJ_ERR_MEMORY;
            }
            continue;
        }
        const tj_op_info *op = tj_node_op(n);
        int n_in = tj_node_num_inputs(n);
        tjf_row_kind row = tjf_row_op(n);
        if (row != TJF_ROW_NONE) {
            tj_dtype t = (tj_dtype)tj_value_type(tj_node_output(n, 0))->dtype;
            step s = row_step(n, row, t);
            for (int i = 0; i < s.n_args - 1; i++) s.args[i + 1] = SLOT_OF(tj_node_input(n, i));
            int out = k->n_slots++;
            k->slots[out] = (slot){SLOT_TEMP, k->n_temps++, t, per_row[node_index]};
            s.args[0] = out;
            k->rows = true;
            if (!add_step(k, s) || !SET_SLOT(tj_node_output(n, 0), out)) st = TJ_ERR_MEMORY;
            continue;
        }
        struct tj_tensor fake[3];
        tj_tensor *fake_ptrs[3];
        memset(fake, 0, sizeof fake);
        for (int i = 0; i < n_in && i < 3; i++) {
            int s = SLOT_OF(tj_node_input(n, i));
            fake[i].dtype = k->slots[s].dtype;
            fake[i].ndim = tj_value_type(tj_node_input(n, i))->ndim;
            fake_ptrs[i] = &fake[i];
        }
        tj_dtype compute, result;
        if (!op || n_in > 3 || tjc_pw_types(op, fake_ptrs, n_in, tj_node_attrs(n), &compute, &result) != TJ_OK) {
            bad = "a node the runner cannot type";
            break;
        }
        bool row_value = per_row[node_index];
        step s = {tjcpu_pw_loop(op, tj_node_attrs(n), compute), 1, {0}, {0, 0}, row_value};
        if (!s.fn) {
            bad = "no loop for the compute dtype";
            break;
        }
        tjcpu_pw_params(op, tj_node_attrs(n), s.params);
        for (int i = 0; i < n_in; i++) {
            int c = converted(k, SLOT_OF(tj_node_input(n, i)), compute, row_value);
            if (c < 0) st = TJ_ERR_MEMORY;
            s.args[s.n_args++] = c;
        }
        const tj_op_info *form = op->inplace_of >= 0 ? tjc_op(op->inplace_of) : op;
        if (form->scalar_base >= 0) { /* the C double operand, as a broadcast constant */
            int c = k->n_consts++;
            double value = tj_node_attrs(n)[0].f;
            char *src[2] = {(char *)&k->consts[c], (char *)&value};
            int64_t steps[2] = {0, 0};
            tjcpu_convert_loop(compute, TJ_F64)(1, src, steps, NULL);
            k->slots[k->n_slots] = (slot){SLOT_CONST, c, compute, false};
            s.args[s.n_args++] = k->n_slots++;
        }
        int out = k->n_slots++;
        k->slots[out] = (slot){SLOT_TEMP, k->n_temps++, result, row_value};
        s.args[0] = out;
        if (st || !add_step(k, s)) {
            st = TJ_ERR_MEMORY;
            break;
        }
        if (!SET_SLOT(tj_node_output(n, 0), out)) st = TJ_ERR_MEMORY;
    }
    /* outputs: retarget the producing step to write the output operand */
    for (int i = 0; !bad && st == TJ_OK && i < k->n_outputs; i++) {
        int s = SLOT_OF(tj_block_output(b, i));
        tj_value *v = tj_block_output(b, i);
        tj_dtype want = (tj_dtype)tj_value_type(v)->dtype;
        if (s < 0 || k->slots[s].dtype != want) {
            bad = "an output whose dtype differs from the graph's";
            break;
        }
        int target = k->n_slots++;
        k->slots[target] = (slot){SLOT_OPERAND, i, want, false};
        if (k->slots[s].kind == SLOT_TEMP) { /* a node's result: write it in place */
            k->slots[s] = k->slots[target];
        } else if (!add_step(k, (step){tjcpu_convert_loop(want, want), 2, {target, s}, {0, 0}, false})) {
            st = TJ_ERR_MEMORY;
        }
    }
    tjc_ptrmap_free(&slot_of);
    if (per_row != small_rows) tjc_free(per_row);
#undef SLOT_OF
#undef SET_SLOT
    if (bad) return fail(k, TJ_ERR_UNSUPPORTED, bad, NULL);
    if (st) return fail(k, st, "out of memory", NULL);
    if (k->n_operands + k->n_views > TJCPU_MAX_OPERANDS)
        return fail(k, TJ_ERR_UNSUPPORTED, "too many operands", NULL);
    for (int i = 0; i < k->n_slots; i++) /* chunk views come after the direct operands */
        if (k->slots[i].kind == SLOT_OPERAND && k->slots[i].index < 0)
            k->slots[i].index = k->n_operands + (-1 - k->slots[i].index);
    shrink(k);
    return k;
}

typedef struct launch_ctx {
    const tjf_kernel *k;
    char *scratch;
    size_t per_thread;
} launch_ctx;

/* The steps over one block of m elements: operand slots at ptrs (each at
 * its step), temporaries in scratch. */
static void run_steps(const tjf_kernel *k, int64_t m, char *const *ptrs, const int64_t *steps,
                      char *scratch, size_t temp_bytes) {
    enum { MAX_SLOTS = 256 };
    char *p[MAX_SLOTS];
    int64_t st[MAX_SLOTS];
    for (int s = 0; s < k->n_slots && s < MAX_SLOTS; s++) {
        const slot *sl = &k->slots[s];
        switch (sl->kind) {
        case SLOT_OPERAND:
            p[s] = ptrs[sl->index];
            st[s] = steps[sl->index];
            break;
        case SLOT_TEMP:
            p[s] = scratch + (size_t)sl->index * temp_bytes;
            st[s] = sl->per_row ? 0 : (int64_t)tj_dtype_size(sl->dtype);
            break;
        case SLOT_CONST:
            p[s] = (char *)&k->consts[sl->index];
            st[s] = 0;
            break;
        }
    }
    for (int j = 0; j < k->n_steps; j++) {
        const step *S = &k->steps[j];
        char *args[4];
        int64_t arg_steps[4];
        for (int a = 0; a < S->n_args; a++) {
            args[a] = p[S->args[a]];
            arg_steps[a] = st[S->args[a]];
        }
        S->fn(S->per_row ? 1 : m, args, arg_steps, S->params);
    }
}

/* A row group: rows of the iteration space (ops[0]'s sizes, a reduction's
 * input's) on the threads, each row one block whose temporaries hold the
 * whole row. */
static tj_status launch_rows(const tjf_kernel *k, tj_tensor *const *ops, int n_ops) {
    struct tj_tensor space;
    const tj_tensor *it = ops[0];
    if (k->reduce) { /* only its sizes are read */
        space.ndim = k->it_ndim;
        memcpy(space.sizes, k->it_sizes, sizeof space.sizes);
        it = &space;
    }
    int nd = it->ndim;
    int64_t width = nd ? it->sizes[nd - 1] : 1, rows = tjc_numel(it->sizes, nd) / (width ? width : 1);
    if (width == 0 || rows == 0) return TJ_OK;
    /* per operand: byte strides along the iteration dims (0 where it broadcasts) */
    int64_t strides[TJCPU_MAX_OPERANDS][TJ_MAX_DIMS];
    char *base[TJCPU_MAX_OPERANDS];
    for (int o = 0; o < n_ops; o++) {
        const tj_tensor *t = ops[o];
        int64_t es = (int64_t)tj_dtype_size(t->dtype);
        base[o] = (char *)t->storage->data + t->offset * es;
        for (int d = 0; d < nd; d++) {
            int td = d - (nd - t->ndim);
            strides[o][d] = td >= 0 && t->sizes[td] != 1 ? t->strides[td] * es : 0;
        }
    }
    size_t temp_bytes = (size_t)width * sizeof(double);
    size_t per_thread = (size_t)(k->n_temps ? k->n_temps : 1) * temp_bytes;
    int threads = rows < tj_get_num_threads() ? (int)rows : tj_get_num_threads();
    enum { STACK_SCRATCH = 64 << 10 };
    _Alignas(64) char stack_scratch[STACK_SCRATCH];
    size_t need = per_thread * (size_t)threads;
    char *scratch = need <= STACK_SCRATCH ? stack_scratch : tjc_aligned_alloc(64, need);
    if (!scratch) return tjc_error(TJ_ERR_MEMORY, "fused runner: out of memory");
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        char *ptrs[TJCPU_MAX_OPERANDS];
        int64_t steps[TJCPU_MAX_OPERANDS];
        for (int o = 0; o < n_ops; o++) {
            int64_t rest = r, off = 0;
            for (int d = nd - 2; d >= 0; d--) {
                off += rest % it->sizes[d] * strides[o][d];
                rest /= it->sizes[d];
            }
            ptrs[o] = base[o] + off;
            steps[o] = strides[o][nd - 1];
        }
        run_steps(k, width, ptrs, steps, scratch + (size_t)omp_get_thread_num() * per_thread, temp_bytes);
    }
    if (scratch != stack_scratch) tjc_free(scratch);
    return TJ_OK;
}

/* One inner run of the iteration: blocks of BLOCK elements through the steps. */
static void fused_loop(int64_t n, char **ptrs, const int64_t *steps, const void *ctx) {
    const launch_ctx *L = ctx;
    const tjf_kernel *k = L->k;
    char *scratch = L->scratch + (size_t)omp_get_thread_num() * L->per_thread;
    char *at[TJCPU_MAX_OPERANDS];
    for (int64_t off = 0; off < n; off += BLOCK) {
        int64_t m = n - off < BLOCK ? n - off : BLOCK;
        for (int o = 0; o < k->n_operands + k->n_views; o++) at[o] = ptrs[o] + off * steps[o];
        run_steps(k, m, at, steps, scratch, BLOCK * sizeof(double));
    }
}

static tj_status launch(const tjf_kernel *k, tj_tensor *const *inputs, tj_tensor *const *outputs) {
    tj_tensor *ops[TJCPU_MAX_OPERANDS];
    struct tj_tensor views[TJCPU_MAX_OPERANDS];
    struct tj_tensor kept[TJCPU_MAX_OPERANDS];
    for (int i = 0; i < k->n_outputs; i++) ops[i] = outputs[i];
    for (int i = 0; k->dropped && i < k->n_outputs; i++) { /* [rows...] walked as [rows..., 1] */
        kept[i] = *outputs[i];
        kept[i].sizes[kept[i].ndim] = 1;
        kept[i].strides[kept[i].ndim++] = 1;
        ops[i] = &kept[i];
    }
    for (int i = 0; i < k->n_inputs; i++)
        if (k->input_operand[i] >= 0) ops[k->input_operand[i]] = inputs[i];
    for (int v = 0; v < k->n_views; v++) {
        const chunk_view *cv = &k->views[v];
        const tj_tensor *in = inputs[cv->input];
        int dim;
        if (tjc_wrap_dim("prim::ConstantChunk", cv->dim, in->ndim, &dim)) return tj_last_status();
        views[v] = *in; /* same storage, no reference taken: a pointer offset */
        int64_t size = in->sizes[dim] / cv->chunks;
        views[v].sizes[dim] = size;
        views[v].offset += cv->index * size * in->strides[dim];
        ops[k->n_operands + v] = &views[v];
    }
    if (k->n_slots > 256) return tjc_error(TJ_ERR_UNSUPPORTED, "fused runner: group too large");
    if (k->rows) return launch_rows(k, ops, k->n_operands + k->n_views);
    launch_ctx L = {k, NULL, (size_t)(k->n_temps ? k->n_temps : 1) * BLOCK * sizeof(double)};
    /* the temporaries of a small group fit this stack frame: a replay of it
     * allocates nothing */
    enum { STACK_SCRATCH = 64 << 10 };
    _Alignas(64) char stack_scratch[STACK_SCRATCH];
    size_t need = L.per_thread * (size_t)tj_get_num_threads();
    L.scratch = need <= STACK_SCRATCH ? stack_scratch : tjc_aligned_alloc(64, need);
    if (!L.scratch) return tjc_error(TJ_ERR_MEMORY, "fused runner: out of memory");
    tjcpu_iter(ops, k->n_operands + k->n_views, fused_loop, &L);
    if (L.scratch != stack_scratch) tjc_free(L.scratch);
    return TJ_OK;
}

static const tjf_backend portable = {"portable", compile, launch, kernel_release};

const tjf_backend *tjf_portable_backend(void) { return &portable; }
