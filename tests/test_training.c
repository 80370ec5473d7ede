/* test_training.c — the example models train through traced forward and
 * derived backward graphs: the loss falls for the MLP and the LSTM under SGD
 * on parameters bound by reference, and the CNN and the transformer block take
 * steps that lower their loss. Small step counts keep it fast. */
#include <math.h>
#include <string.h>

#include "examples/models/models.h"
#include "tests/support/testing.h"

/* Losses of `steps` SGD steps on the model's example inputs and target. */
static void train(const tjx_model *m, const char *loss, int steps, double lr, double *first,
                  double *last) {
    tj_generator *gen = tj_generator_new(5);
    tjx_task t = {m, m->create(gen), loss};
    assert_non_null(t.params);
    tj_tensor *in[4];
    assert_int_equal(m->make_inputs(t.params, gen, in), TJ_OK);
    if (!strcmp(loss, "nll")) { /* classes for the MLP */
        int64_t b = tj_size(in[0], 0);
        tj_scope_begin();
        in[m->n_in] = tj_retain(tj_to_dtype(tj_floor(tj_mul_scalar(tj_rand(&b, 1, TJ_F64, gen), 10.0)), TJ_I64));
        tj_scope_end();
    } else if (!strcmp(loss, "mse")) { /* a target of the output's sizes */
        tj_tensor *y[2];
        tj_scope_begin();
        assert_int_equal(m->forward(t.params, in, m->n_in, y, m->n_out), TJ_OK);
        in[m->n_in] = tj_retain(tj_mul_scalar(tj_tanh(y[0]), 0.5));
        tj_scope_end();
    } else {
        in[m->n_in] = tj_zeros(NULL, 0, TJ_F32);
    }
    tj_program *p = tjx_compile_training(&t, in, NULL);
    if (!p) fail_msg("%s: %s", m->name, tj_last_error());
    for (int s = 0; s < steps; s++) {
        double l;
        if (tjx_train_step(&t, p, in, lr, &l)) fail_msg("%s: %s", m->name, tj_last_error());
        assert_true(isfinite(l));
        if (s == 0) *first = l;
        *last = l;
    }
    for (int i = 0; i <= m->n_in; i++) tj_release(in[i]);
    tj_program_free(p);
    m->destroy(t.params);
    tj_generator_free(gen);
}

static void mlp_loss_falls(void **state) {
    (void)state;
    double first = 0, last = 0;
    train(&tjx_mlp, "nll", 25, 0.1, &first, &last);
    print_message("mlp: %.4f -> %.4f\n", first, last);
    assert_true(last < 0.5 * first);
}

static void lstm_loss_falls(void **state) {
    (void)state;
    double first = 0, last = 0;
    train(&tjx_lstm, "mse", 15, 0.5, &first, &last);
    print_message("lstm: %.5f -> %.5f\n", first, last);
    assert_true(last < 0.9 * first);
}

static void cnn_and_transformer_take_steps(void **state) {
    (void)state;
    double first = 0, last = 0;
    train(&tjx_cnn, "square", 3, 0.001, &first, &last);
    print_message("cnn: %.5f -> %.5f\n", first, last);
    assert_true(last < first);
    train(&tjx_transformer, "square", 3, 0.01, &first, &last);
    print_message("transformer: %.5f -> %.5f\n", first, last);
    assert_true(last < first);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mlp_loss_falls),
        cmocka_unit_test(lstm_loss_falls),
        cmocka_unit_test(cnn_and_transformer_take_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
