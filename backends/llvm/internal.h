/* internal.h — the LLVM backend's machinery, shared by its files:
 *   codegen.c  the kernel plan (operands, collapsed dims) and the IR of its
 *              loops and of the group's value graph;
 *   rowgen.c   the loops of a row kernel (a group holding a row op);
 *   ops.c      one IR emitter per pointwise op of the table;
 *   math.c     inline IR of the transcendentals (mirrors core/pw_math.h);
 *   jit.c      target machine, optimiser, object code, ORC LLJIT, the
 *              in-process registry and the on-disk cache;
 *   backend.c  the tjf_backend: compile (or fall back), launch, release.
 */
#ifndef TJIT_TJL_INTERNAL_H
#define TJIT_TJL_INTERNAL_H

#include <llvm-c/Core.h>

#include "backends/cpu/cpu.h"
#include "tjl.h"

#define TJL_MAX_OPERANDS TJCPU_MAX_OPERANDS

/* One module being built: its context, types and the mode. */
typedef struct tjl_ir {
    LLVMContextRef ctx;
    LLVMModuleRef mod;
    LLVMBuilderRef b;
    LLVMTypeRef f32, f64, i64, i32, i8, i1, ptr, void_;
    bool libm;       /* call libm wherever the portable runner does */
    char why[160];   /* the first reason the group cannot be compiled */
} tjl_ir;

tj_status tjl_ir_init(tjl_ir *ir, bool libm);
void tjl_ir_dispose(tjl_ir *ir);
/* Records why code generation failed (the first reason wins); returns NULL. */
LLVMValueRef tjl_fail(tjl_ir *ir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- values of a dtype ------------------------------------------------------- */

/* The IR type a dtype computes in (bool: i1) and the one it is stored as (bool: i8). */
LLVMTypeRef tjl_type(const tjl_ir *ir, tj_dtype t);
LLVMTypeRef tjl_mem_type(const tjl_ir *ir, tj_dtype t);
/* A constant of dtype t holding v converted as the CPU backend's conversion
 * loops do (copy.c: saturating, NaN to 0 for i64), or as its pointwise loops
 * convert parameters (pointwise.c: cvt_*). */
LLVMValueRef tjl_const(tjl_ir *ir, tj_dtype t, double v);
LLVMValueRef tjl_param(tjl_ir *ir, tj_dtype t, double v);
/* v of dtype from, converted to dtype to as copy.c's loops do. */
LLVMValueRef tjl_convert(tjl_ir *ir, LLVMValueRef v, tj_dtype to, tj_dtype from);
/* A call of an overloaded intrinsic ("llvm.fabs") on one or two values of its type. */
LLVMValueRef tjl_intrinsic(tjl_ir *ir, const char *name, LLVMValueRef a, LLVMValueRef b);

/* ---- op emitters (ops.c) ------------------------------------------------------- */

typedef struct tjl_args {
    LLVMValueRef x[3];   /* the expression's a, b, c in the compute dtype */
    LLVMValueRef p[2];   /* p0, p1 as constants of the compute dtype */
    double raw[2];       /* p0, p1 as the op's attributes gave them */
} tjl_args;

/* Emits one element of op's expression in compute dtype t; NULL with a reason. */
typedef LLVMValueRef (*tjl_emit_fn)(tjl_ir *ir, tj_dtype t, const tjl_args *a);
tjl_emit_fn tjl_emitter(const tj_op_info *op);

/* ---- transcendentals (math.c) ------------------------------------------------ */

typedef enum tjl_fn {
    TJL_EXPF, TJL_LOGF, TJL_TANHF, /* core/pw_math.h's tjm_expf, tjm_logf, tjm_tanhf */
    TJL_EXPD, TJL_LOGD, TJL_TANHD, TJL_ERFD, TJL_ERFF,
    TJL_SINF, TJL_COSF, TJL_SIND, TJL_COSD, /* core/pw_trig.h's (trig.c) */
    TJL_EXPM1F, TJL_EXPM1D, TJL_LOG1PF, TJL_LOG1PD, TJL_POWF, TJL_POWD,
    TJL_SIGMOIDF, TJL_SILUF, /* tjm_sigmoidf, tjm_siluf */
    TJL_NUM_FNS
} tjl_fn;

/* A call of the module's inline (alwaysinline, internal) version of fn. */
LLVMValueRef tjl_math(tjl_ir *ir, tjl_fn fn, LLVMValueRef a, LLVMValueRef b);
/* When the module's kernels call these functions more than a few times, has
 * them called out of line, through vector versions vector_bits and half as
 * wide (the main loop's and the vectorised epilogue's), so that each body is
 * compiled once, not once per call (math.c). */
void tjl_math_outline(tjl_ir *ir, unsigned vector_bits);
/* After optimisation: the vector versions no loop came to call, removed
 * (the code generator would otherwise compile every one). */
void tjl_math_drop_unused(tjl_ir *ir);
/* A call of a C library function by name (float or double, 1 or 2 arguments),
 * marked nobuiltin so LLVM does not rewrite it: the same bits as the portable
 * runner's call. */
LLVMValueRef tjl_libm(tjl_ir *ir, const char *name, LLVMValueRef a, LLVMValueRef b);

/* ---- the kernel plan (codegen.c) ------------------------------------------- */

typedef enum tjl_operand_kind { TJL_OUTPUT, TJL_INPUT, TJL_VIEW } tjl_operand_kind;

typedef struct tjl_operand {
    tjl_operand_kind kind;
    int index;                   /* output or group input number */
    int dim;                     /* TJL_VIEW: the chunked dim of the input, normalised */
    int64_t chunks, piece;       /* TJL_VIEW: how many, and which one */
    tj_dtype dtype;
    bool runtime;                /* strides known at run time only (strided input) */
    int rt;                      /* runtime operands: index into the stride table */
} tjl_operand;

typedef struct tjl_plan {
    int n_operands, n_outputs, n_runtime;
    tjl_operand op[TJL_MAX_OPERANDS];
    int ndim;                    /* the iteration space: the outputs' sizes */
    int64_t sizes[TJ_MAX_DIMS];
    int64_t numel;
    /* collapsed dims, outer to inner: each covers iteration dims
     * [first, first + count) */
    int n_dims;
    int64_t dim_size[TJ_MAX_DIMS];
    int dim_first[TJ_MAX_DIMS], dim_count[TJ_MAX_DIMS];
    /* per collapsed dim and operand: stride in elements, or -1 for a runtime
     * operand's stride read from the table at launch */
    int64_t stride[TJ_MAX_DIMS][TJL_MAX_OPERANDS];
    int n_nodes;
    /* a row kernel (the group holds a row op): elements per row, the last
     * collapsed dim; the kernel's range counts rows. 0: elements. */
    int64_t row_len;
    /* a reduction's row kernel whose outputs have the reduced sizes: one
     * element a row, walked as [rows..., 1] of the iteration space */
    bool reduced_outputs;
} tjl_plan;

/* Plans the kernel of subgraph for spec and emits it into ir's module as a
 * function named name: void name(char **ptrs, const int64_t *strides,
 * int64_t begin, int64_t end) over elements [begin, end) of the iteration
 * space (row-major). ptrs: one per operand, at its first element; strides:
 * runtime operand r's stride along collapsed dim d at [r * n_dims + d].
 * TJ_ERR_UNSUPPORTED with the reason in ir->why when the group has something
 * the generator does not take. */
tj_status tjl_generate(tjl_ir *ir, const tj_graph *subgraph, const tjf_spec *spec, const char *name,
                       tjl_plan *plan);

/* The generator's state for one kernel, shared with rowgen.c: it emits the
 * loops, codegen.c the elements. Positions are along the innermost
 * collapsed dim; values are the subgraph's, each loaded or computed once
 * per element. */
typedef struct tjl_gen tjl_gen;
/* In fn's entry block: operand pointers and strides from fn's parameters. */
void tjl_gen_operands(tjl_gen *G, LLVMValueRef fn);
/* Offsets of every operand at row `row` of the outer collapsed dims. */
void tjl_gen_row(tjl_gen *G, LLVMValueRef row);
/* A new element at position idx: values computed so far are forgotten. */
void tjl_gen_at(tjl_gen *G, LLVMValueRef idx);
/* Pointwise node n's value at the current element. */
tj_status tjl_gen_node(tjl_gen *G, const tj_node *n);
/* Value v at the current element in dtype t (an operand is loaded). */
LLVMValueRef tjl_gen_value(tjl_gen *G, const tj_value *v, tj_dtype t);
/* Sets v's value at the current element (x in v's dtype). */
void tjl_gen_set(tjl_gen *G, const tj_value *v, LLVMValueRef x);
/* Stores group output i at the current element. */
void tjl_gen_store(tjl_gen *G, int i);
/* The dtype v was planned in (the spec's). */
tj_dtype tjl_gen_dtype(const tjl_gen *G, const tj_value *v);
/* Whether v has the reduced sizes of the group's reduction (one value a
 * row); false in groups without one. */
bool tjl_gen_per_row(const tjl_gen *G, const tj_value *v);
/* The body of a row kernel (rowgen.c): fn's blocks, over rows [begin, end)
 * of plan P for subgraph block b, whose row op is row. */
tj_status tjl_emit_rows(tjl_gen *G, tjl_ir *ir, const tjl_plan *P, tj_block *b, const tj_node *row,
                        LLVMValueRef fn);

/* ---- the JIT (jit.c) ------------------------------------------------------------ */

typedef void (*tjl_entry)(char **ptrs, const int64_t *strides, int64_t begin, int64_t end);
typedef struct tjl_code tjl_code; /* a loaded kernel, shared by identical ones */

typedef struct tjl_timing {
    double build_ms, optimise_ms, codegen_ms, link_ms;
    bool disk_hit, memory_hit;
} tjl_timing;

/* Compiles ir's module (its function `name`, renamed to the kernel's symbol)
 * and loads it, or reuses a loaded or cached identical one. Takes the
 * module (ir->mod is NULL afterwards). */
tjl_code *tjl_jit_load(tjl_ir *ir, const char *name, tjl_timing *timing);
tjl_entry tjl_code_entry(const tjl_code *c);
const char *tjl_code_symbol(const tjl_code *c);
void tjl_code_release(tjl_code *c);
/* Text of ir's module after renaming `name`: optimised IR or assembly. */
char *tjl_jit_text(tjl_ir *ir, const char *name, tjl_text what);
/* Counters kept by jit.c. */
void tjl_jit_stats(tjl_stats *s);
void tjl_count_fallback(void);

#endif
