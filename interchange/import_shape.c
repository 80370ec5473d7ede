/* import_shape.c — import rules of ONNX's shape and indexing ops: Reshape,
 * Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split, Slice, Expand,
 * Tile, Pad (constant), Shape, Size, ConstantOfShape, Gather, GatherElements,
 * ScatterElements (add), DepthToSpace, SpaceToDepth. Sizes, axes and
 * indices that tjit takes as attributes must be constants of the model;
 * negative indices given at run time are wrapped with where(). */
#include <string.h>

#include "tjo.h"


static int rank(const tjo_val *v) { return v->type.ndim; }

static tjo_val *permute(tjo_importer *im, tjo_val *x, const int64_t *perm, int n) {
    if (!x) return NULL;
    tj_attr a = {.ints = {perm, n}};
    tjo_val *in[1] = {x};
    return tjo_emit1(im, TJ_OP_permute, in, 1, &a);
}

/* The axes of an op: an attribute before opset 13 (before 18 for some), an
 * input after; *given false when neither is there. */
static bool axes_of(tjo_importer *im, int input, int64_t *axes, int *n, bool *given) {
    const int64_t *a;
    int k;
    if (!tjo_attr_ints(im, "axes", &a, &k)) return false;
    *given = a != NULL || tjo_has_input(im, input);
    *n = 0;
    if (a) {
        if (k > TJ_MAX_DIMS) return tjo_unsupported(im, "attribute 'axes': %d axes", k), false;
        memcpy(axes, a, sizeof *a * (size_t)k);
        *n = k;
        return true;
    }
    if (tjo_has_input(im, input)) return tjo_const_ints(im, input, "axes", axes, n, TJ_MAX_DIMS);
    return true;
}

static tj_status import_reshape(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 2, 2);
    if (st) return st;
    int64_t shape[TJ_MAX_DIMS], allowzero;
    int n;
    if (!tjo_attr_int(im, "allowzero", 0, &allowzero) ||
        !tjo_const_ints(im, 1, "shape", shape, &n, TJ_MAX_DIMS))
        TJO_FAIL();
    const tj_type *t = &im->in[0]->type;
    int64_t numel = 1, known = 1;
    int infer = -1;
    for (int d = 0; d < t->ndim; d++) numel *= t->sizes[d];
    for (int d = 0; d < n; d++) {
        if (shape[d] == 0 && !allowzero) {
            if (d >= t->ndim) return tjo_node_error(im, TJ_ERR_SHAPE, "shape[%d] copies a dim the input lacks", d);
            shape[d] = t->sizes[d];
        }
        if (shape[d] == -1) {
            if (infer >= 0) return tjo_node_error(im, TJ_ERR_SHAPE, "shape has two -1 entries");
            infer = d;
        } else if (shape[d] < 0 || shape[d] > (INT64_C(1) << 31)) {
            return tjo_node_error(im, TJ_ERR_SHAPE, "shape[%d] is %lld", d, (long long)shape[d]);
        } else {
            known = shape[d] && known > TJO_MAX_NUMEL / shape[d] ? TJO_MAX_NUMEL + 1 : known * shape[d];
        }
    }
    if (infer >= 0) shape[infer] = known ? numel / known : 0;
    if (!tjo_check_sizes(im, shape, n, "shape")) TJO_FAIL();
    out[0] = tjo_reshape(im, im->in[0], shape, n);
    if (out[0] == im->in[0]) out[0] = tjo_unary(im, TJ_OP_clone, out[0]);
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status import_flatten(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 1);
    if (st) return st;
    int64_t axis;
    int r = rank(im->in[0]), ax;
    if (!tjo_attr_int(im, "axis", 1, &axis)) TJO_FAIL();
    if (axis == r) ax = r;
    else if (!tjo_axis(im, axis, r, "axis", &ax)) TJO_FAIL();
    int64_t sizes[2] = {1, 1};
    for (int d = 0; d < r; d++) sizes[d < ax] *= im->in[0]->type.sizes[d];
    int64_t outer = sizes[1], inner = sizes[0];
    int64_t shape[2] = {outer, inner};
    if (ax == 1 && r >= 2) {
        tj_attr a[2] = {{.i = 1}, {.i = -1}};
        tjo_val *in[1] = {im->in[0]};
        out[0] = tjo_emit1(im, TJ_OP_flatten, in, 1, a);
        if (out[0] == im->in[0]) out[0] = tjo_unary(im, TJ_OP_clone, out[0]);
    } else {
        out[0] = tjo_reshape(im, im->in[0], shape, 2);
        if (out[0] == im->in[0]) out[0] = tjo_unary(im, TJ_OP_clone, out[0]);
    }
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status import_squeeze(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    bool unsq = im->node->op_type[0] == 'U';
    tj_status st = tjo_need_inputs(im, 1, 2);
    if (st) return st;
    int64_t axes[TJ_MAX_DIMS];
    int n;
    bool given;
    if (!axes_of(im, 1, axes, &n, &given)) TJO_FAIL();
    tjo_val *x = im->in[0];
    int r = rank(x), out_rank = unsq ? r + n : r;
    bool pick[TJ_MAX_DIMS + 1] = {0};
    if (unsq && !given) return tjo_node_error(im, TJ_ERR_PARSE, "axes are required");
    if (out_rank > TJ_MAX_DIMS) return tjo_unsupported(im, "the result has %d dims", out_rank);
    for (int k = 0; k < n; k++) {
        int a;
        if (!tjo_axis(im, axes[k], out_rank, "axes entry", &a)) TJO_FAIL();
        if (pick[a]) return tjo_node_error(im, TJ_ERR_PARSE, "axis %d is repeated", a);
        if (!unsq && x->type.sizes[a] != 1)
            return tjo_node_error(im, TJ_ERR_SHAPE, "axis %d has size %lld, not 1", a,
                                  (long long)x->type.sizes[a]);
        pick[a] = true;
    }
    if (!given) /* every dim of size 1 */
        for (int d = 0; d < r; d++) pick[d] = x->type.sizes[d] == 1;
    tjo_val *y = x;
    if (unsq) {
        for (int d = 0; d < out_rank; d++) {
            if (!pick[d]) continue;
            tj_attr a = {.i = d};
            tjo_val *in[1] = {y};
            TJO_NEED(y = tjo_emit1(im, TJ_OP_unsqueeze, in, 1, &a));
        }
    } else {
        for (int d = r - 1; d >= 0; d--) {
            if (!pick[d]) continue;
            tj_attr a = {.i = d};
            tjo_val *in[1] = {y};
            TJO_NEED(y = tjo_emit1(im, TJ_OP_squeeze_dim, in, 1, &a));
        }
    }
    out[0] = y == x ? tjo_unary(im, TJ_OP_clone, x) : y;
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status import_transpose(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 1);
    if (st) return st;
    const int64_t *p;
    int n, r = rank(im->in[0]);
    int64_t perm[TJ_MAX_DIMS];
    if (!tjo_attr_ints(im, "perm", &p, &n)) TJO_FAIL();
    if (p && n != r) return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'perm': %d entries for rank %d", n, r);
    int moved[2], n_moved = 0;
    for (int d = 0; d < r; d++) {
        perm[d] = p ? p[d] : r - 1 - d;
        if (perm[d] != d && n_moved < 2) moved[n_moved] = d;
        if (perm[d] != d) n_moved++;
    }
    if (n_moved == 2 && perm[moved[0]] == moved[1] && perm[moved[1]] == moved[0]) { /* a swap */
        tj_attr a[2] = {{.i = moved[0]}, {.i = moved[1]}};
        tjo_val *in[1] = {im->in[0]};
        out[0] = tjo_emit1(im, TJ_OP_transpose, in, 1, a);
        return out[0] ? TJ_OK : tj_last_status();
    }
    out[0] = permute(im, im->in[0], perm, r);
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status import_concat(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 64);
    if (st) return st;
    int64_t axis;
    int ax;
    if (!tjo_attr_int(im, "axis", INT64_MIN, &axis)) TJO_FAIL();
    if (axis == INT64_MIN) return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'axis' is required");
    if (!tjo_axis(im, axis, rank(im->in[0]), "axis", &ax)) TJO_FAIL();
    for (int i = 0; i < im->n_in; i++)
        if (!im->in[i]) return tjo_node_error(im, TJ_ERR_PARSE, "input[%d] is empty", i);
    tj_attr a = {.i = ax};
    out[0] = tjo_emit1(im, TJ_OP_cat, im->in, im->n_in, &a);
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status import_split(tjo_importer *im, tjo_val **out, int n_out) {
    tj_status st = tjo_need_inputs(im, 1, 2);
    if (st) return st;
    int64_t axis, sizes[64];
    int ax, n = 0;
    if (!tjo_attr_int(im, "axis", 0, &axis) || !tjo_axis(im, axis, rank(im->in[0]), "axis", &ax)) TJO_FAIL();
    const int64_t *attr;
    if (!tjo_attr_ints(im, "split", &attr, &n)) TJO_FAIL();
    int64_t dim = im->in[0]->type.sizes[ax];
    if (attr) {
        if (n > 64) return tjo_unsupported(im, "%d pieces", n);
        memcpy(sizes, attr, sizeof *attr * (size_t)n);
    } else if (tjo_has_input(im, 1)) {
        if (!tjo_const_ints(im, 1, "split", sizes, &n, 64)) TJO_FAIL();
    } else {
        if (dim % n_out) return tjo_node_error(im, TJ_ERR_SHAPE, "%lld does not split into %d equal parts", (long long)dim, n_out);
        n = n_out;
        for (int k = 0; k < n; k++) sizes[k] = dim / n_out;
    }
    if (n != n_out) return tjo_node_error(im, TJ_ERR_PARSE, "%d sizes for %d outputs", n, n_out);
    tjo_val *in[1] = {im->in[0]};
    /* the pieces chunk(n) makes: ceil(dim / n) each, the last one what is left */
    int64_t piece = n ? (dim + n - 1) / n : 0;
    bool chunks = piece > 0 && (dim + piece - 1) / piece == n;
    for (int k = 0; chunks && k < n; k++) chunks = sizes[k] == (k < n - 1 ? piece : dim - piece * (n - 1));
    if (chunks) {
        tj_attr c[2] = {{.i = n}, {.i = ax}};
        return tjo_emit(im, TJ_OP_chunk, in, 1, c, out, n_out);
    }
    tj_attr a[2] = {{.ints = {sizes, n}}, {.i = ax}};
    return tjo_emit(im, TJ_OP_split_with_sizes, in, 1, a, out, n_out);
}

static tj_status slice_along(tjo_importer *im, tjo_val **out, const int64_t *starts,
                            const int64_t *ends, const int64_t *axes, const int64_t *steps, int ns);

/* Before opset 10, starts, ends and axes were attributes. */
static tj_status import_slice_attrs(tjo_importer *im, tjo_val **out) {
    if (im->n_in != 1 || !im->in[0]) return tjo_node_error(im, TJ_ERR_PARSE, "expected one input");
    const int64_t *s, *e, *a;
    int ns, ne, na;
    if (!tjo_attr_ints(im, "starts", &s, &ns) || !tjo_attr_ints(im, "ends", &e, &ne) ||
        !tjo_attr_ints(im, "axes", &a, &na))
        TJO_FAIL();
    if (ns != ne || (a && na != ns) || ns > TJ_MAX_DIMS)
        return tjo_node_error(im, TJ_ERR_PARSE, "starts, ends and axes differ in length");
    int64_t axes[TJ_MAX_DIMS], steps[TJ_MAX_DIMS];
    for (int k = 0; k < ns; k++) axes[k] = a ? a[k] : k, steps[k] = 1;
    return slice_along(im, out, s, e, axes, steps, ns);
}

static tj_status import_slice(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = im->opset < 10 ? TJ_OK : tjo_need_inputs(im, 3, 5);
    if (st) return st;
    int64_t starts[TJ_MAX_DIMS], ends[TJ_MAX_DIMS], axes[TJ_MAX_DIMS], steps[TJ_MAX_DIMS];
    int ns, ne, na, nst;
    if (im->opset < 10) return import_slice_attrs(im, out);
    if (!tjo_const_ints(im, 1, "starts", starts, &ns, TJ_MAX_DIMS) ||
        !tjo_const_ints(im, 2, "ends", ends, &ne, TJ_MAX_DIMS))
        TJO_FAIL();
    if (ns != ne) return tjo_node_error(im, TJ_ERR_PARSE, "%d starts and %d ends", ns, ne);
    na = nst = ns;
    for (int k = 0; k < ns; k++) axes[k] = k, steps[k] = 1;
    if (tjo_has_input(im, 3) && !tjo_const_ints(im, 3, "axes", axes, &na, TJ_MAX_DIMS)) TJO_FAIL();
    if (tjo_has_input(im, 4) && !tjo_const_ints(im, 4, "steps", steps, &nst, TJ_MAX_DIMS)) TJO_FAIL();
    if (na != ns || nst != ns) return tjo_node_error(im, TJ_ERR_PARSE, "starts, ends, axes and steps differ in length");
    return slice_along(im, out, starts, ends, axes, steps, ns);
}

static tj_status slice_along(tjo_importer *im, tjo_val **out, const int64_t *starts,
                            const int64_t *ends, const int64_t *axes, const int64_t *steps, int ns) {
    tjo_val *y = im->in[0];
    int r = rank(y);
    for (int k = 0; k < ns; k++) {
        int ax;
        if (!tjo_axis(im, axes[k], r, "axes entry", &ax)) TJO_FAIL();
        if (steps[k] <= 0) return tjo_unsupported(im, "steps[%d] is %lld: tjit slices forward only", k, (long long)steps[k]);
        int64_t dim = im->in[0]->type.sizes[ax], s = starts[k], e = ends[k];
        s = s < 0 ? (s < -dim ? 0 : s + dim) : (s > dim ? dim : s);
        e = e < 0 ? (e < -dim ? 0 : e + dim) : (e > dim ? dim : e);
        if (e < s) e = s;
        tj_attr a[4] = {{.i = ax}, {.i = s}, {.i = e}, {.i = steps[k]}};
        tjo_val *in[1] = {y};
        TJO_NEED(y = tjo_emit1(im, TJ_OP_slice, in, 1, a));
    }
    out[0] = y == im->in[0] ? tjo_unary(im, TJ_OP_clone, y) : y;
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status import_expand(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 2, 2);
    if (st) return st;
    int64_t shape[TJ_MAX_DIMS], res[TJ_MAX_DIMS];
    int n;
    if (!tjo_const_ints(im, 1, "shape", shape, &n, TJ_MAX_DIMS) || !tjo_check_sizes(im, shape, n, "shape")) TJO_FAIL();
    const tj_type *t = &im->in[0]->type;
    int r = n > t->ndim ? n : t->ndim;
    for (int d = 0; d < r; d++) { /* bidirectional broadcasting */
        int di = d - (r - t->ndim), ds = d - (r - n);
        int64_t a = di >= 0 ? t->sizes[di] : 1, b = ds >= 0 ? shape[ds] : 1;
        if (a != b && a != 1 && b != 1)
            return tjo_node_error(im, TJ_ERR_SHAPE, "input dim %lld does not broadcast to %lld", (long long)a, (long long)b);
        res[d] = a == 1 ? b : a;
    }
    if (!tjo_check_sizes(im, res, r, "the expanded sizes")) TJO_FAIL();
    tj_attr a = {.ints = {res, r}};
    tjo_val *in[1] = {im->in[0]};
    out[0] = tjo_emit1(im, TJ_OP_expand, in, 1, &a);
    return out[0] ? TJ_OK : tj_last_status();
}

/* Tile: [d0, d1] by [r0, r1] is [1, d0, 1, d1] expanded to [r0, d0, r1, d1], flattened pairwise. */
static tj_status import_tile(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 2, 2);
    if (st) return st;
    int64_t reps[TJ_MAX_DIMS], inter[2 * TJ_MAX_DIMS], big[2 * TJ_MAX_DIMS], fin[TJ_MAX_DIMS];
    int n, r = rank(im->in[0]);
    if (!tjo_const_ints(im, 1, "repeats", reps, &n, TJ_MAX_DIMS) || !tjo_check_sizes(im, reps, n, "repeats")) TJO_FAIL();
    if (n != r) return tjo_node_error(im, TJ_ERR_PARSE, "%d repeats for rank %d", n, r);
    if (2 * r > TJ_MAX_DIMS) return tjo_unsupported(im, "rank %d: tiling needs twice as many dims", r);
    for (int d = 0; d < r; d++) {
        if (reps[d] < 0) return tjo_node_error(im, TJ_ERR_PARSE, "repeats[%d] is negative", d);
        inter[2 * d] = 1, inter[2 * d + 1] = im->in[0]->type.sizes[d];
        big[2 * d] = reps[d], big[2 * d + 1] = inter[2 * d + 1];
        fin[d] = reps[d] * inter[2 * d + 1];
    }
    if (!tjo_check_sizes(im, fin, r, "the tiled sizes")) TJO_FAIL();
    tjo_val *y = tjo_reshape(im, im->in[0], inter, 2 * r);
    tj_attr a = {.ints = {big, 2 * r}};
    tjo_val *in[1] = {y};
    y = y ? tjo_emit1(im, TJ_OP_expand, in, 1, &a) : NULL;
    out[0] = tjo_reshape(im, y, fin, r);
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status import_shape(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 1);
    if (st) return st;
    const tj_type *t = &im->in[0]->type;
    bool size = im->node->op_type[1] == 'i';
    int64_t start, end;
    if (!tjo_attr_int(im, "start", 0, &start) || !tjo_attr_int(im, "end", t->ndim, &end)) TJO_FAIL();
    if (start < 0) start += t->ndim;
    if (end < 0) end += t->ndim;
    start = start < 0 ? 0 : start > t->ndim ? t->ndim : start;
    end = end < start ? start : end > t->ndim ? t->ndim : end;
    int64_t n = size ? 1 : end - start;
    tj_tensor *c = tjc_alloc(&n, size ? 0 : 1, TJ_I64);
    if (!c) TJO_FAIL();
    int64_t *p = (int64_t *)tjc_data_ptr(c);
    if (size) {
        *p = 1;
        for (int d = 0; d < t->ndim; d++) *p *= t->sizes[d];
    } else {
        for (int64_t d = start; d < end; d++) p[d - start] = t->sizes[d];
    }
    out[0] = tjo_const_val(im, c);
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status import_constant_of_shape(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 1);
    if (st) return st;
    int64_t shape[TJ_MAX_DIMS];
    int n;
    if (!tjo_const_ints(im, 0, "input", shape, &n, TJ_MAX_DIMS)) TJO_FAIL();
    const Onnx__AttributeProto *va = tjo_attr(im, "value");
    tj_tensor *v = NULL;
    if (va) {
        if (va->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR || !va->t)
            return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'value': expected a tensor");
        if (!(v = tjo_tensor_from_proto(va->t, "attribute 'value'")))
            return tjo_node_error(im, tj_last_status(), "%s", tj_last_error());
        if (tj_numel(v) != 1) {
            tj_release(v);
            return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'value' must hold one element");
        }
    }
    if (!tjo_check_sizes(im, shape, n, "input") || tjc_numel(shape, n) > TJO_MAX_FOLD) {
        tj_release(v);
        return tjo_unsupported(im, "input: a constant of more than 2^24 elements");
    }
    tj_dtype dt = v ? tj_tensor_dtype(v) : TJ_F32;
    tj_tensor *c = tjc_alloc(shape, n, dt);
    if (!c) {
        tj_release(v);
        TJO_FAIL();
    }
    size_t es = tj_dtype_size(dt);
    char *p = tjc_data_ptr(c);
    for (int64_t k = 0; k < tj_numel(c); k++)
        if (v) memcpy(p + k * (int64_t)es, tjc_data_ptr(v), es);
        else memset(p + k * (int64_t)es, 0, es);
    tj_release(v);
    out[0] = tjo_const_val(im, c);
    return out[0] ? TJ_OK : tj_last_status();
}

/* Indices with ONNX's negative entries wrapped against size. */
static tjo_val *wrap_indices(tjo_importer *im, tjo_val *idx, int64_t size) {
    if (idx->type.dtype != TJ_I64) {
        tjo_unsupported(im, "indices of dtype %s: tjit indexes with int64", tj_dtype_name((tj_dtype)idx->type.dtype));
        return NULL;
    }
    tjo_val *s = tjo_scalar(im, (double)size, TJ_I64);
    tjo_val *in[3] = {tjo_binary(im, TJ_OP_lt, idx, tjo_scalar(im, 0, TJ_I64)),
                      s ? tjo_binary(im, TJ_OP_add, idx, s) : NULL, idx};
    return tjo_emit1(im, TJ_OP_where, in, 3, NULL);
}

static tj_status import_gather(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 2, 2);
    if (st) return st;
    int64_t axis;
    int ax;
    tjo_val *x = im->in[0], *idx = im->in[1];
    if (!tjo_attr_int(im, "axis", 0, &axis) || !tjo_axis(im, axis, rank(x), "axis", &ax)) TJO_FAIL();
    if (rank(x) == 0) return tjo_node_error(im, TJ_ERR_SHAPE, "data is 0-dim");
    int r = rank(x) - 1 + rank(idx);
    if (r > TJ_MAX_DIMS) return tjo_unsupported(im, "the result has %d dims", r);
    if (idx->t && !idx->param && rank(idx) == 0 && idx->type.dtype == TJ_I64) { /* one index: select */
        int64_t i = *(const int64_t *)tjc_data_ptr(idx->t);
        if (i < -x->type.sizes[ax] || i >= x->type.sizes[ax])
            return tjo_node_error(im, TJ_ERR_SHAPE, "index %lld is out of range for size %lld", (long long)i,
                                  (long long)x->type.sizes[ax]);
        tj_attr a[2] = {{.i = ax}, {.i = i < 0 ? i + x->type.sizes[ax] : i}};
        tjo_val *in[1] = {x};
        out[0] = tjo_emit1(im, TJ_OP_select, in, 1, a);
        return out[0] ? TJ_OK : tj_last_status();
    }
    TJO_NEED(idx = wrap_indices(im, idx, x->type.sizes[ax]));
    int64_t flat = 1, sizes[TJ_MAX_DIMS];
    for (int d = 0; d < rank(idx); d++) flat *= idx->type.sizes[d];
    tjo_val *i1 = tjo_reshape(im, idx, &flat, 1);
    tj_attr a = {.i = ax};
    tjo_val *in[2] = {x, i1};
    tjo_val *sel = i1 ? tjo_emit1(im, TJ_OP_index_select, in, 2, &a) : NULL;
    int k = 0;
    for (int d = 0; d < ax; d++) sizes[k++] = x->type.sizes[d];
    for (int d = 0; d < rank(idx); d++) sizes[k++] = idx->type.sizes[d];
    for (int d = ax + 1; d < rank(x); d++) sizes[k++] = x->type.sizes[d];
    if (!tjo_check_sizes(im, sizes, k, "the gathered sizes")) TJO_FAIL();
    out[0] = tjo_reshape(im, sel, sizes, k);
    return out[0] ? TJ_OK : tj_last_status();
}

static tj_status import_gather_elements(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    bool scatter = im->node->op_type[0] == 'S';
    tj_status st = tjo_need_inputs(im, scatter ? 3 : 2, scatter ? 3 : 2);
    if (st) return st;
    int64_t axis;
    int ax;
    tjo_val *x = im->in[0], *idx = im->in[1];
    if (!tjo_attr_int(im, "axis", 0, &axis) || !tjo_axis(im, axis, rank(x), "axis", &ax)) TJO_FAIL();
    if (scatter) {
        const char *red;
        if (!tjo_attr_str(im, "reduction", "none", &red)) TJO_FAIL();
        if (strcmp(red, "add"))
            return tjo_unsupported(im, "attribute 'reduction' \"%s\": tjit scatters only with add", red);
    }
    TJO_NEED(idx = wrap_indices(im, idx, x->type.sizes[ax]));
    tj_attr a = {.i = ax};
    tjo_val *in[3] = {x, idx, scatter ? im->in[2] : NULL};
    out[0] = tjo_emit1(im, scatter ? TJ_OP_scatter_add : TJ_OP_gather, in, scatter ? 3 : 2, &a);
    return out[0] ? TJ_OK : tj_last_status();
}

/* DepthToSpace and SpaceToDepth: reshape, permute, reshape, as ONNX defines them. */
static tj_status import_depth_space(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    bool to_space = im->node->op_type[0] == 'D';
    tj_status st = tjo_need_inputs(im, 1, 1);
    if (st) return st;
    tjo_val *x = im->in[0];
    if (rank(x) != 4) return tjo_node_error(im, TJ_ERR_SHAPE, "input of rank %d, expected 4", rank(x));
    int64_t bs;
    const char *mode;
    if (!tjo_attr_int(im, "blocksize", 0, &bs) || !tjo_attr_str(im, "mode", "DCR", &mode)) TJO_FAIL();
    const int64_t *s = x->type.sizes;
    int64_t b = s[0], c = s[1], h = s[2], w = s[3];
    if (bs <= 0 || (to_space ? c % (bs * bs) : (h % bs || w % bs)))
        return tjo_node_error(im, TJ_ERR_SHAPE, "blocksize %lld does not divide the input", (long long)bs);
    bool crd = !strcmp(mode, "CRD");
    if (!crd && strcmp(mode, "DCR")) return tjo_node_error(im, TJ_ERR_PARSE, "mode \"%s\"", mode);
    int64_t t1[6], p[6], t2[4];
    if (to_space) {
        int64_t c2 = c / (bs * bs);
        int64_t dcr[6] = {b, bs, bs, c2, h, w}, pd[6] = {0, 3, 4, 1, 5, 2};
        int64_t crs[6] = {b, c2, bs, bs, h, w}, pc[6] = {0, 1, 4, 2, 5, 3};
        memcpy(t1, crd ? crs : dcr, sizeof t1);
        memcpy(p, crd ? pc : pd, sizeof p);
        int64_t o[4] = {b, c2, h * bs, w * bs};
        memcpy(t2, o, sizeof t2);
    } else {
        int64_t a[6] = {b, c, h / bs, bs, w / bs, bs}, pp[6] = {0, 3, 5, 1, 2, 4};
        int64_t o[4] = {b, c * bs * bs, h / bs, w / bs};
        memcpy(t1, a, sizeof t1);
        memcpy(p, pp, sizeof p);
        memcpy(t2, o, sizeof t2);
    }
    out[0] = tjo_reshape(im, permute(im, tjo_reshape(im, x, t1, 6), p, 6), t2, 4);
    return out[0] ? TJ_OK : tj_last_status();
}

/* Pad, constant mode: slices for negative pads, then constant blocks
 * concatenated before and after along each padded axis. */
static tj_status import_pad(tjo_importer *im, tjo_val **out, int n_out) {
    (void)n_out;
    tj_status st = tjo_need_inputs(im, 1, 3);
    if (st) return st;
    const char *mode;
    if (!tjo_attr_str(im, "mode", "constant", &mode)) TJO_FAIL();
    if (strcmp(mode, "constant")) return tjo_unsupported(im, "attribute 'mode' \"%s\": tjit pads with a constant only", mode);
    tjo_val *x = im->in[0];
    int r = rank(x), n;
    int64_t pads[2 * TJ_MAX_DIMS];
    double value = 0;
    if (im->opset < 11) {
        const int64_t *p;
        if (!tjo_attr_ints(im, "pads", &p, &n) || !tjo_attr_float(im, "value", 0.0, &value)) TJO_FAIL();
        if (!p || n > 2 * TJ_MAX_DIMS) return tjo_node_error(im, TJ_ERR_PARSE, "attribute 'pads' is required");
        memcpy(pads, p, sizeof *p * (size_t)n);
    } else {
        if (!tjo_const_ints(im, 1, "pads", pads, &n, 2 * TJ_MAX_DIMS)) TJO_FAIL();
        if (tjo_has_input(im, 2)) {
            const tjo_val *c = im->in[2];
            if (!c->t || c->param) return tjo_unsupported(im, "input[2] (constant_value) is computed at run time");
            if (tj_item(c->t, &value) != TJ_OK) return tjo_node_error(im, TJ_ERR_PARSE, "%s", tj_last_error());
        }
    }
    if (n != 2 * r) return tjo_node_error(im, TJ_ERR_PARSE, "%d pads for rank %d", n, r);
    tjo_val *y = x;
    for (int d = 0; d < r; d++) {
        int64_t before = pads[d], after = pads[d + r], size = y->type.sizes[d];
        if (before > (INT64_C(1) << 31) || after > (INT64_C(1) << 31) || -before - after > size)
            return tjo_node_error(im, TJ_ERR_SHAPE, "pads %lld and %lld on a dim of %lld", (long long)before,
                                  (long long)after, (long long)size);
        if (before < 0 || after < 0) { /* a crop */
            int64_t s = before < 0 ? -before : 0, e = after < 0 ? size + after : size;
            tj_attr a[4] = {{.i = d}, {.i = s}, {.i = e}, {.i = 1}};
            tjo_val *in[1] = {y};
            if (!(y = tjo_emit1(im, TJ_OP_slice, in, 1, a))) TJO_FAIL();
        }
        tjo_val *parts[3];
        int k = 0;
        for (int side = 0; side < 2; side++) {
            int64_t amount = side ? after : before;
            if (amount <= 0) {
                if (side == 0) parts[k++] = y;
                continue;
            }
            int64_t sizes[TJ_MAX_DIMS];
            memcpy(sizes, y->type.sizes, sizeof(int64_t) * (size_t)r);
            sizes[d] = amount;
            if (!tjo_check_sizes(im, sizes, r, "the padding") || tjc_numel(sizes, r) > TJO_MAX_FOLD)
                return tjo_unsupported(im, "padding blocks of more than 2^24 elements");
            tj_tensor *fill = tjc_alloc(sizes, r, (tj_dtype)y->type.dtype);
            if (!fill) TJO_FAIL();
            for (int64_t i = 0; i < tj_numel(fill); i++) {
                char *p = tjc_data_ptr(fill);
                switch ((tj_dtype)y->type.dtype) {
                case TJ_F32: ((float *)p)[i] = (float)value; break;
                case TJ_F64: ((double *)p)[i] = value; break;
                case TJ_I64: ((int64_t *)p)[i] = (int64_t)(value > -9.2e18 && value < 9.2e18 ? value : 0); break;
                default: ((bool *)p)[i] = value != 0; break;
                }
            }
            tjo_val *c = tjo_const_val(im, fill);
            if (!c) TJO_FAIL();
            if (side == 0) parts[k++] = c, parts[k++] = y;
            else parts[k++] = c;
        }
        if (k > 1) {
            tj_attr a = {.i = d};
            if (!(y = tjo_emit1(im, TJ_OP_cat, parts, k, &a))) TJO_FAIL();
        }
    }
    out[0] = y == x ? tjo_unary(im, TJ_OP_clone, x) : y;
    return out[0] ? TJ_OK : tj_last_status();
}

const tjo_import_rule tjo_rules_shape[] = {
    {"Pad", "mode|pads|value", import_pad},
    {"Reshape", "allowzero", import_reshape},
    {"Flatten", "axis", import_flatten},
    {"Squeeze", "axes", import_squeeze},
    {"Unsqueeze", "axes", import_squeeze},
    {"Transpose", "perm", import_transpose},
    {"Concat", "axis", import_concat},
    {"Split", "axis|split", import_split},
    {"Slice", "starts|ends|axes", import_slice},
    {"Expand", "", import_expand},
    {"Tile", "", import_tile},
    {"Shape", "start|end", import_shape},
    {"Size", "", import_shape},
    {"ConstantOfShape", "value", import_constant_of_shape},
    {"Gather", "axis", import_gather},
    {"GatherElements", "axis", import_gather_elements},
    {"ScatterElements", "axis|reduction", import_gather_elements},
    {"DepthToSpace", "blocksize|mode", import_depth_space},
    {"SpaceToDepth", "blocksize", import_depth_space},
    {NULL, NULL, NULL},
};
