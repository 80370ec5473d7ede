/* workloads.h — the GPU comparison's workloads (issue 22) in bench_cuda: tjit
 * unfused, fused, and fused + CUDA graph on the LSTM cell (B=1 H=64, B=64
 * H=512; forward and forward+backward), the pointwise chain
 * tanh(x*a+b)*sigmoid(x)+1 (1e6 and 1e8 elements), the MLP train step and the
 * CNN and transformer block forward, beside the device's copy bandwidth. Each
 * workload also describes itself (model, input and parameter sizes) so that
 * bench/gpu_report.py builds the same one in PyTorch (bench/torch_models.py).
 * Prefix bg_. */
#ifndef TJIT_BENCH_GPU_WORKLOADS_H
#define TJIT_BENCH_GPU_WORKLOADS_H

#include <stdbool.h>

typedef struct bg_config {
    bool json;     /* JSON lines for bench/gpu_report.py, else a markdown table */
    bool smoke;    /* tiny sizes, one short window: runs on the host harness */
    double budget; /* timed seconds per workload and variant */
} bg_config;

/* Runs every workload on cuda:0 and prints its rows; a variant that fails
 * prints "n/a: <why>" (JSON: an "error" field) and the others go on. */
void bg_run_all(const bg_config *cfg);

#endif
