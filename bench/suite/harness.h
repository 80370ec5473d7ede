/* harness.h — the measuring harness of bench_suite (bench/suite.c): one
 * workload is a model function with its inputs and parameters; the harness
 * traces it once, compiles it per tjit variant (replay unfused, fused with the
 * portable runner, fused with LLVM), checks every variant can run, exports
 * the inputs, weights, outputs and gradients as .npy for the PyTorch side,
 * then times all variants interleaved in a random order per repetition
 * (medians after warm-up) and appends one CSV row per variant.
 * Prefix bs_. */
#ifndef TJIT_BENCH_SUITE_HARNESS_H
#define TJIT_BENCH_SUITE_HARNESS_H

#include <stdbool.h>
#include <stdio.h>

#include "tjit/tjit.h"
#include "tools/progress.h"

enum { BS_MAX_IN = 4, BS_MAX_OUT = 4, BS_MAX_PARAMS = 16 };

/* A measurement that is not a tjit variant but runs interleaved with them:
 * a plain copy beside the pointwise chain, cblas_sgemm beside tj_mm. */
typedef struct bs_extra {
    const char *variant; /* its column in the CSV: "copy", "openblas" */
    void (*run)(void *ctx);
    void *ctx;
} bs_extra;

typedef struct bs_workload {
    const char *id;    /* a file-name-safe key: "lstm_fwd_b64" */
    const char *label; /* what the table prints */
    const char *kind;  /* tells the PyTorch side which model to rebuild */
    tj_model_fn fn;
    void *ctx;
    tj_tensor *in[BS_MAX_IN];
    int n_in, n_out;
    /* named parameters, exported as param_<name>.npy (and their gradients) */
    tj_tensor *params[BS_MAX_PARAMS];
    int n_params;
    bool backward; /* a step is forward + tj_backward (gradients of the parameters) */
    double lr;     /* > 0: and an SGD update of the parameters */
    /* for derived figures: bytes moved, flops, ops per step (0 when unused) */
    double bytes, flops;
    int ops;
    bs_extra extra; /* extra.run NULL when none */
} bs_workload;

typedef struct bs_config {
    const char *out_dir; /* build/bench: data/<id>/, tjit.csv and manifest.jsonl go there */
    double budget_s;     /* seconds of timed steps per workload, all variants together */
    int min_reps, max_reps, warmup;
    int threads;
    bool llvm_built; /* recorded in the manifest */
    bool append;     /* add to the files of an earlier run instead of starting them anew */
    double load_before;
    FILE *csv;       /* the rows: workload,label,variant,median_s,best_s,reps,status,note */
    FILE *manifest;  /* JSON lines: one object per workload, and one {"run": ...} per run */
    tjit_progress *progress; /* the workloads done of those selected; NULL: none shown */
} bs_config;

/* Opens out_dir/tjit.csv and out_dir/manifest.jsonl; false on error. */
bool bs_open(bs_config *cfg);
/* Adds the run's line to the manifest (threads, LLVM, load) and closes. */
void bs_close(bs_config *cfg);

/* Measures w and writes its rows; prints a one-line summary to stdout.
 * Failures of a variant are recorded as "n/a" with the reason, never fatal. */
void bs_run_workload(bs_config *cfg, const bs_workload *w);

/* Seconds on the monotonic clock. */
double bs_now(void);

#endif
