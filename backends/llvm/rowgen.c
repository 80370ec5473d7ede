/* rowgen.c — the loops of a row kernel: a fusion group holding one row op
 * (softmax, log_softmax or layer_norm over the last dim, fuser.h), its
 * prologue (the pointwise nodes it does not depend on) and its epilogue (the
 * nodes reading its result). The kernel's range counts rows; per row:
 *
 *   softmax, log_softmax   pass 1: x and its maximum m;
 *                          pass 2: s = sum exp(x - m);
 *                          pass 3: exp(x - m) / s, or (x - m) - log(s), the
 *                                  epilogue and the stores;
 *   layer_norm             pass 1: the mean of x - x0 (x0 the row's first x);
 *                          pass 2: the biased variance, sum ((x - x0) - d)^2 / N;
 *                          pass 3: the normalised value, w and b, the
 *                                  epilogue and the stores;
 *   sum, mean, amax, amin  pass 1: x and its sum (in x's dtype, reassociable)
 *                                  or its llvm.maximum / llvm.minimum;
 *   logsumexp              pass 1: the maximum m; pass 2: s = sum exp(x - m'),
 *                                  m' = m unless infinite, then 0 (PyTorch's
 *                                  rule: rows of -inf give -inf, rows holding
 *                                  +inf give +inf), and log(s) + m'.
 * After a reduction the members of the reduced sizes are evaluated once for
 * the row; with outputs of those sizes they are stored then, otherwise a
 * last pass evaluates the full-size epilogue (reading them as constants of
 * the row) and stores.
 *
 * Shifting by x0 before summing keeps a constant row's variance and its
 * normalised values exactly 0 whatever the rounding of the mean, and keeps
 * the sums small when the row sits far from 0; the statistics are in f64,
 * as the CPU kernel's (backends/cpu/norm.c). Softmax's sums are in x's
 * dtype, as the CPU kernel's (backends/cpu/softmax.c).
 *
 * A row short enough to stay in L1 keeps x in a stack buffer from pass 1 on
 * (softmax's pass 2 replaces it with exp(x - m) when nothing else reads x),
 * so the prologue runs once per element; a longer row recomputes it in each
 * pass. Each pass evaluates only the nodes it needs. Reductions are marked
 * reassociable, and the maximum is llvm.maximum, which propagates NaN, so
 * LLVM's loop vectoriser takes every pass. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/ptrmap.h"
#include "internal.h"

typedef LLVMValueRef V;

/* Rows of at most this many bytes of x keep it in a stack buffer: L1-sized. */
enum { SCRATCH_BYTES = 32768 };

typedef struct rows {
    tjl_gen *G;
    tjl_ir *ir;
    const tjl_plan *P;
    tj_block *b;
    const tj_node *row;
    tjf_row_kind kind;
    tj_dtype t;              /* x's dtype, the result's */
    LLVMTypeRef T;
    const tj_value *x;
    int64_t len;
    V scratch;               /* [len x T] or NULL: x recomputed in every pass */
    bool keep_exp;           /* softmax: pass 2 leaves exp(x - m) in the scratch */
    tjc_ptrmap need_x, need_out; /* the values passes 1-2 and pass 3 compute */
    /* per row: the statistics */
    V m, inv, ls;            /* softmax: max, 1 / sum, (log_softmax) log(sum) */
    V x0, md, rstd;          /* layer_norm: x0, mean - x0, 1 / sqrt(var + eps) */
} rows;

static V i64c(const tjl_ir *ir, int64_t v) { return LLVMConstInt(ir->i64, (unsigned long long)v, 1); }

static V reassoc(V inst) {
    LLVMSetFastMathFlags(inst, LLVMFastMathAllowReassoc);
    return inst;
}

static bool is_output(const rows *R, const tj_value *v) {
    for (int i = 0; i < tj_block_num_outputs(R->b); i++)
        if (tj_block_output(R->b, i) == v) return true;
    return false;
}

/* Marks in need what computing `need`'s values reads, back to the operands;
 * with x_given (from the scratch) the walk stops at x. */
static bool walk_needed(rows *R, tjc_ptrmap *need, bool x_given) {
    for (tj_node *n = tj_block_last(R->b); n; n = tj_node_prev(n)) {
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK || !tjc_ptrmap_has(need, tj_node_output(n, 0)))
            continue;
        if (x_given && tj_node_output(n, 0) == R->x) continue;
        for (int i = 0; i < tj_node_num_inputs(n); i++) {
            const tj_value *v = tj_node_input(n, i);
            if (n == R->row && v == R->x && R->keep_exp) continue; /* the scratch has exp(x - m) */
            if (!tjc_ptrmap_put(need, v, (void *)1)) return false;
        }
    }
    return true;
}

static V scratch_at(rows *R, V j) {
    return LLVMBuildInBoundsGEP2(R->ir->b, R->T, R->scratch, &j, 1, "");
}

static V row_value(rows *R, V j);

/* The values of need at element j (a new element); x from the scratch
 * when x_given. */
static tj_status eval(rows *R, V j, const tjc_ptrmap *need, bool x_given) {
    tjl_gen_at(R->G, j);
    if (x_given && tjc_ptrmap_has(need, R->x))
        tjl_gen_set(R->G, R->x, LLVMBuildLoad2(R->ir->b, R->T, scratch_at(R, j), ""));
    for (tj_node *n = tj_block_first(R->b); n; n = tj_node_next(n)) {
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK || !tjc_ptrmap_has(need, tj_node_output(n, 0)))
            continue;
        if (x_given && tj_node_output(n, 0) == R->x) continue;
        if (n == R->row) {
            tjl_gen_set(R->G, tj_node_output(n, 0), row_value(R, j));
            continue;
        }
        tj_status st = tjl_gen_node(R->G, n);
        if (st) return st;
    }
    return TJ_OK;
}

/* x at element j in passes 1 and 2: from the scratch in pass 2, else
 * computed (and kept in the scratch in pass 1). */
static tj_status x_at(rows *R, V j, int pass, V *x) {
    tjl_ir *ir = R->ir;
    if (R->scratch && pass == 2) {
        *x = LLVMBuildLoad2(ir->b, R->T, scratch_at(R, j), "");
        return TJ_OK;
    }
    tj_status st = eval(R, j, &R->need_x, false);
    if (st) return st;
    *x = tjl_gen_value(R->G, R->x, R->t);
    if (R->scratch) LLVMBuildStore(ir->b, *x, scratch_at(R, j));
    return TJ_OK;
}

static V to_f64(rows *R, V v) { return R->t == TJ_F64 ? v : LLVMBuildFPExt(R->ir->b, v, R->ir->f64, ""); }

static V exp_of(rows *R, V v) {
    tjl_ir *ir = R->ir;
    if (R->t == TJ_F32) return tjl_math(ir, TJL_EXPF, v, NULL);
    return ir->libm ? tjl_libm(ir, "exp", v, NULL) : tjl_math(ir, TJL_EXPD, v, NULL);
}

/* The row op's result at element j (x, w and b already at j). */
static V row_value(rows *R, V j) {
    tjl_ir *ir = R->ir;
    LLVMBuilderRef B = ir->b;
    if (R->keep_exp) return LLVMBuildFMul(B, LLVMBuildLoad2(B, R->T, scratch_at(R, j), ""), R->inv, "");
    V x = tjl_gen_value(R->G, R->x, R->t);
    if (R->kind == TJF_ROW_SOFTMAX) return LLVMBuildFMul(B, exp_of(R, LLVMBuildFSub(B, x, R->m, "")), R->inv, "");
    if (R->kind == TJF_ROW_LOG_SOFTMAX) /* x - m is exact near the max; then the log */
        return LLVMBuildFSub(B, LLVMBuildFSub(B, x, R->m, ""), R->ls, "");
    V w = to_f64(R, tjl_gen_value(R->G, tj_node_input((tj_node *)R->row, 1), R->t));
    V bias = to_f64(R, tjl_gen_value(R->G, tj_node_input((tj_node *)R->row, 2), R->t));
    V d = LLVMBuildFSub(B, LLVMBuildFSub(B, to_f64(R, x), R->x0, ""), R->md, "");
    V y = LLVMBuildFAdd(B, LLVMBuildFMul(B, LLVMBuildFMul(B, d, R->rstd, ""), w, ""), bias, "");
    return R->t == TJ_F32 ? LLVMBuildFPTrunc(B, y, ir->f32, "") : y;
}

/* One pass's work at element j; acc: the reduction's value, updated. */
static tj_status pass_body(rows *R, int pass, V j, V *acc) {
    tjl_ir *ir = R->ir;
    LLVMBuilderRef B = ir->b;
    if (pass == 3) {
        tj_status st = eval(R, j, &R->need_out, R->scratch && !R->keep_exp);
        if (st) return st;
        for (int i = 0; i < R->P->n_outputs; i++) tjl_gen_store(R->G, i);
        return TJ_OK;
    }
    V x;
    tj_status st = x_at(R, j, pass, &x);
    if (st) return st;
    if (R->kind != TJF_ROW_LAYER_NORM && pass == 1) {
        *acc = tjl_intrinsic(ir, "llvm.maximum", *acc, x);
    } else if (R->kind != TJF_ROW_LAYER_NORM) {
        V e = exp_of(R, LLVMBuildFSub(B, x, R->m, ""));
        if (R->keep_exp) LLVMBuildStore(B, e, scratch_at(R, j));
        *acc = reassoc(LLVMBuildFAdd(B, *acc, e, ""));
    } else {
        V d = LLVMBuildFSub(B, to_f64(R, x), R->x0, "");
        if (pass == 2) {
            d = LLVMBuildFSub(B, d, R->md, "");
            d = LLVMBuildFMul(B, d, d, "");
        }
        *acc = reassoc(LLVMBuildFAdd(B, *acc, d, ""));
    }
    return TJ_OK;
}

/* ---- reductions --------------------------------------------------------------------- */

/* Pass `pass` of a reduction at element j: x, then the accumulator. */
static tj_status reduce_body(rows *R, int pass, V j, V *acc) {
    LLVMBuilderRef B = R->ir->b;
    tj_status st = eval(R, j, &R->need_x, false);
    if (st) return st;
    V x = tjl_gen_value(R->G, R->x, R->t);
    if (R->kind == TJF_ROW_AMIN) *acc = tjl_intrinsic(R->ir, "llvm.minimum", *acc, x);
    else if (R->kind == TJF_ROW_AMAX || (R->kind == TJF_ROW_LOGSUMEXP && pass == 1))
        *acc = tjl_intrinsic(R->ir, "llvm.maximum", *acc, x);
    else if (R->kind == TJF_ROW_LOGSUMEXP) *acc = reassoc(LLVMBuildFAdd(B, *acc, exp_of(R, LLVMBuildFSub(B, x, R->m, "")), ""));
    else *acc = reassoc(LLVMBuildFAdd(B, *acc, x, ""));
    return TJ_OK;
}

/* The values of the reduced sizes at the row (those evaluated after the
 * reduction), in their dtypes: set again at every element of the last pass. */
typedef struct row_consts {
    const tj_value *v[TJF_MAX_GROUP_NODES + 1];
    V x[TJF_MAX_GROUP_NODES + 1];
    int n;
} row_consts;

static void set_row_consts(rows *R, const row_consts *c) {
    for (int i = 0; i < c->n; i++) tjl_gen_set(R->G, c->v[i], c->x[i]);
}

/* The last pass's element j: the full-size nodes the outputs need, the stores. */
static tj_status reduce_store_body(rows *R, V j, const row_consts *c) {
    tjl_gen_at(R->G, j);
    set_row_consts(R, c);
    for (tj_node *n = tj_block_first(R->b); n; n = tj_node_next(n)) {
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK || n == R->row ||
            !tjc_ptrmap_has(&R->need_out, tj_node_output(n, 0)) || tjl_gen_per_row(R->G, tj_node_output(n, 0)))
            continue;
        tj_status st = tjl_gen_node(R->G, n);
        if (st) return st;
    }
    for (int i = 0; i < R->P->n_outputs; i++) tjl_gen_store(R->G, i);
    return TJ_OK;
}

/* A loop over the row's columns [0, len) running pass; *acc: the reduction's
 * start in, its result out (NULL: none); c: a reduction's last pass. */
static tj_status col_loop_with(rows *R, V fn, int pass, V *acc, const row_consts *c) {
    tjl_ir *ir = R->ir;
    LLVMBasicBlockRef pre = LLVMGetInsertBlock(ir->b);
    LLVMBasicBlockRef loop = LLVMAppendBasicBlockInContext(ir->ctx, fn, "col");
    LLVMBasicBlockRef done = LLVMAppendBasicBlockInContext(ir->ctx, fn, "cols_done");
    LLVMBuildBr(ir->b, loop); /* len >= 1 */
    LLVMPositionBuilderAtEnd(ir->b, loop);
    V j = LLVMBuildPhi(ir->b, ir->i64, "j");
    V ph = acc ? LLVMBuildPhi(ir->b, LLVMTypeOf(*acc), "acc") : NULL, cur = ph;
    tj_status st = !tjf_row_reduces(R->kind) ? pass_body(R, pass, j, &cur)
                   : c                         ? reduce_store_body(R, j, c)
                                               : reduce_body(R, pass, j, &cur);
    if (st) return st;
    V jn = LLVMBuildAdd(ir->b, j, i64c(ir, 1), "");
    LLVMBasicBlockRef from[2] = {pre, LLVMGetInsertBlock(ir->b)};
    V jin[2] = {i64c(ir, 0), jn};
    LLVMAddIncoming(j, jin, from, 2);
    if (acc) {
        V ain[2] = {*acc, cur};
        LLVMAddIncoming(ph, ain, from, 2);
        *acc = cur;
    }
    LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntSLT, jn, i64c(ir, R->len), ""), loop, done);
    LLVMPositionBuilderAtEnd(ir->b, done);
    return TJ_OK;
}

static tj_status emit_reduction(rows *R, V fn) {
    tjl_ir *ir = R->ir;
    LLVMBuilderRef B = ir->b;
    tj_status st;
    bool amin = R->kind == TJF_ROW_AMIN, sums = R->kind == TJF_ROW_SUM || R->kind == TJF_ROW_MEAN;
    V acc = LLVMConstReal(R->T, sums ? 0.0 : amin ? INFINITY : -INFINITY);
    if ((st = col_loop_with(R, fn, 1, &acc, NULL))) return st;
    V r = acc;
    if (R->kind == TJF_ROW_MEAN) r = LLVMBuildFDiv(B, acc, LLVMConstReal(R->T, (double)R->len), "");
    if (R->kind == TJF_ROW_LOGSUMEXP) {
        V inf = LLVMBuildFCmp(B, LLVMRealOEQ, tjl_intrinsic(ir, "llvm.fabs", acc, NULL),
                              LLVMConstReal(R->T, INFINITY), "");
        R->m = LLVMBuildSelect(B, inf, LLVMConstReal(R->T, 0.0), acc, "");
        V s = LLVMConstReal(R->T, 0.0);
        if ((st = col_loop_with(R, fn, 2, &s, NULL))) return st;
        V ls = tjl_libm(ir, "log", to_f64(R, s), NULL); /* in f64, as log_softmax's */
        if (R->t == TJ_F32) ls = LLVMBuildFPTrunc(B, ls, ir->f32, "");
        r = LLVMBuildFAdd(B, ls, R->m, "");
    }
    /* the members of the reduced sizes, once for the row */
    row_consts c = {.n = 0};
    tjl_gen_at(R->G, i64c(ir, 0));
    tjl_gen_set(R->G, tj_node_output((tj_node *)R->row, 0), r);
    c.v[c.n] = tj_node_output((tj_node *)R->row, 0);
    c.x[c.n++] = r;
    for (tj_node *n = tj_block_first(R->b); n; n = tj_node_next(n)) {
        if (tj_node_kind_of(n) == TJ_NODE_CONSTANT_CHUNK || n == R->row) continue;
        const tj_value *v = tj_node_output(n, 0);
        if (!tjl_gen_per_row(R->G, v) || !tjc_ptrmap_has(&R->need_out, v) || c.n > TJF_MAX_GROUP_NODES) continue;
        if ((st = tjl_gen_node(R->G, n))) return st;
        c.v[c.n] = v;
        c.x[c.n++] = tjl_gen_value(R->G, v, tjl_gen_dtype(R->G, v));
    }
    if (R->P->reduced_outputs) {
        for (int i = 0; i < R->P->n_outputs; i++) tjl_gen_store(R->G, i);
        return TJ_OK;
    }
    return col_loop_with(R, fn, 3, NULL, &c);
}

static tj_status col_loop(rows *R, V fn, int pass, V *acc) { return col_loop_with(R, fn, pass, acc, NULL); }

/* One row's passes and statistics. */
static tj_status emit_row(rows *R, V fn) {
    tjl_ir *ir = R->ir;
    LLVMBuilderRef B = ir->b;
    tj_status st;
    if (tjf_row_reduces(R->kind)) return emit_reduction(R, fn);
    if (R->kind != TJF_ROW_LAYER_NORM) {
        V m = LLVMConstReal(R->T, -INFINITY);
        if ((st = col_loop(R, fn, 1, &m))) return st;
        R->m = m;
        V s = LLVMConstReal(R->T, 0.0);
        if ((st = col_loop(R, fn, 2, &s))) return st;
        if (R->kind == TJF_ROW_SOFTMAX) {
            R->inv = LLVMBuildFDiv(B, LLVMConstReal(R->T, 1.0), s, "");
        } else { /* log in f64, as the CPU kernel's */
            R->ls = tjl_libm(ir, "log", to_f64(R, s), NULL);
            if (R->t == TJ_F32) R->ls = LLVMBuildFPTrunc(B, R->ls, ir->f32, "");
        }
    } else {
        if ((st = eval(R, i64c(ir, 0), &R->need_x, false))) return st;
        R->x0 = to_f64(R, tjl_gen_value(R->G, R->x, R->t));
        double n = (double)R->len;
        V s = LLVMConstReal(ir->f64, 0.0);
        if ((st = col_loop(R, fn, 1, &s))) return st;
        R->md = LLVMBuildFDiv(B, s, LLVMConstReal(ir->f64, n), "");
        V q = LLVMConstReal(ir->f64, 0.0);
        if ((st = col_loop(R, fn, 2, &q))) return st;
        double eps = tj_node_attr((tj_node *)R->row, tj_node_attr_index((tj_node *)R->row, "eps"))->f;
        V var = LLVMBuildFDiv(B, q, LLVMConstReal(ir->f64, n), "");
        V sd = tjl_intrinsic(ir, "llvm.sqrt", LLVMBuildFAdd(B, var, LLVMConstReal(ir->f64, eps), ""), NULL);
        R->rstd = LLVMBuildFDiv(B, LLVMConstReal(ir->f64, 1.0), sd, "");
        /* an infinite variance is NaN (the CPU's rule, backends/cpu/nn.h) */
        V inf = LLVMBuildFCmp(B, LLVMRealOEQ, var, LLVMConstReal(ir->f64, INFINITY), "");
        R->rstd = LLVMBuildSelect(B, inf, LLVMConstReal(ir->f64, NAN), R->rstd, "");
    }
    return col_loop(R, fn, 3, NULL);
}

static tj_status emit(rows *R, V fn) {
    tjl_ir *ir = R->ir;
    int n_ops = R->P->n_operands;
    V begin = LLVMGetParam(fn, (unsigned)n_ops + 1), end = LLVMGetParam(fn, (unsigned)n_ops + 2);
    LLVMBasicBlockRef entry = LLVMAppendBasicBlockInContext(ir->ctx, fn, "entry");
    LLVMBasicBlockRef head = LLVMAppendBasicBlockInContext(ir->ctx, fn, "row");
    LLVMBasicBlockRef exit = LLVMAppendBasicBlockInContext(ir->ctx, fn, "exit");
    LLVMPositionBuilderAtEnd(ir->b, entry);
    if (R->scratch) { /* in the entry block: a fixed frame slot */
        R->scratch = LLVMBuildAlloca(ir->b, LLVMArrayType2(R->T, (uint64_t)R->len), "scratch");
        LLVMSetAlignment(R->scratch, 64);
    }
    tjl_gen_operands(R->G, fn);
    LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntSLT, begin, end, ""), head, exit);
    LLVMPositionBuilderAtEnd(ir->b, head);
    V r = LLVMBuildPhi(ir->b, ir->i64, "r");
    tjl_gen_row(R->G, r);
    tj_status st = emit_row(R, fn);
    if (st) return st;
    V rn = LLVMBuildAdd(ir->b, r, i64c(ir, 1), "");
    LLVMBasicBlockRef from[2] = {entry, LLVMGetInsertBlock(ir->b)};
    V rin[2] = {begin, rn};
    LLVMAddIncoming(r, rin, from, 2);
    LLVMBuildCondBr(ir->b, LLVMBuildICmp(ir->b, LLVMIntSLT, rn, end, ""), head, exit);
    LLVMPositionBuilderAtEnd(ir->b, exit);
    LLVMBuildRetVoid(ir->b);
    return TJ_OK;
}

tj_status tjl_emit_rows(tjl_gen *G, tjl_ir *ir, const tjl_plan *P, tj_block *b, const tj_node *row, V fn) {
    rows R = {.G = G, .ir = ir, .P = P, .b = b, .row = row, .kind = tjf_row_op(row)};
    R.x = tj_node_input((tj_node *)row, 0);
    R.t = tjl_gen_dtype(G, R.x); /* the spec's, which the graph's types need not be */
    R.T = tjl_type(ir, R.t);
    R.len = P->row_len;
    if (!tjf_row_reduces(R.kind) && R.len * (int64_t)tj_dtype_size(R.t) <= SCRATCH_BYTES) {
        R.scratch = LLVMConstNull(ir->ptr); /* made in emit() */
        R.keep_exp = R.kind == TJF_ROW_SOFTMAX && tj_value_num_uses(R.x) == 1 && !is_output(&R, R.x);
    }
    tjc_ptrmap_init(&R.need_x);
    tjc_ptrmap_init(&R.need_out);
    bool ok = tjc_ptrmap_put(&R.need_x, R.x, (void *)1) && walk_needed(&R, &R.need_x, false);
    for (int i = 0; ok && i < tj_block_num_outputs(b); i++)
        ok = tjc_ptrmap_put(&R.need_out, tj_block_output(b, i), (void *)1);
    ok = ok && walk_needed(&R, &R.need_out, R.scratch != NULL);
    tj_status st = ok ? emit(&R, fn) : tjc_error(TJ_ERR_MEMORY, "out of memory");
    tjc_ptrmap_free(&R.need_x);
    tjc_ptrmap_free(&R.need_out);
    return st;
}
