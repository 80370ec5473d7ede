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

/* Values a row op must get right: a constant row, -inf and +inf. */
static void special_rows(uint64_t *s, tj_tensor *x, int64_t n) {
    int64_t numel = tj_numel(x), rows = numel / n;
    bool f32 = tj_tensor_dtype(x) == TJ_F32;
    char *p = tj_data(x);
    size_t es = f32 ? 4 : 8;
    for (int k = 0; k < 3 && k < rows; k++) {
        if (pick(s, 3)) continue;
        int64_t r = pick(s, (int)rows), j = pick(s, (int)n);
        for (int64_t c = 0; c < n; c++) {
            double v = k == 0 ? 1.5 : c == j ? (k == 1 ? -INFINITY : INFINITY) : 0;
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
    *r = (tt_row_recipe){(uint64_t)seed, pick(&s, 4), pick(&s, 3), pick(&s, 3)};
    c->model = row_model;
    int nd = 1 + pick(&s, 3);
    int64_t sizes[3];
    for (int d = 0; d < nd - 1; d++) sizes[d] = 1 + pick(&s, 5);
    int64_t n = widths[pick(&s, (int)(sizeof widths / sizeof *widths))];
    if (n >= 1000) nd = 2, sizes[0] = 1 + pick(&s, 4); /* long rows: a few of them */
    sizes[nd - 1] = n;
    tj_dtype dt = pick(&s, 3) ? TJ_F32 : TJ_F64;
    c->in[0] = tt_random(gen, sizes, nd, dt, -3, 3);
    special_rows(&s, c->in[0], n);
    int64_t ys[3];
    memcpy(ys, sizes, sizeof ys);
    int how = pick(&s, 3); /* y: full, [N], or [rows..., 1] */
    if (how == 1) c->in[1] = tt_random(gen, &n, 1, dt, -2, 2);
    else {
        if (how == 2) ys[nd - 1] = 1;
        c->in[1] = tt_random(gen, ys, nd, dt, -2, 2);
    }
    c->in[2] = tt_random(gen, &n, 1, dt, 0.5, 1.5);
    c->in[3] = tt_random(gen, &n, 1, dt, -1, 1);
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
