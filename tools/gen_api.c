/* gen_api.c — a build step: writes the public tj_<op> functions (a header of
 * prototypes and their wrappers over tj_invoke) from the rows and schemas of
 * core/ops.def. Usage: gen_api OUT.h OUT.c */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"

typedef struct row {
    const char *id, *name, *schema, *inplace_base;
} row;

static const row rows[] = {
#define TJ_OP(id, name, schema, kind, infer, cpu) {#id, name, schema, NULL},
#define TJ_POINTWISE(id, name, schema, rule, arity, expr) {#id, name, schema, NULL},
#define TJ_POINTWISE_SCALAR(id, name, schema, base) {#id, name, schema, NULL},
#define TJ_INPLACE(id, name, base) {#id, name, NULL, #base},
#include "core/ops.def"
};
enum { N_ROWS = sizeof rows / sizeof rows[0] };

static const char *schema_of(const row *r) {
    if (r->schema) return r->schema;
    for (int i = 0; i < N_ROWS; i++)
        if (strcmp(rows[i].id, r->inplace_base) == 0) return tjc_inplace_schema_text(schema_of(&rows[i]));
    return NULL;
}

static void params(FILE *f, const tj_schema *s) {
    for (int k = 0; k < s->n_args; k++) {
        const tj_arg *a = &s->args[k];
        const char *n = a->name, *sep = k ? ", " : "";
        switch (a->type) {
        case TJ_ARG_TENSOR:
        case TJ_ARG_TENSOR_OPT: fprintf(f, "%stj_tensor *%s", sep, n); break;
        case TJ_ARG_TENSOR_LIST: fprintf(f, "%stj_tensor *const *%s, int n_%s", sep, n, n); break;
        case TJ_ARG_INT: fprintf(f, "%sint64_t %s", sep, n); break;
        case TJ_ARG_INTS: fprintf(f, "%sconst int64_t *%s, int n_%s", sep, n, n); break;
        case TJ_ARG_FLOAT:
        case TJ_ARG_FLOAT_OPT: fprintf(f, "%sdouble %s", sep, n); break;
        case TJ_ARG_FLOATS: fprintf(f, "%sconst double *%s, int n_%s", sep, n, n); break;
        case TJ_ARG_BOOL: fprintf(f, "%sbool %s", sep, n); break;
        case TJ_ARG_STR: fprintf(f, "%sconst char *%s", sep, n); break;
        case TJ_ARG_DTYPE: fprintf(f, "%stj_dtype %s", sep, n); break;
        case TJ_ARG_GENERATOR: fprintf(f, "%stj_generator *%s", sep, n); break;
        case TJ_ARG_SCALAR:
        case TJ_ARG_SCALAR_OPT: fprintf(f, "%stj_scalar %s", sep, n); break;
        }
    }
    if (s->n_outputs != 1) fprintf(f, "%stj_tensor **out, int out_cap", s->n_args ? ", " : "");
}

static void prototype(FILE *f, const row *r, const tj_schema *s) {
    fprintf(f, s->n_outputs == 1 ? "tj_tensor *tj_%s(" : "int tj_%s(", r->id);
    params(f, s);
    fprintf(f, ")");
}

/* For an op with Scalar arguments, a macro of its name that passes each of
 * them through tj_scalar_of, so that a C number keeps its kind: tj_add(a, b, 2)
 * is an integer alpha, tj_add(a, b, 2.0) a float one. The macro's own name in
 * its expansion is the function (C does not expand a macro inside itself). */
static void scalar_macro(FILE *f, const row *r, const tj_schema *s) {
    bool any = false;
    for (int k = 0; k < s->n_args; k++)
        any |= s->args[k].type == TJ_ARG_SCALAR || s->args[k].type == TJ_ARG_SCALAR_OPT;
    if (!any) return;
    char params[512] = "", call[1024] = "";
    size_t np = 0, nc = 0;
    int count = 0;
    for (int k = 0; k < s->n_args; k++) {
        tj_arg_type t = s->args[k].type;
        int width = t == TJ_ARG_TENSOR_LIST || t == TJ_ARG_INTS || t == TJ_ARG_FLOATS ? 2 : 1;
        for (int w = 0; w < width; w++, count++) {
            bool scalar = t == TJ_ARG_SCALAR || t == TJ_ARG_SCALAR_OPT;
            np += (size_t)snprintf(params + np, sizeof params - np, "%sa%d", count ? ", " : "", count);
            nc += (size_t)snprintf(call + nc, sizeof call - nc, scalar ? "%stj_scalar_of(a%d)" : "%s(a%d)",
                                   count ? ", " : "", count);
        }
    }
    if (s->n_outputs != 1)
        for (int w = 0; w < 2; w++, count++) {
            np += (size_t)snprintf(params + np, sizeof params - np, ", a%d", count);
            nc += (size_t)snprintf(call + nc, sizeof call - nc, ", (a%d)", count);
        }
    fprintf(f, "#if !defined(__cplusplus) && !defined(TJIT_NO_SCALAR_MACROS)\n"
               "#define tj_%s(%s) tj_%s(%s)\n#endif\n", r->id, params, r->id, call);
}

static void body(FILE *f, const row *r, const tj_schema *s) {
    fprintf(f, " {\n");
    const char *in = "NULL", *n_in = "0";
    char n_in_buf[64];
    if (s->has_tensor_list) {
        in = s->args[s->tensor_pos[0]].name;
        snprintf(n_in_buf, sizeof n_in_buf, "n_%s", in);
        n_in = n_in_buf;
    } else if (s->n_tensor_args) {
        fprintf(f, "    tj_tensor *in_[] = {");
        for (int k = 0; k < s->n_tensor_args; k++)
            fprintf(f, "%s%s", k ? ", " : "", s->args[s->tensor_pos[k]].name);
        fprintf(f, "};\n");
        in = "in_";
        snprintf(n_in_buf, sizeof n_in_buf, "%d", s->n_tensor_args);
        n_in = n_in_buf;
    }
    fprintf(f, "    tj_attr at_[%d] = {0};\n", s->n_attrs ? s->n_attrs : 1);
    for (int k = 0; k < s->n_attrs; k++) {
        const tj_arg *a = &s->args[s->attr_pos[k]];
        const char *n = a->name;
        switch (a->type) {
        case TJ_ARG_INT: fprintf(f, "    at_[%d].i = %s;\n", k, n); break;
        case TJ_ARG_FLOAT:
        case TJ_ARG_FLOAT_OPT: fprintf(f, "    at_[%d].f = %s;\n", k, n); break;
        case TJ_ARG_BOOL: fprintf(f, "    at_[%d].b = %s;\n", k, n); break;
        case TJ_ARG_STR: fprintf(f, "    at_[%d].s = %s;\n", k, n); break;
        case TJ_ARG_DTYPE: fprintf(f, "    at_[%d].dtype = %s;\n", k, n); break;
        case TJ_ARG_GENERATOR: fprintf(f, "    at_[%d].gen = %s;\n", k, n); break;
        case TJ_ARG_SCALAR:
        case TJ_ARG_SCALAR_OPT: fprintf(f, "    at_[%d].scalar = %s;\n", k, n); break;
        case TJ_ARG_INTS:
            fprintf(f, "    at_[%d].ints.data = %s;\n    at_[%d].ints.n = n_%s;\n", k, n, k, n);
            break;
        case TJ_ARG_FLOATS:
            fprintf(f, "    at_[%d].floats.data = %s;\n    at_[%d].floats.n = n_%s;\n", k, n, k, n);
            break;
        default: break;
        }
    }
    if (s->n_outputs == 1) {
        fprintf(f, "    tj_tensor *out_[1] = {NULL};\n");
        fprintf(f, "    return tj_invoke(TJ_OP_%s, %s, %s, at_, %d, out_, 1) == 1 ? out_[0] : NULL;\n",
                r->id, in, n_in, s->n_attrs);
    } else {
        fprintf(f, "    return tj_invoke(TJ_OP_%s, %s, %s, at_, %d, out, out_cap);\n", r->id, in,
                n_in, s->n_attrs);
    }
    fprintf(f, "}\n\n");
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: gen_api OUT.h OUT.c\n");
        return 2;
    }
    FILE *h = fopen(argv[1], "w"), *c = fopen(argv[2], "w");
    if (!h || !c) {
        perror("gen_api");
        return 1;
    }
    fprintf(h, "/* ops_api.h — generated from core/ops.def by tools/gen_api.c; do not edit.\n"
               " * One function per op; arguments follow the op's schema. Ops with one\n"
               " * output return it (NULL on error); ops with several fill out[] and return\n"
               " * their number (-1 on error). */\n"
               "#ifndef TJIT_OPS_API_H\n#define TJIT_OPS_API_H\n\n"
               "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
    fprintf(c, "/* ops_api.c — generated from core/ops.def by tools/gen_api.c; do not edit. */\n"
               "#define TJIT_NO_SCALAR_MACROS /* the functions themselves */\n"
               "#include \"core/core.h\"\n\n");
    for (int i = 0; i < N_ROWS; i++) {
        const row *r = &rows[i];
        const char *text = schema_of(r);
        tj_schema s;
        if (!text || tjc_parse_schema(text, &s) != TJ_OK) {
            fprintf(stderr, "gen_api: row %s: %s\n", r->name, text ? tj_last_error() : "no schema");
            return 1;
        }
        fprintf(h, "/* %s%s */\n", r->name, text);
        prototype(h, r, &s);
        fprintf(h, ";\n");
        scalar_macro(h, r, &s);
        prototype(c, r, &s);
        body(c, r, &s);
    }
    fprintf(h, "#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
    return (fclose(h) || fclose(c)) ? 1 : 0;
}
