/* parse_values.c — the parser's readers for types (Float(2, *, strides=[...],
 * device=cpu), int, Tensor[], ...), attribute lists checked against op
 * schemas and prim kinds, tensor literals, and the nearest-name suggestion
 * for unknown ops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

/* ---- types -------------------------------------------------------------------- */

static bool read_dim(tjir_parser *p, int64_t *v, bool is_stride) {
    if (tjir_is(p, TOK_STAR)) {
        *v = TJ_UNKNOWN_DIM;
        tjir_next(p);
        return !p->failed;
    }
    int line = p->tok.line, col = p->tok.col;
    if (!tjir_read_int(p, v, is_stride ? "a stride or '*'" : "a size, '*' or '...'")) return false;
    if (*v == TJ_UNKNOWN_DIM || (!is_stride && *v < 0))
        return tjir_fail_at(p, line, col, "expected a size >= 0, got %lld", (long long)*v);
    return true;
}

static bool read_device(tjir_parser *p, tj_type *t) {
    if (tjir_is(p, TOK_STAR)) {
        t->device_type = TJ_UNKNOWN;
        tjir_next(p);
        return !p->failed;
    }
    if (tjir_is_ident(p, "cpu")) {
        t->device_type = TJ_CPU;
        tjir_next(p);
        return !p->failed;
    }
    if (!tjir_is_ident(p, "cuda")) return tjir_expected(p, "a device (cpu, cuda:N or '*')");
    t->device_type = TJ_CUDA;
    tjir_next(p);
    if (!tjir_is(p, TOK_COLON)) return !p->failed;
    tjir_next(p);
    int line = p->tok.line, col = p->tok.col;
    int64_t idx;
    if (!tjir_read_int(p, &idx, "a device index")) return false;
    if (idx < 0 || idx > 65535)
        return tjir_fail_at(p, line, col, "expected a device index in [0, 65535], got %lld",
                            (long long)idx);
    t->device_index = (int)idx;
    return true;
}

static bool read_keyword_part(tjir_parser *p, tj_type *t, bool seen[3]) {
    static const char *const words[3] = {"strides", "requires_grad", "device"};
    int w = 0;
    while (w < 3 && !tjir_is_ident(p, words[w])) w++;
    if (w == 3) return tjir_expected(p, "strides=, requires_grad= or device=");
    int line = p->tok.line, col = p->tok.col;
    if (seen[w]) return tjir_fail_at(p, line, col, "expected each of strides=, requires_grad=, "
                                     "device= once, got a second %s=", words[w]);
    seen[w] = true;
    tjir_next(p);
    if (!tjir_eat(p, TOK_EQUALS, "'='")) return false;
    if (w == 2) return read_device(p, t);
    if (w == 1) {
        if (tjir_is(p, TOK_STAR)) {
            t->requires_grad = TJ_UNKNOWN;
            tjir_next(p);
            return !p->failed;
        }
        int64_t v;
        int l2 = p->tok.line, c2 = p->tok.col;
        if (!tjir_read_int(p, &v, "0, 1 or '*'")) return false;
        if (v != 0 && v != 1) return tjir_fail_at(p, l2, c2, "expected 0, 1 or '*', got %lld",
                                                  (long long)v);
        t->requires_grad = (int)v;
        return true;
    }
    if (!tjir_eat(p, TOK_LBRACKET, "'['")) return false;
    int n = 0;
    while (!tjir_is(p, TOK_RBRACKET) && !p->failed) {
        if (n && !tjir_eat(p, TOK_COMMA, "',' or ']'")) return false;
        if (n == TJ_MAX_DIMS) return tjir_expected(p, "at most 8 strides");
        if (!read_dim(p, &t->strides[n], true)) return false;
        n++;
    }
    if (t->ndim == TJ_UNKNOWN)
        return tjir_fail_at(p, line, col, "expected sizes before strides, got strides of a "
                            "tensor of unknown rank");
    if (n != t->ndim)
        return tjir_fail_at(p, line, col, "expected %d strides (one per dim), got %d", t->ndim, n);
    return tjir_eat(p, TOK_RBRACKET, "']'");
}

/* "(" parts ")": sizes (or "...") first, then keywords in any order. */
static bool read_tensor_parts(tjir_parser *p, tj_type *t) {
    tjir_next(p); /* "(" */
    t->ndim = 0;
    bool seen[3] = {false, false, false}, keywords = false;
    for (int item = 0; !tjir_is(p, TOK_RPAREN) && !p->failed; item++) {
        if (item && !tjir_eat(p, TOK_COMMA, "',' or ')'")) return false;
        if (tjir_is(p, TOK_IDENT)) {
            keywords = true;
            if (!read_keyword_part(p, t, seen)) return false;
        } else if (keywords) {
            return tjir_expected(p, "strides=, requires_grad= or device=");
        } else if (tjir_is(p, TOK_ELLIPSIS)) {
            if (item) return tjir_expected(p, "a size or '*' (\"...\" stands alone)");
            t->ndim = TJ_UNKNOWN;
            tjir_next(p);
        } else {
            if (t->ndim == TJ_UNKNOWN) return tjir_expected(p, "',' and a keyword after '...'");
            if (t->ndim == TJ_MAX_DIMS) return tjir_expected(p, "at most 8 sizes");
            if (!read_dim(p, &t->sizes[t->ndim], false)) return false;
            t->ndim++;
        }
    }
    return tjir_eat(p, TOK_RPAREN, "')'");
}

bool tjir_parse_type(tjir_parser *p, tj_type *t) {
    static const struct { const char *name; tj_type_kind kind; } scalars[] = {
        {"int", TJ_TYPE_INT}, {"float", TJ_TYPE_FLOAT}, {"bool", TJ_TYPE_BOOL},
        {"str", TJ_TYPE_STR}, {"NoneType", TJ_TYPE_NONE}, {"Tensor", TJ_TYPE_TENSOR},
    };
    if (!tjir_is(p, TOK_IDENT)) return tjir_expected(p, "a type");
    *t = tj_type_tensor();
    int dtype = tjir_dtype_from_ir_name(p->tok.text, p->tok.len);
    if (dtype >= 0) {
        t->dtype = dtype;
        tjir_next(p);
        return tjir_is(p, TOK_LPAREN) ? read_tensor_parts(p, t) : !p->failed;
    }
    for (size_t k = 0; k < sizeof scalars / sizeof scalars[0]; k++) {
        if (!tjir_is_ident(p, scalars[k].name)) continue;
        tjir_next(p);
        if (tjir_is(p, TOK_LBRACKET) && scalars[k].kind != TJ_TYPE_NONE) {
            tjir_next(p);
            *t = tj_type_list(scalars[k].kind);
            return tjir_eat(p, TOK_RBRACKET, "']' closing a list type");
        }
        if (scalars[k].kind != TJ_TYPE_TENSOR) {
            *t = tj_type_scalar(scalars[k].kind);
            return !p->failed;
        }
        return tjir_is(p, TOK_LPAREN) ? read_tensor_parts(p, t) : !p->failed;
    }
    return tjir_expected(p, "a type (Float, Double, Long, Bool, Tensor, int, float, bool, str, "
                            "NoneType or a list)");
}

/* ---- literals ------------------------------------------------------------------------- */

typedef struct number {
    bool is_float; /* written with a '.', an exponent, inf or nan */
    bool is_bool;  /* True or False, in a tensor literal */
    int64_t i;
    double f;
    int line, col;
} number;

static bool read_number(tjir_parser *p, number *x, const char *what) {
    x->line = p->tok.line;
    x->col = p->tok.col;
    x->is_bool = false;
    x->is_float = !tjir_is(p, TOK_INT);
    if (!x->is_float) {
        if (!tjir_read_int(p, &x->i, what)) return false;
        x->f = (double)x->i;
        return true;
    }
    return tjir_read_float(p, &x->f, what);
}

/* "[" numbers "]" into the scratch arena. */
static bool read_numbers(tjir_parser *p, number **out, int *n, const char *what) {
    int cap = 0;
    *n = 0;
    *out = NULL;
    if (!tjir_eat(p, TOK_LBRACKET, "'['")) return false;
    while (!tjir_is(p, TOK_RBRACKET) && !p->failed) {
        if (*n && !tjir_eat(p, TOK_COMMA, "',' or ']'")) return false;
        if (!tjir_grow(&p->scratch, (void **)out, &cap, *n + 1, sizeof(number))) {
            p->status = TJ_ERR_MEMORY;
            return tjir_fail_at(p, p->tok.line, p->tok.col, "out of memory");
        }
        if (!read_number(p, &(*out)[*n], what)) return false;
        (*n)++;
    }
    return tjir_eat(p, TOK_RBRACKET, "']'");
}

static bool read_bool(tjir_parser *p, bool *v) {
    if (tjir_is_ident(p, "True")) *v = true;
    else if (tjir_is_ident(p, "False")) *v = false;
    else return tjir_expected(p, "True or False");
    tjir_next(p);
    return !p->failed;
}

/* A Scalar keeps the kind it is written in: 2 an integer, 2. a float, True a bool. */
static bool read_scalar(tjir_parser *p, tj_scalar *v, const char *what) {
    if (tjir_is_ident(p, "True") || tjir_is_ident(p, "False")) {
        bool b = false;
        if (!read_bool(p, &b)) return false;
        *v = tj_scalar_bool(b);
        return true;
    }
    if (tjir_is(p, TOK_INT)) {
        int64_t i;
        if (!tjir_read_int(p, &i, what)) return false;
        *v = tj_scalar_int(i);
        return true;
    }
    double f;
    if (!tjir_read_float(p, &f, what)) return false;
    *v = tj_scalar_float(f);
    return true;
}

static bool read_dtype(tjir_parser *p, tj_dtype *d) {
    int k = tjir_is(p, TOK_IDENT) ? tjir_dtype_from_ir_name(p->tok.text, p->tok.len) : -1;
    if (k < 0) return tjir_expected(p, "a dtype (Float, Double, Long or Bool)");
    *d = (tj_dtype)k;
    tjir_next(p);
    return !p->failed;
}

static bool out_of_memory(tjir_parser *p) {
    p->status = TJ_ERR_MEMORY;
    return tjir_fail_at(p, p->tok.line, p->tok.col, "out of memory");
}

/* Copies numbers into an int or float list in the scratch arena. */
static bool to_list(tjir_parser *p, const number *xs, int n, bool floats, tj_attr *v) {
    if (floats) {
        double *d = tjir_alloc(&p->scratch, sizeof(double) * (size_t)(n ? n : 1));
        if (!d) return out_of_memory(p);
        for (int k = 0; k < n; k++) d[k] = xs[k].f;
        v->floats.data = d;
        v->floats.n = n;
        return true;
    }
    int64_t *d = tjir_alloc(&p->scratch, sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!d) return out_of_memory(p);
    for (int k = 0; k < n; k++) {
        if (xs[k].is_float)
            return tjir_fail_at(p, xs[k].line, xs[k].col, "expected an integer, got a float");
        d[k] = xs[k].i;
    }
    v->ints.data = d;
    v->ints.n = n;
    return true;
}

/* tensor([values], dtype=Float, sizes=[2, 3]) */
static bool read_tensor(tjir_parser *p, tj_tensor **out) {
    int line = p->tok.line, col = p->tok.col;
    tjir_next(p); /* "tensor" */
    if (!tjir_eat(p, TOK_LPAREN, "'('")) return false;
    number *xs = NULL;
    int n = 0, cap = 0;
    if (!tjir_eat(p, TOK_LBRACKET, "'['")) return false;
    while (!tjir_is(p, TOK_RBRACKET) && !p->failed) {
        if (n && !tjir_eat(p, TOK_COMMA, "',' or ']'")) return false;
        if (!tjir_grow(&p->scratch, (void **)&xs, &cap, n + 1, sizeof(number)))
            return out_of_memory(p);
        number *x = &xs[n++];
        if (tjir_is_ident(p, "True") || tjir_is_ident(p, "False")) { /* a bool element */
            x->line = p->tok.line;
            x->col = p->tok.col;
            x->i = p->tok.text[0] == 'T';
            x->f = (double)x->i;
            x->is_float = false;
            x->is_bool = true;
            tjir_next(p);
        } else if (!read_number(p, x, "a number, True or False")) {
            return false;
        }
    }
    tj_dtype dtype = TJ_F32;
    if (!tjir_eat(p, TOK_RBRACKET, "']'") || !tjir_eat(p, TOK_COMMA, "','") ||
        !tjir_eat_ident(p, "dtype") || !tjir_eat(p, TOK_EQUALS, "'='") || !read_dtype(p, &dtype) ||
        !tjir_eat(p, TOK_COMMA, "','") || !tjir_eat_ident(p, "sizes") ||
        !tjir_eat(p, TOK_EQUALS, "'='"))
        return false;
    number *dims;
    int ndim;
    int sline = p->tok.line, scol = p->tok.col;
    if (!read_numbers(p, &dims, &ndim, "a size")) return false;
    if (ndim > TJ_MAX_DIMS) return tjir_fail_at(p, sline, scol, "expected at most 8 sizes, got %d", ndim);
    /* span counts zero sizes as one: strides must fit in 64 bits even when empty */
    int64_t sizes[TJ_MAX_DIMS], span = 1;
    bool huge = false, empty = false;
    for (int d = 0; d < ndim; d++) {
        if (dims[d].is_float || dims[d].i < 0)
            return tjir_fail_at(p, dims[d].line, dims[d].col, "expected a size >= 0");
        sizes[d] = dims[d].i;
        empty = empty || sizes[d] == 0;
        huge = huge || __builtin_mul_overflow(span, sizes[d] ? sizes[d] : 1, &span);
    }
    int64_t numel = empty ? 0 : span;
    if (huge || numel != n) {
        char shape[TJC_SIZES_BUF];
        tjc_fmt_sizes(shape, sizeof shape, sizes, ndim);
        if (huge)
            return tjir_fail_at(p, line, col, "expected a tensor of fewer than 2^63 values, got "
                                "sizes %s", shape);
        return tjir_fail_at(p, line, col, "expected %lld values for sizes %s, got %d",
                            (long long)numel, shape, n);
    }
    for (int k = 0; k < n; k++) {
        int l = xs[k].line;
        char got[40];
        if (xs[k].is_bool) snprintf(got, sizeof got, "%s", xs[k].i ? "True" : "False");
        else if (xs[k].is_float) snprintf(got, sizeof got, "%g", xs[k].f);
        else snprintf(got, sizeof got, "%lld", (long long)xs[k].i);
        if ((dtype == TJ_BOOL) != xs[k].is_bool)
            return tjir_fail_at(p, l, xs[k].col, "expected %s for a %s tensor, got %s",
                                dtype == TJ_BOOL ? "True or False" : "a number",
                                tjir_dtype_ir_name(dtype), got);
        if (dtype == TJ_I64 && xs[k].is_float)
            return tjir_fail_at(p, l, xs[k].col, "expected an integer for a Long tensor, got %s",
                                got);
    }
    if (!tjir_eat(p, TOK_RPAREN, "')'")) return false;
    tj_tensor *t = tjc_alloc(sizes, ndim, dtype);
    if (!t) return out_of_memory(p);
    char *data = tjc_data_ptr(t);
    for (int k = 0; k < n; k++) {
        switch (dtype) {
        case TJ_F32: ((float *)data)[k] = (float)xs[k].f; break;
        case TJ_F64: ((double *)data)[k] = xs[k].f; break;
        case TJ_I64: ((int64_t *)data)[k] = xs[k].i; break;
        default: ((bool *)data)[k] = xs[k].i != 0;
        }
    }
    *out = t;
    return true;
}

/* ---- attributes ---------------------------------------------------------------------------- */

/* A prim::Constant value: its kind follows from how it is written. */
static bool read_constant(tjir_parser *p, tj_node *n, int i, const tj_type *declared) {
    tj_attr v = {{0}};
    if (tjir_is_ident(p, "tensor")) {
        tj_tensor *t = NULL;
        if (!read_tensor(p, &t)) return false;
        if (n->tensor) tj_release(n->tensor);
        n->tensor = t;
        return tjir_store_attr(n, i, TJ_ATTR_TENSOR, NULL) == TJ_OK || out_of_memory(p);
    }
    tj_attr_kind kind;
    if (tjir_is(p, TOK_LBRACKET)) {
        number *xs;
        int count;
        if (!read_numbers(p, &xs, &count, "a number")) return false;
        bool floats = declared && declared->kind == TJ_TYPE_LIST && declared->elem == TJ_TYPE_FLOAT;
        for (int k = 0; k < count; k++) floats = floats || xs[k].is_float;
        if (!to_list(p, xs, count, floats, &v)) return false;
        kind = floats ? TJ_ATTR_FLOATS : TJ_ATTR_INTS;
    } else if (tjir_is(p, TOK_STRING)) {
        if (!(v.s = tjir_read_string(p))) return false;
        kind = TJ_ATTR_STR;
    } else if (tjir_is_ident(p, "True") || tjir_is_ident(p, "False")) {
        if (!read_bool(p, &v.b)) return false;
        kind = TJ_ATTR_BOOL;
    } else if (tjir_is(p, TOK_INT) || tjir_is(p, TOK_FLOAT) || tjir_is_ident(p, "inf") ||
               tjir_is_ident(p, "nan")) {
        number x;
        if (!read_number(p, &x, "a number")) return false;
        bool as_float = x.is_float || (declared && declared->kind == TJ_TYPE_FLOAT);
        kind = as_float ? TJ_ATTR_FLOAT : TJ_ATTR_INT;
        if (as_float) v.f = x.f;
        else v.i = x.i;
    } else {
        return tjir_expected(p, "a constant (a number, True, False, a string, a list or "
                                "tensor(...))");
    }
    return tjir_store_attr(n, i, kind, &v) == TJ_OK || out_of_memory(p);
}

/* An op attribute: read as its schema type says, then checked. */
static bool read_op_attr(tjir_parser *p, tj_node *n, int i) {
    const tj_schema *s = tj_op_schema(n->op);
    const tj_arg *arg = &s->args[s->attr_pos[i]];
    int line = p->tok.line, col = p->tok.col;
    tj_attr v = {{0}};
    tj_attr_kind kind = tjir_attr_kind_for(arg, &(tj_attr){{0}});
    bool none_ok = arg->type == TJ_ARG_FLOAT_OPT || arg->type == TJ_ARG_SCALAR_OPT ||
                   arg->type == TJ_ARG_GENERATOR;
    char what[96];
    const char *kname = tj_attr_kind_name(kind);
    snprintf(what, sizeof what, "%s %s for '%s'", strchr("aeiou", kname[0]) ? "an" : "a", kname,
             arg->name);
    if (none_ok && tjir_is_ident(p, "None")) {
        tjir_next(p);
        kind = TJ_ATTR_NONE;
    } else {
        number *xs;
        int count;
        bool ok;
        switch (arg->type) {
        case TJ_ARG_INT: ok = tjir_read_int(p, &v.i, what); break;
        case TJ_ARG_FLOAT:
        case TJ_ARG_FLOAT_OPT: ok = tjir_read_float(p, &v.f, what); break;
        case TJ_ARG_BOOL: ok = read_bool(p, &v.b); break;
        case TJ_ARG_SCALAR:
        case TJ_ARG_SCALAR_OPT: ok = read_scalar(p, &v.scalar, what); break;
        case TJ_ARG_STR: ok = (v.s = tjir_read_string(p)) != NULL; break;
        case TJ_ARG_DTYPE: ok = read_dtype(p, &v.dtype); break;
        case TJ_ARG_INTS:
        case TJ_ARG_FLOATS:
            ok = read_numbers(p, &xs, &count, what) &&
                 to_list(p, xs, count, arg->type == TJ_ARG_FLOATS, &v);
            break;
        default: ok = tjir_expected(p, "None (a generator cannot be read back)");
        }
        if (!ok) return false;
    }
    if (tjir_check_op_attr(n->op, i, kind, &v) != TJ_OK)
        return tjir_fail_at(p, line, col, "%s", tj_last_error());
    return tjir_store_attr(n, i, kind, &v) == TJ_OK || out_of_memory(p);
}

static void list_attr_names(const tj_node *n, char *buf, size_t size) {
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < n->n_attrs && k < size; i++) {
        if (n->kind == TJ_NODE_FUSION_GROUP) continue;
        k += (size_t)snprintf(buf + k, size - k, "%s%s", k ? ", " : "", n->attr_names[i]);
    }
    if (!buf[0]) snprintf(buf, size, "none");
}

bool tjir_parse_attrs(tjir_parser *p, tj_node *n, const tj_type *declared) {
    tjir_next(p); /* "[" */
    for (int item = 0; !tjir_is(p, TOK_RBRACKET) && !p->failed; item++) {
        if (item && !tjir_eat(p, TOK_COMMA, "',' or ']'")) return false;
        int line = p->tok.line, col = p->tok.col;
        if (!tjir_is(p, TOK_IDENT)) return tjir_expected(p, "an attribute name");
        char *name = tjir_tok_copy(p);
        if (!name) return false;
        int i = tj_node_attr_index(n, name);
        if (i < 0 || n->kind == TJ_NODE_FUSION_GROUP) {
            char names[256], what[320];
            list_attr_names(n, names, sizeof names);
            snprintf(what, sizeof what, "an attribute of %s (%s)", tj_node_name(n), names);
            return tjir_expected(p, what);
        }
        if (n->attr_kinds[i] != TJ_NUM_ATTR_KINDS)
            return tjir_fail_at(p, line, col, "expected each attribute once, got '%s' again", name);
        tjir_next(p);
        if (!tjir_eat(p, TOK_EQUALS, "'='")) return false;
        bool ok;
        if (n->kind == TJ_NODE_OP) {
            ok = read_op_attr(p, n, i);
        } else if (n->kind == TJ_NODE_CONSTANT) {
            ok = read_constant(p, n, i, declared);
        } else { /* prim::ConstantChunk: ints */
            tj_attr v = {{0}};
            ok = tjir_read_int(p, &v.i, "an integer") &&
                 (tjir_store_attr(n, i, TJ_ATTR_INT, &v) == TJ_OK || out_of_memory(p));
        }
        if (!ok) return false;
    }
    return tjir_eat(p, TOK_RBRACKET, "']'");
}

bool tjir_finish_attrs(tjir_parser *p, tj_node *n, int line, int col) {
    for (int i = 0; i < n->n_attrs; i++) {
        if (n->attr_kinds[i] != TJ_NUM_ATTR_KINDS) continue;
        if (n->kind == TJ_NODE_FUSION_GROUP) continue; /* set when its section is found */
        const tj_arg *arg = NULL;
        if (n->kind == TJ_NODE_OP) {
            const tj_schema *s = tj_op_schema(n->op);
            arg = &s->args[s->attr_pos[i]];
        }
        if (!arg || !arg->has_default)
            return tjir_fail_at(p, line, col, "expected attribute '%s' of %s (it has no default), "
                                "got none", n->attr_names[i], tj_node_name(n));
        if (tjir_store_attr(n, i, tjir_attr_kind_for(arg, &arg->def), &arg->def))
            return out_of_memory(p);
    }
    return true;
}

/* ---- suggestions ------------------------------------------------------------------------------ */

static size_t edit_distance(const char *a, size_t na, const char *b, size_t nb) {
    size_t row[80];
    if (nb >= sizeof row / sizeof row[0]) return (size_t)-1;
    for (size_t j = 0; j <= nb; j++) row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}

/* Distance to a known name, counting its form without the overload too, so
 * that aten::slice finds aten::slice.Tensor. */
static size_t name_distance(const char *name, size_t n, const char *known) {
    size_t d = edit_distance(name, n, known, strlen(known));
    const char *dot = strchr(known, '.');
    if (dot) {
        size_t base = edit_distance(name, n, known, (size_t)(dot - known));
        if (base < d) d = base;
    }
    return d;
}

const char *tjir_suggest_kind(const char *name) {
    size_t n = strlen(name);
    if (n > 64) return NULL;
    const char *best = NULL;
    size_t best_d = (size_t)-1;
    for (int i = 0; i < tj_op_count(); i++) {
        const char *known = tj_op_name(tj_op_at(i));
        size_t d = name_distance(name, n, known);
        if (d < best_d) {
            best_d = d;
            best = known;
        }
    }
    for (int k = 0; k < TJ_NUM_NODE_KINDS; k++) {
        const tjir_prim *pr = tjir_prim_info((tj_node_kind)k);
        if (!pr->writable) continue;
        size_t d = name_distance(name, n, pr->name);
        if (d < best_d) {
            best_d = d;
            best = pr->name;
        }
    }
    return best && best_d <= 1 + n / 4 ? best : NULL;
}
