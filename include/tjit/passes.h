/* passes.h — graph passes and the fuser. A pass rewrites a graph in place, is
 * idempotent (running it twice changes nothing the second time), and leaves a
 * graph that tj_graph_verify accepts; in builds with TJIT_VERIFY_PASSES the
 * pipeline verifies after every pass. docs/passes.md describes each pass. */
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
 * after each of them. */
tj_status tj_run_passes(tj_graph *g, const char *pipeline);
/* The pipeline tj_compile runs by default. */
const char *tj_default_pipeline(void);
/* The pass called name, or NULL. */
tj_pass_fn tj_find_pass(const char *name);
int tj_num_passes(void);
const char *tj_pass_name(int i);

/* Each pass by itself. */
tj_status tj_pass_dce(tj_graph *g);           /* removes nodes whose results nobody uses, keeping effects */
tj_status tj_pass_cse(tj_graph *g);           /* merges nodes with equal kind, inputs and attributes */
tj_status tj_pass_constant_fold(tj_graph *g); /* runs nodes whose inputs are all constants */
tj_status tj_pass_peephole(tj_graph *g);      /* local rewrites: x*1, x+0, t(t(x)), ... */
tj_status tj_pass_canonicalize(tj_graph *g);  /* a deterministic order of independent nodes */
tj_status tj_pass_fuse(tj_graph *g);          /* pointwise chains (with chunk) into prim::FusionGroup */

#ifdef __cplusplus
}
#endif

#endif
