/* nn_cases.h — what the nn family's tests share: the list of ops each test
 * file covers (test_nn_coverage.c checks that together they cover every row
 * of core/ops_nn.def) and a finite-difference gradient check for the
 * backward ops. Prefix tt_nn_. */
#ifndef TJIT_NN_CASES_H
#define TJIT_NN_CASES_H

#include "tests/support/testing.h"

/* ---- coverage lists: the ops each test file checks against a reference ---- */
#define TT_NN_NORM_OPS                                                                    \
    "aten::native_batch_norm", "aten::batch_norm", "aten::native_batch_norm_backward",   \
        "aten::native_layer_norm", "aten::layer_norm", "aten::native_layer_norm_backward", \
        "aten::native_group_norm", "aten::group_norm", "aten::native_group_norm_backward", \
        "tjit::batch_norm_stats"
#define TT_NN_SOFTMAX_OPS                                                     \
    "aten::softmax", "aten::log_softmax", "aten::_softmax_backward_data", \
        "aten::_log_softmax_backward_data"
#define TT_NN_LOSS_OPS                                                                   \
    "aten::mse_loss", "aten::mse_loss_backward", "aten::nll_loss", "aten::nll_loss_backward", \
        "aten::cross_entropy_loss", "aten::binary_cross_entropy_with_logits",           \
        "aten::binary_cross_entropy_with_logits_backward"
#define TT_NN_INDEX_OPS                                                                    \
    "aten::embedding", "aten::embedding_dense_backward", "aten::index_select", "aten::gather", \
        "aten::scatter_add", "aten::one_hot"
#define TT_NN_DROPOUT_OPS "aten::native_dropout", "aten::dropout", "aten::native_dropout_backward"

/* Fails unless every name in ops[0..n) is a row of the op table. */
void tt_nn_assert_ops_exist(const char *const *ops, int n);

/* ---- finite differences -------------------------------------------------------
 * A forward op as a function of its tensor inputs (ctx carries the rest). */
typedef tj_tensor *(*tt_nn_fwd_fn)(tj_tensor *const *in, const void *ctx);

/* Fails unless grad matches the central difference, element by element, of
 * L = sum(f(in) * weight) with respect to in[k] (a contiguous f64 tensor that
 * is perturbed in place and restored): |grad - fd| <= tol (1 + |fd|). */
void tt_nn_check_grad_(tt_nn_fwd_fn f, const void *ctx, tj_tensor *const *in, int k,
                       const tj_tensor *weight, const tj_tensor *grad, double tol,
                       const char *file, int line);
#define tt_nn_check_grad(f, ctx, in, k, weight, grad, tol) \
    tt_nn_check_grad_(f, ctx, in, k, weight, grad, tol, __FILE__, __LINE__)

/* Tensors a test owns until tt_nn_free_all() (call it at the end of each
 * test): tt_nn_own returns t, failing the test when t is NULL. */
tj_tensor *tt_nn_own_(tj_tensor *t, const char *file, int line);
#define tt_nn_own(t) tt_nn_own_(t, __FILE__, __LINE__)
void tt_nn_free_all(void);
/* Owns out[0..n) of a multi-output op, failing unless n == want. */
void tt_nn_own_outputs_(tj_tensor **out, int n, int want, const char *file, int line);
#define tt_nn_own_outputs(out, n, want) tt_nn_own_outputs_(out, n, want, __FILE__, __LINE__)

/* A random f64 tensor in [lo, hi), contiguous. */
tj_tensor *tt_nn_randd(tj_generator *g, const int64_t *sizes, int ndim, double lo, double hi);
/* An i64 tensor from values. */
tj_tensor *tt_nn_ints(const int64_t *values, const int64_t *sizes, int ndim);

#endif
