/* fuse_codegen.c — the CUDA C text of a fusion group's kernels (fusion.h).
 *
 * For a spec the whole iteration is known but the strides of strided
 * inputs: sizes, broadcasting, chunk offsets and the contiguous inputs'
 * strides become constants, so an element's operand offsets are a few
 * multiplications by constants after dividing its linear index by constant
 * sizes (which the compilers turn into multiply-shifts). Values are held in
 * their dtype's compute type (float, double, tjm::i64, bool); a node converts
 * its operands to its compute dtype (core/pointwise_rule.c's typing, as the
 * per-op kernels do), evaluates its row's expression and keeps the result;
 * outputs are stored at the linear index, contiguous. A group holding a row
 * op gets the row kernel of fuse_rows.c around two element functions: the
 * row op's operands at an element (the prologue), and the whole group given
 * the row op's result there (the epilogue and every store). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backends/cpu/cpu.h"
#include "backends/cuda/fusion.h"
#include "backends/cuda/pointwise.h"
#include "backends/cuda/sources.h"
#include "core/alloc.h"
#include "core/text.h"
#include "core/ptrmap.h"

/* ---- text ------------------------------------------------------------------- */



/* A parameter or operand, converted as the per-op kernels convert it, as a
 * C++ literal of dtype d's compute type. */
static void put_literal(tjc_text *t, tj_dtype d, tjcu_pw_scalar v) {
    switch (d) {
    case TJ_F32:
    case TJ_F64: {
        double x = d == TJ_F32 ? (double)v.f : v.d;
        const char *cast = d == TJ_F32 ? "(float)" : "(double)";
        if (isnan(x)) tjc_put(t, "%sNAN", cast);
        else if (isinf(x)) tjc_put(t, "%s%sINFINITY", cast, x < 0 ? "-" : "");
        else tjc_put(t, "%s%a", cast, x);
        break;
    }
    case TJ_I64:
        if (v.i == INT64_MIN) tjc_put(t, "tjm::i64(-9223372036854775807LL - 1)");
        else tjc_put(t, "tjm::i64(%lldLL)", v.i);
        break;
    default: tjc_put(t, "%s", v.b ? "true" : "false"); break;
    }
}


/* ---- the layout ----------------------------------------------------------------- */

typedef struct shape {
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
} shape;

/* An operand's element strides over the full iteration dims (broadcast dims
 * 0), from its own sizes and strides. */
static void broadcast_strides(const shape *it, const int64_t *sizes, const int64_t *strides, int nd,
                              int64_t *out) {
    for (int d = 0; d < it->ndim; d++) {
        int od = d - (it->ndim - nd);
        out[d] = od >= 0 && sizes[od] == it->sizes[d] && it->sizes[d] != 1 ? strides[od] : 0;
    }
}

typedef struct gen {
    const tj_graph *sub;
    const tjf_spec *spec;
    tjcu_fuse_layout *L;
    shape it;                        /* the full iteration space */
    int64_t st[TJF_MAX_ARGS][TJ_MAX_DIMS]; /* constant strides over it (runtime operands: unused) */
    int keep[TJ_MAX_DIMS];           /* dims of it the kernel indexes, after coalescing */
    int64_t kept_size[TJ_MAX_DIMS];
    int64_t kept_st[TJF_MAX_ARGS][TJ_MAX_DIMS];
    const tj_node *cat;              /* the group's closing aten::cat, or NULL */
    int store_output[TJF_MAX_ARGS];  /* per store: its output, offset (elements), strides */
    int64_t store_offset[TJF_MAX_ARGS];
    int64_t store_st[TJF_MAX_ARGS][TJ_MAX_DIMS];
    int64_t kept_store_st[TJF_MAX_ARGS][TJ_MAX_DIMS];
    bool store_whole[TJF_MAX_ARGS];
    const tj_node *row;              /* the group's row op, or NULL */
} gen;

/* Sizes of every value: the group's output sizes are the iteration space. */
static tj_status propagate(tj_block *b, const tjf_spec *spec, tjc_ptrmap *shape_of, shape *pool,
                           int *n_pool, shape *it) {
    int k = 0;
    for (int i = 0; i < tj_block_num_inputs(b); i++) {
        pool[k].ndim = spec->inputs[i].ndim;
        memcpy(pool[k].sizes, spec->inputs[i].sizes, sizeof(int64_t) * (size_t)pool[k].ndim);
        if (!tjc_ptrmap_put(shape_of, tj_block_input(b, i), &pool[k++])) return TJ_ERR_MEMORY;
    }
    for (tj_node *n = tj_block_first(b); n; n = tj_node_next(n)) {
        shape s = {0};
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK) {
            s = *(shape *)tjc_ptrmap_get(shape_of, tj_node_input(n, 0));
            int64_t chunks = tj_node_attr(n, tj_node_attr_index(n, "chunks"))->i;
            int dim;
            tj_status st = tjc_wrap_dim("prim::ConstantChunk",
                                        tj_node_attr(n, tj_node_attr_index(n, "dim"))->i, s.ndim, &dim);
            if (st) return st;
            if (chunks <= 0 || s.sizes[dim] % chunks)
                return tjc_error(TJ_ERR_SHAPE, "prim::ConstantChunk: size %lld of dim %d does not "
                                 "split into %lld equal chunks", (long long)s.sizes[dim], dim,
                                 (long long)chunks);
            s.sizes[dim] /= chunks;
        } else if (tjf_row_op(n) != TJF_ROW_NONE) { /* a row op: its input's sizes */
            s = *(shape *)tjc_ptrmap_get(shape_of, tj_node_input(n, 0));
        } else if (tj_node_kind_of(n) == TJ_NODE_OP && !tjf_fusible_op(tj_node_op(n))) { /* the cat */
            s = *(shape *)tjc_ptrmap_get(shape_of, tj_node_input(n, 0));
            int dim;
            tj_status st = tjc_wrap_dim("aten::cat", tj_node_attrs(n)[0].i, s.ndim, &dim);
            if (st) return st;
            s.sizes[dim] *= tj_node_num_inputs(n);
        } else {
            for (int i = 0; i < tj_node_num_inputs(n); i++) {
                const shape *in = tjc_ptrmap_get(shape_of, tj_node_input(n, i));
                shape next;
                tj_status st = tjc_broadcast_shapes(tj_node_name(n), s.sizes, s.ndim, in->sizes,
                                                    in->ndim, next.sizes, &next.ndim);
                if (st) return st;
                s = next;
            }
        }
        for (int o = 0; o < tj_node_num_outputs(n); o++) {
            pool[k] = s;
            if (!tjc_ptrmap_put(shape_of, tj_node_output(n, o), &pool[k++])) return TJ_ERR_MEMORY;
        }
    }
    *n_pool = k;
    tj_node *last = tj_block_last(b);
    if (last && tj_node_kind_of(last) == TJ_NODE_OP && !tjf_fusible_op(tj_node_op(last)) &&
        tjf_row_op(last) == TJF_ROW_NONE) {
        /* a concatenation: the kernel runs over one piece */
        *it = *(shape *)tjc_ptrmap_get(shape_of, tj_node_input(last, 0));
        return TJ_OK;
    }
    const shape *first = tjc_ptrmap_get(shape_of, tj_block_output(b, 0));
    for (int i = 1; i < tj_block_num_outputs(b); i++) {
        const shape *o = tjc_ptrmap_get(shape_of, tj_block_output(b, i));
        if (o->ndim != first->ndim || memcmp(o->sizes, first->sizes, sizeof(int64_t) * (size_t)o->ndim))
            return tjc_error(TJ_ERR_INTERNAL, "cuda fuser: the group's outputs differ in size");
    }
    *it = *first;
    return TJ_OK;
}

/* Operands: each group input some node reads directly, and each chunk piece
 * (a pointer offset into its input). */
static tj_status plan_operands(gen *G, tj_block *b, tjc_ptrmap *operand_of) {
    tjcu_fuse_layout *L = G->L;
    for (int i = 0; i < tj_block_num_inputs(b); i++) {
        tj_value *v = tj_block_input(b, i);
        bool direct = false;
        for (int u = 0; u < tj_value_num_uses(v); u++)
            direct |= tj_node_kind_of(tj_value_use(v, u).user) != TJ_NODE_CONSTANT_CHUNK;
        for (int o = 0; o < tj_block_num_outputs(b); o++) direct |= tj_block_output(b, o) == v;
        if (!direct) continue;
        if (L->n_operands == TJF_MAX_ARGS) return tjc_error(TJ_ERR_UNSUPPORTED, "too many operands");
        L->operand[L->n_operands] = (tjcu_fuse_operand){i, -1, 1, 0, false, false, G->spec->inputs[i].dtype};
        if (!tjc_ptrmap_put(operand_of, v, (void *)(intptr_t)(L->n_operands++ + 1))) return TJ_ERR_MEMORY;
    }
    for (tj_node *n = tj_block_first(b); n; n = tj_node_next(n)) {
        if (tj_node_kind_of(n) != TJ_NODE_CONSTANT_CHUNK) continue;
        tj_value *src = tj_node_input(n, 0);
        int input = -1;
        for (int i = 0; i < tj_block_num_inputs(b); i++)
            if (tj_block_input(b, i) == src) input = i;
        if (input < 0) return tjc_error(TJ_ERR_UNSUPPORTED, "a chunk of something other than a group input");
        int dim;
        if (tjc_wrap_dim("prim::ConstantChunk", tj_node_attr(n, tj_node_attr_index(n, "dim"))->i,
                         G->spec->inputs[input].ndim, &dim))
            return tj_last_status();
        for (int o = 0; o < tj_node_num_outputs(n); o++) {
            if (L->n_operands == TJF_MAX_ARGS) return tjc_error(TJ_ERR_UNSUPPORTED, "too many operands");
            L->operand[L->n_operands] = (tjcu_fuse_operand){
                input, dim, tj_node_attr(n, tj_node_attr_index(n, "chunks"))->i, o, false, false,
                G->spec->inputs[input].dtype};
            if (!tjc_ptrmap_put(operand_of, tj_node_output(n, o), (void *)(intptr_t)(L->n_operands++ + 1)))
                return TJ_ERR_MEMORY;
        }
    }
    return TJ_OK;
}

/* Constant strides of every operand whose input is contiguous; the dims the
 * kernel indexes (size-1 dims dropped, neighbours merged when every operand's
 * strides allow and none is read at run time). */
static void plan_dims(gen *G) {
    tjcu_fuse_layout *L = G->L;
    int64_t it_st[TJ_MAX_DIMS];
    tjc_contiguous_strides(G->it.sizes, G->it.ndim, it_st);
    for (int k = 0; k < L->n_operands; k++) {
        tjcu_fuse_operand *op = &L->operand[k];
        const tjf_input_spec *in = &G->spec->inputs[op->input];
        op->runtime = in->layout == TJF_STRIDED;
        if (op->runtime) {
            L->n_runtime++;
            continue;
        }
        int64_t sizes[TJ_MAX_DIMS], strides[TJ_MAX_DIMS];
        memcpy(sizes, in->sizes, sizeof(int64_t) * (size_t)in->ndim);
        tjc_contiguous_strides(in->sizes, in->ndim, strides);
        if (op->chunk_dim >= 0) sizes[op->chunk_dim] /= op->chunks;
        broadcast_strides(&G->it, sizes, strides, in->ndim, G->st[k]);
        bool whole = true, scalar = true;
        for (int d = 0; d < G->it.ndim; d++) {
            if (G->it.sizes[d] == 1) continue;
            whole = whole && G->st[k][d] == it_st[d];
            scalar = scalar && G->st[k][d] == 0;
        }
        op->whole = whole || scalar;
    }
    /* stores: each output at the linear index; a concatenation's pieces each
     * at its slice of the one output */
    if (G->cat) {
        L->n_stores = tj_node_num_inputs(G->cat);
        int64_t cat_sizes[TJ_MAX_DIMS], cat_st[TJ_MAX_DIMS];
        memcpy(cat_sizes, G->it.sizes, sizeof cat_sizes);
        int dim = 0;
        tjc_wrap_dim("aten::cat", tj_node_attrs((tj_node *)G->cat)[0].i, G->it.ndim, &dim);
        cat_sizes[dim] *= L->n_stores;
        tjc_contiguous_strides(cat_sizes, G->it.ndim, cat_st);
        for (int m = 0; m < L->n_stores; m++) {
            G->store_output[m] = 0;
            G->store_offset[m] = m * G->it.sizes[dim] * cat_st[dim];
            memcpy(G->store_st[m], cat_st, sizeof cat_st);
            L->store_dtype[m] = L->output_dtype[0];
        }
    } else {
        L->n_stores = L->n_outputs;
        for (int m = 0; m < L->n_stores; m++) {
            G->store_output[m] = m;
            memcpy(G->store_st[m], it_st, sizeof it_st);
            L->store_dtype[m] = L->output_dtype[m];
        }
    }
    for (int m = 0; m < L->n_stores; m++) {
        G->store_whole[m] = G->store_offset[m] == 0;
        for (int d = 0; d < G->it.ndim; d++)
            G->store_whole[m] = G->store_whole[m] && (G->it.sizes[d] == 1 || G->store_st[m][d] == it_st[d]);
    }
    L->vectorisable = L->n_runtime == 0;
    for (int k = 0; k < L->n_operands; k++) L->vectorisable = L->vectorisable && L->operand[k].whole;
    for (int m = 0; m < L->n_stores; m++) L->vectorisable = L->vectorisable && G->store_whole[m];
    int nd = 0;
    for (int d = 0; d < G->it.ndim; d++) {
        if (G->it.sizes[d] == 1) continue;
        bool merge = nd > 0 && L->n_runtime == 0;
        for (int k = 0; merge && k < L->n_operands; k++)
            merge = G->kept_st[k][nd - 1] == G->st[k][d] * G->it.sizes[d];
        for (int m = 0; merge && m < L->n_stores; m++)
            merge = G->kept_store_st[m][nd - 1] == G->store_st[m][d] * G->it.sizes[d];
        if (merge) {
            G->kept_size[nd - 1] *= G->it.sizes[d];
            for (int k = 0; k < L->n_operands; k++) G->kept_st[k][nd - 1] = G->st[k][d];
            for (int m = 0; m < L->n_stores; m++) G->kept_store_st[m][nd - 1] = G->store_st[m][d];
            continue;
        }
        G->keep[nd] = d;
        G->kept_size[nd] = G->it.sizes[d];
        for (int k = 0; k < L->n_operands; k++) G->kept_st[k][nd] = G->st[k][d];
        for (int m = 0; m < L->n_stores; m++) G->kept_store_st[m][nd] = G->store_st[m][d];
        nd++;
    }
    L->ndim = nd;
    memcpy(L->sizes, G->kept_size, sizeof(int64_t) * (size_t)nd);
}

/* ---- the kernels ------------------------------------------------------------------ */

/* The device function of node j: its row's expression in namespace tjm, the
 * parameters as literals of the compute dtype. */
static tj_status put_node_function(tjc_text *t, const char *name, int j, const tj_node *node,
                                   tj_dtype compute, tj_dtype result) {
    const tj_op_info *op = tj_node_op((tj_node *)node);
    const tj_op_info *base = tjc_pw_expr_op(op, tj_node_attrs((tj_node *)node));
    if (!base->pw_expr)
        return tjc_error(TJ_ERR_UNSUPPORTED, "%s has no pointwise expression", op->name);
    double prm[2];
    tjcpu_pw_params(op, tj_node_attrs((tj_node *)node), prm);
    const char *T = tjcu_c_compute_type(compute);
    tjc_put(t, "__device__ __forceinline__ %s %s_n%d(%s a, %s b, %s c) {\n", tjcu_c_compute_type(result), name,
        j, T, T, T);
    tjc_put(t, "    typedef %s T;\n    const T p0 = ", T);
    put_literal(t, compute, tjcu_pw_param(compute, prm[0]));
    tjc_put(t, ", p1 = ");
    put_literal(t, compute, tjcu_pw_param(compute, prm[1]));
    tjc_put(t, ";\n    (void)a; (void)b; (void)c; (void)p0; (void)p1;\n");
    tjc_put(t, "    return (%s)(%s); /* %s */\n}\n", tjcu_c_compute_type(result), base->pw_expr, op->name);
    return TJ_OK;
}

/* Operand offsets from the linear index i (in scope, of type I; offsets of
 * type D) and the loads, each operand's value in v_x<k>. */
static void put_loads(gen *G, tjc_text *t) {
    tjcu_fuse_layout *L = G->L;
    int nd = L->ndim;
    if (nd > 1) {
        tjc_put(t, "    I c[%d];\n    I r = i;\n", nd);
        for (int d = nd - 1; d > 0; d--)
            tjc_put(t, "    c[%d] = r %% (I)%lldLL; r /= (I)%lldLL;\n", d, (long long)L->sizes[d],
                (long long)L->sizes[d]);
        tjc_put(t, "    c[0] = r;\n");
    } else if (nd == 1) {
        tjc_put(t, "    I c[1] = {i};\n");
    }
    int rt = 0;
    for (int k = 0; k < L->n_operands; k++) {
        const tjcu_fuse_operand *op = &L->operand[k];
        tjc_put(t, "    const %s x%d = ((const %s *)A.p[%d])[", tjcu_c_storage_type(op->dtype), k,
            tjcu_c_storage_type(op->dtype), L->n_outputs + k);
        if (op->runtime) {
            tjc_put(t, "(D)0");
            for (int d = 0; d < nd; d++) tjc_put(t, " + (D)c[%d] * (D)A.st[%d][%d]", d, rt, d);
            rt++;
        } else if (op->whole && G->kept_st[k][nd ? nd - 1 : 0] != 0 && nd > 0) {
            tjc_put(t, "i");
        } else {
            tjc_put(t, "(D)0");
            for (int d = 0; d < nd; d++)
                if (G->kept_st[k][d]) tjc_put(t, " + (D)c[%d] * (D)%lldLL", d, (long long)G->kept_st[k][d]);
        }
        tjc_put(t, "];\n    const %s v_x%d = tjm::cv_%s(x%d);\n", tjcu_c_compute_type(op->dtype), k,
            tjcu_c_suffix(op->dtype), k);
    }
}

/* The call of the compute function (with extra, the row op's arguments,
 * between the operands and the stores) and the stores at index i. */
static void put_compute_and_stores(gen *G, tjc_text *t, const char *name, const char *extra) {
    tjcu_fuse_layout *L = G->L;
    int nd = L->ndim;
    for (int m = 0; m < L->n_stores; m++) tjc_put(t, "    %s y%d;\n", tjcu_c_storage_type(L->store_dtype[m]), m);
    tjc_put(t, "    %s_compute(", name);
    for (int k = 0; k < L->n_operands; k++) tjc_put(t, "%sv_x%d", k ? ", " : "", k);
    if (extra) tjc_put(t, "%s%s", L->n_operands ? ", " : "", extra);
    for (int m = 0; m < L->n_stores; m++) tjc_put(t, "%sy%d", L->n_operands + m || extra ? ", " : "", m);
    tjc_put(t, ");\n");
    for (int m = 0; m < L->n_stores; m++) {
        tjc_put(t, "    ((%s *)A.p[%d])[", tjcu_c_storage_type(L->store_dtype[m]), G->store_output[m]);
        if (G->store_whole[m]) {
            tjc_put(t, "i");
        } else {
            tjc_put(t, "(D)%lldLL", (long long)G->store_offset[m]);
            for (int d = 0; d < nd; d++)
                if (G->kept_store_st[m][d]) tjc_put(t, " + (D)c[%d] * (D)%lldLL", d, (long long)G->kept_store_st[m][d]);
        }
        tjc_put(t, "] = y%d;\n", m);
    }
}

/* The element function: loads, the nodes, stores. A row group has two:
 * <name>_rowx, the row op's operands at element i (its prologue), and
 * <name>_rowy, the whole group given the row op's result ry at i. */
static tj_status put_element(gen *G, tjc_text *t, const char *name) {
    tjcu_fuse_layout *L = G->L;
    if (!G->row) {
        tjc_put(t, "template <typename I, typename D>\n__device__ __forceinline__ void %s_element(const %s_args &A, "
               "I i) {\n", name, name);
        put_loads(G, t);
        put_compute_and_stores(G, t, name, NULL);
        tjc_put(t, "}\n");
        return TJ_OK;
    }
    const char *T = tjcu_c_compute_type(L->row.dtype);
    tjc_put(t, "template <typename I, typename D>\n__device__ __forceinline__ void %s_rowx(const %s_args &A, "
           "I i, %s &rx, %s &rw, %s &rb) {\n", name, name, T, T, T);
    put_loads(G, t);
    tjc_put(t, "    %s_prologue(", name);
    for (int k = 0; k < L->n_operands; k++) tjc_put(t, "v_x%d, ", k);
    tjc_put(t, "rx, rw, rb);\n}\n");
    tjc_put(t, "template <typename I, typename D>\n__device__ __forceinline__ void %s_rowy(const %s_args &A, "
           "I i, %s ry) {\n", name, name, T);
    put_loads(G, t);
    put_compute_and_stores(G, t, name, "ry");
    tjc_put(t, "}\n");
    return TJ_OK;
}

/* The name of value v's variable in the compute function. */
static void put_value(tjc_text *t, tjc_ptrmap *operand_of, tjc_ptrmap *value_of, tj_value *v) {
    intptr_t k = (intptr_t)tjc_ptrmap_get(operand_of, v);
    if (k) tjc_put(t, "x%d", (int)k - 1);
    else tjc_put(t, "v%d", (int)(intptr_t)tjc_ptrmap_get(value_of, v) - 1);
}

static tj_dtype dtype_of(const tjcu_fuse_layout *L, tjc_ptrmap *operand_of, tjc_ptrmap *value_of,
                         const tj_dtype *value_dtype, tj_value *v) {
    intptr_t k = (intptr_t)tjc_ptrmap_get(operand_of, v);
    if (k) return L->operand[k - 1].dtype;
    return value_dtype[(intptr_t)tjc_ptrmap_get(value_of, v) - 1];
}

/* The compute function: every node, then the outputs' stores at index i.
 * In a row group it takes the row op's result ry, and, with prologue, is
 * instead <name>_prologue: the nodes the row op does not feed, then the row
 * op's operands at i in rx, rw, rb. Node j is v<j> in both, its device
 * function written (to functions) by the first. */
static tj_status put_compute(gen *G, tjc_text *t, const char *name, tj_block *b, tjc_ptrmap *operand_of,
                             tjc_ptrmap *value_of, tj_dtype *value_dtype, tjc_text *functions,
                             bool prologue) {
    tjcu_fuse_layout *L = G->L;
    const char *R = G->row ? tjcu_c_compute_type(L->row.dtype) : NULL;
    tjc_put(t, "__device__ __forceinline__ void %s_%s(", name, prologue ? "prologue" : "compute");
    for (int k = 0; k < L->n_operands; k++)
        tjc_put(t, "%sconst %s x%d", k ? ", " : "", tjcu_c_compute_type(L->operand[k].dtype), k);
    if (prologue) tjc_put(t, "%s%s &rx, %s &rw, %s &rb", L->n_operands ? ", " : "", R, R, R);
    else if (R) tjc_put(t, "%sconst %s ry", L->n_operands ? ", " : "", R);
    for (int m = 0; !prologue && m < L->n_stores; m++)
        tjc_put(t, "%s%s &y%d", L->n_operands + m || R ? ", " : "", tjcu_c_storage_type(L->store_dtype[m]), m);
    tjc_put(t, ") {\n");
    tjc_ptrmap fed; /* values the row op feeds */
    tjc_ptrmap_init(&fed);
    int j = 0;
    for (tj_node *n = tj_block_first(b); n; n = tj_node_next(n)) {
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK || n == G->cat) continue;
        bool after = n == G->row;
        for (int i = 0; i < tj_node_num_inputs(n); i++) after |= tjc_ptrmap_get(&fed, tj_node_input(n, i)) != NULL;
        if (after && !tjc_ptrmap_put(&fed, tj_node_output(n, 0), (void *)1)) {
            tjc_ptrmap_free(&fed);
            return TJ_ERR_MEMORY;
        }
        if (after && prologue) {
            j++;
            continue;
        }
        if (n == G->row) {
            tjc_put(t, "    const %s v%d = ry; /* %s */\n", R, j, tj_node_name(n));
            value_dtype[j] = L->row.dtype;
            if (!tjc_ptrmap_put(value_of, tj_node_output(n, 0), (void *)(intptr_t)(j + 1))) {
                tjc_ptrmap_free(&fed);
                return TJ_ERR_MEMORY;
            }
            j++;
            continue;
        }
        const tj_op_info *op = tj_node_op(n);
        int n_in = tj_node_num_inputs(n);
        if (!op || n_in > 3 || tj_node_num_outputs(n) != 1 || !tjf_fusible_op(op)) {
            tjc_ptrmap_free(&fed);
            return tjc_error(TJ_ERR_UNSUPPORTED, "%s cannot run inside a CUDA kernel", tj_node_name(n));
        }
        struct tj_tensor fake[3];
        tj_tensor *fake_ptrs[3];
        memset(fake, 0, sizeof fake);
        for (int i = 0; i < n_in; i++) {
            fake[i].dtype = dtype_of(L, operand_of, value_of, value_dtype, tj_node_input(n, i));
            fake[i].ndim = tj_value_type(tj_node_input(n, i))->ndim;
            fake_ptrs[i] = &fake[i];
        }
        tj_dtype compute, result;
        if (tjc_pw_types(op, fake_ptrs, n_in, tj_node_attrs(n), &compute, &result) != TJ_OK) {
            tjc_ptrmap_free(&fed);
            return tj_last_status();
        }
        if (compute == TJ_I64 && (op->id == TJ_OP_pow || (op->inplace_of >= 0 && tjc_op(op->inplace_of)->id == TJ_OP_pow))) {
            tjc_ptrmap_free(&fed);
            return tjc_error(TJ_ERR_UNSUPPORTED, "an integer pow (its exponent is checked on the host)");
        }
        tj_status st = functions ? put_node_function(functions, name, j, n, compute, result) : TJ_OK;
        if (st) {
            tjc_ptrmap_free(&fed);
            return st;
        }
        const tj_op_info *form = op->inplace_of >= 0 ? tjc_op(op->inplace_of) : op;
        const tj_op_info *base = form->scalar_base >= 0 ? tjc_op(form->scalar_base) : form;
        tjc_put(t, "    const %s v%d = tjm::%s_n%d(", tjcu_c_compute_type(result), j, name, j);
        int args = 0;
        for (int i = 0; i < n_in; i++, args++) {
            tjc_put(t, "%stjm::cv_%s(", i ? ", " : "", tjcu_c_suffix(compute));
            put_value(t, operand_of, value_of, tj_node_input(n, i));
            tjc_put(t, ")");
        }
        if (form->scalar_base >= 0) {
            tjc_put(t, "%s", args ? ", " : "");
            put_literal(t, compute, tjcu_pw_operand(compute, tj_node_attrs(n)[0].f));
            args++;
        }
        for (; args < 3; args++) tjc_put(t, ", %s()", tjcu_c_compute_type(compute));
        tjc_put(t, ");\n");
        (void)base;
        value_dtype[j] = result;
        if (!tjc_ptrmap_put(value_of, tj_node_output(n, 0), (void *)(intptr_t)(j + 1))) {
            tjc_ptrmap_free(&fed);
            return TJ_ERR_MEMORY;
        }
        j++;
    }
    tjc_ptrmap_free(&fed);
    if (prologue) {
        /* the contract gives x, w and b the row's dtype */
        static const char *const slot[3] = {"rx", "rw", "rb"};
        for (int i = 0; i < 3; i++) {
            tjc_put(t, "    %s = ", slot[i]);
            if (i < tj_node_num_inputs(G->row)) {
                tj_value *v = tj_node_input((tj_node *)G->row, i);
                tjc_put(t, "tjm::cv_%s(", tjcu_c_suffix(L->row.dtype));
                put_value(t, operand_of, value_of, v);
                tjc_put(t, ");\n");
            } else {
                tjc_put(t, "%s();\n", R);
            }
        }
        tjc_put(t, "}\n");
        return TJ_OK;
    }
    for (int m = 0; m < L->n_stores; m++) {
        tj_value *v = G->cat ? tj_node_input((tj_node *)G->cat, m) : tj_block_output(b, m);
        tj_dtype have = dtype_of(L, operand_of, value_of, value_dtype, v);
        if (have != L->store_dtype[m])
            return tjc_error(TJ_ERR_UNSUPPORTED, "an output whose dtype differs from the graph's");
        tjc_put(t, "    y%d = tjm::sv_%s(", m, tjcu_c_suffix(have));
        put_value(t, operand_of, value_of, v);
        tjc_put(t, ");\n");
    }
    tjc_put(t, "}\n");
    return TJ_OK;
}

static void put_entry_points(const gen *G, tjc_text *t, const char *name) {
    const tjcu_fuse_layout *L = G->L;
    static const char *const index[2][2] = {{"unsigned", "int"}, {"unsigned long long", "long long"}};
    for (int w = 0; w < 2; w++) {
        tjc_put(t, "extern \"C\" __global__ void %s_%s(%s_args A) {\n", name, w ? "i64" : "i32", name);
        tjc_put(t, "    typedef %s I;\n", index[w][0]);
        tjc_put(t, "    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < (I)A.n; "
               "i += (I)blockDim.x * gridDim.x)\n        %s_element<I, %s>(A, i);\n}\nTJCU_EXPORT(%s_%s)\n",
            name, index[w][1], name, w ? "i64" : "i32");
    }
    if (!L->vectorisable) return;
    /* vectorised: four elements a thread, every operand whole or one element */
    tjc_put(t, "extern \"C\" __global__ void %s_vec(%s_args A) {\n", name, name);
    tjc_put(t, "    typedef unsigned long long I;\n    const I groups = (I)A.n / 4;\n");
    tjc_put(t, "    for (I q = (I)blockIdx.x * blockDim.x + threadIdx.x; q < groups; "
           "q += (I)blockDim.x * gridDim.x) {\n");
    for (int k = 0; k < L->n_operands; k++) {
        const char *S = tjcu_c_storage_type(L->operand[k].dtype);
        bool scalar = true;
        for (int d = 0; d < L->ndim; d++) scalar = scalar && G->kept_st[k][d] == 0;
        if (scalar)
            tjc_put(t, "        const %s s%d = *(const %s *)A.p[%d];\n", S, k, S, L->n_outputs + k);
        else
            tjc_put(t, "        const TjpwVec4<%s> w%d = ((const TjpwVec4<%s> *)A.p[%d])[q];\n", S, k, S,
                L->n_outputs + k);
    }
    for (int o = 0; o < L->n_stores; o++)
        tjc_put(t, "        TjpwVec4<%s> r%d;\n", tjcu_c_storage_type(L->store_dtype[o]), o);
    tjc_put(t, "#pragma unroll\n        for (int j = 0; j < 4; j++)\n            %s_compute(", name);
    for (int k = 0; k < L->n_operands; k++) {
        bool scalar = true;
        for (int d = 0; d < L->ndim; d++) scalar = scalar && G->kept_st[k][d] == 0;
        if (scalar) tjc_put(t, "%stjm::cv_%s(s%d)", k ? ", " : "", tjcu_c_suffix(L->operand[k].dtype), k);
        else tjc_put(t, "%stjm::cv_%s(w%d.v[j])", k ? ", " : "", tjcu_c_suffix(L->operand[k].dtype), k);
    }
    for (int o = 0; o < L->n_stores; o++) tjc_put(t, "%sr%d.v[j]", L->n_operands + o ? ", " : "", o);
    tjc_put(t, ");\n");
    for (int o = 0; o < L->n_stores; o++)
        tjc_put(t, "        ((TjpwVec4<%s> *)A.p[%d])[q] = r%d;\n", tjcu_c_storage_type(L->store_dtype[o]), o, o);
    tjc_put(t, "    }\n");
    tjc_put(t, "    const I i = groups * 4 + (I)blockIdx.x * blockDim.x + threadIdx.x;\n");
    tjc_put(t, "    if (i < (I)A.n) %s_element<I, long long>(A, i);\n}\nTJCU_EXPORT(%s_vec)\n", name, name);
}

char *tjcu_fuse_kernel_text(const tj_graph *subgraph, const tjf_spec *spec, const char *name,
                            tjcu_fuse_layout *L) {
    tj_graph *sub = (tj_graph *)subgraph; /* the IR's accessors take non-const graphs */
    tj_block *b = tj_graph_block(sub);
    memset(L, 0, sizeof *L);
    gen *G = tjc_calloc(1, sizeof *G);
    int n_values = tj_block_num_inputs(b) + 4 * (tj_block_num_nodes(b) + 1);
    shape *pool = tjc_calloc((size_t)n_values, sizeof(shape));
    tj_dtype *value_dtype = tjc_calloc((size_t)(tj_block_num_nodes(b) + 1), sizeof(tj_dtype));
    tjc_ptrmap shape_of, operand_of, value_of;
    tjc_ptrmap_init(&shape_of);
    tjc_ptrmap_init(&operand_of);
    tjc_ptrmap_init(&value_of);
    tjc_text t = {0}, fns = {0}, body = {0};
    tj_status st = G && pool && value_dtype ? TJ_OK : tjc_error(TJ_ERR_MEMORY, "out of memory");
    if (st == TJ_OK && spec->n_inputs != tj_block_num_inputs(b))
        st = tjc_error(TJ_ERR_INTERNAL, "cuda fuser: the spec has %d inputs, the group %d",
                       spec->n_inputs, tj_block_num_inputs(b));
    if (st == TJ_OK) {
        G->sub = subgraph;
        G->spec = spec;
        G->L = L;
        L->n_outputs = tj_block_num_outputs(b);
        for (int o = 0; o < L->n_outputs; o++)
            L->output_dtype[o] = (tj_dtype)tj_value_type(tj_block_output(b, o))->dtype;
        tj_node *last = tj_block_last(b);
        G->row = tjf_row_node(subgraph);
        /* a reduction's group runs op by op through the device's kernels
         * (fuse_rows.c writes normalisations only) */
        if (G->row && tjf_row_reduces(tjf_row_op(G->row)))
            st = tjc_error(TJ_ERR_UNSUPPORTED, "the CUDA fuser has no row kernel for a reduction (%s)",
                           tj_node_name((tj_node *)G->row));
        else if (last && tj_node_kind_of(last) == TJ_NODE_OP && !tjf_fusible_op(tj_node_op(last)) &&
                 last != G->row) {
            if (strcmp(tj_node_name(last), "aten::cat") || L->n_outputs != 1 ||
                tj_block_output(b, 0) != tj_node_output(last, 0))
                st = tjc_error(TJ_ERR_UNSUPPORTED, "%s cannot run inside a CUDA kernel", tj_node_name(last));
            G->cat = last;
        }
        int n_pool = 0;
        if (st == TJ_OK) st = propagate(b, spec, &shape_of, pool, &n_pool, &G->it);
    }
    if (st == TJ_OK && G->row) st = tjcu_fuse_row_plan(G->row, G->it.ndim, G->it.sizes, &L->row);
    if (st == TJ_OK) st = plan_operands(G, b, &operand_of);
    if (st == TJ_OK && L->n_outputs + L->n_operands > TJF_MAX_ARGS)
        st = tjc_error(TJ_ERR_UNSUPPORTED, "too many operands");
    if (st == TJ_OK) {
        plan_dims(G);
        if (G->row) L->vectorisable = false;
        L->it_ndim = G->it.ndim;
        memcpy(L->it_sizes, G->it.sizes, sizeof(int64_t) * (size_t)G->it.ndim);
        const shape *out = tjc_ptrmap_get(&shape_of, tj_block_output(b, 0));
        L->out_ndim = out->ndim;
        memcpy(L->out_sizes, out->sizes, sizeof(int64_t) * (size_t)out->ndim);
        L->numel = tjc_numel(G->it.sizes, G->it.ndim); /* elements an index runs over */
        /* the argument block: pointers, run-time strides, the element count */
        int rows = L->n_runtime ? L->n_runtime : 0, cols = L->ndim ? L->ndim : 1;
        L->args_bytes = sizeof(void *) * (size_t)(L->n_outputs + L->n_operands) +
                        sizeof(long long) * (size_t)(rows * cols) + sizeof(long long);
        if (L->args_bytes > 4000) st = tjc_error(TJ_ERR_UNSUPPORTED, "an argument block of %zu bytes",
                                                 L->args_bytes);
    }
    if (st == TJ_OK) {
        tjc_put(&t, "/* ---- fusion group %s: %d operands, %d outputs, iteration [", name, L->n_operands,
            L->n_outputs);
        for (int d = 0; d < G->it.ndim; d++) tjc_put(&t, "%s%lld", d ? ", " : "", (long long)G->it.sizes[d]);
        tjc_put(&t, "] ---- */\n");
        tjc_put(&t, "struct %s_args {\n    void *p[%d];\n", name, L->n_outputs + L->n_operands);
        if (L->n_runtime) tjc_put(&t, "    long long st[%d][%d];\n", L->n_runtime, L->ndim ? L->ndim : 1);
        tjc_put(&t, "    long long n;\n};\n");
        tjc_put(&fns, "namespace tjm {\n");
        st = put_compute(G, &body, name, b, &operand_of, &value_of, value_dtype, &fns, false);
        tjc_put(&fns, "} /* namespace tjm */\n");
        if (st == TJ_OK && G->row) {
            tjc_ptrmap pro_value_of;
            tjc_ptrmap_init(&pro_value_of);
            st = put_compute(G, &body, name, b, &operand_of, &pro_value_of, value_dtype, NULL, true);
            tjc_ptrmap_free(&pro_value_of);
        }
    }
    if (st == TJ_OK) {
        tjc_put(&t, "%s%s", fns.s ? fns.s : "", body.s ? body.s : "");
        st = put_element(G, &t, name);
        if (G->row) tjcu_fuse_put_row_kernel(&t, name, &L->row);
        else put_entry_points(G, &t, name);
    }
    if (st == TJ_OK && (t.failed || fns.failed || body.failed))
        st = tjc_error(TJ_ERR_MEMORY, "cuda fuser: out of memory writing a kernel");
    tjc_ptrmap_free(&shape_of);
    tjc_ptrmap_free(&operand_of);
    tjc_ptrmap_free(&value_of);
    tjc_free(fns.s);
    tjc_free(body.s);
    tjc_free(pool);
    tjc_free(value_dtype);
    tjc_free(G);
    if (st != TJ_OK) {
        tjc_free(t.s);
        if (st == TJ_ERR_MEMORY && !tj_last_status()) tjc_error(TJ_ERR_MEMORY, "out of memory");
        return NULL;
    }
    return t.s;
}

char *tjcu_fuse_source(const tj_graph *subgraph, const tjf_spec *spec, const char *name) {
    tjcu_fuse_layout L;
    const char *pre = tjcu_pw_preamble();
    char *k = pre ? tjcu_fuse_kernel_text(subgraph, spec, name, &L) : NULL;
    if (!k) return NULL;
    size_t a = strlen(pre), n = strlen(k);
    char *s = tjc_malloc(a + n + 1);
    if (s) {
        memcpy(s, pre, a);
        memcpy(s + a, k, n + 1);
    } else {
        tjc_error(TJ_ERR_MEMORY, "out of memory");
    }
    tjc_free(k);
    return s;
}
