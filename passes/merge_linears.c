/* merge_linears.c — two linears that feed one add (an LSTM cell's gates:
 * x W_ih^T + b_ih + h W_hh^T + b_hh) become one product accumulating into
 * the other:
 *
 *     add(linear(x, W1, b1), linear(h, W2, b2))
 *  -> addmm(linear(x, W1, add(b1, b2)), h, t(W2))
 *
 * addmm's GEMM runs with beta = 1 over its self, and the static plan lets it
 * write over self when self is an intermediate read for the last time there
 * (interpreter/plan_build.c), so the second product accumulates in place:
 * one bias broadcast instead of two, and no add reading two results. One
 * GEMM over concatenated operands, linear(cat(x, h), cat(W1, W2), b1 + b2),
 * would copy both weights at every replay (they are parameters, read by
 * reference); docs/passes.md gives the measurements that chose this form.
 *
 * Conditions, all required:
 *  - aten::add with alpha 1 of two different aten::linear nodes' results,
 *    each read only by that add (not a graph output either);
 *  - the two results and the add's have one type: f32 or f64, rank 2, known
 *    sizes, on the CPU (the in-place accumulation is the CPU plan's; CUDA
 *    graphs are left as they are);
 *  - both linears' inputs and weights of rank 2 and that dtype, and each bias
 *    absent or of sizes [N] (N the output's columns), that dtype;
 *  - nothing writes in place between the first linear and the add (the new
 *    nodes read the operands at the add's place);
 *  - when both biases are given, the result big enough to pay for the step
 *    that sums them (worth_it below): a B=1 cell keeps its two linears.
 *
 * Gradients: the pass changes how a value is computed, not the value, so it
 * may run on autodiff's forward graph (it does: tj_compile runs the pipeline
 * after differentiating) as on any other. */

#include "passes/passes_internal.h"

static bool is_float_2d(const tj_type *t, int dtype) {
    if (t->kind != TJ_TYPE_TENSOR || t->dtype != dtype || t->ndim != 2) return false;
    return t->sizes[0] != TJ_UNKNOWN_DIM && t->sizes[1] != TJ_UNKNOWN_DIM;
}

static bool bias_fits(const tj_value *b, int dtype, int64_t n) {
    if (tjp_is_none(b)) return true;
    const tj_type *t = tj_value_type(b);
    return t->kind == TJ_TYPE_TENSOR && t->dtype == dtype && t->ndim == 1 && t->sizes[0] == n &&
           t->device_type == TJ_CPU;
}

/* The linear whose result v is, when the add is its only reader. */
static tj_node *sole_linear(const tj_value *v) {
    tj_node *d = tj_value_node(v);
    if (!tjp_is_op(d, TJ_OP_linear) || tj_value_num_uses(v) != 1) return NULL;
    return tj_node_num_inputs(d) == 3 ? d : NULL;
}

static bool operands_fit(const tj_node *lin, int dtype, int64_t n) {
    return is_float_2d(tj_value_type(tj_node_input(lin, 0)), dtype) &&
           is_float_2d(tj_value_type(tj_node_input(lin, 1)), dtype) &&
           bias_fits(tj_node_input(lin, 2), dtype, n);
}

static bool writes_between(const tj_node *first, const tj_node *last) {
    for (const tj_node *m = tj_node_next(first); m && m != last; m = tj_node_next(m))
        if (tjp_mutates(m)) return true;
    return false;
}

/* What a step costs beyond its own work (dispatch, a kernel's start), in
 * elements of memory traffic: about 0.3 us on the machines measured
 * (docs/passes.md). */
enum { STEP_COST_ELEMENTS = 4096 };

/* With two biases the rewrite saves a broadcast of one bias over the
 * [rows, cols] result and the add's read of a second one (2 rows cols
 * elements), and costs the step adding the biases (3 cols elements and a
 * step). */
static bool worth_it(const tj_node *l1, const tj_node *l2, int64_t rows, int64_t cols) {
    if (tjp_is_none(tj_node_input(l1, 2)) || tjp_is_none(tj_node_input(l2, 2))) return true;
    return 2 * rows * cols >= 3 * cols + STEP_COST_ELEMENTS;
}

/* The two linears of add n when the rewrite applies to it. */
static bool matches(tj_node *n, bool any_writes, tj_node **l1, tj_node **l2) {
    if (!tjp_is_op(n, TJ_OP_add) || tj_node_num_inputs(n) != 2) return false;
    const tj_attr *alpha = tj_node_attr(n, 0);
    if (!alpha || alpha->scalar.f != 1.0) return false;
    tj_value *a = tj_node_input(n, 0), *b = tj_node_input(n, 1);
    if (a == b || !(*l1 = sole_linear(a)) || !(*l2 = sole_linear(b))) return false;
    const tj_type *ta = tj_value_type(a), *tb = tj_value_type(b), *to = tj_value_type(tj_node_output(n, 0));
    if (ta->kind != TJ_TYPE_TENSOR || (ta->dtype != TJ_F32 && ta->dtype != TJ_F64)) return false;
    if (!is_float_2d(ta, ta->dtype) || ta->device_type != TJ_CPU) return false;
    if (!tjp_same_shape_type(ta, tb) || !tjp_same_shape_type(ta, to)) return false;
    int64_t cols = ta->sizes[1];
    if (!operands_fit(*l1, ta->dtype, cols) || !operands_fit(*l2, ta->dtype, cols)) return false;
    if (!worth_it(*l1, *l2, ta->sizes[0], cols)) return false;
    tj_node *first = tj_node_is_before(*l1, *l2) ? *l1 : *l2;
    return !any_writes || !writes_between(first, n);
}

/* Replaces add n of linears l1 (its self) and l2 by the accumulating product. */
static tj_status rewrite(tj_node *n, tj_node *l1, tj_node *l2) {
    tj_value *b1 = tj_node_input(l1, 2), *b2 = tj_node_input(l2, 2), *bias = NULL;
    tj_attr one = {.scalar = tj_scalar_int(1)};
    if (!tjp_is_none(b1) && !tjp_is_none(b2)) {
        tj_value *pair[2] = {b1, b2};
        bias = tjp_emit_before(n, TJ_OP_add, pair, 2, &one);
        if (!bias) return tj_last_status();
    } else {
        bias = tjp_is_none(b1) ? b2 : b1; /* b2 may be absent too: its prim::None */
    }
    tj_value *lin_in[3] = {tj_node_input(l1, 0), tj_node_input(l1, 1), bias};
    tj_value *self = tjp_emit_before(n, TJ_OP_linear, lin_in, 3, NULL);
    tj_value *w2 = tj_node_input(l2, 1);
    tj_value *w2t = self ? tjp_emit_before(n, TJ_OP_t, &w2, 1, NULL) : NULL;
    tj_attr scale[2] = {one, one};
    tj_value *mm_in[3] = {self, tj_node_input(l2, 0), w2t};
    tj_value *sum = w2t ? tjp_emit_before(n, TJ_OP_addmm, mm_in, 3, scale) : NULL;
    if (!sum) return tj_last_status();
    tj_status st = tjp_replace_value(tj_node_output(n, 0), sum);
    if (st) return st;
    tjp_remove_if_dead(n); /* and the two linears, which only it read */
    return TJ_OK;
}

tj_status tj_pass_merge_linears(tj_graph *g) {
    if (!g) return tjc_error(TJ_ERR_ARG, "merge_linears: the graph is NULL");
    bool any_writes = tj_graph_writes_in_place(g);
    for (tj_node *n = tj_block_first(tj_graph_block(g)), *next; n; n = next) {
        next = tj_node_next(n);
        tj_node *l1, *l2;
        if (!matches(n, any_writes, &l1, &l2)) continue;
        tj_status st = rewrite(n, l1, l2);
        if (st) return st;
    }
    return TJ_OK;
}
