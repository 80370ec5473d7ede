/* passes.h — graph passes and the fuser. A pass rewrites a graph in place, is
 * idempotent (running it twice changes nothing the second time), and leaves a
 * graph that tj_graph_verify accepts; in builds with TJIT_VERIFY_PASSES the
 * pipeline verifies after every pass. docs/passes.md describes each pass. */
/* the umbrella header first, outside this guard: it includes every public
 * header in dependency order, whichever of them a user includes first */
#include "tjit/tjit.h"
#ifndef TJIT_PASSES_H
#define TJIT_PASSES_H

#include "tjit/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef tj_status (*tj_pass_fn)(tj_graph *g);

/* Runs the comma-separated passes named in pipeline, in order:
 * "dce,cse,constant_fold,peephole,canonicalize,fuse". An unknown name is an
 * error that lists the known ones. When the environment variable TJIT_DUMP
 * names passes ("fuse", "dce,fuse" or "all"), the graph is printed to stderr
 * after each of them; when it names "fusion-report", tj_fusion_report's text
 * is printed to stderr after each fuse pass. */
tj_status tj_run_passes(tj_graph *g, const char *pipeline);
/* The pipeline tj_compile runs by default. */
const char *tj_default_pipeline(void);
/* The pass called name, or NULL. */
tj_pass_fn tj_find_pass(const char *name);
int tj_num_passes(void);
const char *tj_pass_name(int i);

/* Each pass by itself. */
tj_status tj_pass_functionalize(tj_graph *g); /* writes in place into the graph's own values become out-of-place */
tj_status tj_pass_dce(tj_graph *g);           /* removes nodes whose results nobody uses, keeping effects */
tj_status tj_pass_cse(tj_graph *g);           /* merges nodes with equal kind, inputs and attributes */
tj_status tj_pass_constant_fold(tj_graph *g); /* runs nodes whose inputs are all constants */
tj_status tj_pass_peephole(tj_graph *g);      /* local rewrites: x*1, x+0, t(t(x)), ... */
tj_status tj_pass_canonicalize(tj_graph *g);  /* a deterministic order of independent nodes */
tj_status tj_pass_merge_linears(tj_graph *g); /* add(linear, linear) -> addmm accumulating into a linear */
tj_status tj_pass_fold_batch_norm(tj_graph *g); /* eval-mode batch_norm of a conv into its weights */
tj_status tj_pass_split_batch_norm(tj_graph *g); /* training batch_norm: statistics, then pointwise */
tj_status tj_pass_fuse(tj_graph *g);          /* pointwise chains (with chunk) into prim::FusionGroup */

/* Why fusion stopped where it did, for g as tj_pass_fuse left it: every node
 * of the pointwise kind (and every chunk) left outside a group, and every
 * pair of neighbouring groups not merged, one line each with the reason the
 * fuser's own rules give (not fusible and why, a cycle through a named node,
 * the operand cap, the group-size cap, ...), then a summary line. Nodes are
 * named as the canonical printer names them ("%7 aten::add"). The reasons
 * depend on the block's order, so ask right after the fuse pass (TJIT_DUMP=
 * fusion-report and `tjit dump MODEL --fusion-report` do). malloc'd text
 * (free it); NULL with an error. docs/passes.md, "Fusion report". */
char *tj_fusion_report(const tj_graph *g);

/* ---- autodiff (docs/autodiff.md) ------------------------------------------------ */

/* PyTorch's Gradient layout. forward is the graph with the values backward
 * reads appended as outputs (after its own n_outputs); backward's inputs are a
 * gradient per forward output (of n_outputs), then the n_saved saved values;
 * its outputs are the gradients of the inputs grad_of[0..n_grads). */
typedef struct tj_gradient {
    tj_graph *forward, *backward;
    int n_outputs, n_saved, n_grads;
    int *grad_of;
} tj_gradient;

/* Differentiates g with respect to its inputs i where wrt[i] (floating-point
 * tensors). Fusion groups cannot be differentiated: differentiate first. */
tj_status tj_autodiff(const tj_graph *g, const bool *wrt, tj_gradient *out);
void tj_gradient_free(tj_gradient *gr);
/* Forward and backward in one graph: inputs are g's inputs then a gradient per
 * output; outputs are the gradients of the inputs where wrt[i]. Differentiate
 * it again for second derivatives. NULL on error. */
tj_graph *tj_grad_graph(const tj_graph *g, const bool *wrt);

#ifdef __cplusplus
}
#endif

#endif
