/* test_conformance.c — the op conformance sweep: every case of
 * tests/conformance/cases.txt (written by tests/conformance/make_golden.py
 * from PyTorch's own ops) is called through tj_invoke, and tjit must do what
 * PyTorch did: refuse where it refused, else return the same outputs (dtype,
 * sizes and values, within the documented ulp bounds; NaN where NaN, each
 * infinity exact). A case that differs on purpose is listed, with its reason,
 * in docs/ops.md between the conformance markers. Every pointwise case that
 * agrees also runs as a one-op fused kernel through the portable runner and
 * LLVM (the fuser's differential tester, tests/support/fuser_cases.h), which
 * must agree with PyTorch too. A listed case that now
 * agrees fails the test too, so the list stays true. Prints
 * "op conformance: P/N cases". TJIT_CONFORMANCE_ALL=1 prints every difference,
 * the listed ones too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "tjit/runtime.h"
#include "fuser/fuser.h"
#include "tests/support/fuser_cases.h"
#include "tests/support/testing.h"

#define CASES "tests/conformance/cases.txt"
#define OPS_DOC "docs/ops.md"
enum { MAX_IN = 8, MAX_OUT = 4, MAX_LISTED = 512 };

typedef struct listed {
    char op[96], id[96]; /* id: a prefix of the case id; "*" for every case */
    bool hit;
} listed;

static listed known[MAX_LISTED];
static int n_known;

/* The rows "| `op` | `id` | reason |" between <!-- conformance:begin --> and
 * <!-- conformance:end --> in docs/ops.md. */
static void read_known(void) {
    FILE *f = fopen(OPS_DOC, "r");
    if (!f) fail_msg("cannot open %s", OPS_DOC);
    char line[1024];
    bool in = false;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "<!-- conformance:begin -->")) in = true;
        else if (strstr(line, "<!-- conformance:end -->")) in = false;
        else if (in && line[0] == '|' && line[2] == '`') {
            listed *k = &known[n_known];
            if (n_known == MAX_LISTED) fail_msg("too many listed differences");
            if (sscanf(line, "| `%95[^`]` | `%95[^`]` |", k->op, k->id) == 2) n_known++;
        }
    }
    fclose(f);
}

static listed *find_known(const char *op, const char *id) {
    for (int i = 0; i < n_known; i++)
        if (!strcmp(known[i].op, op) &&
            (!strcmp(known[i].id, "*") || !strncmp(id, known[i].id, strlen(known[i].id))))
            return &known[i];
    return NULL;
}

/* ---- reading a case ----------------------------------------------------------- */

typedef struct tensor_text {
    tj_dtype dtype;
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
    double *v;
    int64_t n;
} tensor_text;

static tj_dtype dtype_named(const char *s) {
    for (int d = 0; d < TJ_NUM_DTYPES; d++)
        if (!strcmp(s, tj_dtype_name((tj_dtype)d))) return (tj_dtype)d;
    fail_msg("bad dtype '%s' in %s", s, CASES);
    return TJ_F32;
}

/* "f32 [2,3] 1.5 nan ..." */
static void parse_tensor(char *s, tensor_text *t) {
    char *tok = strtok(s, " ");
    t->dtype = dtype_named(tok);
    char *sz = strtok(NULL, " ");
    t->ndim = 0;
    t->n = 1;
    for (char *p = sz + 1; *p && *p != ']';) {
        t->sizes[t->ndim] = strtoll(p, &p, 10);
        t->n *= t->sizes[t->ndim++];
        if (*p == ',') p++;
    }
    t->v = malloc(sizeof(double) * (size_t)(t->n ? t->n : 1));
    for (int64_t i = 0; i < t->n; i++) {
        char *v = strtok(NULL, " ");
        if (!v) fail_msg("%s: a tensor with too few values", CASES);
        t->v[i] = strtod(v, NULL);
    }
}

static tj_tensor *make_tensor(const tensor_text *t) {
    tj_tensor *x = tj_zeros(t->sizes, t->ndim, t->dtype);
    void *d = tj_data(x);
    for (int64_t i = 0; i < t->n; i++) {
        switch (t->dtype) {
        case TJ_F32: ((float *)d)[i] = (float)t->v[i]; break;
        case TJ_F64: ((double *)d)[i] = t->v[i]; break;
        case TJ_I64: ((int64_t *)d)[i] = (int64_t)t->v[i]; break;
        default: ((bool *)d)[i] = t->v[i] != 0; break;
        }
    }
    return x;
}

/* An attribute as the IR writes it, read by its schema type; false when the
 * text does not suit the type (the case is then a refusal to expect). */
static bool parse_attr(const tj_arg *arg, const char *text, tj_attr *a, int64_t *store) {
    bool none = !strcmp(text, "None");
    switch (arg->type) {
    case TJ_ARG_INT: a->i = strtoll(text, NULL, 10); return !none;
    case TJ_ARG_BOOL: a->b = !strcmp(text, "True"); return !none;
    case TJ_ARG_FLOAT:
    case TJ_ARG_FLOAT_OPT:
        a->f = none ? TJ_NONE : strtod(text, NULL);
        return !none || arg->type == TJ_ARG_FLOAT_OPT;
    case TJ_ARG_SCALAR:
    case TJ_ARG_SCALAR_OPT: {
        const char *end;
        if (none) a->scalar = tj_scalar_none();
        else if (!strcmp(text, "True") || !strcmp(text, "False")) a->scalar = tj_scalar_bool(text[0] == 'T');
        else if (!tjc_read_scalar(text, &a->scalar, &end)) return false;
        return !none || arg->type == TJ_ARG_SCALAR_OPT;
    }
    case TJ_ARG_STR: {
        static char buf[MAX_IN][32];
        static int next;
        char *b = buf[next++ % MAX_IN];
        snprintf(b, 32, "%s", text + 1);
        b[strlen(b) - 1] = '\0'; /* the closing quote */
        a->s = b;
        return true;
    }
    case TJ_ARG_DTYPE: a->dtype = dtype_named(text); return true;
    case TJ_ARG_INTS: {
        int n = 0;
        for (const char *p = text + 1; *p && *p != ']';) {
            char *e;
            store[n] = strtoll(p, &e, 10);
            if (e == p) break;
            n++;
            p = *e == ',' ? e + 2 : e;
        }
        a->ints.data = store;
        a->ints.n = n;
        return true;
    }
    default: return false;
    }
}

/* ---- comparing -------------------------------------------------------------------- */

static double elem(tj_tensor *t, int64_t i) {
    const void *d = tj_data(t);
    switch (tj_tensor_dtype(t)) {
    case TJ_F32: return ((const float *)d)[i];
    case TJ_F64: return ((const double *)d)[i];
    case TJ_I64: return (double)((const int64_t *)d)[i];
    default: return ((const bool *)d)[i];
    }
}

/* Why got differs from want, or NULL. Floats: within a few ulps of the
 * largest magnitude (the bounds allow 2 ulp per transcendental and sums in
 * another order); NaN and infinities exactly. */
static const char *differs(const tj_tensor *got_in, const tensor_text *want, double scale, char *why,
                           size_t n) {
    if (tj_tensor_dtype(got_in) != want->dtype)
        return snprintf(why, n, "dtype %s, PyTorch %s", tj_dtype_name(tj_tensor_dtype(got_in)),
                        tj_dtype_name(want->dtype)), why;
    if (tj_ndim(got_in) != want->ndim ||
        memcmp(tj_sizes(got_in), want->sizes, sizeof(int64_t) * (size_t)want->ndim))
        return snprintf(why, n, "sizes differ (rank %d, PyTorch rank %d)", tj_ndim(got_in), want->ndim), why;
    tj_tensor *got = tj_contiguous((tj_tensor *)got_in);
    double big = 0, tol = scale * (want->dtype == TJ_F32 ? 4e-6 : want->dtype == TJ_F64 ? 1e-13 : 0);
    for (int64_t i = 0; i < want->n; i++)
        if (isfinite(want->v[i]) && fabs(want->v[i]) > big) big = fabs(want->v[i]);
    const char *res = NULL;
    for (int64_t i = 0; i < want->n && !res; i++) {
        double g = elem(got, i), w = want->v[i];
        bool ok = isnan(w) ? isnan(g) : isinf(w) ? g == w : fabs(g - w) <= tol * (big > 1 ? big : 1);
        if (want->dtype == TJ_F32 && !isnan(w) && !isinf(w) && fabs(w) < 1.2e-38 && fabs(g) < 1.2e-38)
            ok = true; /* f32 denormals may flush */
        if (!ok) {
            snprintf(why, n, "element %lld: %.9g, PyTorch %.9g", (long long)i, g, w);
            res = why;
        }
    }
    tj_release(got);
    return res;
}

/* ---- the sweep ---------------------------------------------------------------------- */

typedef struct counts {
    int cases, passed, listed, failed;
    int grads, grads_passed;
    int fused, fused_passed; /* pointwise cases through a fusion backend */
} counts;

/* The fusion backends the pointwise cases run through: the portable runner,
 * and LLVM where it is built in. */
static const tjf_backend *fusers[2];
static int n_fusers;

/* ---- gradients ------------------------------------------------------------------------ */

/* The op called once in a traced model: the graph's inputs are the case's
 * tensors that are not absent; an absent Tensor? stays NULL. */
typedef struct one_call {
    const tj_op_info *op;
    bool absent[MAX_IN];
    int n_args, n_out;
    const tj_attr *attrs;
} one_call;

static tj_status call_op(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    const one_call *oc = ctx;
    tj_tensor *args[MAX_IN];
    for (int k = 0, j = 0; k < oc->n_args; k++) args[k] = oc->absent[k] ? NULL : in[j++];
    (void)n_in;
    int n = tj_invoke(tj_op_id(oc->op), args, oc->n_args, oc->attrs, tj_op_schema(oc->op)->n_attrs,
                      out, n_out);
    return n == n_out ? TJ_OK : tj_last_status() ? tj_last_status() : TJ_ERR_ARG;
}

/* Why tjit's gradients of sum(out_k * seed_k) differ from torch.autograd's,
 * or NULL: the op traced alone, compiled with gradients for its f64 inputs. */
static const char *grad_differs(const tj_op_info *op, tj_tensor **in, int n_in, const tj_attr *attrs,
                                int n_out, tensor_text *seeds, bool *seed_none,
                                tensor_text *want, bool *want_none, int n_want, char *why, size_t n) {
    one_call oc = {op, {false}, n_in, n_out, attrs};
    tj_tensor *gin[MAX_IN];
    bool needs[MAX_IN];
    int n_g = 0, w = 0;
    for (int k = 0; k < n_in; k++) {
        oc.absent[k] = in[k] == NULL;
        if (in[k]) {
            needs[n_g] = tj_tensor_dtype(in[k]) == TJ_F64;
            gin[n_g++] = in[k];
        }
    }
    const char *res = NULL;
    tj_graph *g = tj_trace(call_op, &oc, gin, n_g, n_out, NULL);
    tj_compile_options o = {.requires_grad = needs};
    tj_program *p = g ? tj_compile(g, &o) : NULL;
    tj_tensor *outs[MAX_OUT] = {NULL}, *seed_t[MAX_OUT] = {NULL}, *grads[MAX_IN] = {NULL};
    if (!p || tj_run(p, gin, outs) != TJ_OK) {
        snprintf(why, n, "tjit cannot differentiate it: %s", tj_last_error());
        res = why;
    }
    /* an output PyTorch does not differentiate gets a zero seed (NULL would mean ones) */
    for (int k = 0; !res && k < n_out; k++)
        seed_t[k] = seed_none[k] ? tj_zeros(tj_sizes(outs[k]), tj_ndim(outs[k]), tj_tensor_dtype(outs[k]))
                                 : make_tensor(&seeds[k]);
    if (!res && tj_backward(p, seed_t, grads) != TJ_OK) {
        snprintf(why, n, "tjit's backward fails: %s", tj_last_error());
        res = why;
    }
    for (int k = 0; !res && k < n_g; k++) {
        if (!needs[k]) continue;
        if (w == n_want) break;
        if (want_none[w]) {
            for (int64_t i = 0; grads[k] && i < tj_numel(grads[k]) && !res; i++)
                if (elem(grads[k], i) != 0)
                    res = (snprintf(why, n, "gradient of input %d: nonzero, PyTorch none", k), why);
        } else if (!grads[k]) {
            res = (snprintf(why, n, "gradient of input %d: none, PyTorch has one", k), why);
        } else {
            /* derivatives are other formulas than PyTorch's: 1e-9 of the largest in f64 */
            const char *d = differs(grads[k], &want[w], 1e4, why, n);
            if (d) {
                char inner[200];
                snprintf(inner, sizeof inner, "%.199s", d);
                snprintf(why, n, "gradient of input %d: %.200s", k, inner);
                res = why;
            }
        }
        w++;
    }
    for (int k = 0; k < MAX_OUT; k++) tj_release(outs[k]), tj_release(seed_t[k]);
    for (int k = 0; k < MAX_IN; k++) tj_release(grads[k]);
    tj_program_free(p);
    tj_graph_free(g);
    tj_clear_error();
    return res;
}

/* Counts a case that differs (bad) as listed or not, and a listed one that
 * agrees as a failure; returns bad. */
static const char *tally(counts *c, const char *op_name, const char *id, const char *bad) {
    listed *k = find_known(op_name, id);
    if (!bad) {
        if (k && strcmp(k->id, "*")) {
            fprintf(stderr, "listed difference now agrees: %s %s (remove it from %s)\n", op_name,
                    id, OPS_DOC);
            c->failed++;
        }
    } else if (k) {
        k->hit = true;
        c->listed++;
        if (getenv("TJIT_CONFORMANCE_ALL")) fprintf(stderr, "listed: %s [%s]: %s\n", op_name, id, bad);
    } else {
        if (c->failed < 60 || getenv("TJIT_CONFORMANCE_ALL"))
            fprintf(stderr, "differs: %s [%s]: %s\n", op_name, id, bad);
        c->failed++;
    }
    return bad;
}

static void run_case(const char *op_name, const char *id, char lines[][1 << 16], int n_lines,
                     counts *c) {
    const tj_op_info *op = tj_op_find(op_name);
    if (!op) fail_msg("%s: no op %s", CASES, op_name);
    const tj_schema *s = tj_op_schema(op);
    tj_tensor *in[MAX_IN] = {NULL};
    int n_in = 0;
    tj_attr attrs[TJ_MAX_ARGS];
    int64_t store[TJ_MAX_ARGS][TJ_MAX_DIMS * 2];
    bool attrs_ok = true, refused = false;
    tensor_text want[MAX_OUT], seeds[MAX_OUT], gwant[MAX_IN];
    bool seed_none[MAX_OUT] = {false}, gwant_none[MAX_IN] = {false};
    int n_want = 0, n_seeds = 0, n_gwant = 0;
    for (int k = 0; k < s->n_attrs; k++) attrs[k] = s->args[s->attr_pos[k]].def;
    bool given[TJ_MAX_ARGS] = {false};
    for (int l = 0; l < n_lines; l++) {
        char *line = lines[l];
        if (!strncmp(line, "in none", 7)) {
            in[n_in++] = NULL;
        } else if (!strncmp(line, "in ", 3)) {
            tensor_text t;
            parse_tensor(line + 3, &t);
            in[n_in++] = make_tensor(&t);
            free(t.v);
        } else if (!strncmp(line, "attr ", 5)) {
            char name[64];
            int used = 0;
            sscanf(line + 5, "%63s %n", name, &used);
            int k = 0;
            while (k < s->n_attrs && strcmp(s->args[s->attr_pos[k]].name, name)) k++;
            if (k == s->n_attrs) fail_msg("%s %s: %s has no attribute '%s'", op_name, id, op_name, name);
            given[k] = true;
            if (!parse_attr(&s->args[s->attr_pos[k]], line + 5 + used, &attrs[k], store[k]))
                attrs_ok = false;
        } else if (!strcmp(line, "refused")) {
            refused = true;
        } else if (!strncmp(line, "out ", 4)) {
            parse_tensor(line + 4, &want[n_want++]);
        } else if (!strncmp(line, "seed ", 5)) {
            seed_none[n_seeds] = !strcmp(line + 5, "none");
            if (!seed_none[n_seeds]) parse_tensor(line + 5, &seeds[n_seeds]);
            n_seeds++;
        } else if (!strncmp(line, "grad ", 5)) {
            gwant_none[n_gwant] = !strcmp(line + 5, "none");
            if (!gwant_none[n_gwant]) parse_tensor(line + 5, &gwant[n_gwant]);
            n_gwant++;
        }
    }
    for (int k = 0; k < s->n_attrs; k++)
        if (!s->args[s->attr_pos[k]].has_default && !given[k]) attrs_ok = false;
    if (!attrs_ok && !refused) fail_msg("%s %s: the case gives no usable value for an attribute", op_name, id);

    tj_tensor *out[MAX_OUT] = {NULL};
    tj_clear_error();
    int n = attrs_ok ? tj_invoke(tj_op_id(op), in, n_in, attrs, s->n_attrs, out, MAX_OUT) : -1;
    char why[256] = "";
    const char *bad = NULL;
    if (refused && n >= 0) bad = "PyTorch refuses it, tjit computes";
    else if (!refused && n < 0) snprintf(why, sizeof why, "tjit refuses it: %s", tj_last_error()), bad = why;
    else if (!refused && n != n_want) snprintf(why, sizeof why, "%d outputs, PyTorch %d", n, n_want), bad = why;
    for (int k = 0; !bad && !refused && k < n; k++) bad = differs(out[k], &want[k], 1, why, sizeof why);
    tj_clear_error();
    c->cases++;
    if (!tally(c, op_name, id, bad)) c->passed++;
    if (!bad && n_seeds) { /* the values agree: now the first derivatives */
        char gid[160];
        snprintf(gid, sizeof gid, "%s (gradient)", id);
        const char *gbad = grad_differs(op, in, n_in, attrs, n_want, seeds, seed_none, gwant,
                                        gwant_none, n_gwant, why, sizeof why);
        c->grads++;
        if (!tally(c, op_name, gid, gbad)) c->grads_passed++;
    }
    bool all_given = n_in <= 3;
    for (int k = 0; k < n_in; k++) all_given &= in[k] != NULL;
    if (!bad && !refused && n == 1 && all_given && tjf_fusible_op(op)) {
        /* the fuser's differential tester: the op alone as a fused kernel */
        for (int b = 0; b < n_fusers; b++) {
            tj_tensor *got = NULL;
            char fid[160];
            snprintf(fid, sizeof fid, "%s (fused, %s)", id, fusers[b]->name);
            const char *fbad = NULL;
            if (tt_run_op_kernel(fusers[b], op, attrs, in, n_in, &got) != TJ_OK)
                snprintf(why, sizeof why, "the %s fusion backend fails: %s", fusers[b]->name,
                         tj_last_error()), fbad = why;
            else
                fbad = differs(got, &want[0], 1, why, sizeof why);
            tj_clear_error();
            c->fused++;
            if (!tally(c, op_name, fid, fbad)) c->fused_passed++;
            tj_release(got);
        }
    }
    for (int k = 0; k < n_in; k++) tj_release(in[k]);
    for (int k = 0; k < n && k < MAX_OUT; k++) tj_release(out[k]);
    for (int k = 0; k < n_want; k++) free(want[k].v);
    for (int k = 0; k < n_seeds; k++) if (!seed_none[k]) free(seeds[k].v);
    for (int k = 0; k < n_gwant; k++) if (!gwant_none[k]) free(gwant[k].v);
}

static char lines[64][1 << 16];

static void every_case_agrees_with_pytorch(void **state) {
    (void)state;
    read_known();
    fusers[n_fusers++] = tjf_portable_backend();
    if (tjf_find_backend("llvm")) fusers[n_fusers++] = tjf_find_backend("llvm");
    FILE *f = fopen(CASES, "r");
    if (!f) fail_msg("cannot open %s (run from the repository root)", CASES);
    counts c = {0};
    char op[128] = "", id[128] = "";
    int n = 0;
    static char buf[1 << 16];
    while (fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = '\0';
        if (!strncmp(buf, "case ", 5)) {
            int used = 0;
            sscanf(buf + 5, "%127s %n", op, &used);
            snprintf(id, sizeof id, "%s", buf + 5 + used);
            n = 0;
        } else if (!strcmp(buf, "end")) {
            run_case(op, id, lines, n, &c);
        } else {
            if (n == 64) fail_msg("%s: a case of too many lines", CASES);
            snprintf(lines[n++], sizeof lines[0], "%s", buf);
        }
    }
    fclose(f);
    for (int i = 0; i < n_known; i++)
        if (!known[i].hit && strcmp(known[i].id, "*"))
            fprintf(stderr, "listed difference matches no failing case: %s %s\n", known[i].op, known[i].id);
    printf("op conformance: %d/%d cases agree with PyTorch; first derivatives: %d/%d agree with "
           "torch.autograd; fused pointwise kernels: %d/%d agree (%s%s) (%d listed differences "
           "in %s, %d unlisted)\n",
           c.passed, c.cases, c.grads_passed, c.grads, c.fused_passed, c.fused, fusers[0]->name,
           n_fusers > 1 ? " and llvm" : "", c.listed, OPS_DOC, c.failed);
    assert_true(c.cases > 1000);
    assert_true(c.fused > 500);
    assert_int_equal(c.failed, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(every_case_agrees_with_pytorch)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
