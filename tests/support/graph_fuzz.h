/* graph_fuzz.h — the whole-table graph fuzzer: random well-typed graphs over
 * every op of the table (pointwise and in-place forms, reductions, views and
 * shape ops, matmul/linear, conv, pooling, norms, softmax, losses, indexing,
 * dropout and the backward ops), made by calling the ops eagerly inside a
 * traced model function. Each graph is compiled through every pass pipeline
 * (tj_default_pipeline(), "" and each single pass), fused, replayed through
 * static plans and op by op, and must equal eager execution of the same
 * calls bit for bit (the "llvm" backend within a tolerance: its f64
 * transcendentals are not libm's). Smooth f64 graphs also get their
 * gradients checked against finite differences.
 *
 * graph_fuzz.c runs the cases; graph_fuzz_ops.c builds the models (one
 * builder per op family, choosing shapes and attributes each op accepts; a
 * call the op refuses is skipped). Prefix tt_gf_. */
#ifndef TJIT_GRAPH_FUZZ_H
#define TJIT_GRAPH_FUZZ_H

#include <stdbool.h>
#include <stdint.h>

#include "tests/support/testing.h"

enum { TT_GF_MAX_OPS = 512 };

typedef struct tt_gf_counts {
    int graphs, gradchecked, llvm_cases, strided, nodes;
    int op_hits[TT_GF_MAX_OPS]; /* traced nodes per op id */
    int op_calls[TT_GF_MAX_OPS]; /* calls the model made that the op accepted */
} tt_gf_counts;

/* One random case, deterministic per seed; fails the cmocka test naming
 * the seed, the pipeline and the element that differ. */
void tt_gf_run_case(int seed, tt_gf_counts *c);

/* ---- between graph_fuzz.c and graph_fuzz_ops.c ---------------------------- */

/* What a model is made from: its seed (the same draws for the traced and the
 * eager call), its float dtype, whether only smooth (differentiable, no
 * kinks) ops may appear, and the generator of its dropout calls. */
typedef struct tt_gf_model {
    uint64_t seed;
    tj_dtype dt;
    bool smooth;
    tj_generator *gen;
    int n_out;
    bool verbose; /* each refused call's message on stderr (a failing seed's story) */
    int *calls;   /* when not NULL: successful calls per op id */
    uint64_t *trail; /* when not NULL: a hash of the calls made and whether each was accepted */
} tt_gf_model;

/* The model function (tj_model_fn): inputs are float tensors of dtype dt,
 * the last one a 1-D bank that parameters (weights, biases, targets) are
 * cut from, so that they are graph values with gradients. */
tj_status tt_gf_model_fn(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out);

#endif
