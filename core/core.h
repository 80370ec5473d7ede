/* core.h — internals of core/: the tensor and storage structs, errors, the op
 * table's row format and the kernel calling convention. Prefix: tjc_.
 *
 * Nothing here knows about graphs or backends' internals; backends provide the
 * kernel functions that rows of ops.def name.
 */
#ifndef TJIT_CORE_H
#define TJIT_CORE_H

#include <stdarg.h>
#include <stdatomic.h>

#include "tjit/tjit.h"

/* ---- storage and tensors ------------------------------------------------ */

typedef struct tjc_storage {
    atomic_long refcount;
    void *data;
    size_t nbytes;
    tj_device device;
} tjc_storage;

struct tj_tensor {
    atomic_long refcount;
    tjc_storage *storage;
    int64_t offset; /* in elements */
    int ndim;
    tj_dtype dtype;
    int64_t sizes[TJ_MAX_DIMS];
    int64_t strides[TJ_MAX_DIMS]; /* in elements */
    char *name;
};

/* Ownership checks of debug builds (core/refcheck.c). A released header is
 * retired: its count poisoned, kept a while so a later use is recognised.
 * tjc_check_live aborts, naming the tensor, on a retired one; it costs
 * nothing without TJIT_DEBUG_REFCOUNT. */
#define TJC_REFCOUNT_POISON (-0x5eadbeefL)
#ifdef TJIT_DEBUG_REFCOUNT
void tjc_refcount_retire(tj_tensor *t);
void tjc_refcount_misuse(const tj_tensor *t, const char *fn) __attribute__((noreturn));
static inline void tjc_check_live(const tj_tensor *t, const char *fn) {
    if (t && atomic_load_explicit(&((tj_tensor *)t)->refcount, memory_order_relaxed) <= 0)
        tjc_refcount_misuse(t, fn);
}
#else
static inline void tjc_check_live(const tj_tensor *t, const char *fn) {
    (void)t;
    (void)fn;
}
#endif

/* A contiguous tensor, not registered with any scope (for use inside ops). */
tj_tensor *tjc_alloc(const int64_t *sizes, int ndim, tj_dtype dtype);
/* A view of base's storage with the given geometry (offset in elements). */
tj_tensor *tjc_make_view(tj_tensor *base, const int64_t *sizes, const int64_t *strides, int ndim,
                         int64_t offset);
/* Fills *view (a header on the caller's stack) as a view of base's storage
 * with the given geometry, taking no reference and allocating nothing: for
 * kernels that need a strided window of an argument for the length of the
 * call. Never released. */
void tjc_view_on_stack(tj_tensor *view, const tj_tensor *base, const int64_t *sizes,
                       const int64_t *strides, int ndim, int64_t offset);
/* Contiguous strides for sizes; returns numel. */
int64_t tjc_contiguous_strides(const int64_t *sizes, int ndim, int64_t *strides);
int64_t tjc_numel(const int64_t *sizes, int ndim);
static inline char *tjc_data_ptr(const tj_tensor *t) {
    return (char *)t->storage->data + t->offset * (int64_t)tj_dtype_size(t->dtype);
}
/* True when two tensors may touch the same bytes. */
bool tjc_may_overlap(const tj_tensor *a, const tj_tensor *b);
/* True when some element of t is reachable through two different indexes. */
bool tjc_has_internal_overlap(const tj_tensor *t);

/* Registers a tensor returned to user code with the innermost scope and tells
 * the tracing hook, when called at op depth 0; false (TJ_ERR_MEMORY set, t
 * still the caller's to release) when the scope cannot grow. */
bool tjc_track_created(tj_tensor *t);
/* Makes room for n more tensors in the innermost scope (true when no scope is
 * open), so that the tjc_scope_track calls that follow cannot fail: results
 * are reserved for before they are handed over, and on false released. */
bool tjc_scope_reserve(int n);
void tjc_scope_track(tj_tensor *t);

/* ---- errors ------------------------------------------------------------- */

/* Sets this thread's error and returns s. */
tj_status tjc_error(tj_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* For a NULL input: keeps an error already pending on this thread (it names
 * the root cause, e.g. the op that returned the NULL), else sets this one. */
tj_status tjc_last_or(tj_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "[3, 4]" into buf. */
const char *tjc_fmt_sizes(char *buf, size_t n, const int64_t *sizes, int ndim);
#define TJC_SIZES_BUF 160
/* Normalises a possibly negative dim against ndim (0-dim tensors take -1 and 0). */
tj_status tjc_wrap_dim(const char *op, int64_t dim, int ndim, int *out);

/* ---- dtypes -------------------------------------------------------------- */

/* PyTorch's type promotion: categories bool < integer < float. */
tj_dtype tjc_promote(tj_dtype a, tj_dtype b);
/* The dtype of (tensor of dtype d) op (a C double): d when floating, else f32. */
/* d with a Scalar operand, as PyTorch promotes a wrapped number: the Scalar
 * changes the dtype only when its category is higher, to i64 for an integer
 * and f32 (the default dtype) for a float: i64 + 2 is i64, i64 + 2. is f32,
 * bool + 2 is i64, f64 + 2. stays f64. */
tj_dtype tjc_promote_scalar(tj_dtype d, const tj_scalar *s);
int tjc_dtype_category(tj_dtype d); /* 0 bool, 1 integer, 2 float */

/* ---- the op table ---------------------------------------------------------- */

/* What an op's shape rule says about one output. */
typedef enum tjc_out_kind {
    TJC_OUT_NEW,    /* a fresh contiguous tensor */
    TJC_OUT_VIEW,   /* a view of input 0 with sizes, strides, offset */
    TJC_OUT_SELF    /* input 0 itself (in-place ops) */
} tjc_out_kind;

typedef struct tjc_meta {
    tjc_out_kind kind;
    tj_dtype dtype;
    int ndim;
    int64_t sizes[TJ_MAX_DIMS];
    int64_t strides[TJ_MAX_DIMS]; /* VIEW only */
    int64_t offset;               /* VIEW only: storage offset in elements */
} tjc_meta;

/* m describes a fresh contiguous output of dtype and sizes (ndim of them). */
void tjc_meta_new(tjc_meta *m, tj_dtype dtype, const int64_t *sizes, int ndim);

typedef struct tjc_call {
    const tj_op_info *op;
    tj_device device; /* where the inputs live, and so the outputs and the kernel */
    tj_tensor *const *in;
    int n_in;
    const tj_attr *attr;
    int n_attr;
    tjc_meta *meta; /* the shape rule's result */
    int meta_cap;
    tj_tensor **out;
    int n_out;
} tjc_call;

/* A shape and dtype rule: validates the call and fills c->meta[0..*n_out).
 * When the op has more outputs than c->meta_cap it sets *n_out and returns
 * TJ_OK without filling; the dispatcher grows the array and calls again. */
typedef tj_status (*tjc_infer_fn)(const tjc_call *c, int *n_out);
/* A kernel: computes c->out from c->in. NULL for pure views. */
typedef tj_status (*tjc_kernel_fn)(const tjc_call *c);

/* How a pointwise op types its operands. */
typedef enum tjc_pw_rule {
    TJC_PW_ARITH,    /* f32, f64, i64; computes and returns the promoted dtype */
    TJC_PW_ARITH_FS, /* like ARITH; its Scalar bounds take part in promotion (clamp) */
    TJC_PW_FLOAT,    /* f32, f64; integer and bool inputs become f32 */
    TJC_PW_COMPARE,  /* any dtype; computes in the promoted dtype, returns bool */
    TJC_PW_LOGICAL,  /* any dtype, read as bool; returns bool */
    TJC_PW_SELECT,   /* input 0 is a bool condition; the rest are promoted */
    TJC_PW_ARITH_B   /* like ARITH, and bool too, as PyTorch's kernels of these ops take
                        it: the C expression over bools (add is or, mul is and) */
} tjc_pw_rule;

struct tj_op_info {
    int id;
    const char *name;
    const char *schema_text;
    tj_op_kind kind;
    tjc_infer_fn infer; /* kernels are per device: tjc_device_backend.kernels */
    /* pointwise ops */
    tjc_pw_rule pw_rule;
    int pw_arity;             /* tensor inputs of the scalar expression */
    const char *pw_expr;      /* the C expression over a, b, c and p0, p1 */
    int scalar_base;          /* *.Scalar forms: the tensor op they wrap, else -1 */
    int inplace_of;           /* in-place forms: the op they mutate like, else -1 */
    int inplace_variant;      /* the in-place form of this op, else -1 */
    tj_schema schema;         /* parsed from schema_text at start-up */
};

/* Op ids, one per row of ops.def: TJ_OP_add, TJ_OP_add_, ... */
enum tjc_op_id {
#define TJ_OP(id, name, schema, kind, infer, cpu) TJ_OP_##id,
#define TJ_POINTWISE(id, name, schema, rule, arity, expr) TJ_OP_##id,
#define TJ_POINTWISE_SCALAR(id, name, schema, base) TJ_OP_##id,
#define TJ_INPLACE(id, name, base) TJ_OP_##id,
#include "ops.def"
    TJ_OP__COUNT
};

/* The table, indexed by op id (parsed schemas filled on first use). */
const tj_op_info *tjc_op(int id);
/* The op of a qualified name, or NULL, leaving the error state alone (for
 * lookups that try several names). */
const tj_op_info *tjc_op_find(const char *qualified_name);

/* Parses "(Tensor self, int dim=0) -> Tensor" into s (nothing to free on
 * failure). The table's schemas live as long as the process; others are
 * freed with tjc_schema_free. */
tj_status tjc_parse_schema(const char *text, tj_schema *s);
void tjc_schema_free(tj_schema *s);

/* The schema of an in-place form, derived from its base's (malloc'd). */
char *tjc_inplace_schema_text(const char *base);

/* Index of value among a str(a|b|c) argument's choices, or -1. */
int tjc_choice_index(const tj_arg *arg, const char *value);
/* A Scalar literal at text: an integer when written without '.', exponent,
 * inf or nan ("2", "-3"), else a float ("2.", "1e-05", "inf"); *end after it.
 * False when there is no number there or an integer overflows int64. */
bool tjc_read_scalar(const char *text, tj_scalar *out, const char **end);
/* s's kind, FLOAT where its fields disagree with the kind it claims (an
 * attribute written as (tj_attr){.f = x} whose other bytes are not zero). */
tj_scalar_kind tjc_scalar_kind(const tj_scalar *s);
/* Element i of an int[N] attribute, where a list of one stands for all N. */
static inline int64_t tjc_ints_at(const tj_attr *a, int i) {
    return a->ints.n == 1 ? a->ints.data[0] : a->ints.data[i];
}
/* Kernel of view ops: the dispatcher already made the views. */
tj_status tjc_view_kernel(const tjc_call *c);

/* The row whose expression computes a pointwise call: the op itself, or the
 * base of its in-place or .Scalar form; for pow's Scalar form with the
 * exponent 0.5 or -0.5, sqrt or rsqrt, as PyTorch computes those exponents
 * ((-inf)^0.5 is nan there and -0.^0.5 is -0., where C's pow gives inf and
 * 0.). Every backend asks it, so they agree. */
const tj_op_info *tjc_pw_expr_op(const tj_op_info *op, const tj_attr *attrs);

/* Pointwise typing: the dtype an op computes in and the dtype it returns,
 * from the tensors' dtypes and the Scalars that take part in promotion (a
 * .Scalar form's operand, clamp's bounds); attrs are the op's attributes. */
tj_status tjc_pw_types(const tj_op_info *op, tj_tensor *const *in, int n_in, const tj_attr *attrs,
                       tj_dtype *compute, tj_dtype *result);

/* Attribute i of a call, by position among attrs. */
static inline const tj_attr *tjc_attr(const tjc_call *c, int i) { return &c->attr[i]; }
/* Name of the tensor argument at input position i (for messages). */
const char *tjc_input_name(const tj_op_info *op, int i);
/* Whether op draws random numbers: a random kind, or a Generator argument. */
bool tjc_op_is_random(const tj_op_info *op);

/* Runs op as if called from inside another op: not traced and its outputs
 * not tracked by scopes (the interpreter replays graphs with it). */
int tjc_invoke_nested(const tj_op_info *op, tj_tensor *const *in, int n_in, const tj_attr *attrs,
                      tj_tensor **out, int out_cap);
/* Runs kernel on c with input k converted to dtype first (on c's device):
 * for ops that compute integer and bool inputs in a float dtype, as
 * PyTorch's logsumexp does, with their float kernels. */
tj_status tjc_kernel_with_input_as(const tjc_call *c, int k, tj_dtype dtype, tjc_kernel_fn kernel);
/* Whether inputs [from, from + n) of c differ in sizes; *sizes, *ndim get
 * their broadcast sizes (the shape rule has checked that they broadcast). */
bool tjc_inputs_broadcast(const tjc_call *c, int from, int n, int64_t *sizes, int *ndim);
/* Runs kernel on c with inputs [from, from + n) seen as views expanded
 * (stride 0) to sizes, which each broadcasts to: for kernels that walk their
 * operands element by element at one shape (mse_loss) or take a 0-dim
 * operand as [1] (index_select). Views on the stack: nothing is allocated. */
tj_status tjc_kernel_with_inputs_expanded(const tjc_call *c, int from, int n, const int64_t *sizes,
                                          int ndim, tjc_kernel_fn kernel);

/* What a static plan keeps of one op call: the checks, the device, the
 * kernel and the shape rule's results, computed once for inputs of fixed
 * geometry (their data is not read). The kernel then runs on outputs the
 * caller made from meta, as the dispatcher would. meta is malloc'd. A copy_
 * across devices is refused (TJ_ERR_UNSUPPORTED): its source moves first. */
typedef struct tjc_prepared {
    tj_device device;
    tjc_kernel_fn kernel;
    tjc_meta *meta;
    int n_out;
} tjc_prepared;
tj_status tjc_prepare_call(const tj_op_info *op, tj_tensor *const *in, int n_in,
                           const tj_attr *attrs, tjc_prepared *out);

/* Op nesting depth on this thread: 0 while user code runs. A replay that
 * calls kernels itself brackets them with enter/leave, as the dispatcher
 * does, so that ops a kernel calls through the public API are neither traced
 * nor handed to the user's scope. */
int tjc_op_depth(void);
void tjc_op_enter(void);
void tjc_op_leave(void);
const tj_record_hook *tjc_record_hook(void);

/* ---- devices ---------------------------------------------------------------
 * Each device type has one backend: its memory functions and one kernel per op
 * id. Backends register at start-up (tjc_register_builtin_backends, defined
 * outside core/ by the library's backend registry, runs once before the first
 * lookup); the dispatcher picks the kernel by the inputs' device, so core/
 * knows no backend. Host memory is core's own (storage.c): the CPU backend
 * leaves alloc, release and copy NULL. */
typedef struct tjc_device_backend {
    tj_device_type type;
    const char *name; /* "cpu", "cuda": also the prefix of device strings */
    int (*device_count)(void);
    /* nbytes of device memory, or NULL with an error set */
    void *(*alloc)(int index, size_t nbytes);
    void (*release)(int index, void *data);
    /* nbytes between host memory and this device, or within it; dst is ready
     * to be read (by the host or by later work on the device) on return */
    tj_status (*copy)(void *dst, tj_device dst_dev, const void *src, tj_device src_dev,
                      size_t nbytes);
    /* waits for the work queued on device index and reports its errors */
    tj_status (*synchronize)(int index);
    /* the device memory's figures, and giving cached memory back (optional) */
    tj_status (*memory_stats)(int index, tj_memory_stats *out);
    tj_status (*empty_cache)(int index);
    /* compiles fusion groups whose inputs live here (fuser/fuser.h); NULL:
     * they run op by op through this table's kernels */
    const struct tjf_backend *fusion;
    /* Graph capture (optional; NULL where the device has none). The work the
     * calling thread queues on device index between capture_begin and
     * capture_end becomes *graph, which graph_launch replays as one launch
     * on the calling thread's queue; memory the captured work releases stays
     * the graph's until graph_free (the graph reads and writes it at every
     * launch). One thread uses a graph at a time: graph_acquire orders the
     * caller's later work after every earlier use (from any thread), and
     * graph_release ends the caller's use after the work it has queued. A
     * failed capture_end has ended the capture and freed the graph. */
    tj_status (*capture_begin)(int index);
    tj_status (*capture_end)(int index, void **graph);
    tj_status (*graph_acquire)(int index, void *graph);
    tj_status (*graph_launch)(int index, void *graph);
    tj_status (*graph_release)(int index, void *graph);
    void (*graph_free)(int index, void *graph);
    /* NULL: the op has no kernel on this device (the call is an error) */
    tjc_kernel_fn kernels[TJ_OP__COUNT];
} tjc_device_backend;

/* Registers b (copied) for b->type; in-place forms without a kernel of their
 * own get their base op's. */
void tjc_register_device_backend(const tjc_device_backend *b);
/* The backend of a device type, or NULL when none is built in. */
const tjc_device_backend *tjc_device_backend_of(tj_device_type type);
/* Implemented by the library's backend registry (backends/registry.c). */
void tjc_register_builtin_backends(void);
/* "cpu", "cuda:0" into buf. */
const char *tjc_fmt_device(char *buf, size_t n, tj_device d);
#define TJC_DEVICE_BUF 24
static inline bool tjc_same_device(tj_device a, tj_device b) {
    return a.type == b.type && (a.type == TJ_CPU || a.index == b.index);
}
/* A contiguous tensor on a device (tjc_alloc is the host's). */
tj_tensor *tjc_alloc_on(tj_device device, const int64_t *sizes, int ndim, tj_dtype dtype);
/* tj_to_device without scope tracking (a new reference). */
tj_tensor *tjc_to_device(tj_tensor *t, tj_device device);
/* Copies nbytes between any two devices (the backend of the non-host side). */
tj_status tjc_copy_bytes(void *dst, tj_device dst_dev, const void *src, tj_device src_dev,
                         size_t nbytes);

/* Shared shape rules. */
tj_status tjc_infer_pointwise(const tjc_call *c, int *n_out);
tj_status tjc_broadcast_shapes(const char *op, const int64_t *a, int na, const int64_t *b, int nb,
                               int64_t *out, int *nout);

#endif
