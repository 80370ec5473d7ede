/* nn_rules.h — checks shared by the shape rules of the nn family
 * (core/nn_rules.c, core/nn_rules_loss.c). Every failure sets an error that
 * names the op, the argument and the sizes or dtype that were wrong. */
#ifndef TJIT_NN_RULES_H
#define TJIT_NN_RULES_H

#include "core.h"

/* The argument name of input i, for messages. */
#define TJC_NN_ARG(c, i) tjc_input_name((c)->op, (i))

/* Input i must be f32 or f64. */
tj_status tjc_nn_require_float(const tjc_call *c, int i);
/* Input i must be i64 (class indices, positions). */
tj_status tjc_nn_require_index(const tjc_call *c, int i);
/* Optional input i, when present, must be a floating 1-D tensor of n
 * elements; `what` says what the elements stand for ("one per channel"). */
tj_status tjc_nn_check_vector(const tjc_call *c, int i, int64_t n, const char *what);
/* Input i must have exactly the sizes of input j. */
/* The given inputs from..to have input 0's dtype: PyTorch's normalisations
 * refuse an f64 weight for an f32 input instead of promoting. */
tj_status tjc_nn_same_dtype(const tjc_call *c, int from, int to);
tj_status tjc_nn_same_sizes(const tjc_call *c, int i, int j);
/* Input i must have sizes equal to sizes/ndim. */
tj_status tjc_nn_check_sizes(const tjc_call *c, int i, const int64_t *sizes, int ndim);
/* The choice index of str(none|mean|sum) attribute k: 0 none, 1 mean, 2 sum. */
int tjc_nn_reduction(const tjc_call *c, int k);

enum { TJC_RED_NONE = 0, TJC_RED_MEAN = 1, TJC_RED_SUM = 2 };

/* cross_entropy_loss of c (self, target, weight; reduction, ignore_index,
 * label_smoothing) composed of ops on the inputs' device
 * (core/loss_composite.c); a new tensor, or NULL with an error set. */
tj_tensor *tjc_cross_entropy(const tjc_call *c);

#endif
