/* demo.c — `make demo`: tensors and ops from C. A small MLP-style layer
 * computed with pointwise ops, printed, and timed. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tjit/tjit.h"

static void show(const char *label, const tj_tensor *t) {
    char *s = tj_tensor_to_string(t);
    printf("%s = %s\n\n", label, s ? s : "(error)");
    free(s);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(void) {
    tj_generator *gen = tj_generator_new(42);
    tj_scope_begin();
    int64_t sizes[2] = {3, 4}, bias_sizes[1] = {4};
    tj_tensor *x = tj_randn(sizes, 2, TJ_F32, gen);
    tj_tensor *b = tj_arange(0, 4, 1, TJ_F32);
    show("x", x);
    show("b = arange(4)", b);
    /* y = gelu(x * 0.5 + b), broadcast over rows */
    tj_tensor *y = tj_gelu(tj_add(tj_mul_scalar(x, 0.5), b, 1.0), "none");
    show("gelu(0.5 * x + b)", y);
    show("where(x > 0, x, 0)", tj_where(tj_gt_scalar(x, 0), x, tj_zeros(bias_sizes, 0, TJ_F32)));
    tj_tensor *bad = tj_add(x, tj_ones(bias_sizes, 1, TJ_F32), 1.0); /* [3,4] + [4]: fine */
    int64_t wrong[1] = {5};
    tj_tensor *err = tj_add(bad, tj_ones(wrong, 1, TJ_F32), 1.0);
    printf("a bad call returns %s and says: %s\n\n", err ? "a tensor" : "NULL", tj_last_error());
    tj_clear_error();
    tj_scope_end();

    /* timing: a pointwise chain over 1e6 elements */
    int64_t n = 1000000;
    tj_tensor *big = tj_randn(&n, 1, TJ_F32, gen);
    double best = 1e9;
    for (int rep = 0; rep < 10; rep++) {
        tj_scope_begin();
        double t0 = now_s();
        tj_tensor *r = tj_add_scalar(tj_mul(tj_tanh(big), tj_sigmoid(big)), 1.0, 1.0);
        double t = now_s() - t0;
        if (!r) return 1;
        if (t < best) best = t;
        tj_scope_end();
    }
    printf("tanh(x) * sigmoid(x) + 1 over %lld f32 elements, eager: %.3f ms (best of 10)\n",
           (long long)n, best * 1e3);
    tj_release(big);
    tj_generator_free(gen);
    return 0;
}
