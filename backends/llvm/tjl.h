/* tjl.h — the LLVM backend (backends/llvm/): fusion groups compiled to
 * vectorised, multithreaded machine code through the LLVM C API and ORC
 * LLJIT. Prefix tjl_. What the rest of the library and the tools may call;
 * the backend's own machinery is in internal.h. docs/codegen.md describes it.
 *
 * Two backends share the code generator:
 *   "llvm"       transcendentals inline and vectorised everywhere (f64 exp,
 *                log, tanh, erf and f32 erf, pow from core/pw_math.h's
 *                vectorisable versions, which differ from libm by a few ulp);
 *   "llvm-libm"  the same, but calls libm wherever the portable runner does,
 *                so every kernel gives the portable runner's bits exactly.
 * A group the code generator cannot take (an op without an emitter, an LLVM
 * failure) runs on the portable runner instead, with the reason recorded.
 */
#ifndef TJIT_TJL_H
#define TJIT_TJL_H

#include <stdio.h>

#include "fuser/fuser.h"

const tjf_backend *tjl_backend(void);      /* "llvm" */
const tjf_backend *tjl_libm_backend(void); /* "llvm-libm" */

/* Process-wide counters (read for tests and TJIT_LLVM_STATS=1 reports). */
typedef struct tjl_stats {
    int64_t compiled;    /* kernels that went through LLVM's optimiser and code generator */
    int64_t disk_hits;   /* kernels loaded from the on-disk cache instead */
    int64_t memory_hits; /* kernels identical to one already loaded, which they share */
    int64_t fallbacks;   /* group specs handed to the portable runner */
    double compile_ms;   /* wall time of all compiles (and disk loads) */
    int64_t loaded;      /* distinct kernels in the JIT now */
} tjl_stats;
tjl_stats tjl_get_stats(void);

/* For a kernel made by either backend: why the portable runner runs it, or
 * NULL when LLVM code does; and the kernel's symbol (NULL for a fallback). */
const char *tjl_kernel_fallback(const tjf_kernel *k);
const char *tjl_kernel_symbol(const tjf_kernel *k);

/* Whether the code generator has an emitter for op (for .Scalar forms, their
 * base op's); every fusible op should. */
bool tjl_has_emitter(const tj_op_info *op);

/* A group kernel's text for a spec: LLVM IR as generated, LLVM IR after the
 * optimiser, or the host assembly. malloc'd; NULL with an error. */
typedef enum tjl_text { TJL_TEXT_IR, TJL_TEXT_IR_OPT, TJL_TEXT_ASM } tjl_text;
char *tjl_kernel_text(const tj_graph *subgraph, const tjf_spec *spec, bool libm, tjl_text what);

/* `tjit dump --kernels`: for every fusion group of g (inputs as the values'
 * types say), the optimised IR of its "llvm" kernel, and with_asm its
 * assembly too. */
tj_status tjl_dump_kernels(const tj_graph *g, bool with_asm, FILE *out);

#endif
