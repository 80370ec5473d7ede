/* schema.c — parses op schemas written like PyTorch's native_functions.yaml:
 *
 *   (Tensor self, Tensor other, *, float alpha=1) -> Tensor
 *   (Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]
 *   (Tensor(a!) self, Tensor src) -> Tensor(a!)
 *
 * Types: Tensor, Tensor?, Tensor[], int, int[], int[N], float, float?, float[],
 * bool, str, str(a|b|c), Scalar, Scalar?, ScalarType, Generator?. Defaults: numbers
 * (a Scalar's keeps its kind: 1 is an integer, 1. a float), None,
 * True, False, [1, 2], 'text', and a dtype name (f32). Parsed defaults live as
 * long as the process (the op table is static).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core.h"

typedef struct cursor {
    const char *text;
    const char *p;
} cursor;

static void skip_space(cursor *c) {
    while (isspace((unsigned char)*c->p)) c->p++;
}

static bool eat(cursor *c, const char *tok) {
    skip_space(c);
    size_t n = strlen(tok);
    if (strncmp(c->p, tok, n) != 0) return false;
    c->p += n;
    return true;
}

static tj_status fail(cursor *c, const char *what) {
    return tjc_error(TJ_ERR_PARSE, "schema \"%s\": at column %d: expected %s", c->text,
                     (int)(c->p - c->text) + 1, what);
}

static bool ident(cursor *c, char *buf, size_t n) {
    skip_space(c);
    size_t k = 0;
    while ((isalnum((unsigned char)*c->p) || *c->p == '_') && k + 1 < n) buf[k++] = *c->p++;
    buf[k] = '\0';
    return k > 0;
}

static char *dup_range(const char *a, size_t n) {
    char *s = tjc_malloc(n + 1);
    if (!s) return NULL;
    memcpy(s, a, n);
    s[n] = '\0';
    return s;
}

bool tjc_read_scalar(const char *text, tj_scalar *out, const char **end) {
    const char *p = text;
    if (*p == '+' || *p == '-') p++;
    bool integral = isdigit((unsigned char)*p);
    while (isdigit((unsigned char)*p)) p++;
    if (*p == '.' || *p == 'e' || *p == 'E' || isalpha((unsigned char)*p)) integral = false;
    char *stop;
    if (integral) {
        errno = 0;
        long long v = strtoll(text, &stop, 10);
        if (stop == text || errno == ERANGE) return false;
        *out = tj_scalar_int(v);
    } else {
        double v = strtod(text, &stop);
        if (stop == text) return false;
        *out = tj_scalar_float(v);
    }
    *end = stop;
    return true;
}

tj_scalar_kind tjc_scalar_kind(const tj_scalar *s) {
    if (s->kind == TJ_SCALAR_INT && s->f == (double)s->i) return TJ_SCALAR_INT;
    if (s->kind == TJ_SCALAR_BOOL && (s->i == 0 || s->i == 1) && s->f == (double)s->i)
        return TJ_SCALAR_BOOL;
    return TJ_SCALAR_FLOAT;
}

static tj_status parse_type(cursor *c, tj_arg *arg, bool *mutates) {
    char word[32];
    if (!ident(c, word, sizeof word)) return fail(c, "a type");
    if (strcmp(word, "Tensor") == 0) {
        if (eat(c, "(")) { /* alias annotation: (a) or (a!) */
            char alias[8];
            if (!ident(c, alias, sizeof alias)) return fail(c, "an alias name");
            if (eat(c, "!")) *mutates = true;
            if (!eat(c, ")")) return fail(c, "')'");
        }
        if (eat(c, "?")) arg->type = TJ_ARG_TENSOR_OPT;
        else if (eat(c, "[]")) arg->type = TJ_ARG_TENSOR_LIST;
        else arg->type = TJ_ARG_TENSOR;
    } else if (strcmp(word, "int") == 0) {
        arg->type = TJ_ARG_INT;
        if (eat(c, "[")) {
            arg->type = TJ_ARG_INTS;
            skip_space(c);
            if (isdigit((unsigned char)*c->p)) arg->fixed_len = (int)strtol(c->p, (char **)&c->p, 10);
            if (!eat(c, "]")) return fail(c, "']'");
        }
    } else if (strcmp(word, "float") == 0) {
        arg->type = TJ_ARG_FLOAT;
        if (eat(c, "?")) arg->type = TJ_ARG_FLOAT_OPT;
        else if (eat(c, "[]")) arg->type = TJ_ARG_FLOATS;
    } else if (strcmp(word, "bool") == 0) {
        arg->type = TJ_ARG_BOOL;
    } else if (strcmp(word, "str") == 0) {
        arg->type = TJ_ARG_STR;
        if (eat(c, "(")) {
            const char *start = c->p;
            while (*c->p && *c->p != ')') c->p++;
            if (*c->p != ')') return fail(c, "')' closing the choices");
            arg->choices = dup_range(start, (size_t)(c->p - start));
            c->p++;
        }
    } else if (strcmp(word, "Scalar") == 0) {
        arg->type = eat(c, "?") ? TJ_ARG_SCALAR_OPT : TJ_ARG_SCALAR;
    } else if (strcmp(word, "ScalarType") == 0) {
        arg->type = TJ_ARG_DTYPE;
    } else if (strcmp(word, "Generator") == 0) {
        if (!eat(c, "?")) return fail(c, "'?' after Generator");
        arg->type = TJ_ARG_GENERATOR;
        arg->has_default = true;
        arg->def.gen = NULL;
    } else {
        return fail(c, "a known type");
    }
    return TJ_OK;
}

static tj_status parse_default(cursor *c, tj_arg *arg) {
    skip_space(c);
    arg->has_default = true;
    if (eat(c, "None")) {
        if (arg->type == TJ_ARG_FLOAT_OPT) arg->def.f = TJ_NONE;
        else if (arg->type == TJ_ARG_SCALAR_OPT) arg->def.scalar = tj_scalar_none();
        else if (arg->type != TJ_ARG_TENSOR_OPT && arg->type != TJ_ARG_GENERATOR)
            return fail(c, "None only for optional types");
        return TJ_OK;
    }
    switch (arg->type) {
    case TJ_ARG_BOOL:
        if (eat(c, "True")) arg->def.b = true;
        else if (eat(c, "False")) arg->def.b = false;
        else return fail(c, "True or False");
        return TJ_OK;
    case TJ_ARG_INT: {
        char *end;
        arg->def.i = strtoll(c->p, &end, 10);
        if (end == c->p) return fail(c, "an integer");
        c->p = end;
        return TJ_OK;
    }
    case TJ_ARG_FLOAT:
    case TJ_ARG_FLOAT_OPT: {
        char *end;
        arg->def.f = strtod(c->p, &end);
        if (end == c->p) return fail(c, "a number");
        c->p = end;
        return TJ_OK;
    }
    case TJ_ARG_SCALAR:
    case TJ_ARG_SCALAR_OPT: {
        if (eat(c, "True")) return arg->def.scalar = tj_scalar_bool(true), TJ_OK;
        if (eat(c, "False")) return arg->def.scalar = tj_scalar_bool(false), TJ_OK;
        if (!tjc_read_scalar(c->p, &arg->def.scalar, (const char **)&c->p))
            return fail(c, "a number");
        return TJ_OK;
    }
    case TJ_ARG_INTS: {
        int64_t vals[TJ_MAX_DIMS * 2];
        int n = 0;
        if (eat(c, "[")) {
            while (!eat(c, "]")) {
                if (n && !eat(c, ",")) return fail(c, "',' or ']'");
                skip_space(c);
                char *end;
                if (n == (int)(sizeof vals / sizeof vals[0])) return fail(c, "a shorter list");
                vals[n] = strtoll(c->p, &end, 10);
                if (end == c->p) return fail(c, "an integer");
                c->p = end;
                n++;
            }
        } else { /* a single number repeated to the fixed length: int[2] stride=1 */
            char *end;
            vals[0] = strtoll(c->p, &end, 10);
            if (end == c->p) return fail(c, "an integer list");
            c->p = end;
            n = arg->fixed_len ? arg->fixed_len : 1;
            for (int i = 1; i < n; i++) vals[i] = vals[0];
        }
        int64_t *data = tjc_malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
        if (!data) return tjc_error(TJ_ERR_MEMORY, "out of memory parsing a schema");
        memcpy(data, vals, sizeof(int64_t) * (size_t)n);
        arg->def.ints.data = data;
        arg->def.ints.n = n;
        return TJ_OK;
    }
    case TJ_ARG_STR: {
        if (!eat(c, "'")) return fail(c, "a quoted string");
        const char *start = c->p;
        while (*c->p && *c->p != '\'') c->p++;
        if (*c->p != '\'') return fail(c, "a closing quote");
        arg->def.s = dup_range(start, (size_t)(c->p - start));
        c->p++;
        return TJ_OK;
    }
    case TJ_ARG_DTYPE: {
        char word[16];
        if (!ident(c, word, sizeof word)) return fail(c, "a dtype name");
        for (int d = 0; d < TJ_NUM_DTYPES; d++)
            if (strcmp(word, tj_dtype_name((tj_dtype)d)) == 0) {
                arg->def.dtype = (tj_dtype)d;
                return TJ_OK;
            }
        return fail(c, "f32, f64, i64 or bool");
    }
    default:
        return fail(c, "no default for this type");
    }
}

static tj_status parse_returns(cursor *c, tj_schema *s) {
    bool tuple = eat(c, "(");
    int n = 0;
    for (;;) {
        char word[16];
        if (!ident(c, word, sizeof word) || strcmp(word, "Tensor") != 0)
            return fail(c, "Tensor in the returns");
        if (eat(c, "(")) {
            char alias[8];
            if (!ident(c, alias, sizeof alias)) return fail(c, "an alias name");
            if (eat(c, "!")) s->mutates_self = true;
            else s->aliases_self = true;
            if (!eat(c, ")")) return fail(c, "')'");
        }
        if (eat(c, "[]")) {
            if (tuple) return fail(c, "no list inside a tuple");
            s->n_outputs = -1;
            return TJ_OK;
        }
        n++;
        if (!tuple || !eat(c, ",")) break;
    }
    if (tuple && !eat(c, ")")) return fail(c, "')' closing the returns");
    s->n_outputs = n;
    return TJ_OK;
}

void tjc_schema_free(tj_schema *s) {
    for (int k = 0; k < s->n_args && k < TJ_MAX_ARGS; k++) {
        tj_arg *a = &s->args[k];
        tjc_free((char *)a->name);
        tjc_free((char *)a->choices);
        if (a->has_default && a->type == TJ_ARG_STR) tjc_free((char *)a->def.s);
        if (a->has_default && a->type == TJ_ARG_INTS) tjc_free((int64_t *)a->def.ints.data);
    }
    memset(s, 0, sizeof *s);
}

static tj_status parse(const char *text, tj_schema *s);

tj_status tjc_parse_schema(const char *text, tj_schema *s) {
    tj_status st = parse(text, s);
    if (st) { /* the argument being parsed when it failed counts too */
        if (s->n_args < TJ_MAX_ARGS) s->n_args++;
        tjc_schema_free(s);
    }
    return st;
}

static tj_status parse(const char *text, tj_schema *s) {
    memset(s, 0, sizeof *s);
    cursor c = {text, text};
    if (!eat(&c, "(")) return fail(&c, "'('");
    bool kw_only = false;
    tj_status st;
    while (!eat(&c, ")")) {
        if (s->n_args && !eat(&c, ",")) return fail(&c, "',' or ')'");
        if (eat(&c, "*")) {
            kw_only = true;
            continue;
        }
        if (s->n_args == TJ_MAX_ARGS) return fail(&c, "fewer arguments");
        tj_arg *arg = &s->args[s->n_args];
        bool mutates = false;
        if ((st = parse_type(&c, arg, &mutates))) return st;
        char name[64];
        if (!ident(&c, name, sizeof name)) return fail(&c, "an argument name");
        arg->name = dup_range(name, strlen(name));
        arg->kw_only = kw_only;
        if (mutates) {
            arg->mutated = true;
            s->mutates_inputs = true;
            if (s->n_args == 0) s->mutates_self = true;
        }
        if (eat(&c, "=") && (st = parse_default(&c, arg))) return st;
        bool is_tensor = arg->type == TJ_ARG_TENSOR || arg->type == TJ_ARG_TENSOR_OPT ||
                         arg->type == TJ_ARG_TENSOR_LIST;
        if (arg->type == TJ_ARG_TENSOR_LIST) s->has_tensor_list = true;
        if (is_tensor) s->tensor_pos[s->n_tensor_args++] = s->n_args;
        else s->attr_pos[s->n_attrs++] = s->n_args;
        s->n_args++;
    }
    if (s->has_tensor_list && s->n_tensor_args != 1)
        return fail(&c, "a Tensor[] argument to be the only tensor argument");
    if (!eat(&c, "->")) return fail(&c, "'->'");
    if ((st = parse_returns(&c, s))) return st;
    skip_space(&c);
    if (*c.p) return fail(&c, "the end of the schema");
    return TJ_OK;
}

/* "(Tensor self, ...) -> Tensor" becomes "(Tensor(a!) self, ...) -> Tensor(a!)". */
char *tjc_inplace_schema_text(const char *base) {
    const char *open = strstr(base, "(Tensor ");
    const char *arrow = strstr(base, "->");
    if (open != base || !arrow) return NULL;
    size_t n = strlen(base) + 16;
    char *out = tjc_malloc(n);
    if (!out) return NULL;
    snprintf(out, n, "(Tensor(a!) %.*s-> Tensor(a!)", (int)(arrow - (base + 8)), base + 8);
    return out;
}
