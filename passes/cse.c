/* cse.c — common-subexpression elimination: a node equal to an earlier one
 * (same kind and op, same inputs — either order for commutative ops — equal
 * attributes and output types) is replaced by it. Tensor constants compare by
 * value up to TJP_VALUE_COMPARE_MAX elements, by identity above; fusion
 * groups by the canonical text of their subgraphs.
 *
 * Memory written in place makes two equal-looking nodes differ, so:
 *  - nodes with an effect (writes, random draws) are never merged;
 *  - a node whose result may be written in place later (its alias class is
 *    mutated) is never merged, since the two results must stay distinct;
 *  - the table is emptied at every node that writes in place, so no node
 *    after a write is merged with one before it (they may read different
 *    contents of the same memory).
 * Merging can make two graph outputs the same tensor. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "passes/passes_internal.h"

typedef struct table {
    struct slot {
        uint64_t h;
        tj_node *n;
    } *slots;
    size_t cap, used;
} table;

static uint64_t node_hash(const tj_node *n) {
    uint64_t h = tjp_hash_u64(0, (uint64_t)tj_node_kind_of(n));
    const tj_op_info *op = tj_node_op(n);
    if (op) h = tjp_hash_u64(h, (uint64_t)tj_op_id(op));
    h = tjp_hash_u64(h, (uint64_t)tj_node_num_outputs(n));
    int ni = tj_node_num_inputs(n);
    h = tjp_hash_u64(h, (uint64_t)ni);
    if (tjp_is_commutative(n)) {
        uint64_t a = (uint64_t)tj_value_id(tj_node_input(n, 0));
        uint64_t b = (uint64_t)tj_value_id(tj_node_input(n, 1));
        h = tjp_hash_u64(tjp_hash_u64(h, a < b ? a : b), a < b ? b : a);
    } else {
        for (int i = 0; i < ni; i++) h = tjp_hash_u64(h, (uint64_t)tj_value_id(tj_node_input(n, i)));
    }
    return tjp_hash_attrs(h, n);
}

static bool same_inputs(const tj_node *a, const tj_node *b) {
    int ni = tj_node_num_inputs(a);
    if (ni != tj_node_num_inputs(b)) return false;
    bool straight = true;
    for (int i = 0; i < ni && straight; i++) straight = tj_node_input(a, i) == tj_node_input(b, i);
    if (straight) return true;
    return tjp_is_commutative(a) && tj_node_input(a, 0) == tj_node_input(b, 1) &&
           tj_node_input(a, 1) == tj_node_input(b, 0);
}

static bool nodes_equal(const tj_node *a, const tj_node *b) {
    if (tj_node_kind_of(a) != tj_node_kind_of(b) || tj_node_op(a) != tj_node_op(b)) return false;
    if (tj_node_num_outputs(a) != tj_node_num_outputs(b) || !same_inputs(a, b)) return false;
    for (int i = 0; i < tj_node_num_outputs(a); i++)
        if (!tj_type_equal(tj_value_type(tj_node_output(a, i)), tj_value_type(tj_node_output(b, i))))
            return false;
    return tjp_attrs_equal(a, b);
}

static bool table_grow(table *t) {
    size_t cap = t->cap ? 2 * t->cap : 256;
    struct slot *slots = tjc_calloc(cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].n) continue;
        size_t k = t->slots[i].h & (cap - 1);
        while (slots[k].n) k = (k + 1) & (cap - 1);
        slots[k] = t->slots[i];
    }
    tjc_free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return true;
}

static void table_clear(table *t) {
    if (t->slots) memset(t->slots, 0, sizeof *t->slots * t->cap);
    t->used = 0;
}

/* The earlier node equal to n, or NULL after recording n. */
static tj_node *table_find_or_add(table *t, tj_node *n, bool *oom) {
    if ((t->used + 1) * 2 > t->cap && !table_grow(t)) {
        *oom = true;
        return NULL;
    }
    uint64_t h = node_hash(n);
    size_t k = h & (t->cap - 1);
    for (; t->slots[k].n; k = (k + 1) & (t->cap - 1))
        if (t->slots[k].h == h && nodes_equal(t->slots[k].n, n)) return t->slots[k].n;
    t->slots[k] = (struct slot){h, n};
    t->used++;
    return NULL;
}

/* al: NULL when the graph writes nothing in place (then no value is written,
 * and building the analysis would only hash every value) */
static bool candidate(tjp_alias *al, const tj_node *n) {
    if (tjp_has_effect(n)) return false;
    for (int i = 0; al && i < tj_node_num_outputs(n); i++)
        if (tjp_alias_flags(al, tj_node_output(n, i)) & TJP_ALIAS_MUTATED) return false;
    return true;
}

/* Makes n's uses use m instead; a name of n's moves to m's unnamed output.
 * n, dead now, is left for the caller to remove. */
static tj_status merge(tj_node *n, tj_node *m) {
    for (int i = 0; i < tj_node_num_outputs(n); i++) {
        tj_value *from = tj_node_output(n, i), *to = tj_node_output(m, i);
        tj_status st = tj_value_replace_uses(from, to);
        if (st) return st;
        const char *name = tj_value_name(from);
        if (!name || tj_value_name(to)) continue;
        char *moved = tjc_strdup(name);
        if (!moved) return tjc_error(TJ_ERR_MEMORY, "cse: out of memory");
        if (!(st = tj_value_set_name(from, NULL))) st = tj_value_set_name(to, moved);
        tjc_free(moved);
        if (st) return st;
    }
    return TJ_OK;
}

/* Removes the merged nodes, the latest first: a use list drops its latest
 * use at once, where removing n duplicates of one value's readers in block
 * order would search its use list n times. */
static tj_status remove_merged(tj_node **dead, int n) {
    tj_status st = TJ_OK;
    for (int i = n - 1; i >= 0 && !st; i--) st = tj_node_destroy(dead[i]);
    return st;
}

tj_status tj_pass_cse(tj_graph *g) {
    if (!g) return tjc_error(TJ_ERR_ARG, "cse: the graph is NULL");
    tj_status st = tjp_for_subgraphs(g, tj_pass_cse);
    if (st) return st;
    tjp_alias al = {0}, *alp = tj_graph_writes_in_place(g) ? &al : NULL;
    if (alp && (st = tjp_alias_build(&al, g))) return st;
    table t = {0};
    tj_node **dead = NULL;
    int n_dead = 0, cap_dead = 0;
    for (tj_node *n = tj_block_first(tj_graph_block(g)), *next; n && !st; n = next) {
        next = tj_node_next(n);
        if (tjp_mutates(n)) {
            table_clear(&t);
            continue;
        }
        if (!candidate(alp, n)) continue;
        bool oom = false;
        tj_node *m = table_find_or_add(&t, n, &oom);
        if (!oom && m && n_dead == cap_dead) {
            cap_dead = cap_dead ? 2 * cap_dead : 64;
            tj_node **grown = tjc_realloc(dead, sizeof *dead * (size_t)cap_dead);
            if (grown) dead = grown;
            else oom = true;
        }
        if (oom) st = tjc_error(TJ_ERR_MEMORY, "cse: out of memory");
        else if (m && !(st = merge(n, m))) dead[n_dead++] = n;
    }
    if (!st) st = remove_merged(dead, n_dead);
    tjc_free(dead);
    tjc_free(t.slots);
    tjp_alias_free(&al);
    return st;
}
