/* parser.c — reads the text form back into a graph (docs/ir.md):
 *
 *   file  := graph { "with" NAME "=" graph } end
 *   graph := "graph" "(" [value {"," value}] ")" ":" {stmt} "return" "(" [refs] ")"
 *   stmt  := [value {"," value}] "=" KIND ["[" attrs "]"] "(" [refs] ")"
 *   value := %name [":" type]
 *
 * Values must be defined before they are used, so a parsed graph is in
 * topological order with consistent use lists. Subgraph references
 * (prim::FusionGroup_<k>) are resolved after all sections are read; each
 * section is used exactly once, by the main graph or an earlier section,
 * which keeps the nesting a tree. On any error every graph made so far is
 * freed and NULL returned. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "parse.h"

#define MAX_DEPTH 64         /* subgraph nesting */
#define MAX_VALUE_ID 999999999

static const char *const fusion_prefix = "prim::FusionGroup_";

static bool oom(tjir_parser *p) {
    p->status = TJ_ERR_MEMORY;
    return tjir_fail_at(p, p->tok.line, p->tok.col, "out of memory");
}

/* ---- values ----------------------------------------------------------------------- */

typedef struct out_decl {
    tjir_tok tok;
    tj_type type;
    bool typed;
} out_decl;

static bool define_value(tjir_parser *p, tj_value *v, const tjir_tok *t) {
    char *key = tjir_strndup(&p->scratch, t->text, t->len);
    if (!key) return oom(p);
    if (tjir_map_get(&p->vals, key))
        return tjir_fail_at(p, t->line, t->col, "expected a new value, got %%%s (defined before)",
                            key);
    if (key[0] >= '0' && key[0] <= '9') {
        size_t n = strlen(key);
        if (strspn(key, "0123456789") != n || n > 9 || (key[0] == '0' && n > 1))
            return tjir_fail_at(p, t->line, t->col,
                                "expected a value number below 10^9 without leading zeros or a "
                                "name starting with a letter or '_', got %%%s", key);
        v->id = atoi(key);
        if (v->id > p->max_id) p->max_id = v->id;
    } else if (!tjir_claim_name(v, key)) {
        return oom(p);
    }
    if (!tjir_map_put(&p->vals, key, v)) return oom(p);
    return true;
}

static tj_value *use_value(tjir_parser *p) {
    if (!tjir_is(p, TOK_VALUE)) {
        tjir_expected(p, "a value");
        return NULL;
    }
    char *key = tjir_tok_copy(p);
    if (!key) return NULL;
    tj_value *v = tjir_map_get(&p->vals, key);
    if (!v) {
        tjir_expected(p, "a value defined above");
        return NULL;
    }
    tjir_next(p);
    return p->failed ? NULL : v;
}

/* "(" [refs] ")" as inputs of n. */
static bool read_uses(tjir_parser *p, tj_node *n) {
    if (!tjir_eat(p, TOK_LPAREN, "'('")) return false;
    while (!tjir_is(p, TOK_RPAREN) && !p->failed) {
        if (n->n_inputs && !tjir_eat(p, TOK_COMMA, "',' or ')'")) return false;
        tj_value *v = use_value(p);
        if (!v) return false;
        if (tj_node_add_input(n, v) != TJ_OK) return oom(p);
    }
    return tjir_eat(p, TOK_RPAREN, "')'");
}

/* ---- statements ----------------------------------------------------------------------------- */

static bool is_fusion_ref(const char *name) {
    size_t k = strlen(fusion_prefix);
    return strncmp(name, fusion_prefix, k) == 0 && name[k] &&
           strspn(name + k, "0123456789") == strlen(name + k);
}

/* The node a KIND token names, made in the graph being read. */
static tj_node *make_node(tjir_parser *p, const char *name) {
    tj_node_kind kind = TJ_NUM_NODE_KINDS;
    const tj_op_info *op = NULL;
    if (strncmp(name, "prim::", 6) == 0) {
        for (int k = 0; k < TJ_NUM_NODE_KINDS; k++) {
            const tjir_prim *pr = tjir_prim_info((tj_node_kind)k);
            if (pr->writable && strcmp(pr->name, name) == 0) kind = (tj_node_kind)k;
        }
        if (kind == TJ_NODE_FUSION_GROUP) {
            tjir_expected(p, "prim::FusionGroup_<k> naming its 'with' section");
            return NULL;
        }
        if (is_fusion_ref(name)) kind = TJ_NODE_FUSION_GROUP;
    } else if ((op = tjir_resolve_plain(p, name, p->tok.line, p->tok.col)) != NULL ||
               (!p->failed && (op = tjc_op_find(name)) != NULL)) {
        kind = TJ_NODE_OP; /* a full name, or a plain one (plain_names.c) */
    }
    if (p->failed) return NULL;
    if (kind == TJ_NUM_NODE_KINDS) {
        const char *near = tjir_suggest_kind(name);
        char got[200];
        tjir_tok_desc(p, got, sizeof got);
        if (near)
            tjir_fail_at(p, p->tok.line, p->tok.col,
                         "expected a known op, got %s (did you mean '%s'?)", got, near);
        else
            tjir_fail_at(p, p->tok.line, p->tok.col, "expected a known op, got %s", got);
        return NULL;
    }
    tj_node *n = tjir_node_new(p->g, kind, 0);
    if (!n) {
        oom(p);
        return NULL;
    }
    tjir_set_op(n, op);
    n->line = p->tok.line;
    if (tjir_init_attrs(n, false) != TJ_OK) {
        oom(p);
        return NULL;
    }
    if (kind == TJ_NODE_FUSION_GROUP) {
        if (!tjir_grow_heap((void **)&p->refs, &p->cap_refs, p->n_refs + 1, sizeof *p->refs)) {
            oom(p);
            return NULL;
        }
        p->refs[p->n_refs++] = (tjir_ref){n, (char *)name, p->graph_index, p->tok.line, p->tok.col};
    }
    return n;
}

static bool check_arity(tjir_parser *p, tj_node *n, int n_out, int line, int col) {
    int want_in = -1, want_out = -1;
    switch (n->kind) {
    case TJ_NODE_OP: {
        const tj_schema *s = tj_op_schema(n->op);
        if (!s->has_tensor_list) want_in = s->n_tensor_args;
        want_out = s->n_outputs;
        if (want_out < 0 && n_out == 0)
            return tjir_fail_at(p, line, col, "expected outputs for %s, got none", tj_node_name(n));
        break;
    }
    case TJ_NODE_CONSTANT:
    case TJ_NODE_NONE: want_in = 0; want_out = 1; break;
    case TJ_NODE_CONSTANT_CHUNK:
        if (n->attrs[0].i < 1 || n->attrs[0].i > 1 << 20)
            return tjir_fail_at(p, line, col, "expected chunks in [1, 2^20] for %s, got %lld",
                                tj_node_name(n), (long long)n->attrs[0].i);
        want_in = 1;
        want_out = (int)n->attrs[0].i;
        break;
    case TJ_NODE_LIST_CONSTRUCT: want_out = 1; break;
    case TJ_NODE_LIST_UNPACK: want_in = 1; break;
    default: break;
    }
    if (want_in >= 0 && n->n_inputs != want_in)
        return tjir_fail_at(p, line, col, "expected %d input%s for %s, got %d", want_in,
                            want_in == 1 ? "" : "s", tj_node_name(n), n->n_inputs);
    if (want_out != -1 && n_out != want_out)
        return tjir_fail_at(p, line, col, "expected %d output%s for %s, got %d", want_out,
                            want_out == 1 ? "" : "s", tj_node_name(n), n_out);
    return true;
}

/* The type of an output the text leaves untyped. */
static tj_type default_type(const tj_node *n) {
    const tj_type *in = n->n_inputs ? n->inputs[0]->type : NULL;
    switch (n->kind) {
    case TJ_NODE_CONSTANT:
        return tjir_constant_type(n->attr_kinds[0], &n->attrs[0], n->tensor);
    case TJ_NODE_NONE: return tj_type_scalar(TJ_TYPE_NONE);
    case TJ_NODE_LIST_CONSTRUCT:
        return tj_type_list(in && in->kind != TJ_TYPE_LIST && in->kind != TJ_TYPE_NONE
                                ? in->kind : TJ_TYPE_TENSOR);
    case TJ_NODE_LIST_UNPACK:
        if (in && in->kind == TJ_TYPE_LIST && in->elem != TJ_TYPE_TENSOR)
            return tj_type_scalar(in->elem);
        return tj_type_tensor();
    default: return tj_type_tensor();
    }
}

static bool read_stmt(tjir_parser *p) {
    out_decl *outs = NULL;
    int n_out = 0, cap = 0;
    if (tjir_is(p, TOK_VALUE)) {
        for (;;) {
            if (!tjir_grow(&p->scratch, (void **)&outs, &cap, n_out + 1, sizeof *outs)) return oom(p);
            out_decl *o = &outs[n_out++];
            o->tok = p->tok;
            o->typed = false;
            tjir_next(p);
            if (tjir_is(p, TOK_COLON)) {
                tjir_next(p);
                if (!tjir_parse_type(p, &o->type)) return false;
                o->typed = true;
            }
            if (!tjir_is(p, TOK_COMMA)) break;
            tjir_next(p);
            if (!tjir_is(p, TOK_VALUE)) return tjir_expected(p, "a value");
        }
    }
    if (!tjir_eat(p, TOK_EQUALS, n_out ? "',', ':' or '='" : "a value, '=' or 'return'"))
        return false;
    if (!tjir_is(p, TOK_KIND)) return tjir_expected(p, "an op name like aten::add");
    int line = p->tok.line, col = p->tok.col;
    char *name = tjir_tok_copy(p);
    tj_node *n = name ? make_node(p, name) : NULL;
    if (!n) return false;
    tjir_next(p);
    if (tjir_is(p, TOK_LBRACKET) && !tjir_parse_attrs(p, n, n_out && outs[0].typed ? &outs[0].type : NULL))
        return false;
    if (!tjir_finish_attrs(p, n, line, col) || !read_uses(p, n) ||
        !check_arity(p, n, n_out, line, col))
        return false;
    if (tj_block_append(&p->g->block, n) != TJ_OK) return oom(p);
    for (int i = 0; i < n_out; i++) {
        tj_type t = outs[i].typed ? outs[i].type : default_type(n);
        tj_value *v = tj_node_add_output(n, &t);
        if (!v) return oom(p);
        if (!define_value(p, v, &outs[i].tok)) return false;
    }
    return true;
}

/* ---- graphs ------------------------------------------------------------------------------------ */

/* Named values take ids after the largest number the text used. */
static void number_named(tjir_parser *p, tj_graph *g) {
    int64_t next = p->max_id + 1;
    for (int i = 0; i < g->block.param->n_outputs; i++)
        if (g->block.param->outputs[i]->name) g->block.param->outputs[i]->id = (int)next++;
    for (tj_node *n = g->block.first; n; n = n->next)
        for (int i = 0; i < n->n_outputs; i++)
            if (n->outputs[i]->name) n->outputs[i]->id = (int)next++;
    g->next_value_id = (int)next;
}

static bool read_graph(tjir_parser *p, tj_graph **slot, int index) {
    tj_graph *g = tj_graph_new();
    if (!g) return oom(p);
    *slot = g;
    p->g = g;
    p->graph_index = index;
    p->max_id = -1;
    tjir_map_clear(&p->vals);
    if (!tjir_eat_ident(p, "graph") || !tjir_eat(p, TOK_LPAREN, "'('")) return false;
    while (!tjir_is(p, TOK_RPAREN) && !p->failed) {
        if (g->block.param->n_outputs && !tjir_eat(p, TOK_COMMA, "',' or ')'")) return false;
        if (!tjir_is(p, TOK_VALUE)) return tjir_expected(p, "an input value like %x");
        tjir_tok t = p->tok;
        tj_type type = tj_type_tensor();
        tjir_next(p);
        if (tjir_is(p, TOK_COLON)) {
            tjir_next(p);
            if (!tjir_parse_type(p, &type)) return false;
        }
        tj_value *v = tj_node_add_output(g->block.param, &type);
        if (!v) return oom(p);
        if (!define_value(p, v, &t)) return false;
    }
    if (!tjir_eat(p, TOK_RPAREN, "')'") || !tjir_eat(p, TOK_COLON, "':'")) return false;
    while (!p->failed && !tjir_is_ident(p, "return")) {
        if (!tjir_is(p, TOK_VALUE) && !tjir_is(p, TOK_EQUALS))
            return tjir_expected(p, "a statement or 'return'");
        if (!read_stmt(p)) return false;
    }
    if (!tjir_eat_ident(p, "return") || !read_uses(p, g->block.ret)) return false;
    number_named(p, g);
    return true;
}

static bool read_section(tjir_parser *p) {
    tjir_next(p); /* "with" */
    if (!tjir_is(p, TOK_KIND)) return tjir_expected(p, "a subgraph name like prim::FusionGroup_0");
    int line = p->tok.line, col = p->tok.col;
    char *name = tjir_tok_copy(p);
    if (!name) return false;
    if (!is_fusion_ref(name)) return tjir_expected(p, "a subgraph name like prim::FusionGroup_0");
    for (int k = 0; k < p->n_secs; k++)
        if (strcmp(p->secs[k].name, name) == 0)
            return tjir_fail_at(p, line, col, "expected a new subgraph name, got %s (defined at "
                                "%d:%d)", name, p->secs[k].line, p->secs[k].col);
    tjir_next(p);
    if (!tjir_eat(p, TOK_EQUALS, "'='")) return false;
    if (!tjir_grow_heap((void **)&p->secs, &p->cap_secs, p->n_secs + 1, sizeof *p->secs))
        return oom(p);
    int k = p->n_secs++;
    p->secs[k] = (tjir_section){name, NULL, line, col, -2, 0};
    return read_graph(p, &p->secs[k].g, k);
}

static bool resolve(tjir_parser *p) {
    for (int r = 0; r < p->n_refs; r++) {
        tjir_ref *ref = &p->refs[r];
        int k = 0;
        while (k < p->n_secs && strcmp(p->secs[k].name, ref->name) != 0) k++;
        if (k == p->n_secs)
            return tjir_fail_at(p, ref->line, ref->col, "expected a subgraph defined by a 'with' "
                                "section, got %s", ref->name);
        tjir_section *s = &p->secs[k];
        if (s->user != -2)
            return tjir_fail_at(p, ref->line, ref->col, "expected each subgraph used once, got %s "
                                "again", ref->name);
        if (k <= ref->from)
            return tjir_fail_at(p, ref->line, ref->col, "expected a subgraph defined after the "
                                "graph using it, got %s", ref->name);
        s->user = ref->from;
        ref->node->subgraph = s->g;
        s->g->owner = ref->node;
        ref->node->attr_kinds[0] = TJ_ATTR_GRAPH;
    }
    for (int k = 0; k < p->n_secs; k++) {
        tjir_section *s = &p->secs[k];
        if (s->user == -2)
            return tjir_fail_at(p, s->line, s->col, "expected every subgraph used, got %s unused",
                                s->name);
        s->depth = s->user < 0 ? 1 : p->secs[s->user].depth + 1;
        if (s->depth > MAX_DEPTH)
            return tjir_fail_at(p, s->line, s->col, "expected subgraphs nested at most %d deep, "
                                "got %s at depth %d", MAX_DEPTH, s->name, s->depth);
    }
    return true;
}

tj_graph *tj_graph_parse_n(const char *text, size_t len, tj_status *status) {
    if (!text) {
        tjc_error(TJ_ERR_ARG, "tj_graph_parse: the text is NULL");
        if (status) *status = TJ_ERR_ARG;
        return NULL;
    }
    tjir_parser p;
    memset(&p, 0, sizeof p);
    tjir_map_init(&p.vals, true);
    tjir_lex_init(&p, text, len);
    tj_graph *main = NULL;
    if (!p.failed) read_graph(&p, &main, -1);
    while (!p.failed && tjir_is_ident(&p, "with")) read_section(&p);
    if (!p.failed && !tjir_is(&p, TOK_EOF)) tjir_expected(&p, "'with' or the end of input");
    if (!p.failed) resolve(&p);
    if (p.failed) {
        /* untie subgraphs from their nodes so that each graph is freed once */
        for (int k = 0; k < p.n_secs; k++) {
            tj_graph *sub = p.secs[k].g;
            if (sub && sub->owner) {
                sub->owner->subgraph = NULL;
                sub->owner = NULL;
            }
        }
        for (int k = 0; k < p.n_secs; k++) tj_graph_free(p.secs[k].g);
        tj_graph_free(main);
        main = NULL;
    }
    if (status) *status = p.failed ? p.status : TJ_OK;
    tjc_free(p.refs);
    tjc_free(p.secs);
    tjir_map_clear(&p.vals);
    tjir_arena_free(&p.scratch);
    return main;
}

tj_graph *tj_graph_parse(const char *text, tj_status *status) {
    return tj_graph_parse_n(text, text ? strlen(text) : 0, status);
}
