/* tjit.h — the public API of tjit: tensors, errors, scopes, random generators,
 * the op table and the generated tj_<op> functions.
 *
 * Ownership: every function that returns a tj_tensor* returns a new reference.
 * Inside a scope (tj_scope_begin/end) that reference belongs to the scope and is
 * released at tj_scope_end unless tj_keep moved it out; outside any scope the
 * caller releases it with tj_release. A function given a NULL tensor returns
 * NULL (or -1), so model code can chain calls and check once.
 */
#ifndef TJIT_TJIT_H
#define TJIT_TJIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status and errors ------------------------------------------------ */

typedef enum tj_status {
    TJ_OK = 0,
    TJ_ERR_ARG,         /* a bad argument: NULL, out of range, wrong kind */
    TJ_ERR_SHAPE,       /* sizes that do not fit together */
    TJ_ERR_DTYPE,       /* a dtype the op does not take */
    TJ_ERR_DEVICE,      /* tensors on different or unsupported devices */
    TJ_ERR_MEMORY,      /* an allocation failed */
    TJ_ERR_PARSE,       /* malformed text (IR, schema, .npy) */
    TJ_ERR_UNSUPPORTED, /* a valid request tjit does not handle */
    TJ_ERR_IO,          /* a file could not be read or written */
    TJ_ERR_INTERNAL,    /* a broken invariant inside tjit */
    TJ_ERR_COMM         /* a collective failed: a peer timed out or left, ranks disagree */
} tj_status;

/* The message of the most recent error on this thread, "" when none. Errors
 * are sticky: a later call given a NULL input keeps the first message, which
 * names the root cause. */
const char *tj_last_error(void);
tj_status tj_last_status(void);
void tj_clear_error(void);
const char *tj_status_name(tj_status s);

/* ---- dtypes and devices ----------------------------------------------- */

typedef enum tj_dtype { TJ_F32, TJ_F64, TJ_I64, TJ_BOOL, TJ_NUM_DTYPES } tj_dtype;

const char *tj_dtype_name(tj_dtype d);     /* "f32", "f64", "i64", "bool" */
size_t tj_dtype_size(tj_dtype d);
bool tj_dtype_is_float(tj_dtype d);

typedef enum tj_device_type { TJ_CPU, TJ_CUDA, TJ_NUM_DEVICE_TYPES } tj_device_type;
typedef struct tj_device {
    tj_device_type type;
    int index; /* 0 for the CPU */
} tj_device;
#define TJ_DEVICE_CPU ((tj_device){TJ_CPU, 0})
#define TJ_DEVICE_CUDA(i) ((tj_device){TJ_CUDA, (i)})

/* "cpu", "cuda:0" into buf (returns buf); and back from "cpu", "cuda", "cuda:N". */
const char *tj_device_to_string(tj_device d, char *buf, size_t n);
tj_status tj_device_parse(const char *text, tj_device *out);
/* Devices of a type usable now: 1 for the CPU; 0 for CUDA without the backend,
 * a driver or a GPU. */
int tj_device_count(tj_device_type type);
bool tj_cuda_is_available(void);
int tj_cuda_device_count(void);
/* Waits for the work queued on every CUDA device; an error a kernel raised
 * asynchronously is reported here, naming the kernel. */
tj_status tj_cuda_synchronize(void);

/* Device memory as the caching allocator sees it: bytes handed to tensors and
 * scratch (allocated) and bytes taken from the driver (reserved), their peaks,
 * and how often the driver was called. Replay in a steady state makes no
 * driver calls. */
typedef struct tj_memory_stats {
    size_t allocated, reserved, peak_allocated, peak_reserved;
    uint64_t driver_allocs, driver_frees, cache_hits, oom_retries;
} tj_memory_stats;
tj_status tj_cuda_memory_stats(int device, tj_memory_stats *out);
/* Gives every cached, unused block back to the driver (after the queued work). */
tj_status tj_cuda_empty_cache(void);
/* f32 matrix products on CUDA may use TF32 tensor cores (off by default: full
 * f32 precision, as on the CPU). */
void tj_cuda_set_allow_tf32(bool allow);
bool tj_cuda_allow_tf32(void);
/* Convolutions time cuDNN's candidate algorithms once per shape and keep the
 * fastest (off by default: cuDNN's heuristics choose). */
void tj_cuda_set_cudnn_benchmark(bool on);
bool tj_cuda_cudnn_benchmark(void);

#define TJ_MAX_DIMS 8

/* ---- tensors ------------------------------------------------------------ */

typedef struct tj_tensor tj_tensor;

/* NULL is ignored by both. In debug builds (TJIT_DEBUG_REFCOUNT) a release
 * or retain after the last release aborts naming the tensor (docs/guide.md). */
tj_tensor *tj_retain(tj_tensor *t); /* returns t */
void tj_release(tj_tensor *t);

tj_tensor *tj_empty(const int64_t *sizes, int ndim, tj_dtype dtype);
tj_tensor *tj_zeros(const int64_t *sizes, int ndim, tj_dtype dtype);
tj_tensor *tj_ones(const int64_t *sizes, int ndim, tj_dtype dtype);
tj_tensor *tj_full(const int64_t *sizes, int ndim, double value, tj_dtype dtype);
tj_tensor *tj_scalar_tensor(double value, tj_dtype dtype); /* 0-dim */
/* [start, end) in steps of step, like torch.arange */
tj_tensor *tj_arange(double start, double end, double step, tj_dtype dtype);
/* Copies numel * dtype_size bytes from data (row-major). */
tj_tensor *tj_from_array(const void *data, const int64_t *sizes, int ndim, tj_dtype dtype);
/* The same on a device (tj_empty_on leaves the memory uninitialised). */
tj_tensor *tj_empty_on(const int64_t *sizes, int ndim, tj_dtype dtype, tj_device device);
tj_tensor *tj_zeros_on(const int64_t *sizes, int ndim, tj_dtype dtype, tj_device device);
tj_tensor *tj_ones_on(const int64_t *sizes, int ndim, tj_dtype dtype, tj_device device);
tj_tensor *tj_full_on(const int64_t *sizes, int ndim, double value, tj_dtype dtype,
                      tj_device device);
/* A contiguous copy of t on device (t itself, retained, when it is there
 * already). Ops take tensors of one device; this is how data moves. */
tj_tensor *tj_to_device(tj_tensor *t, tj_device device);
/* Moves t's data to device in place, as a module's .to(device) moves its
 * parameters: t keeps its identity (pointers to it in parameter structs stay
 * valid) and becomes contiguous there; other views of its old storage keep
 * the old data. */
tj_status tj_move_to_device(tj_tensor *t, tj_device device);

int tj_ndim(const tj_tensor *t);
const int64_t *tj_sizes(const tj_tensor *t);
const int64_t *tj_strides(const tj_tensor *t); /* in elements */
int64_t tj_size(const tj_tensor *t, int dim);  /* negative dims count from the end */
int64_t tj_numel(const tj_tensor *t);
int64_t tj_storage_offset(const tj_tensor *t);
tj_dtype tj_tensor_dtype(const tj_tensor *t);
tj_device tj_tensor_device(const tj_tensor *t);
bool tj_is_contiguous(const tj_tensor *t);
bool tj_shares_storage(const tj_tensor *a, const tj_tensor *b);
/* Address of element [0,...,0]. Under tracing this records a warning, since
 * whatever the caller computes from the data is baked into the trace. */
void *tj_data(tj_tensor *t);
/* The value of a one-element tensor. */
tj_status tj_item(const tj_tensor *t, double *value);
/* Reads the element at a multi-index of tj_ndim(t) entries, as double (tests
 * and printing); NaN with an error for a NULL tensor or an index out of
 * range. tj_get_n also checks that the index has n_index == tj_ndim(t)
 * entries. */
double tj_get(const tj_tensor *t, const int64_t *index);
double tj_get_n(const tj_tensor *t, const int64_t *index, int n_index);

/* A printable form like PyTorch's; malloc'd, the caller frees it with free(). */
char *tj_tensor_to_string(const tj_tensor *t);

/* A tensor's name (parameters are named "fc1.weight" and so on). */
tj_status tj_tensor_set_name(tj_tensor *t, const char *name);
const char *tj_tensor_name(const tj_tensor *t); /* NULL when unnamed */

/* ---- scopes --------------------------------------------------------------
 * Tensors returned to user code while a scope is open belong to it; they are
 * released at tj_scope_end. tj_keep(t) moves t out of the innermost open
 * scope, to the enclosing scope, or to the caller when there is none; for a
 * tensor the innermost scope does not hold (an input, or one already kept) it
 * does nothing. Scopes are per thread and nest. When memory is short,
 * tj_keep returns NULL (TJ_ERR_MEMORY) and t stays in the innermost scope. */
void tj_scope_begin(void);
void tj_scope_end(void);
tj_tensor *tj_keep(tj_tensor *t); /* returns t, or NULL when out of memory */

/* ---- random numbers -------------------------------------------------------
 * A counter-based Philox-4x32-10 generator: element i of a draw depends only
 * on (seed, offset + i), so one seed gives the same numbers whatever the
 * thread count. Each draw advances the offset by the number of elements. */
typedef struct tj_generator tj_generator;

tj_generator *tj_generator_new(uint64_t seed);
void tj_generator_free(tj_generator *g);
void tj_generator_set_state(tj_generator *g, uint64_t seed, uint64_t offset);
uint64_t tj_generator_seed(const tj_generator *g);
uint64_t tj_generator_offset(const tj_generator *g);
/* Reserves n counters and returns the first one (kernels that draw). */
uint64_t tj_generator_reserve(tj_generator *g, uint64_t n);

tj_tensor *tj_rand(const int64_t *sizes, int ndim, tj_dtype dtype, tj_generator *g);   /* U[0,1) */
tj_tensor *tj_randn(const int64_t *sizes, int ndim, tj_dtype dtype, tj_generator *g);  /* N(0,1) */
tj_tensor *tj_bernoulli(const int64_t *sizes, int ndim, double p, tj_dtype dtype,
                        tj_generator *g);                                              /* 1 with probability p */

/* ---- the op table ----------------------------------------------------------
 * Every op is one row of core/ops.def. Its schema follows PyTorch's
 * native_functions.yaml, e.g. "(Tensor self, Tensor other, *, float alpha=1) -> Tensor".
 * Tensor arguments are the op's inputs; all others are attributes, in schema
 * order. */

typedef enum tj_op_kind {
    TJ_KIND_POINTWISE,
    TJ_KIND_REDUCTION,
    TJ_KIND_VIEW,      /* outputs alias input 0 */
    TJ_KIND_SHAPE,     /* rearranges data into new tensors: cat, stack, contiguous */
    TJ_KIND_MATMUL,
    TJ_KIND_CONV,
    TJ_KIND_NN,        /* pooling, normalisation, softmax, losses, indexing */
    TJ_KIND_RANDOM,
    TJ_KIND_COMPOSITE, /* defined by other ops */
    TJ_NUM_KINDS
} tj_op_kind;

typedef enum tj_arg_type {
    TJ_ARG_TENSOR,      /* Tensor */
    TJ_ARG_TENSOR_OPT,  /* Tensor?   : NULL when absent */
    TJ_ARG_TENSOR_LIST, /* Tensor[]  : (tj_tensor *const *, int n) */
    TJ_ARG_INT,         /* int       : int64_t */
    TJ_ARG_INTS,        /* int[]     : (const int64_t *, int n) */
    TJ_ARG_FLOAT,       /* float     : double */
    TJ_ARG_FLOAT_OPT,   /* float?    : double, TJ_NONE when absent */
    TJ_ARG_FLOATS,      /* float[]   : (const double *, int n) */
    TJ_ARG_BOOL,        /* bool */
    TJ_ARG_STR,         /* str       : const char *; str(a|b) takes one of a list */
    TJ_ARG_DTYPE,       /* ScalarType: tj_dtype */
    TJ_ARG_GENERATOR,   /* Generator?: tj_generator *, NULL for a default one */
    TJ_ARG_SCALAR,      /* Scalar    : tj_scalar, an integer, a float or a bool */
    TJ_ARG_SCALAR_OPT   /* Scalar?   : tj_scalar, f = TJ_NONE when absent */
} tj_arg_type;

#define TJ_NONE (__builtin_nan(""))
bool tj_is_none(double v);

/* PyTorch's Scalar: a number that keeps whether it was written as an integer
 * (2), a float (2.) or a bool (True), which decides type promotion: an
 * integer added to an i64 tensor gives i64, a float gives f32. f holds the
 * value as a double whatever the kind (so code that wants a number reads f);
 * i holds an integer or a bool (0, 1) exactly. TJ_SCALAR_FLOAT is 0: an
 * attribute written as (tj_attr){.f = x} reads as the float Scalar x. */
typedef enum tj_scalar_kind { TJ_SCALAR_FLOAT, TJ_SCALAR_INT, TJ_SCALAR_BOOL } tj_scalar_kind;
typedef struct tj_scalar {
    double f;
    int64_t i;
    tj_scalar_kind kind;
} tj_scalar;

static inline tj_scalar tj_scalar_float(double v) { return (tj_scalar){v, 0, TJ_SCALAR_FLOAT}; }
static inline tj_scalar tj_scalar_int(int64_t v) { return (tj_scalar){(double)v, v, TJ_SCALAR_INT}; }
static inline tj_scalar tj_scalar_bool(bool v) { return (tj_scalar){v, v, TJ_SCALAR_BOOL}; }
static inline tj_scalar tj_scalar_none(void) { return tj_scalar_float(TJ_NONE); }
static inline tj_scalar tj_scalar_same(tj_scalar v) { return v; }

#ifndef __cplusplus
/* A C number as the Scalar it reads as in Python: tj_scalar_of(2) is an
 * integer, tj_scalar_of(2.0) a float, a bool-typed value a bool (C's `true`
 * is the int 1: write (bool)true or tj_scalar_bool(true)). The
 * generated tj_<op> functions apply it to their Scalar arguments, so
 * tj_add(a, b, 2) and tj_add(a, b, 2.0) are PyTorch's add(a, b, alpha=2)
 * and add(a, b, alpha=2.). */
#define tj_scalar_of(x) \
    _Generic((x), tj_scalar: tj_scalar_same, float: tj_scalar_float, double: tj_scalar_float, \
             long double: tj_scalar_float, _Bool: tj_scalar_bool, default: tj_scalar_int)(x)
#endif

/* One attribute value; which member is live follows the tj_arg_type. */
typedef struct tj_attr {
    union {
        int64_t i;
        double f;
        bool b;
        const char *s;
        tj_dtype dtype;
        tj_generator *gen;
        struct { const int64_t *data; int n; } ints;
        struct { const double *data; int n; } floats;
        tj_scalar scalar; /* its f is f above: (tj_attr){.f = x} is the float Scalar x */
    };
} tj_attr;

typedef struct tj_arg {
    const char *name;
    tj_arg_type type;
    bool has_default;
    tj_attr def;       /* the default, when has_default */
    int fixed_len;     /* int[2]: 2 (a list of one is repeated); 0 when any length */
    bool kw_only;      /* after '*' */
    const char *choices; /* str(none|tanh): "none|tanh"; NULL when free text */
    bool mutated;      /* Tensor(b!): the op writes into this input */
} tj_arg;

#define TJ_MAX_ARGS 16

typedef struct tj_schema {
    tj_arg args[TJ_MAX_ARGS];
    int n_args;
    int n_tensor_args;  /* positions of tensor args in args[] are in tensor_pos */
    int tensor_pos[TJ_MAX_ARGS];
    int n_attrs;
    int attr_pos[TJ_MAX_ARGS];
    int n_outputs;      /* -1: a list whose length the op decides */
    bool mutates_self;  /* returns Tensor(a!) */
    bool mutates_inputs; /* some argument is written in place (Tensor(b!)) */
    bool aliases_self;  /* outputs are views of input 0 */
    bool has_tensor_list;
} tj_schema;

typedef struct tj_op_info tj_op_info;

int tj_op_count(void);
const tj_op_info *tj_op_at(int id);
const tj_op_info *tj_op_find(const char *qualified_name); /* "aten::add.Scalar" */
/* The accessors below answer a NULL op (what tj_node_op gives for a prim
 * node) with -1, NULL or TJ_NUM_KINDS and set no error. */
int tj_op_id(const tj_op_info *op);
const char *tj_op_name(const tj_op_info *op);       /* "aten::add" */
const char *tj_op_schema_text(const tj_op_info *op);
const tj_schema *tj_op_schema(const tj_op_info *op);
tj_op_kind tj_op_kind_of(const tj_op_info *op);
const char *tj_op_kind_name(tj_op_kind k);
/* The in-place form of an op (add -> add_), or NULL. */
const tj_op_info *tj_op_inplace_variant(const tj_op_info *op);

/* Calls an op through the table: inputs are the tensor arguments in schema
 * order (a Tensor[] argument contributes all its elements), attrs the others.
 * Returns the number of outputs written to out, or -1 on error. */
int tj_invoke(int op_id, tj_tensor *const *inputs, int n_inputs, const tj_attr *attrs,
              int n_attrs, tj_tensor **out, int out_cap);

/* ---- tracing hook ----------------------------------------------------------
 * The tracer installs a hook on its thread; core/ calls it for every op called
 * from user code (not for ops that ops call inside themselves). */
typedef struct tj_record_hook {
    void *ctx;
    /* Before the op runs: inputs are intact even for in-place ops. */
    void *(*before)(void *ctx, const tj_op_info *op, tj_tensor *const *inputs, int n_inputs,
                    const tj_attr *attrs, int n_attrs);
    /* After it ran: out holds its outputs (NULL on failure). */
    void (*after)(void *ctx, void *token, tj_tensor *const *out, int n_out);
    /* A tensor made outside any op (tj_full, tj_from_array, ...). */
    void (*created)(void *ctx, tj_tensor *t);
    /* User code read a tensor's data on the host. */
    void (*host_read)(void *ctx, const tj_tensor *t, const char *what);
} tj_record_hook;

/* Installs hook on this thread (NULL removes it); returns the previous one. */
const tj_record_hook *tj_set_record_hook(const tj_record_hook *hook);

/* ---- threads --------------------------------------------------------------- */
void tj_set_num_threads(int n);
int tj_get_num_threads(void);

#ifdef __cplusplus
}
#endif

#ifndef TJIT_NO_OPS_API /* defined only while the generator itself builds */
#include "tjit/ops_api.h" /* generated from core/ops.def: tj_add, tj_sum, ... */
#include "tjit/ir.h"      /* graphs: build, print, parse, verify */
#include "tjit/runtime.h" /* tracing, programs, replay, .npy files */
#include "tjit/passes.h"  /* graph passes and the fuser */
#include "tjit/profile.h" /* timing replays: a table and a trace file */
#include "tjit/onnx.h"    /* ONNX export and import */
#include "tjit/distributed.h" /* process groups, collectives, data-parallel training */
#include "tjit/version.h" /* generated: TJIT_VERSION_*, tj_version, tj_build_info */
#endif

#endif
