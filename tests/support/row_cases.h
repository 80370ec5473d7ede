/* row_cases.h — random row-group models for the fusion backends' testers:
 * a pointwise prologue over [rows..., N] inputs (broadcast [N] and [rows, 1]
 * operands, a chunk of a wider input), one row op (softmax, log_softmax,
 * layer_norm, sum, mean, amax, amin or logsumexp over the last dim), and a
 * pointwise epilogue (a reduction's: of the reduced sizes, then of the full
 * ones reading it broadcast along the row); rows of 1 (2 for a reduction)
 * to 5000 elements, f32 or f64, with constant rows and infinities (and, for
 * reductions, NaN) among the values. The fuser must make the row op and its neighbours one group; the
 * fused result must equal the unfused one within the bounds (tt_row_far).
 * Prefix tt_. */
#ifndef TJIT_ROW_CASES_H
#define TJIT_ROW_CASES_H

#include "tests/support/testing.h"

typedef struct tt_row_recipe {
    uint64_t seed;
    int n_prologue, n_epilogue; /* ops before and after the row op */
    int row;                    /* 0 softmax, 1 log_softmax, 2 layer_norm, 3 sum, 4 mean, 5 amax,
                                 * 6 amin, 7 logsumexp (over the last dim) */
    /* a reduction: n_epilogue ops of the reduced sizes, then (keepdim) back
     * 0 none, 1 the prologue's value times it, 2 minus it, and n_post
     * ops of the full sizes */
    bool keepdim;
    int back, n_post;
} tt_row_recipe;

typedef struct tt_row_case {
    tj_model_fn model;          /* 5 inputs, 2 outputs */
    tt_row_recipe recipe;
    tj_tensor *in[5];           /* x, y (full or broadcast), w [N], b [N] (a reduction: [rows..., 1],
                                 * or [1] without keepdim), wide (chunked) */
    int n_in;
    int out_ndim[2];            /* the outputs' sizes */
    int64_t out_sizes[2][3];
} tt_row_case;

/* The pointwise nodes next to the row op, which must join its group. */
int tt_row_neighbours(const tt_row_recipe *r);

void tt_row_case_setup(int seed, tj_generator *gen, tt_row_case *c);
void tt_row_case_free(tt_row_case *c);
/* How many elements of got are past the bounds of want: NaN matches NaN,
 * infinities exactly, finite values within atol + rtol * magnitude (f32:
 * 1e-4, f64: 1e-10). Both on the CPU. */
int tt_row_far(tj_tensor *want, tj_tensor *got);

#endif
