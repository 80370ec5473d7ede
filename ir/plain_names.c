/* plain_names.c — op names without their overload, as PyTorch prints them
 * (aten::sum, aten::transpose, aten::add): the parser resolves such a name
 * among the ops of that base name from the attribute names and the number
 * of inputs the statement gives, as PyTorch's schema matching does: an
 * overload matches when it has every attribute given, every attribute it
 * requires is given, and its tensor arguments take that many inputs. One
 * match is the op; none, or more than one, is an error listing the
 * candidates. The printer writes these names under TJ_PRINT_PLAIN_NAMES. */
#include <stdio.h>
#include <string.h>

#include "parse.h"

/* The length of name without its overload suffix (".Scalar"). */
static size_t base_len(const char *name) {
    const char *ns = strstr(name, "::");
    const char *dot = strchr(ns ? ns + 2 : name, '.');
    return dot ? (size_t)(dot - name) : strlen(name);
}

const char *tjir_plain_name(const tj_op_info *op, char *buf, size_t n) {
    snprintf(buf, n, "%.*s", (int)base_len(tj_op_name(op)), tj_op_name(op));
    return buf;
}

int tjir_overloads(const char *name, const tj_op_info **out, int cap) {
    size_t n = strlen(name);
    if (base_len(name) != n) return 0; /* it names an overload */
    int k = 0;
    for (int i = 0; i < tj_op_count(); i++) {
        const char *full = tj_op_name(tj_op_at(i));
        if (base_len(full) == n && !strncmp(full, name, n) && k < cap) out[k++] = tj_op_at(i);
    }
    return k;
}

static bool matches(const tj_op_info *op, const char *const *attrs, int n_attrs, int n_inputs) {
    const tj_schema *s = tj_op_schema(op);
    if (s->has_tensor_list ? n_inputs < 1 : n_inputs != s->n_tensor_args) return false;
    for (int a = 0; a < n_attrs; a++) {
        bool found = false;
        for (int k = 0; k < s->n_attrs && !found; k++) found = !strcmp(s->args[s->attr_pos[k]].name, attrs[a]);
        if (!found) return false;
    }
    for (int k = 0; k < s->n_attrs; k++) {
        const tj_arg *arg = &s->args[s->attr_pos[k]];
        if (arg->has_default) continue;
        bool given = false;
        for (int a = 0; a < n_attrs && !given; a++) given = !strcmp(arg->name, attrs[a]);
        if (!given) return false;
    }
    return true;
}

const tj_op_info *tjir_match_overloads(const char *name, const tj_op_info *const *cands, int n_cands,
                                       const char *const *attrs, int n_attrs, int n_inputs,
                                       char *err, size_t err_len) {
    const tj_op_info *found = NULL;
    int n_found = 0;
    for (int c = 0; c < n_cands; c++)
        if (matches(cands[c], attrs, n_attrs, n_inputs)) {
            found = cands[c];
            n_found++;
        }
    if (n_found == 1) return found;
    size_t len = (size_t)snprintf(err, err_len, "%s %s for %d input%s and attributes [",
                                  n_found ? "an unambiguous overload of" : "an overload of", name,
                                  n_inputs, n_inputs == 1 ? "" : "s");
    for (int a = 0; a < n_attrs && len < err_len; a++)
        len += (size_t)snprintf(err + len, err_len - len, "%s%s", a ? ", " : "", attrs[a]);
    if (len < err_len)
        len += (size_t)snprintf(err + len, err_len - len, "], got %s: ",
                                n_found ? "several that match" : "none that matches");
    bool first = true;
    for (int c = 0; c < n_cands && len < err_len; c++) {
        if (n_found && !matches(cands[c], attrs, n_attrs, n_inputs)) continue;
        len += (size_t)snprintf(err + len, err_len - len, "%s%s%s", first ? "" : "; ", tj_op_name(cands[c]),
                                tj_op_schema_text(cands[c]));
        first = false;
    }
    return NULL;
}

/* Reads ahead from the current token (the one after the op name) to the end
 * of the statement: the attribute names given in [...] and the number of
 * inputs in (...). */
static bool scan_call(tjir_parser *p, const char **attrs, int *n_attrs, int cap, int *n_inputs) {
    *n_attrs = 0;
    *n_inputs = 0;
    if (tjir_is(p, TOK_LBRACKET)) {
        int depth = 0;
        bool expect_name = true;
        while (!p->failed && !tjir_is(p, TOK_EOF)) {
            tjir_tok_kind k = p->tok.kind;
            if (k == TOK_LBRACKET || k == TOK_LPAREN) depth++, expect_name = depth == 1;
            else if (k == TOK_RBRACKET || k == TOK_RPAREN) depth--;
            else if (k == TOK_COMMA && depth == 1) expect_name = true;
            else if (k == TOK_IDENT && depth == 1 && expect_name) {
                if (*n_attrs < cap && !(attrs[(*n_attrs)++] = tjir_tok_copy(p))) break;
                expect_name = false;
            } else {
                expect_name = false;
            }
            tjir_next(p);
            if (depth == 0) break;
        }
    }
    if (!p->failed && tjir_is(p, TOK_LPAREN)) {
        tjir_next(p);
        while (!p->failed && tjir_is(p, TOK_VALUE)) {
            (*n_inputs)++;
            tjir_next(p);
            if (!tjir_is(p, TOK_COMMA)) break;
            tjir_next(p);
        }
    }
    return !p->failed;
}

const tj_op_info *tjir_resolve_plain(tjir_parser *p, const char *name, int line, int col) {
    enum { MAX_CANDS = 16, MAX_ATTRS = TJ_MAX_ARGS };
    const tj_op_info *cands[MAX_CANDS];
    int n_cands = tjir_overloads(name, cands, MAX_CANDS);
    if (!n_cands) return NULL;
    const tj_op_info *exact = tjc_op_find(name);
    if (n_cands == 1) return cands[0];
    const char *attrs[MAX_ATTRS];
    int n_attrs, n_inputs;
    size_t pos = p->pos; /* read ahead, then back to the name */
    int tline = p->line, tcol = p->col;
    tjir_tok tok = p->tok;
    tjir_next(p);
    bool scanned = scan_call(p, attrs, &n_attrs, MAX_ATTRS, &n_inputs);
    p->pos = pos;
    p->line = tline;
    p->col = tcol;
    p->tok = tok;
    if (!scanned) return NULL;
    char err[1024];
    const tj_op_info *op = tjir_match_overloads(name, cands, n_cands, attrs, n_attrs, n_inputs, err, sizeof err);
    bool ambiguous = !op && strstr(err, "several");
    if (!op && exact && !ambiguous) return exact; /* its own checks name what is wrong */
    if (!op) tjir_fail_at(p, line, col, "expected %s", err);
    return op;
}
