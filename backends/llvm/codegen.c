/* codegen.c — a fusion group's kernel as LLVM IR: the plan (which operands
 * the kernel reads and writes, the iteration space, dims collapsed where
 * every operand allows) and the function: loops over a range of the
 * iteration space, and in the innermost loop the group's value graph for one
 * element, op by op through ops.c's emitters.
 *
 * Sizes are part of the kernel's spec, so they are constants in the code; so
 * are the strides of contiguous operands (inputs laid out contiguously,
 * chunks of them, and the outputs). Only strided inputs read strides from a
 * table at run time. When every operand is contiguous or a broadcast scalar
 * the space collapses to one dim and the kernel is one flat loop that
 * vectorises; otherwise an outer loop walks rows (index arithmetic with
 * constant divisors) and an inner loop the innermost collapsed dim. The loop
 * body lives in a function whose pointer parameters are noalias (outputs
 * are fresh tensors; inputs are only read), inlined into the exported entry,
 * so the vectoriser needs no run-time overlap checks.
 *
 * A group with a row op is planned alike (its last dim kept apart) and its
 * loops are rowgen.c's, which evaluates the group's nodes per element
 * through the tjl_gen_* functions below. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/ptrmap.h"
#include "internal.h"

typedef LLVMValueRef V;

tj_status tjl_ir_init(tjl_ir *ir, bool libm) {
    memset(ir, 0, sizeof *ir);
    ir->libm = libm;
    ir->ctx = LLVMContextCreate();
    if (!ir->ctx) return tjc_error(TJ_ERR_MEMORY, "llvm backend: cannot create an LLVM context");
    ir->mod = LLVMModuleCreateWithNameInContext("tjit", ir->ctx);
    ir->b = LLVMCreateBuilderInContext(ir->ctx);
    ir->f32 = LLVMFloatTypeInContext(ir->ctx);
    ir->f64 = LLVMDoubleTypeInContext(ir->ctx);
    ir->i64 = LLVMInt64TypeInContext(ir->ctx);
    ir->i32 = LLVMInt32TypeInContext(ir->ctx);
    ir->i8 = LLVMInt8TypeInContext(ir->ctx);
    ir->i1 = LLVMInt1TypeInContext(ir->ctx);
    ir->ptr = LLVMPointerTypeInContext(ir->ctx, 0);
    ir->void_ = LLVMVoidTypeInContext(ir->ctx);
    return TJ_OK;
}

void tjl_ir_dispose(tjl_ir *ir) {
    if (ir->b) LLVMDisposeBuilder(ir->b);
    if (ir->mod) LLVMDisposeModule(ir->mod);
    if (ir->ctx) LLVMContextDispose(ir->ctx);
    ir->b = NULL;
    ir->mod = NULL;
    ir->ctx = NULL;
}

/* ---- planning --------------------------------------------------------------------- */

typedef struct slot {
    int operand;                  /* the operand it is read from, or -1 (a node's result) */
    tj_dtype dtype;
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
    V val[TJ_NUM_DTYPES];         /* in the loop body, by dtype (conversions made once) */
} slot;

/* Everything generation needs, on the heap (slots are many for big groups). */
struct tjl_gen {
    tjl_ir *ir;
    const tjf_spec *spec;
    tjl_plan *plan;
    tj_block *b;
    tjc_ptrmap slot_of;
    slot *slots;
    int n_slots;
    int64_t known[TJL_MAX_OPERANDS][TJ_MAX_DIMS]; /* contiguous strides of known operands */
    int own_ndim[TJL_MAX_OPERANDS];
    int64_t own_sizes[TJL_MAX_OPERANDS][TJ_MAX_DIMS];
    const tj_node *row;           /* the row op, when the group has one */
    /* the loop body's state */
    V ptr[TJL_MAX_OPERANDS], off[TJL_MAX_OPERANDS], inner_stride[TJL_MAX_OPERANDS];
    V st[TJ_MAX_DIMS][TJL_MAX_OPERANDS]; /* per collapsed dim and operand: the stride */
    V idx;
};
typedef struct tjl_gen gen;

static int slot_of(const gen *G, const tj_value *v) {
    return (int)(intptr_t)tjc_ptrmap_get(&G->slot_of, v) - 1;
}

static bool set_slot(gen *G, const tj_value *v, int s) {
    return tjc_ptrmap_put(&G->slot_of, v, (void *)(intptr_t)(s + 1));
}

static int add_operand(gen *G, tjl_operand op) {
    tjl_plan *P = G->plan;
    if (P->n_operands == TJL_MAX_OPERANDS) return -1;
    P->op[P->n_operands] = op;
    return P->n_operands++;
}

/* TJIT_LLVM_SKIP=aten::tanh,aten::exp leaves groups with those ops to the
 * portable runner: for finding which op's code is at fault, and for testing
 * the fallback. */
static bool skipped(const tj_op_info *op) {
    const char *list = getenv("TJIT_LLVM_SKIP");
    size_t n = strlen(op->name);
    for (const char *s = list; s && *s;) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len == n && !strncmp(s, op->name, n)) return true;
        s = end ? end + 1 : NULL;
    }
    return false;
}

/* The row op's slot: x's sizes and dtype; layer_norm's w and b of x's dtype
 * and sizes [N] (the spec may differ from the graph's types). */
static tj_status plan_row(gen *G, const tj_node *n) {
    tjl_ir *ir = G->ir;
    if (skipped(tj_node_op(n)))
        return tjl_fail(ir, "%s is in TJIT_LLVM_SKIP", tj_node_name(n)), TJ_ERR_UNSUPPORTED;
    const slot *x = &G->slots[slot_of(G, tj_node_input(n, 0))];
    if ((x->dtype != TJ_F32 && x->dtype != TJ_F64) || x->ndim < 1 || x->sizes[x->ndim - 1] < 1)
        return tjl_fail(ir, "%s of an input it does not take", tj_node_name(n)), TJ_ERR_UNSUPPORTED;
    for (int i = 1; i < tj_node_num_inputs(n); i++) {
        const slot *p = &G->slots[slot_of(G, tj_node_input(n, i))];
        if (p->dtype != x->dtype || p->ndim != 1 || p->sizes[0] != x->sizes[x->ndim - 1])
            return tjl_fail(ir, "%s: weight or bias unlike its input", tj_node_name(n)), TJ_ERR_UNSUPPORTED;
    }
    slot *s = &G->slots[G->n_slots];
    *s = *x;
    s->operand = -1;
    if (tjf_row_reduces(tjf_row_op(n))) { /* one value a row: the last dim kept as 1, or dropped */
        if (x->sizes[x->ndim - 1] < 2)
            return tjl_fail(ir, "%s of rows shorter than 2", tj_node_name(n)), TJ_ERR_UNSUPPORTED;
        G->plan->ndim = x->ndim;
        memcpy(G->plan->sizes, x->sizes, sizeof G->plan->sizes);
        if (tjf_row_keepdim(n)) s->sizes[s->ndim - 1] = 1;
        else s->ndim--;
    }
    if (!set_slot(G, tj_node_output(n, 0), G->n_slots++)) return tjc_error(TJ_ERR_MEMORY, "out of memory");
    return TJ_OK;
}

static bool slot_sizes_are(const slot *s, int ndim, const int64_t *sizes) {
    return s->ndim == ndim && !memcmp(s->sizes, sizes, sizeof(int64_t) * (size_t)ndim);
}

bool tjl_gen_per_row(const gen *G, const tj_value *v) {
    if (!G->row || !tjf_row_reduces(tjf_row_op(G->row))) return false;
    const slot *r = &G->slots[slot_of(G, tj_node_output(G->row, 0))];
    return slot_sizes_are(&G->slots[slot_of(G, v)], r->ndim, r->sizes);
}

/* A reduction's group: the iteration space is the reduction's input's
 * sizes (set by plan_row); the outputs all have them, or all the reduced
 * sizes, walked as [rows..., 1]. Without keepdim a member of the reduced
 * sizes reads operands only of sizes all 1 (fuse.c's rule): others would
 * align with the last dim. */
static tj_status plan_reduction_outputs(gen *G) {
    tjl_ir *ir = G->ir;
    tjl_plan *P = G->plan;
    bool keep = tjf_row_keepdim(G->row);
    for (tj_node *n = tj_block_first(G->b); n; n = tj_node_next(n)) {
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK || n == G->row || keep ||
            !tjl_gen_per_row(G, tj_node_output(n, 0)))
            continue;
        for (int i = 0; i < tj_node_num_inputs(n); i++) {
            const slot *x = &G->slots[slot_of(G, tj_node_input(n, i))];
            bool ones = true;
            for (int d = 0; d < x->ndim; d++) ones &= x->sizes[d] == 1;
            if (x->operand >= 0 && !ones)
                return tjl_fail(ir, "an operand read per row of a reduction without keepdim"), TJ_ERR_UNSUPPORTED;
        }
    }
    for (int i = 0; i < P->n_outputs; i++) {
        tj_value *v = tj_block_output(G->b, i);
        const slot *s = &G->slots[slot_of(G, v)];
        bool reduced = tjl_gen_per_row(G, v);
        if (!reduced && !slot_sizes_are(s, P->ndim, P->sizes))
            return tjl_fail(ir, "an output of sizes other than the reduction's"), TJ_ERR_UNSUPPORTED;
        if (i > 0 && reduced != P->reduced_outputs)
            return tjl_fail(ir, "outputs of different sizes"), TJ_ERR_UNSUPPORTED;
        P->reduced_outputs = reduced;
        if (s->dtype != (tj_dtype)tj_value_type(v)->dtype)
            return tjl_fail(ir, "an output whose dtype differs from the graph's"), TJ_ERR_UNSUPPORTED;
        P->op[i].dtype = s->dtype;
    }
    P->numel = tjc_numel(P->sizes, P->ndim);
    P->row_len = P->sizes[P->ndim - 1];
    return TJ_OK;
}

/* Slots, operands, shapes and dtypes of the subgraph's values. */
static tj_status plan_values(gen *G) {
    tjl_ir *ir = G->ir;
    tjl_plan *P = G->plan;
    tj_block *b = G->b;
    int n_in = tj_block_num_inputs(b);
    P->n_outputs = tj_block_num_outputs(b);
    if (n_in != G->spec->n_inputs) return tjc_error(TJ_ERR_INTERNAL, "llvm backend: spec arity");
    for (int i = 0; i < P->n_outputs; i++)
        if (add_operand(G, (tjl_operand){TJL_OUTPUT, i, 0, 0, 0, TJ_F32, false, 0}) < 0)
            return tjl_fail(ir, "too many operands"), TJ_ERR_UNSUPPORTED;
    for (int i = 0; i < n_in; i++) {
        tj_value *v = tj_block_input(b, i);
        const tjf_input_spec *is = &G->spec->inputs[i];
        bool direct = false;
        for (int u = 0; u < tj_value_num_uses(v); u++)
            direct |= tj_node_kind_of(tj_value_use(v, u).user) != TJ_NODE_CONSTANT_CHUNK;
        slot *s = &G->slots[G->n_slots];
        s->operand = -1;
        if (direct) {
            s->operand = add_operand(G, (tjl_operand){TJL_INPUT, i, 0, 0, 0, is->dtype,
                                                      is->layout != TJF_CONTIGUOUS, 0});
            if (s->operand < 0) return tjl_fail(ir, "too many operands"), TJ_ERR_UNSUPPORTED;
        }
        s->dtype = is->dtype;
        s->ndim = is->ndim;
        memcpy(s->sizes, is->sizes, sizeof(int64_t) * (size_t)is->ndim);
        if (!set_slot(G, v, G->n_slots++)) return tjc_error(TJ_ERR_MEMORY, "out of memory");
    }
    for (tj_node *n = tj_block_first(b); n; n = tj_node_next(n)) {
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK) {
            int in = slot_of(G, tj_node_input(n, 0));
            if (in < 0 || in >= n_in)
                return tjl_fail(ir, "a chunk of something other than a group input"), TJ_ERR_UNSUPPORTED;
            int64_t chunks = tj_node_attr(n, tj_node_attr_index(n, "chunks"))->i;
            int dim;
            tj_status st = tjc_wrap_dim("prim::ConstantChunk", tj_node_attr(n, tj_node_attr_index(n, "dim"))->i,
                                        G->slots[in].ndim, &dim);
            if (st) return st;
            if (chunks <= 0 || G->slots[in].sizes[dim] % chunks)
                return tjl_fail(ir, "an uneven chunk"), TJ_ERR_UNSUPPORTED;
            for (int i = 0; i < tj_node_num_outputs(n); i++) {
                slot *s = &G->slots[G->n_slots];
                *s = G->slots[in];
                s->sizes[dim] /= chunks;
                s->operand = add_operand(G, (tjl_operand){TJL_VIEW, in, dim, chunks, i, s->dtype,
                                                          G->spec->inputs[in].layout != TJF_CONTIGUOUS, 0});
                if (s->operand < 0) return tjl_fail(ir, "too many operands"), TJ_ERR_UNSUPPORTED;
                if (!set_slot(G, tj_node_output(n, i), G->n_slots++))
                    return tjc_error(TJ_ERR_MEMORY, "out of memory");
            }
            continue;
        }
        const tj_op_info *op = tj_node_op(n);
        int k = tj_node_num_inputs(n);
        if (n == G->row) {
            tj_status st = plan_row(G, n);
            if (st) return st;
            continue;
        }
        if (!op || !tjl_emitter(op))
            return tjl_fail(ir, "no LLVM emitter for %s", tj_node_name(n)), TJ_ERR_UNSUPPORTED;
        if (skipped(op))
            return tjl_fail(ir, "%s is in TJIT_LLVM_SKIP", op->name), TJ_ERR_UNSUPPORTED;
        if (k > 3 || tj_node_num_outputs(n) != 1)
            return tjl_fail(ir, "%s: not a pointwise node", tj_node_name(n)), TJ_ERR_UNSUPPORTED;
        slot *s = &G->slots[G->n_slots];
        s->operand = -1;
        s->ndim = 0;
        struct tj_tensor fake[3];
        tj_tensor *fake_ptrs[3];
        memset(fake, 0, sizeof fake);
        for (int i = 0; i < k; i++) {
            const slot *x = &G->slots[slot_of(G, tj_node_input(n, i))];
            int64_t next[TJ_MAX_DIMS];
            int nd;
            tj_status st = tjc_broadcast_shapes(op->name, s->sizes, s->ndim, x->sizes, x->ndim, next, &nd);
            if (st) return st;
            memcpy(s->sizes, next, sizeof next);
            s->ndim = nd;
            fake[i].dtype = x->dtype;
            fake[i].ndim = tj_value_type(tj_node_input(n, i))->ndim; /* 0-dim inputs promote differently */
            fake_ptrs[i] = &fake[i];
        }
        tj_dtype compute, result;
        if (tjc_pw_types(op, fake_ptrs, k, tj_node_attrs(n), &compute, &result) != TJ_OK || !tjcpu_pw_loop(op, tj_node_attrs(n), compute)) {
            tj_clear_error();
            return tjl_fail(ir, "%s: no loop for its operands' dtypes", op->name), TJ_ERR_UNSUPPORTED;
        }
        s->dtype = result;
        if (!set_slot(G, tj_node_output(n, 0), G->n_slots++)) return tjc_error(TJ_ERR_MEMORY, "out of memory");
    }
    if (G->row && tjf_row_reduces(tjf_row_op(G->row))) return plan_reduction_outputs(G);
    /* the iteration space: the outputs' sizes, all alike */
    for (int i = 0; i < P->n_outputs; i++) {
        tj_value *v = tj_block_output(b, i);
        const slot *s = &G->slots[slot_of(G, v)];
        if (s->dtype != (tj_dtype)tj_value_type(v)->dtype)
            return tjl_fail(ir, "an output whose dtype differs from the graph's"), TJ_ERR_UNSUPPORTED;
        if (i == 0) {
            P->ndim = s->ndim;
            memcpy(P->sizes, s->sizes, sizeof P->sizes);
        } else if (s->ndim != P->ndim || memcmp(s->sizes, P->sizes, sizeof(int64_t) * (size_t)s->ndim)) {
            return tjl_fail(ir, "outputs of different sizes"), TJ_ERR_UNSUPPORTED;
        }
        P->op[i].dtype = s->dtype;
    }
    P->numel = tjc_numel(P->sizes, P->ndim);
    if (G->row) { /* its rows are the iteration space's: the reduction is over the last dim */
        const slot *r = &G->slots[slot_of(G, tj_node_output(G->row, 0))];
        if (r->ndim != P->ndim || memcmp(r->sizes, P->sizes, sizeof(int64_t) * (size_t)P->ndim))
            return tjl_fail(ir, "a row op whose sizes are not the group's"), TJ_ERR_UNSUPPORTED;
        P->row_len = P->sizes[P->ndim - 1];
    }
    return TJ_OK;
}

/* Each operand's own sizes and, when known, its strides. */
static tj_status plan_operands(gen *G) {
    tjl_plan *P = G->plan;
    for (int k = 0; k < P->n_operands; k++) {
        tjl_operand *o = &P->op[k];
        const int64_t *sz = P->sizes;
        int nd = P->ndim;
        int64_t reduced[TJ_MAX_DIMS];
        if (o->kind == TJL_OUTPUT && P->reduced_outputs) { /* [rows..., 1] */
            memcpy(reduced, P->sizes, sizeof reduced);
            reduced[nd - 1] = 1;
            sz = reduced;
        }
        if (o->kind != TJL_OUTPUT) {
            const tjf_input_spec *is = &G->spec->inputs[o->index];
            sz = is->sizes;
            nd = is->ndim;
        }
        tjc_contiguous_strides(sz, nd, G->known[k]); /* of the whole input for a chunk */
        G->own_ndim[k] = nd;
        memcpy(G->own_sizes[k], sz, sizeof(int64_t) * (size_t)nd);
        if (o->kind == TJL_VIEW) G->own_sizes[k][o->dim] /= o->chunks;
        if (o->runtime) o->rt = P->n_runtime++;
        if (nd > P->ndim) return tjl_fail(G->ir, "an operand larger than the outputs"), TJ_ERR_UNSUPPORTED;
        for (int d = 0; d < nd; d++) {
            int64_t s = G->own_sizes[k][d], it = P->sizes[P->ndim - nd + d];
            if (s != it && s != 1) return tjl_fail(G->ir, "an operand that does not broadcast"), TJ_ERR_UNSUPPORTED;
        }
    }
    return TJ_OK;
}

/* Operand k's stride along iteration dim d: 0 when it broadcasts there,
 * -1 when only the run time knows. */
static int64_t stride_at(const gen *G, int k, int d) {
    const tjl_plan *P = G->plan;
    int od = d - (P->ndim - G->own_ndim[k]);
    if (od < 0 || G->own_sizes[k][od] == 1) return 0;
    return P->op[k].runtime ? -1 : G->known[k][od];
}

/* Drops size-1 dims and merges neighbours that every operand walks as one
 * (runtime strides never merge, since their values are unknown here). A
 * row kernel keeps the last dim apart, whatever its size. */
static void plan_dims(gen *G) {
    tjl_plan *P = G->plan;
    int n = 0; /* built inner first, reversed at the end */
    int64_t size[TJ_MAX_DIMS];
    int first[TJ_MAX_DIMS], count[TJ_MAX_DIMS];
    int64_t stride[TJ_MAX_DIMS][TJL_MAX_OPERANDS];
    for (int d = P->ndim - 1; d >= 0; d--) {
        bool row = G->row && d == P->ndim - 1; /* a row kernel's rows: a dim of their own */
        if (P->sizes[d] == 1 && !row) continue;
        bool merge = n > 0 && !(G->row && n == 1);
        for (int k = 0; merge && k < P->n_operands; k++) {
            int64_t s = stride_at(G, k, d), g = stride[n - 1][k];
            merge = s >= 0 && g >= 0 && s == g * size[n - 1];
        }
        if (merge) {
            size[n - 1] *= P->sizes[d];
            first[n - 1] = d;
            count[n - 1]++;
            continue;
        }
        size[n] = P->sizes[d];
        first[n] = d;
        count[n] = 1;
        for (int k = 0; k < P->n_operands; k++) stride[n][k] = stride_at(G, k, d);
        n++;
    }
    P->n_dims = n;
    for (int i = 0; i < n; i++) {
        P->dim_size[i] = size[n - 1 - i];
        P->dim_first[i] = first[n - 1 - i];
        P->dim_count[i] = count[n - 1 - i];
        memcpy(P->stride[i], stride[n - 1 - i], sizeof(int64_t) * (size_t)P->n_operands);
    }
}

/* ---- emission --------------------------------------------------------------------- */

static V i64c(const tjl_ir *ir, int64_t v) { return LLVMConstInt(ir->i64, (unsigned long long)v, 1); }

/* Slot s's element at the current index, in dtype t (loaded and converted once). */
static V value(gen *G, int s, tj_dtype t) {
    tjl_ir *ir = G->ir;
    slot *sl = &G->slots[s];
    if (sl->val[t]) return sl->val[t];
    if (!sl->val[sl->dtype]) { /* a node's result is set when emitted; an operand loads */
        int k = sl->operand;
        V elem = LLVMBuildMul(ir->b, G->idx, G->inner_stride[k], "");
        if (G->off[k]) elem = LLVMBuildAdd(ir->b, G->off[k], elem, "");
        LLVMTypeRef mt = tjl_mem_type(ir, sl->dtype);
        V p = LLVMBuildInBoundsGEP2(ir->b, mt, G->ptr[k], &elem, 1, "");
        V x = LLVMBuildLoad2(ir->b, mt, p, "");
        LLVMSetAlignment(x, (unsigned)tj_dtype_size(sl->dtype));
        if (sl->dtype == TJ_BOOL) x = LLVMBuildICmp(ir->b, LLVMIntNE, x, LLVMConstInt(ir->i8, 0, 0), "");
        sl->val[sl->dtype] = x;
    }
    return sl->val[t] = tjl_convert(ir, sl->val[sl->dtype], t, sl->dtype);
}

void tjl_gen_at(gen *G, V idx) {
    G->idx = idx;
    for (int s = 0; s < G->n_slots; s++) memset(G->slots[s].val, 0, sizeof G->slots[s].val);
}

V tjl_gen_value(gen *G, const tj_value *v, tj_dtype t) { return value(G, slot_of(G, v), t); }

tj_dtype tjl_gen_dtype(const gen *G, const tj_value *v) { return G->slots[slot_of(G, v)].dtype; }

void tjl_gen_set(gen *G, const tj_value *v, V x) {
    slot *s = &G->slots[slot_of(G, v)];
    memset(s->val, 0, sizeof s->val);
    s->val[s->dtype] = x;
}

tj_status tjl_gen_node(gen *G, const tj_node *nc) {
    tjl_ir *ir = G->ir;
    tj_node *n = (tj_node *)nc; /* the IR's accessors take non-const nodes */
    const tj_op_info *op = tj_node_op(n);
    int k = tj_node_num_inputs(n);
    const tj_op_info *form = op->inplace_of >= 0 ? tjc_op(op->inplace_of) : op;
    slot *out = &G->slots[slot_of(G, tj_node_output(n, 0))];
    struct tj_tensor fake[3];
    tj_tensor *fake_ptrs[3];
    memset(fake, 0, sizeof fake);
    for (int i = 0; i < k; i++) {
        fake[i].dtype = G->slots[slot_of(G, tj_node_input(n, i))].dtype;
        fake[i].ndim = tj_value_type(tj_node_input(n, i))->ndim;
        fake_ptrs[i] = &fake[i];
    }
    tj_dtype compute, result;
    if (tjc_pw_types(op, fake_ptrs, k, tj_node_attrs(n), &compute, &result) != TJ_OK) return tj_last_status();
    tjl_args a = {{NULL}, {NULL}, {0, 0}};
    for (int i = 0; i < k; i++) a.x[i] = value(G, slot_of(G, tj_node_input(n, i)), compute);
    if (form->scalar_base >= 0) /* the C double operand: a constant, as the runner's */
        a.x[k] = tjl_const(ir, compute, tj_node_attrs(n)[0].f);
    tjcpu_pw_params(op, tj_node_attrs(n), a.raw);
    a.p[0] = tjl_param(ir, compute, a.raw[0]);
    a.p[1] = tjl_param(ir, compute, a.raw[1]);
    V r = tjl_emitter(tjc_pw_expr_op(op, tj_node_attrs(n)))(ir, compute, &a);
    if (!r) return TJ_ERR_UNSUPPORTED;
    if (LLVMTypeOf(r) != tjl_type(ir, result))
        return tjl_fail(ir, "%s: result of the wrong type", op->name), TJ_ERR_UNSUPPORTED;
    out->val[result] = r;
    return TJ_OK;
}

void tjl_gen_store(gen *G, int i) {
    tjl_ir *ir = G->ir;
    int si = slot_of(G, tj_block_output(G->b, i));
    tj_dtype t = G->slots[si].dtype;
    V x = value(G, si, t);
    if (t == TJ_BOOL) x = LLVMBuildZExt(ir->b, x, ir->i8, "");
    V elem = LLVMBuildMul(ir->b, G->idx, G->inner_stride[i], "");
    if (G->off[i]) elem = LLVMBuildAdd(ir->b, G->off[i], elem, "");
    V p = LLVMBuildInBoundsGEP2(ir->b, tjl_mem_type(ir, t), G->ptr[i], &elem, 1, "");
    LLVMSetAlignment(LLVMBuildStore(ir->b, x, p), (unsigned)tj_dtype_size(t));
}

/* The group's value graph for one element, and the stores of the outputs. */
static tj_status emit_element(gen *G, V idx) {
    tjl_gen_at(G, idx);
    for (tj_node *n = tj_block_first(G->b); n; n = tj_node_next(n)) {
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK) continue;
        tj_status st = tjl_gen_node(G, n);
        if (st) return st;
    }
    for (int i = 0; i < G->plan->n_outputs; i++) tjl_gen_store(G, i);
    return TJ_OK;
}

static void add_attr(tjl_ir *ir, V fn, unsigned index, const char *name) {
    unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
    LLVMAddAttributeAtIndex(fn, index, LLVMCreateEnumAttribute(ir->ctx, kind, 0));
}

void tjl_gen_operands(gen *G, V fn) {
    tjl_ir *ir = G->ir;
    const tjl_plan *P = G->plan;
    int n_ops = P->n_operands, D = P->n_dims;
    V strides = LLVMGetParam(fn, (unsigned)n_ops);
    for (int k = 0; k < n_ops; k++) {
        G->ptr[k] = LLVMGetParam(fn, (unsigned)k);
        for (int d = 0; d < D; d++) {
            if (P->stride[d][k] >= 0) {
                G->st[d][k] = i64c(ir, P->stride[d][k]);
                continue;
            }
            V at = i64c(ir, (int64_t)P->op[k].rt * D + d);
            V p = LLVMBuildInBoundsGEP2(ir->b, ir->i64, strides, &at, 1, "");
            G->st[d][k] = LLVMBuildLoad2(ir->b, ir->i64, p, "");
        }
        G->inner_stride[k] = D ? G->st[D - 1][k] : i64c(ir, 0);
        G->off[k] = NULL;
    }
}

void tjl_gen_row(gen *G, V row) {
    tjl_ir *ir = G->ir;
    const tjl_plan *P = G->plan;
    int D = P->n_dims;
    V q = row, coord[TJ_MAX_DIMS];
    for (int d = D - 2; d >= 0; d--) { /* constant divisors: cheap */
        V size = i64c(ir, P->dim_size[d]);
        coord[d] = d ? LLVMBuildURem(ir->b, q, size, "") : q;
        if (d) q = LLVMBuildUDiv(ir->b, q, size, "");
    }
    for (int k = 0; k < P->n_operands; k++) {
        V off = i64c(ir, 0);
        for (int d = 0; d < D - 1; d++)
            off = LLVMBuildAdd(ir->b, off, LLVMBuildMul(ir->b, coord[d], G->st[d][k], ""), "");
        G->off[k] = off;
    }
}

/* The body: (operand pointers..., strides, begin, end), loops and element. */
static tj_status emit_body(gen *G, V fn) {
    tjl_ir *ir = G->ir;
    const tjl_plan *P = G->plan;
    int n_ops = P->n_operands, D = P->n_dims;
    V begin = LLVMGetParam(fn, (unsigned)n_ops + 1), end = LLVMGetParam(fn, (unsigned)n_ops + 2);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ir->ctx, fn, "entry");
    LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(ir->ctx, fn, "exit");
    LLVMPositionBuilderAtEnd(ir->b, entry);
    tjl_gen_operands(G, fn);
    V nonempty = LLVMBuildICmp(ir->b, LLVMIntSLT, begin, end, "");
    if (D <= 1) { /* one flat loop */
        LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(ir->ctx, fn, "loop");
        LLVMBuildCondBr(ir->b, nonempty, loop, exit);
        LLVMPositionBuilderAtEnd(ir->b, loop);
        V i = LLVMBuildPhi(ir->b, ir->i64, "i");
        tj_status s = emit_element(G, i);
        if (s) return s;
        V next = LLVMBuildAdd(ir->b, i, i64c(ir, 1), "");
        LLVMBasicBlockRef from[2] = {entry, LLVMGetInsertBlock(ir->b)};
        V in[2] = {begin, next};
        LLVMAddIncoming(i, in, from, 2);
        LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntSLT, next, end, ""), loop, exit);
    } else { /* rows of the innermost dim */
        LLVMBasicBlockRef outer = LLVMAppendBasicBlockInContext(ir->ctx, fn, "row");
        LLVMBasicBlockRef inner = LLVMAppendBasicBlockInContext(ir->ctx, fn, "col");
        LLVMBasicBlockRef latch = LLVMAppendBasicBlockInContext(ir->ctx, fn, "next_row");
        LLVMBuildCondBr(ir->b, nonempty, outer, exit);
        LLVMPositionBuilderAtEnd(ir->b, outer);
        V i = LLVMBuildPhi(ir->b, ir->i64, "i");
        V width = i64c(ir, P->dim_size[D - 1]);
        V row = LLVMBuildUDiv(ir->b, i, width, "");
        V col = LLVMBuildSub(ir->b, i, LLVMBuildMul(ir->b, row, width, ""), "");
        V room = LLVMBuildSub(ir->b, width, col, ""), left = LLVMBuildSub(ir->b, end, i, "");
        V n = LLVMBuildSelect(ir->b, LLVMBuildICmp(ir->b, LLVMIntSLT, room, left, ""), room, left, "");
        tjl_gen_row(G, row);
        LLVMBuildBr(ir->b, inner);
        LLVMPositionBuilderAtEnd(ir->b, inner);
        V j = LLVMBuildPhi(ir->b, ir->i64, "j");
        tj_status s = emit_element(G, LLVMBuildAdd(ir->b, col, j, ""));
        if (s) return s;
        V jn = LLVMBuildAdd(ir->b, j, i64c(ir, 1), "");
        LLVMBasicBlockRef jfrom[2] = {outer, LLVMGetInsertBlock(ir->b)};
        V jin[2] = {i64c(ir, 0), jn};
        LLVMAddIncoming(j, jin, jfrom, 2);
        LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntSLT, jn, n, ""), inner, latch);
        LLVMPositionBuilderAtEnd(ir->b, latch);
        V in_next = LLVMBuildAdd(ir->b, i, n, "");
        LLVMBasicBlockRef ifrom[2] = {entry, latch};
        V iin[2] = {begin, in_next};
        LLVMAddIncoming(i, iin, ifrom, 2);
        LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntSLT, in_next, end, ""), outer, exit);
    }
    LLVMPositionBuilderAtEnd(ir->b, exit);
    LLVMBuildRetVoid(ir->b);
    return TJ_OK;
}

/* A row kernel agrees with the unfused ops within the bounds, not bit for
 * bit (its sums run in their own order), so the inline math it calls (exp,
 * log, ...) may contract into FMA, as the CPU kernels' does. Not the body:
 * the prologue is evaluated in more than one pass, and each pass must see
 * the same bits (x - max <= 0; a constant row's x - mean == 0). */
static void allow_contraction(tjl_ir *ir, V body) {
    for (V f = LLVMGetFirstFunction(ir->mod); f; f = LLVMGetNextFunction(f)) {
        if (f == body || LLVMGetLinkage(f) != LLVMInternalLinkage) continue;
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
            for (V i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
                if (LLVMCanValueUseFastMathFlags(i))
                    LLVMSetFastMathFlags(i, LLVMGetFastMathFlags(i) | LLVMFastMathAllowContract);
    }
}

/* The exported entry: unpacks the pointer array and calls the body. */
static void emit_entry(gen *G, V body, const char *name) {
    tjl_ir *ir = G->ir;
    int n_ops = G->plan->n_operands;
    LLVMTypeRef params[4] = {ir->ptr, ir->ptr, ir->i64, ir->i64};
    V fn = LLVMAddFunction(ir->mod, name, LLVMFunctionType(ir->void_, params, 4, 0));
    add_attr(ir, fn, LLVMAttributeFunctionIndex, "nounwind");
    if (G->row) /* its range counts rows: part of the kernel's text, so of its cache key */
        LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                                LLVMCreateStringAttribute(ir->ctx, "tjit-range", 10, "rows", 4));
    LLVMPositionBuilderAtEnd(ir->b, LLVMAppendBasicBlockInContext(ir->ctx, fn, "entry"));
    V args[TJL_MAX_OPERANDS + 3];
    for (int k = 0; k < n_ops; k++) {
        V at = i64c(ir, k);
        V p = LLVMBuildInBoundsGEP2(ir->b, ir->ptr, LLVMGetParam(fn, 0), &at, 1, "");
        args[k] = LLVMBuildLoad2(ir->b, ir->ptr, p, "");
    }
    args[n_ops] = LLVMGetParam(fn, 1);
    args[n_ops + 1] = LLVMGetParam(fn, 2);
    args[n_ops + 2] = LLVMGetParam(fn, 3);
    LLVMBuildCall2(ir->b, LLVMGlobalGetValueType(body), body, args, (unsigned)n_ops + 3, "");
    LLVMBuildRetVoid(ir->b);
}

tj_status tjl_generate(tjl_ir *ir, const tj_graph *subgraph, const tjf_spec *spec, const char *name,
                       tjl_plan *plan) {
    gen *G = tjc_calloc(1, sizeof *G);
    tj_block *b = tj_graph_block((tj_graph *)subgraph); /* the IR's accessors take non-const graphs */
    int max_slots = tj_block_num_inputs(b) + 1;
    for (tj_node *n = tj_block_first(b); n; n = tj_node_next(n)) max_slots += tj_node_num_outputs(n);
    if (G) G->slots = tjc_calloc((size_t)max_slots, sizeof(slot));
    if (!G || !G->slots) {
        if (G) tjc_free(G);
        return tjc_error(TJ_ERR_MEMORY, "out of memory");
    }
    memset(plan, 0, sizeof *plan);
    G->ir = ir;
    G->spec = spec;
    G->plan = plan;
    G->b = b;
    G->row = tjf_row_node(subgraph);
    tjc_ptrmap_init(&G->slot_of);
    tj_status st = plan_values(G);
    if (st == TJ_OK) st = plan_operands(G);
    if (st == TJ_OK) {
        plan_dims(G);
        plan->n_nodes = tj_block_num_nodes(b);
        int n_ops = plan->n_operands;
        LLVMTypeRef params[TJL_MAX_OPERANDS + 3];
        for (int k = 0; k < n_ops; k++) params[k] = ir->ptr;
        params[n_ops] = ir->ptr;
        params[n_ops + 1] = params[n_ops + 2] = ir->i64;
        char body_name[64];
        snprintf(body_name, sizeof body_name, "%s.body", name);
        V body = LLVMAddFunction(ir->mod, body_name, LLVMFunctionType(ir->void_, params, (unsigned)n_ops + 3, 0));
        LLVMSetLinkage(body, LLVMInternalLinkage);
        add_attr(ir, body, LLVMAttributeFunctionIndex, "alwaysinline");
        add_attr(ir, body, LLVMAttributeFunctionIndex, "nounwind");
        for (int k = 0; k <= n_ops; k++) { /* outputs are fresh, inputs only read */
            add_attr(ir, body, (unsigned)k + 1, "noalias");
            add_attr(ir, body, (unsigned)k + 1, "nocapture");
        }
        st = G->row ? tjl_emit_rows(G, ir, plan, b, G->row, body) : emit_body(G, body);
        if (st == TJ_OK) emit_entry(G, body, name);
        if (st == TJ_OK && G->row) allow_contraction(ir, body);
    }
    if (st == TJ_ERR_UNSUPPORTED && !ir->why[0]) tjl_fail(ir, "%s", tj_last_error());
    tjc_ptrmap_free(&G->slot_of);
    tjc_free(G->slots);
    tjc_free(G);
    return st;
}
