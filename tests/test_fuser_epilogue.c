/* test_fuser_epilogue.c — epilogue groups (fuser.h): random models of one
 * matrix product or convolution (linear on 2-D and 3-D inputs, mm, matmul
 * of a 3-D by a 2-D, conv2d) followed by a random pointwise chain (relu,
 * gelu, tanh, sigmoid, a residual add or product of the result's sizes, a
 * bias of the inner sizes), sometimes returning the product itself too;
 * f32 or f64. Each must fuse into one epilogue group, and its replay must
 * equal the unfused one within the bounds on every CPU backend, with the
 * default blocks and with TJIT_EPILOGUE_ROWS forcing blocks of a few rows
 * (a short last block included), on contiguous and strided inputs, forward
 * and backward (the backward graph's products take epilogues too). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuser/fuser.h"
#include "tests/support/fuser_cases.h"
#include "tests/support/row_cases.h"
#include "tests/support/testing.h"

typedef struct recipe {
    uint64_t seed;
    int anchor; /* 0 linear 2-D, 1 linear 3-D, 2 mm, 3 matmul 3-D by 2-D, 4 conv2d */
    int n_ops, ops[4];
    bool return_product;
} recipe;

static tj_tensor *product(const recipe *r, tj_tensor *const *in) {
    int64_t one = 1;
    switch (r->anchor) {
    case 0:
    case 1: return tj_linear(in[0], in[1], in[2]);
    case 2: return tj_mm(in[0], in[1]);
    case 3: return tj_matmul(in[0], in[1]);
    default: return tj_conv2d(in[0], in[1], in[2], &one, 1, &one, 1, &one, 1, 1);
    }
}

static tj_status model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)n_in;
    const recipe *r = ctx;
    tj_scalar one = {.kind = TJ_SCALAR_FLOAT, .f = 1.0};
    tj_tensor *h = product(r, in), *v = h;
    for (int i = 0; i < r->n_ops && v; i++) {
        switch (r->ops[i]) {
        case 0: v = tj_relu(v); break;
        case 1: v = tj_gelu(v, "none"); break;
        case 2: v = tj_tanh(v); break;
        case 3: v = tj_sigmoid(v); break;
        case 4: v = tj_add(v, in[3], one); break; /* a residual */
        case 5: v = tj_mul(v, in[3]); break;
        default: v = tj_add(v, in[4], one); break; /* a bias along the rows */
        }
    }
    out[0] = v;
    if (n_out > 1) out[1] = h;
    return v && h ? TJ_OK : tj_last_status();
}

typedef struct epi_case {
    recipe r;
    tj_tensor *in[5];
    int n_out;
} epi_case;

static int64_t pick(uint64_t *s, int64_t lo, int64_t hi) {
    return lo + (int64_t)(tt_splitmix64(s) % (uint64_t)(hi - lo + 1));
}

static void setup(int seed, tj_generator *gen, epi_case *c) {
    memset(c, 0, sizeof *c);
    uint64_t s = 0x5eed0000u + (uint64_t)seed;
    recipe *r = &c->r;
    r->anchor = (int)pick(&s, 0, 4);
    r->n_ops = (int)pick(&s, 1, 4);
    for (int i = 0; i < r->n_ops; i++) r->ops[i] = (int)pick(&s, 0, 6);
    r->return_product = pick(&s, 0, 2) == 0;
    c->n_out = r->return_product ? 2 : 1;
    tj_dtype dt = pick(&s, 0, 3) == 0 ? TJ_F64 : TJ_F32;
    int64_t m = pick(&s, 1, 200), k = pick(&s, 1, 24), n = pick(&s, 1, 40), bt = pick(&s, 1, 4);
    int64_t xs[4], ws[4], bs[1], os[4], vs[3];
    int xn, wn, on, vn;
    switch (r->anchor) {
    case 0: case 2:
        xs[0] = m, xs[1] = k, xn = 2;
        if (r->anchor == 0) ws[0] = n, ws[1] = k;
        else ws[0] = k, ws[1] = n;
        wn = 2, os[0] = m, os[1] = n, on = 2, vs[0] = n, vn = 1;
        break;
    case 1: case 3:
        xs[0] = bt, xs[1] = m, xs[2] = k, xn = 3;
        if (r->anchor == 1) ws[0] = n, ws[1] = k;
        else ws[0] = k, ws[1] = n;
        wn = 2, os[0] = bt, os[1] = m, os[2] = n, on = 3, vs[0] = n, vn = 1;
        break;
    default: {
        int64_t ci = pick(&s, 1, 4), co = pick(&s, 1, 6), hw = pick(&s, 2, 9);
        xs[0] = pick(&s, 1, 7), xs[1] = ci, xs[2] = xs[3] = hw, xn = 4;
        ws[0] = co, ws[1] = ci, ws[2] = ws[3] = 3, wn = 4;
        os[0] = xs[0], os[1] = co, os[2] = os[3] = hw, on = 4;
        vs[0] = co, vs[1] = vs[2] = 1, vn = 3;
        n = co;
    }
    }
    bs[0] = n;
    c->in[0] = tt_random(gen, xs, xn, dt, -1, 1);
    c->in[1] = tt_random(gen, ws, wn, dt, -1, 1);
    c->in[2] = tt_random(gen, bs, 1, dt, -1, 1);
    c->in[3] = tt_random(gen, os, on, dt, -1, 1);
    c->in[4] = tt_random(gen, vs, vn, dt, -1, 1);
}

static void case_free(epi_case *c) {
    for (int i = 0; i < 5; i++) tj_release(c->in[i]);
}

static int epilogue_groups(const tj_graph *g) {
    int n = 0;
    for (tj_node *x = tj_block_first(tj_graph_block((tj_graph *)g)); x; x = tj_node_next(x))
        n += tj_node_kind_of(x) == TJ_NODE_FUSION_GROUP && tjf_anchor_node(tj_node_subgraph(x));
    return n;
}

/* rows: TJIT_EPILOGUE_ROWS for the fused program (0: the default blocks). */
static void run_case(epi_case *c, int seed, tj_generator *gen, const char *backend, int rows) {
    tj_graph *g = tj_trace(model, &c->r, c->in, 5, c->n_out, NULL);
    if (!g) fail_msg("epilogue case %d: trace: %s", seed, tj_last_error());
    tj_program *plain = tt_compile_with(g, false, "portable", NULL);
    char env[32];
    snprintf(env, sizeof env, "%d", rows);
    if (rows) setenv("TJIT_EPILOGUE_ROWS", env, 1);
    tj_program *fused = tt_compile_with(g, true, backend, NULL);
    unsetenv("TJIT_EPILOGUE_ROWS");
    if (epilogue_groups(tj_program_graph(fused)) != 1) {
        char *text = tj_graph_to_string(tj_program_graph(fused), 0);
        fail_msg("epilogue case %d: not one epilogue group:\n%s", seed, text);
    }
    for (int layout = 0; layout < 2; layout++) {
        tj_tensor *args[5];
        for (int i = 0; i < 5; i++)
            args[i] = layout && i != 1 ? tt_fuser_restride(gen, c->in[i], i % 2) : tj_retain(c->in[i]);
        tj_tensor *a[2], *b[2];
        if (tj_run(plain, args, a)) fail_msg("epilogue case %d: unfused: %s", seed, tj_last_error());
        if (tj_run(fused, args, b)) fail_msg("epilogue case %d: fused: %s", seed, tj_last_error());
        for (int k = 0; k < c->n_out; k++) {
            int far = tt_row_far(a[k], b[k]);
            if (far) {
                char *text = tj_graph_to_string(tj_program_graph(fused), 0);
                fail_msg("epilogue case %d (%s, rows %d, %s inputs), output %d: %d elements past the "
                         "bounds\n%s", seed, backend, rows, layout ? "strided" : "contiguous", k, far, text);
            }
            tj_release(a[k]);
            tj_release(b[k]);
        }
        for (int i = 0; i < 5; i++) tj_release(args[i]);
    }
    tj_program_free(plain);
    tj_program_free(fused);
    tj_graph_free(g);
}

static const char *backends[] = {"portable", "llvm"};

static void random_epilogues(void **state) {
    (void)state;
    const char *env = getenv("TJIT_EPILOGUE_CASES");
    int n = env ? atoi(env) : 120;
    for (int b = 0; b < 2; b++) {
        if (!tjf_find_backend(backends[b])) continue;
        tj_generator *gen = tj_generator_new(91);
        for (int i = 0; i < n; i++) {
            epi_case c;
            setup(i, gen, &c);
            run_case(&c, i, gen, backends[b], i % 3 == 0 ? 0 : 1 + i % 7);
            case_free(&c);
        }
        printf("epilogue groups (%s): %d random models, equal to unfused within the bounds\n",
               backends[b], n);
        tj_generator_free(gen);
    }
}

/* Gradients of every input through case c, fused or not. */
static void gradients(epi_case *c, const char *backend, bool fuse, int rows, tj_tensor *const *gout,
                      tj_tensor **grads) {
    tj_graph *g = tj_trace(model, &c->r, c->in, 5, c->n_out, NULL);
    assert_non_null(g);
    bool rg[5] = {true, true, true, true, true};
    if (c->r.anchor == 2 || c->r.anchor == 3) rg[2] = false; /* no bias: unused */
    char env[32];
    snprintf(env, sizeof env, "%d", rows);
    if (rows) setenv("TJIT_EPILOGUE_ROWS", env, 1);
    tj_compile_options o = {.passes = fuse ? NULL : "", .backend = backend, .requires_grad = rg};
    tj_program *p = tj_compile(g, &o);
    unsetenv("TJIT_EPILOGUE_ROWS");
    if (!p) fail_msg("compile with gradients: %s", tj_last_error());
    tj_tensor *out[2];
    if (tj_run(p, c->in, out) || tj_backward(p, gout, grads))
        fail_msg("forward and backward: %s", tj_last_error());
    for (int k = 0; k < c->n_out; k++) tj_release(out[k]);
    tj_program_free(p);
    tj_graph_free(g);
}

static void epilogues_backward(void **state) {
    (void)state;
    for (int b = 0; b < 2; b++) {
        if (!tjf_find_backend(backends[b])) continue;
        tj_generator *gen = tj_generator_new(92);
        for (int seed = 0; seed < 40; seed++) {
            epi_case c;
            setup(seed, gen, &c);
            tj_tensor *gout[2];
            const tj_tensor *shape[2] = {c.in[3], c.in[3]}; /* the product's sizes */
            for (int k = 0; k < c.n_out; k++)
                gout[k] = tt_random(gen, tj_sizes(shape[k]), tj_ndim(shape[k]),
                                    tj_tensor_dtype(shape[k]), -1, 1);
            tj_tensor *want[5] = {0}, *got[5] = {0};
            gradients(&c, backends[b], false, 0, gout, want);
            gradients(&c, backends[b], true, seed % 2 ? 2 : 0, gout, got);
            for (int i = 0; i < 5; i++) {
                if (!want[i] && !got[i]) continue;
                assert_non_null(want[i]);
                assert_non_null(got[i]);
                int far = tt_row_far(want[i], got[i]);
                if (far) fail_msg("epilogue case %d (%s): the gradient of input %d: %d elements past "
                                  "the bounds", seed, backends[b], i, far);
                tj_release(want[i]);
                tj_release(got[i]);
            }
            for (int k = 0; k < c.n_out; k++) tj_release(gout[k]);
            case_free(&c);
        }
        tj_generator_free(gen);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_epilogues),
        cmocka_unit_test(epilogues_backward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
