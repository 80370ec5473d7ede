/* test_view.c — the view and shape family (TJ_KIND_VIEW and TJ_KIND_SHAPE rows
 * of ops.def), table-driven: every op has cases in the table below, and an op
 * of those kinds without cases fails the test. Each case runs for f32, f64,
 * i64 and bool inputs laid out contiguously, strided and transposed, and its
 * outputs are compared with references computed here by index arithmetic in
 * double. Views must share storage with their input; reshape, flatten and
 * contiguous exactly when PyTorch's do. Writes through every view must reach
 * the base, and writes to the base must show through the view. cat and stack,
 * chunk and split sizes and strides have tests of their own; error messages
 * are in test_view_errors.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "tests/support/testing.h"

#define MAXP 32 /* outputs a case may produce */
#define BIG INT64_MAX

static const tj_dtype dtypes[] = {TJ_F32, TJ_F64, TJ_I64, TJ_BOOL};
enum { CONTIG, STRIDED, TRANSPOSED, N_LAYOUTS };

/* One call: input sizes, an int[] argument and up to four ints, in the
 * order the op's schema takes them after the list. */
typedef struct vcase {
    const char *op;
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
    int n_list;
    int64_t list[TJ_MAX_DIMS];
    int64_t p[4];
} vcase;

/* Rows of the table leave the fields an op does not take to be zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#define S(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), {__VA_ARGS__}
#define S0 0, {0}

static const vcase cases[] = {
    {"aten::view", S(3, 4), S(12)},          {"aten::view", S(3, 4), S(2, -1, 3)},
    {"aten::view", S(2, 3, 4), S(6, 4)},     {"aten::view", S(2, 3, 4), S(-1)},
    {"aten::view", S0, S(1)},                {"aten::view", S0, S0},
    {"aten::view", S(1), S0},                {"aten::view", S(0, 3), S(3, 0)},
    {"aten::view", S(0, 3), S(-1, 3)},       {"aten::view", S(4, 1, 3), S(2, 2, 3)},
    {"aten::view", S(5), S(5, 1, 1)},
    {"aten::reshape", S(3, 4), S(12)},       {"aten::reshape", S(3, 4), S(2, -1, 2)},
    {"aten::reshape", S(2, 3, 4), S(4, 6)},  {"aten::reshape", S0, S(1, 1)},
    {"aten::reshape", S(1, 1), S0},          {"aten::reshape", S(0, 3), S(3, -1)},
    {"aten::reshape", S(4, 1, 3), S(3, 4)},
    {"aten::flatten.using_ints", S(2, 3, 4), S0, {0, -1}},
    {"aten::flatten.using_ints", S(2, 3, 4), S0, {1, 2}},
    {"aten::flatten.using_ints", S(2, 3, 4), S0, {0, 1}},
    {"aten::flatten.using_ints", S(2, 3, 4), S0, {-2, -1}},
    {"aten::flatten.using_ints", S0, S0, {0, -1}},
    {"aten::flatten.using_ints", S(5), S0, {0, 0}},
    {"aten::flatten.using_ints", S(2, 0, 3), S0, {0, 1}},
    {"aten::flatten.using_ints", S(3, 1, 4), S0, {1, 1}},
    {"aten::contiguous", S(3, 4)},           {"aten::contiguous", S0},
    {"aten::contiguous", S(0, 2)},           {"aten::contiguous", S(2, 1, 3)},
    {"aten::contiguous", S(5)},
    {"aten::squeeze", S(1, 3, 1, 4)},        {"aten::squeeze", S0},
    {"aten::squeeze", S(1)},                 {"aten::squeeze", S(1, 1)},
    {"aten::squeeze", S(2, 0, 1)},           {"aten::squeeze", S(3, 4)},
    {"aten::squeeze.dim", S(1, 3, 1, 4), S0, {0}}, {"aten::squeeze.dim", S(1, 3, 1, 4), S0, {2}},
    {"aten::squeeze.dim", S(1, 3, 1, 4), S0, {1}}, {"aten::squeeze.dim", S(1, 3, 1, 4), S0, {-4}},
    {"aten::squeeze.dim", S0, S0, {0}},      {"aten::squeeze.dim", S0, S0, {-1}},
    {"aten::squeeze.dim", S(1), S0, {0}},
    {"aten::unsqueeze", S(3, 4), S0, {0}},   {"aten::unsqueeze", S(3, 4), S0, {1}},
    {"aten::unsqueeze", S(3, 4), S0, {2}},   {"aten::unsqueeze", S(3, 4), S0, {-1}},
    {"aten::unsqueeze", S(3, 4), S0, {-3}},  {"aten::unsqueeze", S0, S0, {0}},
    {"aten::unsqueeze", S0, S0, {-1}},       {"aten::unsqueeze", S(0, 2), S0, {1}},
    {"aten::transpose.int", S(2, 3, 4), S0, {0, 2}},
    {"aten::transpose.int", S(2, 3, 4), S0, {-1, 0}},
    {"aten::transpose.int", S(2, 3, 4), S0, {1, 1}},
    {"aten::transpose.int", S0, S0, {0, -1}},
    {"aten::transpose.int", S(3, 4), S0, {0, 1}},
    {"aten::transpose.int", S(0, 3), S0, {0, 1}},
    {"aten::t", S(3, 4)}, {"aten::t", S(5)}, {"aten::t", S0}, {"aten::t", S(0, 3)},
    {"aten::permute", S(2, 3, 4), S(2, 0, 1)},     {"aten::permute", S(2, 3, 4), S(-1, -2, -3)},
    {"aten::permute", S0, S0},                     {"aten::permute", S(5), S(0)},
    {"aten::permute", S(2, 1, 3, 2), S(3, 1, 0, 2)},
    {"aten::expand", S(3, 1), S(3, 4)},      {"aten::expand", S(1), S(2, 3, 5)},
    {"aten::expand", S(3, 1), S(-1, 4)},     {"aten::expand", S(4), S(2, 3, 4)},
    {"aten::expand", S0, S(2, 3)},           {"aten::expand", S(1, 3), S(0, 3)},
    {"aten::expand", S(2, 1, 3), S(2, 1, 3)}, {"aten::expand", S(3, 1), S(1, 3, 1)},
    {"aten::select.int", S(3, 4), S0, {0, 1}},  {"aten::select.int", S(3, 4), S0, {1, -1}},
    {"aten::select.int", S(3, 4), S0, {-1, 0}}, {"aten::select.int", S(5), S0, {0, 4}},
    {"aten::select.int", S(2, 0, 3), S0, {2, 1}},
    {"aten::select.int", S(2, 3, 4), S0, {1, -3}},
    {"aten::narrow", S(5, 4), S0, {0, 1, 3}},   {"aten::narrow", S(5, 4), S0, {1, -3, 2}},
    {"aten::narrow", S(5, 4), S0, {0, 5, 0}},   {"aten::narrow", S(5, 4), S0, {-1, 0, 4}},
    {"aten::narrow", S(0, 3), S0, {1, 0, 3}},
    {"aten::slice.Tensor", S(10), S0, {0, 2, 8, 3}},
    {"aten::slice.Tensor", S(4, 6), S0, {1, -4, BIG, 2}},
    {"aten::slice.Tensor", S(4, 6), S0, {0, 0, BIG, 1}},
    {"aten::slice.Tensor", S(4, 6), S0, {-1, 5, 2, 1}},
    {"aten::slice.Tensor", S(4, 6), S0, {0, -100, 100, 1}},
    {"aten::slice.Tensor", S(4, 6), S0, {1, 0, 6, BIG}},
    {"aten::slice.Tensor", S(0, 3), S0, {0, 0, 1, 1}},
    {"aten::chunk", S(5), S0, {3, 0}},       {"aten::chunk", S(6), S0, {4, 0}},
    {"aten::chunk", S(3, 7), S0, {2, 1}},    {"aten::chunk", S(0, 2), S0, {3, 0}},
    {"aten::chunk", S(4), S0, {1, 0}},       {"aten::chunk", S(4), S0, {10, 0}},
    {"aten::chunk", S(2, 6), S0, {3, -1}},   {"aten::chunk", S(20), S0, {20, 0}},
    {"aten::split.Tensor", S(5), S0, {2, 0}},    {"aten::split.Tensor", S(6, 2), S0, {3, 0}},
    {"aten::split.Tensor", S(4), S0, {10, 0}},   {"aten::split.Tensor", S(0, 3), S0, {2, 0}},
    {"aten::split.Tensor", S(0), S0, {0, 0}},    {"aten::split.Tensor", S(3, 7), S0, {3, -1}},
    {"aten::split.Tensor", S(11), S0, {1, 0}},
    {"aten::split_with_sizes", S(5), S(2, 3), {0}},
    {"aten::split_with_sizes", S(3, 6), S(1, 0, 5), {1}},
    {"aten::split_with_sizes", S(4), S(4), {0}},
    {"aten::split_with_sizes", S(0, 2), S(0, 0), {0}},
    {"aten::split_with_sizes", S(0), S0, {0}},
    {"aten::split_with_sizes", S(2, 3, 4), S(2, 2), {-1}},
    {"aten::unbind.int", S(3, 4), S0, {0}},  {"aten::unbind.int", S(3, 4), S0, {1}},
    {"aten::unbind.int", S(2, 3, 4), S0, {-1}}, {"aten::unbind.int", S(5), S0, {0}},
    {"aten::unbind.int", S(0, 3), S0, {0}},  {"aten::unbind.int", S(3, 0), S0, {0}},
    {"aten::unbind.int", S(12, 2), S0, {0}},
    {"aten::diagonal", S(3, 4), S0, {0, 0, 1}},   {"aten::diagonal", S(3, 4), S0, {1, 0, 1}},
    {"aten::diagonal", S(3, 4), S0, {-2, 0, 1}},  {"aten::diagonal", S(3, 4), S0, {2, 1, 0}},
    {"aten::diagonal", S(2, 3, 4), S0, {0, -1, 0}}, {"aten::diagonal", S(2, 3, 4), S0, {-1, 2, 1}},
    {"aten::diagonal", S(3, 4), S0, {4, 0, 1}},   {"aten::diagonal", S(3, 4), S0, {-9, 0, 1}},
    {"aten::diagonal", S(0, 3), S0, {0, 0, 1}},   {"aten::diagonal", S(2, 0, 3), S0, {1, 2, 0}},
    /* the gradient ops of views: the input is the gradient, the list the
     * viewed tensor's sizes */
    {"aten::select_backward", S(4), S(3, 4), {0, 1}},
    {"aten::select_backward", S(3), S(3, 4), {1, -1}},
    {"aten::select_backward", S0, S(5), {0, 4}},
    {"aten::select_backward", S(2, 0), S(2, 3, 0), {1, 2}},
    {"aten::slice_backward", S(3, 2), S(7, 2), {0, 1, 6, 2}},
    {"aten::slice_backward", S(3, 2), S(3, 7), {-1, -5, BIG, 3}},
    {"aten::slice_backward", S(4, 3), S(4, 3), {0, 0, BIG, 1}},
    {"aten::slice_backward", S(4, 0), S(4, 3), {1, 2, 1, 1}},
    {"aten::slice_backward", S(1, 3), S(4, 3), {0, -100, 1, BIG}},
    {"aten::new_zeros", S(2, 3), S(4, 1, 2)},
    {"aten::new_zeros", S(3), S0},
    {"aten::new_zeros", S0, S(0, 3)},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* ---- references by index arithmetic ------------------------------------------ */

static int wrap(int64_t d, int ndim) { return (int)(d < 0 ? d + (ndim > 0 ? ndim : 1) : d); }

/* The same row-major values under new sizes. */
static tt_ref relabel(const tt_ref *x, const int64_t *sizes, int ndim) {
    tt_ref r = tt_ref_new(sizes, ndim);
    assert_int_equal(r.numel, x->numel);
    memcpy(r.v, x->v, sizeof(double) * (size_t)x->numel);
    return r;
}

/* map: output index -> input index */
typedef void (*map_fn)(const int64_t *o, int64_t *i, const void *ctx);

static tt_ref gather(const tt_ref *x, const int64_t *sizes, int ndim, map_fn map, const void *ctx) {
    tt_ref r = tt_ref_new(sizes, ndim);
    if (r.numel == 0) return r;
    int64_t o[TJ_MAX_DIMS] = {0}, i[TJ_MAX_DIMS], k = 0;
    do {
        map(o, i, ctx);
        int64_t lin = 0;
        for (int d = 0; d < x->ndim; d++) {
            assert_true(i[d] >= 0 && i[d] < x->sizes[d]);
            lin = lin * x->sizes[d] + i[d];
        }
        r.v[k++] = x->v[lin];
    } while (tt_next_index(o, sizes, ndim));
    return r;
}

typedef struct perm { int n, p[TJ_MAX_DIMS]; } perm;
static void map_perm(const int64_t *o, int64_t *i, const void *ctx) {
    const perm *p = ctx;
    for (int k = 0; k < p->n; k++) i[p->p[k]] = o[k];
}

/* dim of the input runs start, start + step, ...; drop: the output lacks dim */
typedef struct range { int ndim, dim; int64_t start, step; bool drop; } range;
static void map_range(const int64_t *o, int64_t *i, const void *ctx) {
    const range *r = ctx;
    for (int d = 0, k = 0; d < r->ndim; d++) {
        if (d == r->dim) i[d] = r->start + (r->drop ? 0 : o[k++] * r->step);
        else i[d] = o[k++];
    }
}

typedef struct bcast { const tt_ref *x; int out_ndim; } bcast;
static void map_bcast(const int64_t *o, int64_t *i, const void *ctx) {
    const bcast *b = ctx;
    for (int d = 0; d < b->x->ndim; d++)
        i[d] = b->x->sizes[d] == 1 ? 0 : o[b->out_ndim - b->x->ndim + d];
}

static tt_ref part(const tt_ref *x, int dim, int64_t start, int64_t len, int64_t step) {
    int64_t sizes[TJ_MAX_DIMS];
    memcpy(sizes, x->sizes, sizeof sizes);
    sizes[dim] = len;
    range r = {x->ndim, dim, start, step, false};
    return gather(x, sizes, x->ndim, map_range, &r);
}

static tt_ref pick(const tt_ref *x, int dim, int64_t index) {
    int64_t sizes[TJ_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != dim) sizes[n++] = x->sizes[d];
    range r = {x->ndim, dim, index, 1, true};
    return gather(x, sizes, n, map_range, &r);
}

static tt_ref permuted(const tt_ref *x, const int *p) {
    perm pm = {x->ndim, {0}};
    int64_t sizes[TJ_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) {
        pm.p[k] = p[k];
        sizes[k] = x->sizes[p[k]];
    }
    return gather(x, sizes, x->ndim, map_perm, &pm);
}

/* The diagonal of dims a and b, offset k above the main one, as a last dim. */
typedef struct diag { int ndim, a, b; int64_t k; } diag;
static void map_diag(const int64_t *o, int64_t *i, const void *ctx) {
    const diag *g = ctx;
    int64_t j = o[g->ndim - 2]; /* the output's last index walks the diagonal */
    for (int d = 0, m = 0; d < g->ndim; d++)
        i[d] = d == g->a ? j + (g->k < 0 ? -g->k : 0) : d == g->b ? j + (g->k > 0 ? g->k : 0) : o[m++];
}

static tt_ref diagonal(const tt_ref *x, int a, int b, int64_t k) {
    int64_t sizes[TJ_MAX_DIMS], na = x->sizes[a], nb = x->sizes[b], len = 0;
    int n = 0;
    for (int d = 0; d < x->ndim; d++)
        if (d != a && d != b) sizes[n++] = x->sizes[d];
    while (len + (k < 0 ? -k : 0) < na && len + (k > 0 ? k : 0) < nb) len++;
    sizes[n++] = len;
    diag g = {x->ndim, a, b, k};
    return gather(x, sizes, n, map_diag, &g);
}

/* Pieces of dim d with the given lengths. */
static int pieces(const tt_ref *x, int d, const int64_t *len, int n, tt_ref *out) {
    int64_t at = 0;
    for (int k = 0; k < n; k++) {
        out[k] = part(x, d, at, len[k], 1);
        at += len[k];
    }
    return n;
}

/* Zeros of sizes with x written at dim's positions start, start + step, ...
 * (drop: x lacks dim; select_backward and slice_backward). */
static tt_ref placed(const tt_ref *x, const int64_t *sizes, int ndim, int dim, int64_t start,
                     int64_t step, bool drop) {
    tt_ref r = tt_ref_new(sizes, ndim);
    if (r.numel == 0) return r;
    int64_t o[TJ_MAX_DIMS] = {0}, k = 0;
    do {
        int64_t off = o[dim] - start, lin = 0;
        bool in = off >= 0 && off % step == 0 && (drop ? off == 0 : off / step < x->sizes[dim]);
        for (int d = 0, j = 0; in && d < ndim; d++) {
            if (d == dim && drop) continue;
            lin = lin * x->sizes[j++] + (d == dim ? off / step : o[d]);
        }
        r.v[k++] = in ? x->v[lin] : 0;
    } while (tt_next_index(o, sizes, ndim));
    return r;
}

/* The reference of one case; returns the number of outputs. */
static int reference(const vcase *k, const tt_ref *x, tt_ref *out) {
    const char *op = k->op;
    int nd = x->ndim;
    int64_t sz[TJ_MAX_DIMS + 1], len[MAXP];
    int n = 0;
    if (!strcmp(op, "aten::view") || !strcmp(op, "aten::reshape")) {
        int64_t prod = 1;
        for (int i = 0; i < k->n_list; i++) prod *= k->list[i] == -1 ? 1 : k->list[i];
        for (int i = 0; i < k->n_list; i++) sz[i] = k->list[i] == -1 ? x->numel / prod : k->list[i];
        out[0] = relabel(x, sz, k->n_list);
    } else if (!strcmp(op, "aten::flatten.using_ints")) {
        int s = wrap(k->p[0], nd), e = wrap(k->p[1], nd);
        for (int d = 0; d < nd; d++) {
            if (d <= s || d > e) sz[n++] = x->sizes[d];
            else sz[n - 1] *= x->sizes[d];
        }
        if (nd == 0) sz[n++] = 1; /* a 0-dim tensor flattens to one element */
        out[0] = relabel(x, sz, n);
    } else if (!strcmp(op, "aten::contiguous")) {
        out[0] = relabel(x, x->sizes, nd);
    } else if (!strcmp(op, "aten::squeeze") || !strcmp(op, "aten::squeeze.dim")) {
        int only = !strcmp(op, "aten::squeeze") ? -1 : wrap(k->p[0], nd);
        for (int d = 0; d < nd; d++)
            if (x->sizes[d] != 1 || (only >= 0 && d != only)) sz[n++] = x->sizes[d];
        out[0] = relabel(x, sz, n);
    } else if (!strcmp(op, "aten::unsqueeze")) {
        int at = wrap(k->p[0], nd + 1);
        for (int d = 0; d <= nd; d++) sz[d] = d < at ? x->sizes[d] : d == at ? 1 : x->sizes[d - 1];
        out[0] = relabel(x, sz, nd + 1);
    } else if (!strcmp(op, "aten::transpose.int") || !strcmp(op, "aten::t")) {
        int p[TJ_MAX_DIMS];
        for (int d = 0; d < nd; d++) p[d] = d;
        int a = !strcmp(op, "aten::t") ? 0 : wrap(k->p[0], nd);
        int b = !strcmp(op, "aten::t") ? (nd == 2) : wrap(k->p[1], nd);
        if (nd > 0) p[a] = b, p[b] = a;
        out[0] = permuted(x, p);
    } else if (!strcmp(op, "aten::permute")) {
        int p[TJ_MAX_DIMS];
        for (int d = 0; d < nd; d++) p[d] = wrap(k->list[d], nd);
        out[0] = permuted(x, p);
    } else if (!strcmp(op, "aten::expand")) {
        for (int i = 0; i < k->n_list; i++) {
            int d = i - (k->n_list - nd);
            sz[i] = k->list[i] == -1 ? x->sizes[d] : k->list[i];
        }
        bcast b = {x, k->n_list};
        out[0] = gather(x, sz, k->n_list, map_bcast, &b);
    } else if (!strcmp(op, "aten::select.int")) {
        int d = wrap(k->p[0], nd);
        out[0] = pick(x, d, k->p[1] < 0 ? k->p[1] + x->sizes[d] : k->p[1]);
    } else if (!strcmp(op, "aten::narrow")) {
        int d = wrap(k->p[0], nd);
        out[0] = part(x, d, k->p[1] < 0 ? k->p[1] + x->sizes[d] : k->p[1], k->p[2], 1);
    } else if (!strcmp(op, "aten::slice.Tensor")) {
        int d = wrap(k->p[0], nd);
        int64_t m = x->sizes[d], s = k->p[1], e = k->p[2], step = k->p[3], cnt = 0;
        s = s < 0 ? (s + m < 0 ? 0 : s + m) : (s > m ? m : s);
        e = e < 0 ? (e + m < 0 ? 0 : e + m) : (e > m ? m : e);
        for (int64_t i = s; i < e; i += (e - i > step ? step : e - i)) cnt++;
        out[0] = part(x, d, s, cnt, cnt > 1 ? step : 1);
    } else if (!strcmp(op, "aten::chunk")) {
        int d = wrap(k->p[1], nd);
        int64_t m = x->sizes[d], each = (m + k->p[0] - 1) / k->p[0];
        if (m == 0) n = (int)k->p[0], memset(len, 0, sizeof len);
        for (int64_t at = 0; at < m; at += each) len[n++] = m - at < each ? m - at : each;
        return pieces(x, d, len, n, out);
    } else if (!strcmp(op, "aten::split.Tensor")) {
        int d = wrap(k->p[1], nd);
        int64_t m = x->sizes[d];
        for (int64_t at = 0; at < m; at += k->p[0]) len[n++] = m - at < k->p[0] ? m - at : k->p[0];
        if (n == 0) len[n++] = 0;
        return pieces(x, d, len, n, out);
    } else if (!strcmp(op, "aten::split_with_sizes")) {
        return pieces(x, wrap(k->p[0], nd), k->list, k->n_list, out);
    } else if (!strcmp(op, "aten::unbind.int")) {
        int d = wrap(k->p[0], nd);
        for (int64_t i = 0; i < x->sizes[d]; i++) out[n++] = pick(x, d, i);
        return n;
    } else if (!strcmp(op, "aten::diagonal")) {
        out[0] = diagonal(x, wrap(k->p[1], nd), wrap(k->p[2], nd), k->p[0]);
    } else if (!strcmp(op, "aten::select_backward")) {
        int d = wrap(k->p[0], k->n_list);
        int64_t m = k->list[d], i = k->p[1] < 0 ? k->p[1] + m : k->p[1];
        out[0] = placed(x, k->list, k->n_list, d, i, 1, true);
    } else if (!strcmp(op, "aten::slice_backward")) {
        int d = wrap(k->p[0], k->n_list);
        int64_t m = k->list[d], s = k->p[1];
        s = s < 0 ? (s + m < 0 ? 0 : s + m) : (s > m ? m : s);
        out[0] = placed(x, k->list, k->n_list, d, s, k->p[3] < m ? k->p[3] : m > 0 ? m : 1, false);
    } else if (!strcmp(op, "aten::new_zeros")) {
        out[0] = tt_ref_new(k->list, k->n_list);
        memset(out[0].v, 0, sizeof(double) * (size_t)out[0].numel);
    } else {
        fail_msg("no reference for %s", op);
    }
    return 1;
}

/* ---- calls --------------------------------------------------------------------- */

static int one(tj_tensor *t, tj_tensor **out) {
    out[0] = t;
    return t ? 1 : -1;
}

static int call(const vcase *k, tj_tensor *x, tj_tensor **o) {
    const char *op = k->op;
    const int64_t *l = k->list, *p = k->p;
    int n = k->n_list;
    if (!strcmp(op, "aten::view")) return one(tj_view(x, l, n), o);
    if (!strcmp(op, "aten::reshape")) return one(tj_reshape(x, l, n), o);
    if (!strcmp(op, "aten::flatten.using_ints")) return one(tj_flatten(x, p[0], p[1]), o);
    if (!strcmp(op, "aten::contiguous")) return one(tj_contiguous(x), o);
    if (!strcmp(op, "aten::squeeze")) return one(tj_squeeze(x), o);
    if (!strcmp(op, "aten::squeeze.dim")) return one(tj_squeeze_dim(x, p[0]), o);
    if (!strcmp(op, "aten::unsqueeze")) return one(tj_unsqueeze(x, p[0]), o);
    if (!strcmp(op, "aten::transpose.int")) return one(tj_transpose(x, p[0], p[1]), o);
    if (!strcmp(op, "aten::t")) return one(tj_t(x), o);
    if (!strcmp(op, "aten::permute")) return one(tj_permute(x, l, n), o);
    if (!strcmp(op, "aten::expand")) return one(tj_expand(x, l, n), o);
    if (!strcmp(op, "aten::select.int")) return one(tj_select(x, p[0], p[1]), o);
    if (!strcmp(op, "aten::narrow")) return one(tj_narrow(x, p[0], p[1], p[2]), o);
    if (!strcmp(op, "aten::slice.Tensor")) return one(tj_slice(x, p[0], p[1], p[2], p[3]), o);
    if (!strcmp(op, "aten::chunk")) return tj_chunk(x, p[0], p[1], o, MAXP);
    if (!strcmp(op, "aten::split.Tensor")) return tj_split(x, p[0], p[1], o, MAXP);
    if (!strcmp(op, "aten::split_with_sizes")) return tj_split_with_sizes(x, l, n, p[0], o, MAXP);
    if (!strcmp(op, "aten::unbind.int")) return tj_unbind(x, p[0], o, MAXP);
    if (!strcmp(op, "aten::diagonal")) return one(tj_diagonal(x, p[0], p[1], p[2]), o);
    if (!strcmp(op, "aten::select_backward")) return one(tj_select_backward(x, l, n, p[0], p[1]), o);
    if (!strcmp(op, "aten::slice_backward"))
        return one(tj_slice_backward(x, l, n, p[0], p[1], p[2], p[3]), o);
    if (!strcmp(op, "aten::new_zeros")) return one(tj_new_zeros(x, l, n), o);
    fail_msg("no call for %s", op);
    return -1;
}

/* Ops that may copy; every other op of the table must alias its input,
 * but for those that always make a new tensor. */
static bool may_copy(const char *op) {
    return !strcmp(op, "aten::reshape") || !strcmp(op, "aten::flatten.using_ints") ||
           !strcmp(op, "aten::contiguous");
}
static bool always_new(const char *op) {
    return !strcmp(op, "aten::select_backward") || !strcmp(op, "aten::slice_backward") ||
           !strcmp(op, "aten::new_zeros");
}

/* ---- inputs ------------------------------------------------------------------------ */

static tj_generator *gen;

/* A random tensor of the given sizes in one of three layouts. */
static tj_tensor *make_input(const int64_t *sizes, int ndim, tj_dtype dt, int layout) {
    if (layout == STRIDED) {
        tj_tensor *c = tt_random(gen, sizes, ndim, dt, -5, 5);
        tj_tensor *t = tt_noncontiguous(gen, c);
        tj_release(c);
        return t;
    }
    if (layout == TRANSPOSED) { /* dims stored in reverse order */
        int64_t rs[TJ_MAX_DIMS], p[TJ_MAX_DIMS];
        for (int d = 0; d < ndim; d++) rs[d] = sizes[ndim - 1 - d], p[d] = ndim - 1 - d;
        tj_tensor *c = tt_random(gen, rs, ndim, dt, -5, 5);
        tj_tensor *t = tj_permute(c, p, ndim);
        tj_release(c);
        assert_non_null(t);
        return t;
    }
    return tt_random(gen, sizes, ndim, dt, -5, 5);
}

static int setup(void **state) {
    (void)state;
    gen = tj_generator_new(1234);
    return gen ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    tj_generator_free(gen);
    return 0;
}

static void release_all(tj_tensor **t, int n) {
    for (int i = 0; i < n; i++) tj_release(t[i]);
}

static void free_refs(tt_ref *r, int n) {
    for (int i = 0; i < n; i++) tt_ref_free(&r[i]);
}

/* Does a view of x with these sizes exist? (reshape and flatten alias then) */
static bool viewable(tj_tensor *x, const tt_ref *shape) {
    tj_tensor *v = tj_view(x, shape->sizes, shape->ndim);
    tj_release(v);
    tj_clear_error();
    return v != NULL;
}

static void check_alias(const vcase *k, tj_tensor *x, tj_tensor *out, const tt_ref *r) {
    bool alias = tj_shares_storage(out, x);
    if (always_new(k->op)) assert_false(alias);
    else if (!strcmp(k->op, "aten::contiguous")) assert_int_equal(alias, tj_is_contiguous(x));
    else if (may_copy(k->op)) assert_int_equal(alias, viewable(x, r));
    else assert_true(alias);
    if (alias) assert_int_equal(tj_tensor_dtype(out), tj_tensor_dtype(x));
}

/* ---- the value tests, one per op ----------------------------------------------------- */

static void run_case(const vcase *k, tj_dtype dt, int layout) {
    tj_tensor *x = make_input(k->sizes, k->ndim, dt, layout);
    tt_ref xr = tt_ref_of(x), want[MAXP];
    tj_tensor *got[MAXP];
    int n = call(k, x, got);
    if (n < 0 && !strcmp(k->op, "aten::view") && layout != CONTIG) {
        /* a view of a transposed input may not exist; reshape then copies */
        tt_assert_error("view size is not compatible with input tensor's size and stride");
        tj_clear_error();
    } else {
        if (n < 0) fail_msg("%s: %s", k->op, tj_last_error());
        int nw = reference(k, &xr, want);
        assert_int_equal(n, nw);
        for (int i = 0; i < n; i++) {
            assert_int_equal(tj_tensor_dtype(got[i]), dt);
            tt_assert_close_ref(got[i], &want[i], 0, 0);
            check_alias(k, x, got[i], &want[i]);
        }
        free_refs(want, nw);
        release_all(got, n);
    }
    tt_ref_free(&xr);
    tj_release(x);
}

static void test_op_values(void **state) {
    const char *op = *state;
    int found = 0;
    for (int c = 0; c < N_CASES; c++) {
        if (strcmp(cases[c].op, op)) continue;
        found++;
        for (size_t d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
            for (int l = 0; l < N_LAYOUTS; l++) run_case(&cases[c], dtypes[d], l);
    }
    assert_true(found > 0);
}

/* ---- aliasing: writes go both ways ------------------------------------------------ */

/* base holds its own row-major positions, so a reference of the op over it
 * says which base element each output element reads. */
static tj_tensor *positions(const int64_t *sizes, int ndim, int layout) {
    tj_tensor *t = make_input(sizes, ndim, TJ_F64, layout);
    tj_tensor *r = tj_arange(0, (double)tj_numel(t), 1, TJ_F64);
    tj_tensor *v = tj_view(r, sizes, ndim), *done = tj_copy_(t, v);
    assert_non_null(done);
    tj_release(done), tj_release(v), tj_release(r);
    return t;
}

static void alias_case(const vcase *k, int layout) {
    tj_tensor *x = positions(k->sizes, k->ndim, layout), *got[MAXP];
    tt_ref want[MAXP], xr = tt_ref_of(x);
    int n = call(k, x, got);
    if (n < 0) { /* only a view of a transposed input may be refused */
        assert_true(!strcmp(k->op, "aten::view") && layout != CONTIG);
        tj_clear_error();
        tt_ref_free(&xr);
        tj_release(x);
        return;
    }
    int nw = reference(k, &xr, want);
    assert_int_equal(n, nw);
    /* writes through each output add 1000 * (output number + 1) to the base
     * elements it covers; an expanded view covers some twice, so it is only read */
    bool expand = !strcmp(k->op, "aten::expand");
    double *delta = calloc((size_t)(xr.numel ? xr.numel : 1), sizeof(double));
    assert_non_null(delta);
    for (int i = 0; i < n && !expand; i++) {
        double add = 1000.0 * (i + 1);
        tj_tensor *r = tj_add_scalar_(got[i], add, 1.0);
        assert_non_null(r);
        tj_release(r);
        if (tj_shares_storage(got[i], x))
            for (int64_t e = 0; e < want[i].numel; e++) delta[(int64_t)want[i].v[e]] += add;
    }
    tt_ref now = tt_ref_of(x);
    for (int64_t e = 0; e < xr.numel; e++) assert_true(now.v[e] == (double)e + delta[e]);
    /* and a write to the base shows through every output that aliases it */
    tj_tensor *r = tj_mul_scalar_(x, -1.0);
    tj_release(r);
    tt_ref_free(&now);
    now = tt_ref_of(x);
    tt_ref again[MAXP];
    reference(k, &now, again);
    for (int i = 0; i < n; i++)
        if (tj_shares_storage(got[i], x)) tt_assert_close_ref(got[i], &again[i], 0, 0);
    free_refs(again, n);
    free_refs(want, n);
    tt_ref_free(&now);
    tt_ref_free(&xr);
    free(delta);
    release_all(got, n);
    tj_release(x);
}

static void test_aliasing(void **state) {
    (void)state;
    for (int c = 0; c < N_CASES; c++)
        for (int l = 0; l < N_LAYOUTS; l++) alias_case(&cases[c], l);
}

/* When reshape, flatten and contiguous alias, in PyTorch's terms. */
static void test_copy_or_alias(void **state) {
    (void)state;
    int64_t s34[] = {3, 4}, s12[] = {12}, s43[] = {4, 3};
    tj_tensor *x = tj_zeros(s34, 2, TJ_F32), *xt = tj_t(x), *y;
    /* contiguous: aliases */
    y = tj_reshape(x, s12, 1), assert_true(tj_shares_storage(y, x)), tj_release(y);
    y = tj_flatten(x, 0, -1), assert_true(tj_shares_storage(y, x)), tj_release(y);
    y = tj_contiguous(x), assert_true(tj_shares_storage(y, x)), tj_release(y);
    /* transposed: copies, and the copy is contiguous */
    y = tj_reshape(xt, s12, 1), assert_false(tj_shares_storage(y, x)), tj_release(y);
    y = tj_flatten(xt, 0, -1), assert_false(tj_shares_storage(y, x)), tj_release(y);
    y = tj_contiguous(xt);
    assert_false(tj_shares_storage(y, x));
    assert_true(tj_is_contiguous(y));
    tj_release(y);
    /* but a transposed tensor read in its own shape is still a view */
    y = tj_reshape(xt, s43, 2), assert_true(tj_shares_storage(y, x)), tj_release(y);
    /* a strided slice flattens into a view with stride 2 */
    tj_tensor *sl = tj_slice(x, 1, 0, BIG, 2);
    y = tj_flatten(sl, 0, -1);
    assert_true(tj_shares_storage(y, x));
    assert_int_equal(tj_strides(y)[0], 2);
    tj_release(y), tj_release(sl);
    /* expand keeps stride 0 and new leading dims */
    int64_t s1[] = {3, 1}, e[] = {2, 3, 5};
    tj_tensor *col = tj_zeros(s1, 2, TJ_F64), *ex = tj_expand(col, e, 3);
    assert_int_equal(tj_strides(ex)[2], 0);
    assert_int_equal(tj_strides(ex)[0], 0);
    tj_release(ex), tj_release(col);
    tj_release(xt), tj_release(x);
}

/* Strides and offsets of views are PyTorch's, not just any that read the
 * right values: code generators and the IR printer see them. */
static void expect_geometry(tj_tensor *t, const int64_t *sizes, const int64_t *strides, int ndim,
                            int64_t offset) {
    assert_non_null(t);
    tt_assert_sizes(t, sizes, ndim);
    for (int d = 0; d < ndim; d++) assert_int_equal(tj_strides(t)[d], strides[d]);
    assert_int_equal(tj_storage_offset(t), offset);
    tj_release(t);
}
#define L(...) ((const int64_t[]){__VA_ARGS__})

static void test_strides(void **state) {
    (void)state;
    tj_tensor *x = tj_zeros(L(2, 3, 4), 3, TJ_F32), *c = tj_zeros(L(3, 1), 2, TJ_F32), *o[MAXP];
    expect_geometry(tj_unsqueeze(x, 1), L(2, 1, 3, 4), L(12, 12, 4, 1), 4, 0);
    expect_geometry(tj_unsqueeze(x, 3), L(2, 3, 4, 1), L(12, 4, 1, 1), 4, 0);
    expect_geometry(tj_expand(c, L(1, 3, 1), 3), L(1, 3, 1), L(3, 1, 1), 3, 0);
    expect_geometry(tj_expand(c, L(2, 3, 5), 3), L(2, 3, 5), L(0, 1, 0), 3, 0);
    expect_geometry(tj_transpose(x, 0, 2), L(4, 3, 2), L(1, 4, 12), 3, 0);
    expect_geometry(tj_permute(x, L(1, 2, 0), 3), L(3, 4, 2), L(4, 1, 12), 3, 0);
    expect_geometry(tj_select(x, 1, 2), L(2, 4), L(12, 1), 2, 8);
    expect_geometry(tj_narrow(x, 2, 1, 2), L(2, 3, 2), L(12, 4, 1), 3, 1);
    expect_geometry(tj_slice(x, 2, 1, BIG, 2), L(2, 3, 2), L(12, 4, 2), 3, 1);
    expect_geometry(tj_view(x, L(6, 4), 2), L(6, 4), L(4, 1), 2, 0);
    tj_tensor *u = tj_unsqueeze(x, 0);
    expect_geometry(tj_squeeze(u), L(2, 3, 4), L(12, 4, 1), 3, 0);
    tj_release(u);
    tj_tensor *xt = tj_transpose(x, 1, 2); /* [2, 4, 3] strides [12, 1, 4] */
    expect_geometry(tj_view(xt, L(2, 2, 2, 3), 4), L(2, 2, 2, 3), L(12, 2, 1, 4), 4, 0);
    expect_geometry(tj_flatten(xt, 1, 2), L(2, 12), L(12, 1), 2, 0); /* a copy */
    tj_release(xt);
    int n = tj_chunk(x, 2, 2, o, MAXP);
    assert_int_equal(n, 2);
    expect_geometry(o[0], L(2, 3, 2), L(12, 4, 1), 3, 0);
    expect_geometry(o[1], L(2, 3, 2), L(12, 4, 1), 3, 2);
    n = tj_unbind(x, 1, o, MAXP);
    assert_int_equal(n, 3);
    for (int i = 0; i < 3; i++) expect_geometry(o[i], L(2, 4), L(12, 1), 2, 4 * i);
    tj_release(x), tj_release(c);
}

/* ---- chunk and split sizes ------------------------------------------------------------- */

static void expect_pieces(int n, tj_tensor **out, int dim, const int64_t *sizes, int count) {
    assert_int_equal(n, count);
    for (int i = 0; i < n; i++) assert_int_equal(tj_size(out[i], dim), sizes[i]);
    release_all(out, n);
}

static void test_chunk_split_sizes(void **state) {
    (void)state;
    tj_tensor *out[MAXP];
    int64_t s5[] = {5}, s6[] = {6}, s0[] = {0}, s7[] = {2, 7};
    tj_tensor *a = tj_zeros(s5, 1, TJ_F32), *b = tj_zeros(s6, 1, TJ_F32);
    tj_tensor *z = tj_zeros(s0, 1, TJ_F32), *m = tj_zeros(s7, 2, TJ_F32);
    expect_pieces(tj_chunk(a, 3, 0, out, MAXP), out, 0, (int64_t[]){2, 2, 1}, 3);
    expect_pieces(tj_chunk(b, 4, 0, out, MAXP), out, 0, (int64_t[]){2, 2, 2}, 3);
    expect_pieces(tj_chunk(b, 5, 0, out, MAXP), out, 0, (int64_t[]){2, 2, 2}, 3);
    expect_pieces(tj_chunk(a, 5, 0, out, MAXP), out, 0, (int64_t[]){1, 1, 1, 1, 1}, 5);
    expect_pieces(tj_chunk(z, 3, 0, out, MAXP), out, 0, (int64_t[]){0, 0, 0}, 3);
    expect_pieces(tj_chunk(m, 3, 1, out, MAXP), out, 1, (int64_t[]){3, 3, 1}, 3);
    expect_pieces(tj_split(a, 2, 0, out, MAXP), out, 0, (int64_t[]){2, 2, 1}, 3);
    expect_pieces(tj_split(a, 7, 0, out, MAXP), out, 0, (int64_t[]){5}, 1);
    expect_pieces(tj_split(z, 0, 0, out, MAXP), out, 0, (int64_t[]){0}, 1);
    expect_pieces(tj_split(m, 2, -1, out, MAXP), out, 1, (int64_t[]){2, 2, 2, 1}, 4);
    expect_pieces(tj_split_with_sizes(a, (int64_t[]){1, 0, 4}, 3, 0, out, MAXP), out, 0,
                  (int64_t[]){1, 0, 4}, 3);
    expect_pieces(tj_unbind(m, 1, out, MAXP), out, 0, (int64_t[]){2, 2, 2, 2, 2, 2, 2}, 7);
    tj_release(a), tj_release(b), tj_release(z), tj_release(m);
}

/* ---- cat and stack --------------------------------------------------------------------- */

/* out[..., o, ...] along dim comes from the input whose block holds o. */
static tt_ref cat_ref(const tt_ref *in, int n, int dim) {
    int64_t sizes[TJ_MAX_DIMS];
    memcpy(sizes, in[0].sizes, sizeof sizes);
    int nd = in[0].ndim;
    sizes[dim] = 0;
    for (int i = 0; i < n; i++) sizes[dim] += in[i].sizes[dim];
    tt_ref r = tt_ref_new(sizes, nd);
    if (!r.numel) return r;
    int64_t o[TJ_MAX_DIMS] = {0}, e = 0;
    do {
        int64_t at = o[dim];
        int i = 0;
        for (; at >= in[i].sizes[dim]; i++) at -= in[i].sizes[dim];
        int64_t lin = 0;
        for (int d = 0; d < nd; d++) lin = lin * in[i].sizes[d] + (d == dim ? at : o[d]);
        r.v[e++] = in[i].v[lin];
    } while (tt_next_index(o, sizes, nd));
    return r;
}

typedef struct cat_case { int n, ndim; int64_t sizes[4][3]; int dim; } cat_case;

static void test_cat(void **state) {
    (void)state;
    static const cat_case cc[] = {
        {3, 2, {{2, 3}, {2, 4}, {2, 0}}, 1}, {3, 2, {{2, 3}, {2, 4}, {2, 1}}, -1},
        {3, 2, {{1, 3}, {3, 3}, {0, 3}}, 0}, {2, 3, {{2, 1, 2}, {2, 2, 2}}, 1},
        {1, 1, {{5}}, 0},                    {3, 1, {{2}, {0}, {3}}, 0},
        {2, 2, {{0, 3}, {0, 3}}, 0},         {2, 2, {{64, 600}, {64, 424}}, 1},
    };
    for (size_t c = 0; c < sizeof cc / sizeof cc[0]; c++)
        for (size_t di = 0; di < 4; di++)
            for (int l = 0; l < N_LAYOUTS; l++) {
                /* mixed dtypes: the second input takes the next dtype */
                tj_tensor *in[4];
                tt_ref r[4];
                tj_dtype want = dtypes[di];
                for (int i = 0; i < cc[c].n; i++) {
                    tj_dtype d = dtypes[(di + (l == STRIDED && i == 1)) % 4];
                    want = i ? tjc_promote(want, d) : d;
                    in[i] = make_input(cc[c].sizes[i], cc[c].ndim, d, (l + i) % N_LAYOUTS);
                    r[i] = tt_ref_of(in[i]);
                }
                tj_tensor *out = tj_cat(in, cc[c].n, cc[c].dim);
                tt_ref w = cat_ref(r, cc[c].n, wrap(cc[c].dim, cc[c].ndim));
                assert_non_null(out);
                assert_int_equal(tj_tensor_dtype(out), want);
                tt_assert_close_ref(out, &w, 0, 0);
                tt_ref_free(&w);
                tj_release(out);
                free_refs(r, cc[c].n);
                release_all(in, cc[c].n);
            }
    /* legacy 1-D empty tensors are skipped beside tensors of any rank */
    int64_t s23[] = {2, 3}, s0[] = {0};
    tj_tensor *a = tj_ones(s23, 2, TJ_F32), *e = tj_zeros(s0, 1, TJ_I64);
    tj_tensor *in[] = {e, a, e, a}, *out = tj_cat(in, 4, 1);
    assert_non_null(out);
    tt_assert_sizes(out, ((int64_t[]){2, 6}), 2);
    assert_int_equal(tj_tensor_dtype(out), TJ_F32);
    tj_release(out);
    tj_tensor *ee[] = {e, e};
    out = tj_cat(ee, 2, 0);
    tt_assert_sizes(out, s0, 1);
    tj_release(out), tj_release(a), tj_release(e);
}

static void test_stack(void **state) {
    (void)state;
    static const int64_t shapes[][3] = {{2, 3, 0}, {0, 3, 0}, {4, 0, 0}};
    static const int nds[] = {2, 2, 0};
    for (int s = 0; s < 3; s++)
        for (int dim = -nds[s] - 1; dim <= nds[s]; dim++)
            for (size_t di = 0; di < 4; di++)
                for (int l = 0; l < N_LAYOUTS; l++) {
                    tj_tensor *in[3], *u[3];
                    tt_ref r[3];
                    for (int i = 0; i < 3; i++) {
                        in[i] = make_input(shapes[s], nds[s], dtypes[(di + (i == 2)) % 4],
                                           (l + i) % N_LAYOUTS);
                        u[i] = tj_unsqueeze(in[i], dim);
                        r[i] = tt_ref_of(u[i]);
                    }
                    /* stack is cat of the inputs each given a new dim */
                    tt_ref w = cat_ref(r, 3, wrap(dim, nds[s] + 1));
                    tj_tensor *out = tj_stack(in, 3, dim);
                    assert_non_null(out);
                    assert_int_equal(tj_tensor_dtype(out),
                                     tjc_promote(dtypes[di], dtypes[(di + 1) % 4]));
                    tt_assert_close_ref(out, &w, 0, 0);
                    tt_ref_free(&w);
                    tj_release(out);
                    free_refs(r, 3);
                    release_all(u, 3);
                    release_all(in, 3);
                }
}

/* ---- coverage of the op table ----------------------------------------------------------- */

/* the scatters are in test_scatter.c */
static const char *const own_tests[] = {"aten::cat", "aten::stack", "aten::select_scatter",
                                        "aten::slice_scatter", "aten::diagonal_scatter",
                                        "aten::as_strided_scatter", "aten::as_strided_copy"};

static bool has_cases(const char *op) {
    for (int c = 0; c < N_CASES; c++)
        if (!strcmp(cases[c].op, op)) return true;
    for (size_t i = 0; i < sizeof own_tests / sizeof own_tests[0]; i++)
        if (!strcmp(own_tests[i], op)) return true;
    return false;
}

static void test_every_op_has_cases(void **state) {
    (void)state;
    int n = 0;
    for (int id = 0; id < tj_op_count(); id++) {
        const tj_op_info *op = tj_op_at(id);
        tj_op_kind k = tj_op_kind_of(op);
        if (k != TJ_KIND_VIEW && k != TJ_KIND_SHAPE) continue;
        n++;
        if (!has_cases(tj_op_name(op))) fail_msg("%s has no test case in test_view.c", tj_op_name(op));
        /* views alias input 0, which their schema must say */
        if (k == TJ_KIND_VIEW) assert_true(tj_op_schema(op)->aliases_self);
    }
    assert_true(n >= 20);
}

int main(void) {
    struct CMUnitTest tests[64];
    int n = 0;
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_every_op_has_cases);
    for (int id = 0; id < tj_op_count() && n < 56; id++) {
        const tj_op_info *op = tj_op_at(id);
        tj_op_kind k = tj_op_kind_of(op);
        bool own = false;
        for (size_t i = 0; i < sizeof own_tests / sizeof own_tests[0]; i++)
            own = own || !strcmp(own_tests[i], tj_op_name(op));
        if ((k == TJ_KIND_VIEW || k == TJ_KIND_SHAPE) && has_cases(tj_op_name(op)) && !own)
            tests[n++] = (struct CMUnitTest){tj_op_name(op), test_op_values, NULL, NULL,
                                             (void *)tj_op_name(op)};
    }
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_aliasing);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_copy_or_alias);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_strides);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_chunk_split_sizes);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_cat);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_stack);
    return _cmocka_run_group_tests("view", tests, (size_t)n, setup, teardown);
}
