/* pw_codegen.c — CUDA C sources of the pointwise kernels (see pointwise.h).
 *
 * A row's expression (op->pw_expr, the C text of core/ops_pointwise.def) is
 * pasted into a struct Op that kernels/tjcu_pointwise.h's loops call, inside
 * namespace tjm (kernels/tjm_cuda.h), where the expression's names mean the
 * device vocabulary. One source per op and compute dtype serves the op's
 * tensor, .Scalar and in-place forms and all four layouts; the inputs are in
 * the compute dtype (a where's condition: bool), the output in the dtype the
 * expression yields — the launcher converts anything else around the kernel,
 * as the CPU's kernel does. Conversions are sources of their own: Op with the
 * expression `a`, the input in one dtype and the output in another.
 *
 * A source is self-contained: after tjcu_builtins.h it carries the
 * library's embedded copies of tjcu_kernel.h, tjm_cuda.h and
 * tjcu_pointwise.h instead of including them, so its text is everything it
 * compiles. The NVRTC disk cache keys cubins on the source text, and a source
 * that only included a header changed by a later tjit could load a stale
 * cubin. (Include guards make a later #include of them harmless.)
 *
 * Sources are made on first use and kept for the process in a table indexed
 * by op id and dtype (published with compare-and-swap: a thread that loses
 * the race frees its copy). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/text.h"
#include "backends/cuda/pointwise.h"
#include "backends/cuda/sources.h"


tjcu_pw_scalar tjcu_pw_param(tj_dtype d, double v) {
    tjcu_pw_scalar r = {.d = 0};
    switch (d) {
    case TJ_F32: r.f = (float)v; break;
    case TJ_F64: r.d = v; break;
    case TJ_I64:
        r.i = v != v ? 0 : v >= 9.2e18 ? INT64_MAX : v <= -9.2e18 ? INT64_MIN : (long long)v;
        break;
    default: r.b = v != 0; break;
    }
    return r;
}

tjcu_pw_scalar tjcu_pw_operand(tj_dtype d, double v) {
    if (d != TJ_I64) return tjcu_pw_param(d, v);
    tjcu_pw_scalar r = {.d = 0};
    r.i = v != v                          ? 0
          : v >= 9.2233720368547758e18    ? INT64_MAX
          : v <= -9.2233720368547758e18   ? INT64_MIN
                                          : (long long)v;
    return r;
}

const char *tjcu_c_storage_type(tj_dtype d) {
    switch (d) {
    case TJ_F32: return "float";
    case TJ_F64: return "double";
    case TJ_I64: return "long long";
    default: return "unsigned char"; /* bool: one byte, 0 or 1 */
    }
}

const char *tjcu_c_compute_type(tj_dtype d) {
    switch (d) {
    case TJ_F32: return "float";
    case TJ_F64: return "double";
    case TJ_I64: return "tjm::i64"; /* whose arithmetic wraps */
    default: return "bool";
    }
}

const char *tjcu_c_suffix(tj_dtype d) {
    switch (d) {
    case TJ_F32: return "f32";
    case TJ_F64: return "f64";
    case TJ_I64: return "i64";
    default: return "b8";
    }
}

bool tjcu_pw_takes(const tj_op_info *base, tj_dtype compute) {
    switch (base->pw_rule) {
    case TJC_PW_ARITH:
    case TJC_PW_ARITH_FS: return compute != TJ_BOOL;
    case TJC_PW_FLOAT: return compute == TJ_F32 || compute == TJ_F64;
    case TJC_PW_LOGICAL: return compute == TJ_BOOL;
    case TJC_PW_ARITH_B:
    case TJC_PW_COMPARE:
    case TJC_PW_SELECT: return (unsigned)compute < TJ_NUM_DTYPES;
    }
    return false;
}

tj_dtype tjcu_pw_result(const tj_op_info *base, tj_dtype compute) {
    return base->pw_rule == TJC_PW_COMPARE || base->pw_rule == TJC_PW_LOGICAL ? TJ_BOOL : compute;
}

const char *tjcu_pw_preamble(void) {
    static _Atomic(char *) made;
    char *p = atomic_load(&made);
    if (p) return p;
    tjc_text t = {0};
    tjc_put(&t, "#include \"tjcu_builtins.h\"\n");
    static const char *const headers[] = {"tjcu_kernel.h", "tjm_cuda.h", "tjcu_pointwise.h"};
    for (size_t k = 0; k < sizeof headers / sizeof headers[0]; k++) {
        const char *h = tjcu_source_text(headers[k]);
        if (!h) {
            tjc_free(t.s);
            tjc_error(TJ_ERR_INTERNAL, "cuda: %s is not embedded in the library", headers[k]);
            return NULL;
        }
        tjc_put(&t, "/* ---- %s (the library's embedded copy) ---- */\n%s\n", headers[k], h);
    }
    char *text = tjc_text_finish(&t);
    if (!text) return NULL;
    char *expected = NULL;
    if (atomic_compare_exchange_strong(&made, &expected, text)) return text;
    tjc_free(text);
    return expected;
}

/* The source of Op: operands x0 (in dtype x0) and x1, x2 (in compute),
 * evaluating expr in compute and storing (R)(expr) as dtype out. */
static char *generate(const char *title, const char *expr, int arity, tj_dtype x0,
                      tj_dtype compute, tj_dtype result, tj_dtype out) {
    const char *T = tjcu_c_compute_type(compute), *cv = tjcu_c_suffix(compute);
    const char *pre = tjcu_pw_preamble();
    if (!pre) return NULL;
    tjc_text t = {0};
    tjc_put(&t, "%s", pre);
    tjc_put(&t, "/* ---- the kernels ---- */\n");
    tjc_put(&t, "/* %s */\nnamespace tjm {\nstruct Op {\n", title);
    tjc_put(&t, "    typedef %s X0;\n    typedef %s X1;\n    typedef %s X2;\n", tjcu_c_storage_type(x0),
        tjcu_c_storage_type(compute), tjcu_c_storage_type(compute));
    tjc_put(&t, "    typedef %s Y;\n    typedef %s P;\n    enum { arity = %d };\n", tjcu_c_storage_type(out),
        tjcu_c_storage_type(compute), arity);
    tjc_put(&t, "    static __device__ __forceinline__ Y apply(X0 x0, X1 x1, X2 x2, P p0_, P p1_) {\n");
    tjc_put(&t, "        typedef %s T;\n", T);
    tjc_put(&t, "        const T a = cv_%s(x0), b = cv_%s(x1), c = cv_%s(x2);\n", cv, cv, cv);
    tjc_put(&t, "        const T p0 = cv_%s(p0_), p1 = cv_%s(p1_);\n", cv, cv);
    tjc_put(&t, "        (void)a;\n        (void)b;\n        (void)c;\n        (void)p0;\n"
            "        (void)p1;\n");
    tjc_put(&t, "        return sv_%s((%s)(%s));\n    }\n};\n} /* namespace tjm */\n\n", tjcu_c_suffix(out),
        tjcu_c_compute_type(result), expr);
    static const struct {
        const char *name, *call;
    } kernels[] = {
        {"tjpw_contig", "tjpw_contig_loop<tjm::Op>"},
        {"tjpw_vec", "tjpw_vec_loop<tjm::Op>"},
        {"tjpw_strided32", "tjpw_strided_loop<tjm::Op, unsigned, int>"},
        {"tjpw_strided64", "tjpw_strided_loop<tjm::Op, unsigned long long, long long>"},
    };
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        tjc_put(&t, "extern \"C\" __global__ void %s(TensorArg o, TensorArg x0, TensorArg x1, "
                "TensorArg x2, long long n, int flags, tjm::Op::P p0, tjm::Op::P p1, "
                "tjm::Op::P s) {\n    %s(o, x0, x1, x2, n, flags, p0, p1, s);\n}\n"
                "TJCU_EXPORT(%s)\n",
            kernels[k].name, kernels[k].call, kernels[k].name);
    }
    if (t.failed) {
        tjc_free(t.s);
        tjc_error(TJ_ERR_MEMORY, "cuda: out of memory generating the source of %s", title);
        return NULL;
    }
    return t.s;
}

static char *pw_text(const tj_op_info *base, tj_dtype compute) {
    char title[160];
    snprintf(title, sizeof title, "%s computing in %s", base->name, tj_dtype_name(compute));
    tj_dtype x0 = base->pw_rule == TJC_PW_SELECT ? TJ_BOOL : compute;
    tj_dtype result = tjcu_pw_result(base, compute);
    return generate(title, base->pw_expr, base->pw_arity, x0, compute, result, result);
}

static char *copy_text(tj_dtype dst, tj_dtype src) {
    char title[80];
    snprintf(title, sizeof title, "conversion from %s to %s", tj_dtype_name(src),
             tj_dtype_name(dst));
    return generate(title, "a", 1, src, src, src, dst);
}

/* Publishes a freshly made source in slot, or returns the one another thread
 * put there first (NULL, with generate's error, when none could be made). */
static const char *publish(_Atomic(char *) *slot, char *made) {
    if (!made) return NULL;
    char *expected = NULL;
    if (atomic_compare_exchange_strong(slot, &expected, made)) return made;
    tjc_free(made);
    return expected;
}

static _Atomic(char *) pw_sources[TJ_OP__COUNT][TJ_NUM_DTYPES];
static _Atomic(char *) copy_sources[TJ_NUM_DTYPES][TJ_NUM_DTYPES];

const char *tjcu_pw_source(const tj_op_info *base, tj_dtype compute) {
    _Atomic(char *) *slot = &pw_sources[base->id][compute];
    char *s = atomic_load(slot);
    return s ? s : publish(slot, pw_text(base, compute));
}

const char *tjcu_pw_copy_source(tj_dtype dst, tj_dtype src) {
    _Atomic(char *) *slot = &copy_sources[dst][src];
    char *s = atomic_load(slot);
    return s ? s : publish(slot, copy_text(dst, src));
}

void tjcu_pw_key(char *buf, size_t n, const tj_op_info *base, tj_dtype compute) {
    /* "aten::where.self" in f32: "pw_where_self_f32.cu" */
    const char *name = strstr(base->name, "::") ? strstr(base->name, "::") + 2 : base->name;
    int len = snprintf(buf, n, "pw_%s_%s.cu", name, tj_dtype_name(compute));
    for (int i = 3; i < len && (size_t)i < n; i++)
        if (buf[i] == '.' && strcmp(buf + i, ".cu") != 0) buf[i] = '_';
}

void tjcu_pw_copy_key(char *buf, size_t n, tj_dtype dst, tj_dtype src) {
    snprintf(buf, n, "copy_%s_from_%s.cu", tj_dtype_name(dst), tj_dtype_name(src));
}

static bool is_base_row(const tj_op_info *op) {
    return op->kind == TJ_KIND_POINTWISE && op->pw_expr && op->scalar_base < 0 &&
           op->inplace_of < 0;
}

bool tjcu_pointwise_sources(tjcu_source_fn fn, void *ctx) {
    char key[96];
    for (int id = 0; id < TJ_OP__COUNT; id++) {
        const tj_op_info *op = tjc_op(id);
        if (!is_base_row(op)) continue;
        for (int d = 0; d < TJ_NUM_DTYPES; d++) {
            if (!tjcu_pw_takes(op, (tj_dtype)d)) continue;
            const char *src = tjcu_pw_source(op, (tj_dtype)d);
            tjcu_pw_key(key, sizeof key, op, (tj_dtype)d);
            if (!fn(ctx, key, src ? src : "#error out of memory generating this source\n"))
                return false;
        }
    }
    for (int dst = 0; dst < TJ_NUM_DTYPES; dst++)
        for (int src = 0; src < TJ_NUM_DTYPES; src++) {
            const char *s = tjcu_pw_copy_source((tj_dtype)dst, (tj_dtype)src);
            tjcu_pw_copy_key(key, sizeof key, (tj_dtype)dst, (tj_dtype)src);
            if (!fn(ctx, key, s ? s : "#error out of memory generating this source\n"))
                return false;
        }
    return true;
}
