/* pointwise.c — CPU kernels of the pointwise rows of ops.def. For every row
 * and every compute dtype its rule allows, a typed loop is generated from the
 * row's expression; the loops run on tjcpu_iter. The loops and their table
 * are built once per instruction set (isa.h); the rest once. */
#include <math.h>

#include "core/pw_math.h"
#include "cpu.h"
#include "isa.h"

static inline float cvt_f32(double v) { return (float)v; }
static inline double cvt_f64(double v) { return v; }
static inline int64_t cvt_i64(double v) {
    if (v != v) return 0; /* a NaN parameter means "none"; never used as a number */
    if (v >= 9.2e18) return INT64_MAX;
    if (v <= -9.2e18) return INT64_MIN;
    return (int64_t)v;
}
static inline bool cvt_b8(double v) { return v != 0; }

/* sin and cos in the contiguous loop below: every lane takes the vectorised
 * reduction, except those beyond its range (core/pw_trig.h), which keep
 * their input and raise pw_rare; only then a second, scalar pass gives those
 * lanes the full function (libm). Elsewhere pw_exact is true: the full one. */
#undef tjm_sin
#undef tjm_cos
#define PW_TRIG(x, full_f, full_d, fast_f, fast_d)                                  \
    (pw_exact ? _Generic((x), float: full_f, default: full_d)(x)                    \
              : (pw_rare |= tjm_trig_huge(x),                                       \
                 tjm_trig_huge(x) ? (x) : _Generic((x), float: fast_f, default: fast_d)(x)))
#define tjm_sin(x) PW_TRIG(x, tjm_sinf, tjm_sind, tjm_sinf_fast, tjm_sind_fast)
#define tjm_cos(x) PW_TRIG(x, tjm_cosf, tjm_cosd, tjm_cosf_fast, tjm_cosd_fast)

/* Inner runs: a contiguous fast path (vectorised), broadcast-scalar paths for
 * binary ops, and a general strided path. The pointers are not restrict: an
 * in-place op reads and writes the same elements through two of them, which
 * restrict would make undefined. GCC still vectorises, behind a run-time
 * overlap check that exact aliasing passes. */
#define PW_BODY_1(expr)                                                             \
    O *o_ = (O *)ptr[0];                                                   \
    const T *x_ = (const T *)ptr[1];                                       \
    if (st[0] == sizeof(O) && st[1] == sizeof(T)) {                                 \
        {                                                                           \
            const bool pw_exact = false; /* see tjm_sin below */                    \
            (void)pw_exact;                                                         \
            for (int64_t i = 0; i < n; i++) {                                       \
                const T a = x_[i];                                                  \
                o_[i] = (O)(expr);                                                  \
            }                                                                       \
        }                                                                           \
        for (int64_t i = 0; pw_rare && i < n; i++) {                                \
            const T a = (T)o_[i]; /* the lanes the first pass left as they were */  \
            if (tjm_trig_huge((double)a)) o_[i] = (O)(expr);                        \
        }                                                                           \
    } else {                                                                        \
        for (int64_t i = 0; i < n; i++) {                                           \
            const T a = *(const T *)(ptr[1] + i * st[1]);                           \
            *(O *)(ptr[0] + i * st[0]) = (O)(expr);                                 \
        }                                                                           \
    }

#define PW_BODY_2(expr)                                                             \
    O *o_ = (O *)ptr[0];                                                   \
    const T *x_ = (const T *)ptr[1];                                       \
    const T *y_ = (const T *)ptr[2];                                       \
    if (st[0] == sizeof(O) && st[1] == sizeof(T) && st[2] == sizeof(T)) {           \
        for (int64_t i = 0; i < n; i++) {                                           \
            const T a = x_[i], b = y_[i];                                           \
            o_[i] = (O)(expr);                                                      \
        }                                                                           \
    } else if (st[0] == sizeof(O) && st[1] == sizeof(T) && st[2] == 0) {            \
        const T b = *y_;                                                            \
        for (int64_t i = 0; i < n; i++) {                                           \
            const T a = x_[i];                                                      \
            o_[i] = (O)(expr);                                                      \
        }                                                                           \
    } else if (st[0] == sizeof(O) && st[1] == 0 && st[2] == sizeof(T)) {            \
        const T a = *x_;                                                            \
        for (int64_t i = 0; i < n; i++) {                                           \
            const T b = y_[i];                                                      \
            o_[i] = (O)(expr);                                                      \
        }                                                                           \
    } else {                                                                        \
        for (int64_t i = 0; i < n; i++) {                                           \
            const T a = *(const T *)(ptr[1] + i * st[1]);                           \
            const T b = *(const T *)(ptr[2] + i * st[2]);                           \
            *(O *)(ptr[0] + i * st[0]) = (O)(expr);                                 \
        }                                                                           \
    }

#define PW_BODY_3(expr)                                                             \
    O *o_ = (O *)ptr[0];                                                   \
    const T *x_ = (const T *)ptr[1];                                       \
    const T *y_ = (const T *)ptr[2];                                       \
    const T *z_ = (const T *)ptr[3];                                       \
    if (st[0] == sizeof(O) && st[1] == sizeof(T) && st[2] == sizeof(T) &&           \
        st[3] == sizeof(T)) {                                                       \
        for (int64_t i = 0; i < n; i++) {                                           \
            const T a = x_[i], b = y_[i], c = z_[i];                                \
            o_[i] = (O)(expr);                                                      \
        }                                                                           \
    } else {                                                                        \
        for (int64_t i = 0; i < n; i++) {                                           \
            const T a = *(const T *)(ptr[1] + i * st[1]);                           \
            const T b = *(const T *)(ptr[2] + i * st[2]);                           \
            const T c = *(const T *)(ptr[3] + i * st[3]);                           \
            *(O *)(ptr[0] + i * st[0]) = (O)(expr);                                 \
        }                                                                           \
    }

#define PW_LOOP(id, sfx, T_, O_, arity, expr)                                       \
    static void pw_##id##_##sfx(int64_t n, char **ptr, const int64_t *st,           \
                                const void *ctx) {                                  \
        typedef T_ T;                                                               \
        typedef O_ O;                                                               \
        const double *prm = ctx;                                                    \
        const T p0 = cvt_##sfx(prm[0]), p1 = cvt_##sfx(prm[1]);                     \
        const bool pw_exact = true;                                                 \
        int pw_rare = 0;                                                            \
        (void)pw_rare;                                                              \
        (void)p0;                                                                   \
        (void)p1;                                                                   \
        (void)pw_exact;                                                             \
        PW_BODY_##arity(expr)                                                       \
    }

/* Which compute dtypes each rule generates loops for. */
#define LOOPS_TJC_PW_ARITH(id, ar, e)                                              \
    PW_LOOP(id, f32, float, float, ar, e)                                           \
    PW_LOOP(id, f64, double, double, ar, e)                                         \
    PW_LOOP(id, i64, int64_t, int64_t, ar, e)
#define LOOPS_TJC_PW_ARITH_FS LOOPS_TJC_PW_ARITH
#define LOOPS_TJC_PW_ARITH_B(id, ar, e)                                            \
    LOOPS_TJC_PW_ARITH(id, ar, e)                                                   \
    PW_LOOP(id, b8, bool, bool, ar, e)
#define LOOPS_TJC_PW_FLOAT(id, ar, e)                                              \
    PW_LOOP(id, f32, float, float, ar, e)                                           \
    PW_LOOP(id, f64, double, double, ar, e)
#define LOOPS_TJC_PW_COMPARE(id, ar, e)                                            \
    PW_LOOP(id, f32, float, bool, ar, e)                                            \
    PW_LOOP(id, f64, double, bool, ar, e)                                           \
    PW_LOOP(id, i64, int64_t, bool, ar, e)                                          \
    PW_LOOP(id, b8, bool, bool, ar, e)
#define LOOPS_TJC_PW_LOGICAL(id, ar, e) PW_LOOP(id, b8, bool, bool, ar, e)
#define LOOPS_TJC_PW_SELECT(id, ar, e)                                             \
    PW_LOOP(id, f32, float, float, ar, e)                                           \
    PW_LOOP(id, f64, double, double, ar, e)                                         \
    PW_LOOP(id, i64, int64_t, int64_t, ar, e)                                       \
    PW_LOOP(id, b8, bool, bool, ar, e)

/* The bool loops of TJC_PW_ARITH_B rows evaluate the row's C expression over
 * bools on purpose (mul's a * b is a and b). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wint-in-bool-context"
#define TJ_OP(id, name, schema, kind, infer, cpu)
#define TJ_POINTWISE(id, name, schema, rule, arity, expr) LOOPS_##rule(id, arity, expr)
#define TJ_POINTWISE_SCALAR(id, name, schema, base)
#define TJ_INPLACE(id, name, base)
#include "core/ops.def"
#pragma GCC diagnostic pop

#define TABLE_TJC_PW_ARITH(id) \
    [TJ_OP_##id] = {[TJ_F32] = pw_##id##_f32, [TJ_F64] = pw_##id##_f64, [TJ_I64] = pw_##id##_i64},
#define TABLE_TJC_PW_ARITH_FS TABLE_TJC_PW_ARITH
#define TABLE_TJC_PW_ARITH_B TABLE_TJC_PW_COMPARE
#define TABLE_TJC_PW_FLOAT(id) [TJ_OP_##id] = {[TJ_F32] = pw_##id##_f32, [TJ_F64] = pw_##id##_f64},
#define TABLE_TJC_PW_COMPARE(id)                                                    \
    [TJ_OP_##id] = {[TJ_F32] = pw_##id##_f32, [TJ_F64] = pw_##id##_f64,             \
                    [TJ_I64] = pw_##id##_i64, [TJ_BOOL] = pw_##id##_b8},
#define TABLE_TJC_PW_LOGICAL(id) [TJ_OP_##id] = {[TJ_BOOL] = pw_##id##_b8},
#define TABLE_TJC_PW_SELECT TABLE_TJC_PW_COMPARE

const tjcpu_loop_fn TJCPU_ISA_NAME(tjcpu_pw_loops)[TJ_OP__COUNT][TJ_NUM_DTYPES] = {
#define TJ_OP(id, name, schema, kind, infer, cpu)
#define TJ_POINTWISE(id, name, schema, rule, arity, expr) TABLE_##rule(id)
#define TJ_POINTWISE_SCALAR(id, name, schema, base)
#define TJ_INPLACE(id, name, base)
#include "core/ops.def"
};

#ifndef TJCPU_ISA_SUFFIX /* the rest is built once */
#ifdef TJIT_ISA_VARIANTS
extern const tjcpu_loop_fn tjcpu_pw_loops_avx2[TJ_OP__COUNT][TJ_NUM_DTYPES];
extern const tjcpu_loop_fn tjcpu_pw_loops_avx512[TJ_OP__COUNT][TJ_NUM_DTYPES];
#endif

/* The expression's parameters p0, p1 from the op's non-tensor arguments (a
 * .Scalar form's first one is its operand, not a parameter). */
void tjcpu_pw_params(const tj_op_info *op, const tj_attr *attrs, double prm[2]) {
    const tj_op_info *form = op->inplace_of >= 0 ? tjc_op(op->inplace_of) : op;
    const tj_schema *s = &op->schema;
    prm[0] = prm[1] = 0;
    for (int k = form->scalar_base >= 0 ? 1 : 0, j = 0; k < s->n_attrs && j < 2; k++, j++) {
        const tj_arg *arg = &s->args[s->attr_pos[k]];
        const tj_attr *a = &attrs[k];
        switch (arg->type) {
        case TJ_ARG_FLOAT:
        case TJ_ARG_FLOAT_OPT:
        case TJ_ARG_SCALAR: prm[j] = a->f; break; /* a Scalar's f is its value, whatever its kind */
        case TJ_ARG_SCALAR_OPT: /* clamp's absent bound: none below, none above, in every dtype */
            prm[j] = !tj_is_none(a->f) ? a->f : j == 0 ? -INFINITY : INFINITY;
            break;
        case TJ_ARG_INT: prm[j] = (double)a->i; break;
        case TJ_ARG_BOOL: prm[j] = a->b; break;
        case TJ_ARG_STR: prm[j] = tjc_choice_index(arg, a->s); break;
        default: break;
        }
    }
}

tjcpu_loop_fn tjcpu_pw_loop(const tj_op_info *op, const tj_attr *attrs, tj_dtype compute) {
    int loop_op = tjc_pw_expr_op(op, attrs)->id; /* a unary row ignores the .Scalar operand */
    return (unsigned)compute < TJ_NUM_DTYPES ? TJCPU_ISA_PICK(tjcpu_pw_loops)[loop_op][compute]
                                             : NULL;
}

static bool same_layout(const tj_tensor *a, const tj_tensor *b) {
    if (a->storage != b->storage || a->offset != b->offset || a->ndim != b->ndim ||
        a->dtype != b->dtype)
        return false;
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] != b->sizes[d] || (a->sizes[d] > 1 && a->strides[d] != b->strides[d]))
            return false;
    return true;
}

tj_status tjcpu_zeros_kernel(const tjc_call *c); /* copy.c */

tj_status tjcpu_pointwise(const tjc_call *c) {
    const tj_op_info *op = c->op;
    if (op->id == TJ_OP_zeros_like) return tjcpu_zeros_kernel(c); /* its output is fresh */
    const tj_op_info *form = op->inplace_of >= 0 ? tjc_op(op->inplace_of) : op;
    bool scalar_form = form->scalar_base >= 0;
    tj_dtype compute, result;
    tj_status st = tjc_pw_types(op, c->in, c->n_in, c->attr, &compute, &result);
    if (st) return st;
    tjcpu_loop_fn fn = tjcpu_pw_loop(op, c->attr, compute);
    if (!fn)
        return tjc_error(TJ_ERR_INTERNAL, "%s: no CPU loop for compute dtype %s", op->name,
                         tj_dtype_name(compute));
    double prm[2];
    tjcpu_pw_params(op, c->attr, prm);

    tj_tensor *out = c->out[0];
    tj_tensor *ops[4] = {NULL}, *owned[4] = {NULL};
    int n_ops = 1;
    for (int i = 0; i < c->n_in; i++, n_ops++) {
        tj_tensor *t = c->in[i];
        bool aliases_out = c->n_out && t != out && tjc_may_overlap(t, out) && !same_layout(t, out);
        if (t->dtype != compute || aliases_out) {
            owned[n_ops] = tjcpu_to_contiguous(t, compute);
            if (!owned[n_ops]) goto fail;
            t = owned[n_ops];
        }
        ops[n_ops] = t;
    }
    /* a *.Scalar form's number, as a 0-dim operand of the compute dtype on
     * this stack frame: an op with a scalar allocates nothing */
    union {
        double f64;
        float f32;
        int64_t i64;
        bool b;
    } scalar_value;
    tjc_storage scalar_storage;
    tj_tensor scalar;
    if (scalar_form) {
        double v = c->attr[0].f;
        switch (compute) {
        case TJ_F32: scalar_value.f32 = (float)v; break;
        case TJ_F64: scalar_value.f64 = v; break;
        case TJ_I64: scalar_value.i64 = (int64_t)v; break;
        default: scalar_value.b = v != 0; break;
        }
        scalar_storage = (tjc_storage){.data = &scalar_value, .nbytes = sizeof scalar_value,
                                       .device = {TJ_CPU, 0}};
        atomic_init(&scalar_storage.refcount, 1);
        tj_tensor base = {.storage = &scalar_storage, .dtype = compute};
        tjc_view_on_stack(&scalar, &base, NULL, NULL, 0, 0);
        ops[n_ops++] = &scalar;
    }
    if (out->dtype != result) { /* in-place into a narrower float dtype */
        owned[0] = tjc_alloc(out->sizes, out->ndim, result);
        if (!owned[0]) goto fail;
        ops[0] = owned[0];
    } else {
        ops[0] = out;
    }
    tjcpu_iter(ops, n_ops, fn, prm);
    st = owned[0] ? tjcpu_copy(out, owned[0]) : TJ_OK;
    for (int i = 0; i < 4; i++) tj_release(owned[i]);
    return st;
fail:
    for (int i = 0; i < 4; i++) tj_release(owned[i]);
    return tj_last_status() ? tj_last_status() : TJ_ERR_MEMORY;
}
#endif
