/* row_cases.c — random row-group models (row_cases.h). */
#include <math.h>
#include <string.h>

#include "tests/support/row_cases.h"

static int pick(uint64_t *s, int n) { return (int)(tt_splitmix64(s) % (uint64_t)n); }

/* One prologue or epilogue op on v; other operands from the inputs (y, a
 * chunk piece) or, after the row op, the prologue's value. */
static tj_tensor *pointwise(uint64_t *s, tj_tensor *v, tj_tensor *y, tj_tensor *piece, tj_tensor *pro,
                            bool after) {
    switch (pick(s, after ? 6 : 7)) {
    case 0: return tj_mul_scalar(v, 0.125);
    case 1: return tj_add(v, y, 1.0);
    case 2: return tj_mul(v, y);
    case 3: return after ? tj_add(v, pro, 1.0) : tj_tanh(v);
    case 4: return tj_relu(v);
    case 5: return after ? tj_sigmoid(v) : tj_sub(v, piece, 1.0);
    default: return tj_add_scalar(v, -1.0, 1.0);
    }
}

/* One epilogue op of the reduced sizes on v; r: [rows..., 1] or [1]. */
static tj_tensor *per_row(uint64_t *s, tj_tensor *v, tj_tensor *r) {
    switch (pick(s, 6)) {
    case 0: return tj_mul_scalar(v, 0.125);
    case 1: return tj_add(v, r, 1.0);
    case 2: return tj_tanh(v);
    case 3: return tj_sigmoid(v);
    case 4: return tj_rsqrt(tj_add_scalar(tj_mul(v, v), 1.0, 1.0));
    default: return tj_add_scalar(v, -1.0, 1.0);
    }
}

static tj_tensor *reduction(int row, tj_tensor *v, bool keepdim) {
    int64_t last = -1;
    switch (row) {
    case 3: return tj_sum(v, &last, 1, keepdim);
    case 4: return tj_mean(v, &last, 1, keepdim);
    case 5: return tj_amax(v, &last, 1, keepdim);
    case 6: return tj_amin(v, &last, 1, keepdim);
    default: return tj_logsumexp(v, &last, 1, keepdim);
    }
}

int tt_row_neighbours(const tt_row_recipe *r) {
    return r->n_prologue + r->n_epilogue + (r->row >= 3 && r->back ? 1 + r->n_post : 0);
}

/* A reduction's model: outputs of the full sizes when the reduced value is
 * broadcast back, else of the reduced ones (a group's outputs share one). */
static tj_status reduce_model(const tt_row_recipe *r, uint64_t *s, tj_tensor *const *in, tj_tensor *const *pieces,
                              tj_tensor **out) {
    tj_tensor *v = in[0];
    for (int i = 0; i < r->n_prologue; i++) v = pointwise(s, v, in[1], pieces[pick(s, 2)], NULL, false);
    tj_tensor *pro = v;
    tj_tensor *red = reduction(r->row, v, r->keepdim);
    v = red;
    for (int i = 0; i < r->n_epilogue; i++) v = per_row(s, v, in[3]);
    tj_tensor *second = red;
    if (r->back) {
        v = r->back == 1 ? tj_mul(pro, v) : tj_sub(pro, v, 1.0);
        second = r->n_prologue ? pro : v;
        for (int i = 0; i < r->n_post; i++) v = pointwise(s, v, in[1], pieces[0], pro, true);
    }
    if (!v) return tj_last_status();
    out[0] = tj_keep(v);
    out[1] = tj_keep(second);
    return TJ_OK;
}

static tj_status row_model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in;
    (void)n_out;
    const tt_row_recipe *r = ctx;
    uint64_t s = r->seed * 104729 + 7;
    tj_scope_begin();
    tj_tensor *pieces[2];
    if (tj_chunk(in[4], 2, -1, pieces, 2) != 2) {
        tj_scope_end();
        return tj_last_status();
    }
    if (r->row >= 3) {
        tj_status st = reduce_model(r, &s, in, pieces, out);
        tj_scope_end();
        return st;
    }
    tj_tensor *v = in[0];
    for (int i = 0; i < r->n_prologue; i++) v = pointwise(&s, v, in[1], pieces[pick(&s, 2)], NULL, false);
    tj_tensor *pro = v;
    int64_t n = tj_sizes(v)[tj_ndim(v) - 1];
    tj_tensor *row = r->row == 0   ? tj_softmax(v, -1)
                     : r->row == 1 ? tj_log_softmax(v, tj_ndim(v) - 1)
                                   : tj_layer_norm(v, &n, 1, in[2], in[3], 1e-5);
    v = row;
    for (int i = 0; i < r->n_epilogue; i++) v = pointwise(&s, v, in[1], pieces[0], pro, true);
    if (!v) {
        tj_scope_end();
        return tj_last_status();
    }
    out[0] = tj_keep(v);
    out[1] = tj_keep(r->n_prologue ? pro : row);
    tj_scope_end();
    return TJ_OK;
}

/* Values a row op must get right: a constant row, -inf and +inf (and NaN
 * with nan). */
static void special_rows(uint64_t *s, tj_tensor *x, int64_t n, bool nan) {
    int64_t numel = tj_numel(x), rows = numel / n;
    bool f32 = tj_tensor_dtype(x) == TJ_F32;
    char *p = tj_data(x);
    size_t es = f32 ? 4 : 8;
    for (int k = 0; k < (nan ? 5 : 3) && k < rows; k++) {
        if (pick(s, 3)) continue;
        int64_t r = pick(s, (int)rows), j = pick(s, (int)n);
        for (int64_t c = 0; c < n; c++) {
            double v = k == 0   ? 1.5
                       : k == 4 ? -INFINITY /* a row of -inf: logsumexp's -inf */
                       : c == j ? (k == 1 ? -INFINITY : k == 2 ? INFINITY : NAN)
                                : 0;
            if (k == 4) {
                if (f32) *(float *)(p + (size_t)(r * n + c) * es) = (float)v;
                else *(double *)(p + (size_t)(r * n + c) * es) = v;
                continue;
            }
            if (k && c != j) continue;
            if (f32) *(float *)(p + (size_t)(r * n + c) * es) = (float)v;
            else *(double *)(p + (size_t)(r * n + c) * es) = v;
        }
    }
}

void tt_row_case_setup(int seed, tj_generator *gen, tt_row_case *c) {
    static const int64_t widths[] = {1, 3, 7, 33, 100, 256, 257, 1000, 5000};
    memset(c, 0, sizeof *c);
    uint64_t s = (uint64_t)seed * 0x9E3779B97F4A7C15ull + 3;
    tt_row_recipe *r = &c->recipe;
    *r = (tt_row_recipe){(uint64_t)seed, pick(&s, 4), pick(&s, 3), pick(&s, 8), false, 0, 0};
    bool reduce = r->row >= 3;
    if (reduce) {
        r->keepdim = pick(&s, 3) != 0;
        r->back = r->keepdim ? pick(&s, 3) : 0;
        r->n_post = pick(&s, 3);
    }
    c->model = row_model;
    int nd = 1 + pick(&s, 3);
    int64_t sizes[3];
    for (int d = 0; d < nd - 1; d++) sizes[d] = 1 + pick(&s, 5);
    int n_widths = (int)(sizeof widths / sizeof *widths);
    int64_t n = reduce ? widths[1 + pick(&s, n_widths - 1)] : widths[pick(&s, n_widths)];
    if (n >= 1000) nd = 2, sizes[0] = 1 + pick(&s, 4); /* long rows: a few of them */
    sizes[nd - 1] = n;
    tj_dtype dt = pick(&s, 3) ? TJ_F32 : TJ_F64;
    c->in[0] = tt_random(gen, sizes, nd, dt, -3, 3);
    special_rows(&s, c->in[0], n, reduce);
    int64_t ys[3];
    memcpy(ys, sizes, sizeof ys);
    int how = pick(&s, 3); /* y: full, [N], or [rows..., 1] */
    if (how == 1) c->in[1] = tt_random(gen, &n, 1, dt, -2, 2);
    else {
        if (how == 2) ys[nd - 1] = 1;
        c->in[1] = tt_random(gen, ys, nd, dt, -2, 2);
    }
    c->in[2] = tt_random(gen, &n, 1, dt, 0.5, 1.5);
    int64_t rs[3] = {1, 1, 1};
    memcpy(rs, sizes, sizeof rs);
    rs[nd - 1] = 1;
    if (reduce && r->keepdim) c->in[3] = tt_random(gen, rs, nd, dt, -1, 1);
    else if (reduce) c->in[3] = tt_random(gen, rs + nd - 1, 1, dt, -1, 1); /* [1] */
    else c->in[3] = tt_random(gen, &n, 1, dt, -1, 1);
    for (int k = 0; k < 2; k++) { /* full, or the reduction's sizes */
        bool full = !reduce || (r->back && k == 0) || (r->back && k == 1);
        c->out_ndim[k] = full || r->keepdim ? nd : nd - 1;
        memcpy(c->out_sizes[k], full ? sizes : rs, sizeof rs);
    }
    memcpy(ys, sizes, sizeof ys);
    ys[nd - 1] = 2 * n;
    c->in[4] = tt_random(gen, ys, nd, dt, -2, 2);
    c->n_in = 5;
}

void tt_row_case_free(tt_row_case *c) {
    for (int i = 0; i < c->n_in; i++) tj_release(c->in[i]);
    c->n_in = 0;
}

int tt_row_far(tj_tensor *want, tj_tensor *got) {
    assert_int_equal(tj_tensor_dtype(want), tj_tensor_dtype(got));
    tt_ref a = tt_ref_of(want), b = tt_ref_of(got);
    assert_int_equal(a.numel, b.numel);
    double tol = tj_tensor_dtype(want) == TJ_F32 ? 1e-4 : 1e-10;
    int far = 0;
    for (int64_t i = 0; i < a.numel; i++) {
        double x = a.v[i], y = b.v[i];
        if (x == y || (isnan(x) && isnan(y))) continue;
        if (isfinite(x) && isfinite(y) && fabs(x - y) <= tol + tol * fmax(fabs(x), fabs(y))) continue;
        far++;
    }
    tt_ref_free(&a);
    tt_ref_free(&b);
    return far;
}
