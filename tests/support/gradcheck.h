/* gradcheck.h — finite-difference checks of derived gradients, in f64.
 * tt_gradcheck_graph compares tj_grad_graph(g) with central differences of
 * running g; applied to a gradient graph it checks second derivatives. The op
 * helpers build a one-node graph by tracing a single call. */
#ifndef TJIT_GRADCHECK_H
#define TJIT_GRADCHECK_H

#include "tests/support/testing.h"

/* True when TJIT_TEST_DEVICE=cuda: the checks then run their graphs on
 * cuda:0 (the same finite differences, taken on the host). A test program
 * in that mode reports itself skipped (77) where no CUDA device exists. */
bool tt_gradcheck_device_mode(void);
/* tj_run of host tensors on a program the checks made: in device mode the
 * inputs go to cuda:0 where the graph was traced there, and the outputs come
 * back as host tensors. */
tj_status tt_gradcheck_run(const tj_program *p, tj_tensor *const *in, tj_tensor **out);
#define TT_GRADCHECK_SKIP_WITHOUT_DEVICE()                                           \
    do {                                                                             \
        if (tt_gradcheck_device_mode() && !tj_cuda_is_available()) {                 \
            printf("skipped: TJIT_TEST_DEVICE=cuda and no CUDA device: %s\n",        \
                   tj_last_error());                                                 \
            return 77;                                                               \
        }                                                                            \
    } while (0)

/* Fails the test naming label, the input and the element when the gradient
 * of sum_o <g(x)_o, v_o> (v random) differs from the finite difference by
 * more than atol + rtol |numeric|. inputs: one per graph input. */
void tt_gradcheck_graph(const tj_graph *g, tj_tensor *const *inputs, const bool *wrt, double atol,
                        double rtol, const char *label);

/* A graph of one call of op on tensors like inputs (NULL for an absent
 * optional) with attrs (NULL: the schema's defaults). NULL with a message
 * when the call itself fails. */
tj_graph *tt_op_graph(const tj_op_info *op, tj_tensor *const *inputs, int n_in, const tj_attr *attrs);

/* First and second order checks of op's derivative at inputs (f64), for the
 * floating-point inputs where wrt is true (NULL: all of them). */
void tt_gradcheck_op(const tj_op_info *op, tj_tensor *const *inputs, int n_in, const tj_attr *attrs,
                     const bool *wrt, const char *label);
void tt_gradgradcheck_op(const tj_op_info *op, tj_tensor *const *inputs, int n_in,
                         const tj_attr *attrs, const bool *wrt, const char *label);

/* The same for a graph that returns only the op's outputs where keep[o] is
 * true (NULL: all): the others get no gradient, so the op's rule sees NULL
 * (zero) for them. */
tj_graph *tt_op_graph_outputs(const tj_op_info *op, tj_tensor *const *inputs, int n_in,
                              const tj_attr *attrs, const bool *keep);
void tt_gradcheck_op_outputs(const tj_op_info *op, tj_tensor *const *inputs, int n_in,
                             const tj_attr *attrs, const bool *wrt, const bool *keep,
                             const char *label);
void tt_gradgradcheck_op_outputs(const tj_op_info *op, tj_tensor *const *inputs, int n_in,
                                 const tj_attr *attrs, const bool *wrt, const bool *keep,
                                 const char *label);

#endif
