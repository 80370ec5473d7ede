/* cuda_ptx.h — the CUDA tests' check that a source is what a GPU would
 * compile: NVRTC makes PTX of it for an architecture and the toolkit's
 * ptxas accepts that PTX without a word (a warning fails too); and a
 * strided copy of a device tensor, for kernels' strided paths. Prefix tt_. */
#ifndef TJIT_CUDA_PTX_H
#define TJIT_CUDA_PTX_H

#include <stdbool.h>
#include <stddef.h>

#include "tjit/tjit.h"

/* Whether NVRTC compiles source (named key in messages) to PTX for
 * archs[0] and ptxas assembles that PTX silently for each of the n_archs
 * archs ("sm_80", "sm_90"); why (of cap bytes) says what failed when not.
 * One NVRTC run serves every arch: tjit's sources hold no __CUDA_ARCH__
 * branches, PTX for the oldest arch is what a newer GPU's driver would JIT,
 * and ptxas's code generation is what differs per arch. Needs the build's
 * ptxas (TJCU_PTXAS): without it, false with that reason. */
bool tt_cuda_nvrtc_ptxas(const char *key, const char *source, const char *const *archs, int n_archs, char *why,
                         size_t cap);

/* Sources to compile with tt_cuda_nvrtc_ptxas_all: a growing list. */
typedef struct tt_cuda_source {
    const char *key, *text; /* not owned */
    char failure[1500];
} tt_cuda_source;
typedef struct tt_cuda_sources {
    tt_cuda_source *s;
    int n, cap;
} tt_cuda_sources;

void tt_cuda_sources_add(tt_cuda_sources *l, const char *key, const char *text);

/* tt_cuda_nvrtc_ptxas on every source of l, on two threads (the compiles
 * are independent; ptxas runs as a process of its own); fails the test with
 * the first failure. Frees the list and returns how many it compiled. */
int tt_cuda_nvrtc_ptxas_all(tt_cuda_sources *l, const char *const *archs, int n_archs);

/* A copy of t on t's device with t's values, laid out as every other element
 * of a buffer twice as long in its last dim (a new reference). */
tj_tensor *tt_cuda_strided_copy(tj_tensor *t);

#endif
