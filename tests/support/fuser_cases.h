/* fuser_cases.h — the fuser's differential tester, shared by the tests of
 * the fusion backends (test_fuser.c: the portable runner; test_llvm.c: the
 * LLVM backend): random pointwise models (random ops from the table,
 * broadcasting, 0-dim and chunked inputs, mixed dtypes) traced, fused and
 * run on contiguous and strided inputs must equal the unfused replay bit for
 * bit. Prefix tt_. */
#ifndef TJIT_FUSER_CASES_H
#define TJIT_FUSER_CASES_H

#include "core/core.h"
#include "fuser/fuser.h"
#include "tests/support/testing.h"

typedef struct tt_fuser_opts {
    const char *backend;                  /* of the fused program; NULL: the portable runner */
    bool (*op_ok)(const tj_op_info *op);  /* ops the models may call; NULL: every fusible one */
    bool int_inputs;                      /* i64 and bool inputs as well as f32 and f64 */
    bool no_f64;                          /* no f64 inputs (so nothing computes in f64) */
} tt_fuser_opts;

typedef struct tt_fuser_counts {
    int cases, fused_cases, groups;
} tt_fuser_counts;

/* A program of g (cloned, with its bindings), fused first when asked; the
 * group count goes to *groups when not NULL. */
tj_program *tt_compile_with(tj_graph *g, bool fuse, const char *backend, int *groups);
/* Exact equality, NaN equal to NaN; the message names the case. */
void tt_assert_identical(tj_tensor *a, tj_tensor *b, const char *what, int seed);
/* One random case (deterministic per seed): its model, unfused and fused,
 * on contiguous then strided inputs. */
void tt_fuser_run_case(int seed, tj_generator *gen, const tt_fuser_opts *o, tt_fuser_counts *c);

/* A case's model and inputs, for testers that run them their own way (on
 * another device): trace c->model with &c->recipe on inputs like c->in. */
typedef struct tt_fuser_recipe {
    uint64_t seed;
    int n_inputs;
    const tj_op_info **ops;
    int n_ops;
} tt_fuser_recipe;
typedef struct tt_fuser_case {
    tj_model_fn model;
    tt_fuser_recipe recipe;
    const tj_op_info *ops[256];
    tj_tensor *in[6]; /* on the CPU, new references */
    int n_in;
    uint64_t draws;   /* the case's random state after making the inputs */
} tt_fuser_case;
void tt_fuser_case_setup(int seed, tj_generator *gen, const tt_fuser_opts *o, tt_fuser_case *c);
void tt_fuser_case_free(tt_fuser_case *c);
/* A copy of t on the CPU laid out transposed (how != 0, 2 dims or more) or
 * strided, with the same sizes and values. */
tj_tensor *tt_fuser_restride(tj_generator *gen, tj_tensor *t, int how);

/* Runs op alone as the kernel of a one-node fusion group that backend
 * compiles for inputs' spec (contiguous or not), as the interpreter would:
 * the result in *out (a new reference). The error is the backend's. */
tj_status tt_run_op_kernel(const tjf_backend *backend, const tj_op_info *op, const tj_attr *attrs,
                           tj_tensor *const *in, int n_in, tj_tensor **out);

#endif
