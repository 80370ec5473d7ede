/* lower.c — lowering a graph to register code (see code.h): one instruction
 * per node, a register per live value, each value released after its last
 * use and its register reused. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "code.h"
#include "core/ptrmap.h"
#include "profile.h"

typedef struct lowering {
    tjc_ptrmap reg_of;    /* value -> register + 1 */
    tjc_ptrmap last_use;  /* value -> index of the last instruction reading it + 1 */
    tjc_ptrmap kept;      /* graph outputs: never released by an instruction */
    int *free_regs;
    int n_free, cap_free;
    int n_regs;
} lowering;

static int new_reg(lowering *L) {
    return L->n_free ? L->free_regs[--L->n_free] : L->n_regs++;
}

static bool release_reg(lowering *L, int r) {
    if (L->n_free == L->cap_free) {
        int cap = L->cap_free ? 2 * L->cap_free : 32;
        int *grown = tjc_realloc(L->free_regs, sizeof(int) * (size_t)cap);
        if (!grown) return false;
        L->free_regs = grown;
        L->cap_free = cap;
    }
    L->free_regs[L->n_free++] = r;
    return true;
}

static int reg_of(const lowering *L, const tj_value *v) {
    return (int)(intptr_t)tjc_ptrmap_get(&L->reg_of, v) - 1;
}

static int *int_array(int n) { return tjc_calloc((size_t)(n ? n : 1), sizeof(int)); }

static tj_status unsupported(const tj_node *n) {
    return tjc_error(TJ_ERR_UNSUPPORTED, "the interpreter cannot run node %%%d (%s)",
                     tj_node_id(n), tj_node_name(n));
}

static tj_status lower_node(lowering *L, tj_node *n, int index, const tjf_backend *backend,
                            tji_instr *I) {
    *I = (tji_instr){.node = n};
    switch (tj_node_kind_of(n)) {
    case TJ_NODE_OP:
        I->code = TJI_CALL;
        I->op = tj_node_op(n);
        I->attrs = tj_node_attrs(n);
        break;
    case TJ_NODE_CONSTANT:
        if (!tj_node_tensor(n)) {
            if (tj_value_num_uses(tj_node_output(n, 0)) > 0) return unsupported(n);
            I->code = TJI_NONE; /* an unused scalar constant: nothing to hold */
        } else {
            I->code = TJI_CONST;
            I->constant = tj_node_tensor(n);
        }
        break;
    case TJ_NODE_NONE: I->code = TJI_NONE; break;
    case TJ_NODE_FUSION_GROUP:
        I->code = TJI_FUSED;
        if (!(I->group = tjf_group_new(n, backend))) return tj_last_status();
        break;
    case TJ_NODE_CONSTANT_CHUNK:
        I->code = TJI_CHUNK;
        I->chunks = tj_node_attr(n, tj_node_attr_index(n, "chunks"))->i;
        I->dim = tj_node_attr(n, tj_node_attr_index(n, "dim"))->i;
        break;
    default: return unsupported(n);
    }
    I->n_in = tj_node_num_inputs(n);
    I->n_out = tj_node_num_outputs(n);
    I->in = int_array(I->n_in);
    I->out = int_array(I->n_out);
    I->dead = int_array(I->n_in + I->n_out);
    if (!I->in || !I->out || !I->dead) return tjc_error(TJ_ERR_MEMORY, "out of memory lowering");
    for (int i = 0; i < I->n_in; i++) I->in[i] = reg_of(L, tj_node_input(n, i));
    for (int i = 0; i < I->n_out; i++) {
        tj_value *v = tj_node_output(n, i);
        I->out[i] = new_reg(L);
        if (!tjc_ptrmap_put(&L->reg_of, v, (void *)(intptr_t)(I->out[i] + 1)))
            return tjc_error(TJ_ERR_MEMORY, "out of memory lowering");
    }
    /* inputs whose last use this is (once each: the entry is cleared when
     * taken, so an input read twice is not released twice), then outputs
     * nobody reads */
    for (int i = 0; i < I->n_in; i++) {
        tj_value *v = tj_node_input(n, i);
        if (tjc_ptrmap_has(&L->kept, v)) continue;
        if ((int)(intptr_t)tjc_ptrmap_get(&L->last_use, v) - 1 != index) continue;
        if (!tjc_ptrmap_put(&L->last_use, v, NULL))
            return tjc_error(TJ_ERR_MEMORY, "out of memory lowering");
        I->dead[I->n_dead++] = I->in[i];
    }
    for (int i = 0; i < I->n_out; i++)
        if (tj_value_num_uses(tj_node_output(n, i)) == 0) I->dead[I->n_dead++] = I->out[i];
    for (int i = 0; i < I->n_dead; i++)
        if (!release_reg(L, I->dead[i])) return tjc_error(TJ_ERR_MEMORY, "out of memory lowering");
    return TJ_OK;
}

/* ---- when each output is final ------------------------------------------------ */

tj_status tji_ready_sort(const int *final, int n, int n_instrs, int *order) {
    /* a counting sort (stable, linear): final[i] is -1 or an instruction index,
     * and a backward graph's forward half has an output per saved value */
    int *start = int_array(n_instrs + 2);
    if (!start) return tjc_error(TJ_ERR_MEMORY, "out of memory lowering");
    for (int i = 0; i < n; i++) {
        assert(final[i] >= -1 && final[i] < n_instrs);
        start[final[i] + 2]++;
    }
    for (int k = 1; k < n_instrs + 2; k++) start[k] += start[k - 1];
    for (int i = 0; i < n; i++) order[start[final[i] + 1]++] = i;
    tjc_free(start);
    return TJ_OK;
}

static int find_class(int *parent, int v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
}

/* Whether instruction I's results alias its first input (views, in-place
 * ops, chunks), and whether it writes its inputs (in-place ops, and ops
 * that write some argument, all of whose inputs are taken as written). */
static bool results_alias(const tji_instr *I) {
    if (I->code == TJI_CHUNK) return I->n_in > 0;
    if (I->code != TJI_CALL || I->n_in == 0) return false;
    const tj_schema *s = tj_op_schema(I->op);
    return s && (s->aliases_self || s->mutates_self);
}

static bool writes_inputs(const tji_instr *I) {
    if (I->code != TJI_CALL) return false;
    const tj_schema *s = tj_op_schema(I->op);
    return s && (s->mutates_self || s->mutates_inputs);
}

/* Values are numbered as plan_build.c does (inputs, then every result);
 * values that are the same memory (views, in-place results) form a class,
 * and an output is final after the instruction that makes it and the last
 * one writing its class. A register's value is the one its last writer
 * made, so the walk maps registers to values as it goes. */
static tj_status find_output_final(tji_code *code) {
    int n_values = code->n_inputs;
    for (int k = 0; k < code->n_instrs; k++) n_values += code->instrs[k].n_out;
    int *parent = int_array(n_values), *last_write = int_array(n_values);
    int *reg_value = int_array(code->n_regs), *made_by = int_array(n_values);
    code->output_final = int_array(code->n_outputs);
    code->ready_order = int_array(code->n_outputs);
    tj_status st = TJ_OK;
    if (!parent || !last_write || !reg_value || !made_by || !code->output_final || !code->ready_order)
        st = tjc_error(TJ_ERR_MEMORY, "out of memory lowering");
    for (int pass = 0; !st && pass < 2; pass++) {
        for (int v = 0; v < n_values; v++) {
            if (pass == 0) parent[v] = v;
            last_write[v] = made_by[v] = -1;
        }
        for (int i = 0; i < code->n_inputs; i++)
            if (code->input_regs[i] >= 0) reg_value[code->input_regs[i]] = i;
        int next = code->n_inputs;
        for (int k = 0; k < code->n_instrs; k++) { /* pass 0 joins classes, pass 1 writes */
            const tji_instr *I = &code->instrs[k];
            bool alias = results_alias(I);
            int base = alias ? find_class(parent, reg_value[I->in[0]]) : -1;
            if (pass == 1 && writes_inputs(I))
                for (int j = 0; j < I->n_in; j++) last_write[find_class(parent, reg_value[I->in[j]])] = k;
            for (int j = 0; j < I->n_out; j++, next++) {
                if (pass == 0 && alias) parent[find_class(parent, next)] = base;
                bool defines = !alias || writes_inputs(I); /* a view writes no data */
                if (pass == 1 && defines) last_write[find_class(parent, next)] = k;
                reg_value[I->out[j]] = next;
                made_by[next] = k;
            }
        }
        for (int i = 0; pass == 1 && i < code->n_outputs; i++) {
            int v = reg_value[code->output_regs[i]], w = last_write[find_class(parent, v)];
            code->output_final[i] = w > made_by[v] ? w : made_by[v];
        }
    }
    if (!st) st = tji_ready_sort(code->output_final, code->n_outputs, code->n_instrs, code->ready_order);
    tjc_free(parent);
    tjc_free(last_write);
    tjc_free(reg_value);
    tjc_free(made_by);
    return st;
}

tj_status tji_lower(const tj_graph *graph, const tjf_backend *backend, tji_code *code) {
    tj_graph *g = (tj_graph *)graph; /* the IR's accessors take non-const graphs */
    tj_block *b = tj_graph_block(g);
    memset(code, 0, sizeof *code);
    lowering L = {0};
    tjc_ptrmap_init(&L.reg_of);
    tjc_ptrmap_init(&L.last_use);
    tjc_ptrmap_init(&L.kept);
    tj_status st = TJ_OK;

    int index = 0;
    for (tj_node *n = tj_block_first(b); n; n = tj_node_next(n), index++)
        for (int i = 0; i < tj_node_num_inputs(n); i++)
            if (!tjc_ptrmap_put(&L.last_use, tj_node_input(n, i), (void *)(intptr_t)(index + 1)))
                st = tjc_error(TJ_ERR_MEMORY, "out of memory lowering");
    code->n_outputs = tj_block_num_outputs(b);
    code->output_regs = int_array(code->n_outputs);
    code->n_inputs = tj_block_num_inputs(b);
    code->input_regs = int_array(code->n_inputs);
    code->n_instrs = tj_block_num_nodes(b);
    code->instrs = tjc_calloc((size_t)(code->n_instrs ? code->n_instrs : 1), sizeof(tji_instr));
    if (!code->output_regs || !code->input_regs || !code->instrs)
        st = tjc_error(TJ_ERR_MEMORY, "out of memory lowering");
    for (int i = 0; st == TJ_OK && i < code->n_outputs; i++)
        if (!tjc_ptrmap_put(&L.kept, tj_block_output(b, i), (void *)1))
            st = tjc_error(TJ_ERR_MEMORY, "out of memory lowering");
    for (int i = 0; st == TJ_OK && i < code->n_inputs; i++) {
        tj_value *v = tj_block_input(b, i);
        code->input_regs[i] = -1;
        if (tj_value_num_uses(v) == 0) continue;
        code->input_regs[i] = new_reg(&L);
        if (!tjc_ptrmap_put(&L.reg_of, v, (void *)(intptr_t)(code->input_regs[i] + 1)))
            st = tjc_error(TJ_ERR_MEMORY, "out of memory lowering");
    }
    index = 0;
    for (tj_node *n = tj_block_first(b); st == TJ_OK && n; n = tj_node_next(n), index++)
        st = lower_node(&L, n, index, backend, &code->instrs[index]);
    for (int i = 0; st == TJ_OK && i < code->n_outputs; i++)
        code->output_regs[i] = reg_of(&L, tj_block_output(b, i));
    code->n_regs = L.n_regs;
    if (st == TJ_OK) st = find_output_final(code);
    tjc_ptrmap_free(&L.reg_of);
    tjc_ptrmap_free(&L.last_use);
    tjc_ptrmap_free(&L.kept);
    tjc_free(L.free_regs);
    if (st != TJ_OK) tji_code_free(code);
    return st;
}

void tji_code_free(tji_code *code) {
    tji_profile_free(atomic_load(&code->profile));
    for (int i = 0; i < code->n_instrs && code->instrs; i++) {
        tjc_free(code->instrs[i].in);
        tjc_free(code->instrs[i].out);
        tjc_free(code->instrs[i].dead);
        tjf_group_free(code->instrs[i].group);
    }
    tjc_free(code->instrs);
    tjc_free(code->input_regs);
    tjc_free(code->output_regs);
    tjc_free(code->output_final);
    tjc_free(code->ready_order);
    memset(code, 0, sizeof *code);
}
