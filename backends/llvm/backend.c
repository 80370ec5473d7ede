/* backend.c — the "llvm" and "llvm-libm" tjf_backends: compile a group for a
 * spec (generate, optimise, load; or hand the group to the portable runner
 * with the reason), launch (operand pointers, the runtime stride table, and
 * the index space, elements or a row kernel's rows, split across threads
 * above the CPU backend's grain), and
 * release. Also the kernel text for `tjit dump --kernels`. TJIT_LLVM_STATS=1
 * reports every kernel on stderr: its compile time or its cache hit, or why
 * it fell back. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "internal.h"

typedef struct tjl_kernel {
    tjl_plan plan;
    tjl_code *code;
    tjl_entry entry;
    tjf_kernel *fallback; /* the portable runner's kernel when LLVM's is missing */
    char reason[200];
} tjl_kernel;

static bool stats_on(void) {
    const char *s = getenv("TJIT_LLVM_STATS");
    return s && !strcmp(s, "1");
}

static void release(tjf_kernel *kk) {
    tjl_kernel *k = (tjl_kernel *)kk;
    if (!k) return;
    if (k->fallback) tjf_portable_backend()->release(k->fallback);
    tjl_code_release(k->code);
    tjc_free(k);
}

static tjf_kernel *compile(const tj_graph *sub, const tjf_spec *spec, bool libm) {
    tjl_kernel *k = tjc_calloc(1, sizeof *k);
    if (!k) return tjc_error(TJ_ERR_MEMORY, "out of memory"), NULL;
    tjl_ir ir;
    tjl_timing t = {0};
    double t0 = 0;
    tj_status st = tjl_ir_init(&ir, libm);
    if (st == TJ_OK) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        t0 = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
        st = tjl_generate(&ir, sub, spec, "tjl_kernel", &k->plan);
        clock_gettime(CLOCK_MONOTONIC, &ts);
        t.build_ms = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6 - t0;
    }
    if (st == TJ_OK) {
        k->code = tjl_jit_load(&ir, "tjl_kernel", &t);
        if (!k->code) snprintf(k->reason, sizeof k->reason, "%s", tj_last_error());
        else k->entry = tjl_code_entry(k->code);
    } else {
        snprintf(k->reason, sizeof k->reason, "%s", ir.why[0] ? ir.why : tj_last_error());
    }
    tjl_ir_dispose(&ir);
    if (!k->code) { /* the portable runner takes the group; a wrong answer is never an option */
        tjl_count_fallback();
        tj_clear_error();
        if (stats_on())
            fprintf(stderr, "tjit llvm: group of %d nodes runs on the portable runner: %s\n",
                    tj_block_num_nodes(tj_graph_block((tj_graph *)sub)), k->reason);
        k->fallback = tjf_portable_backend()->compile(sub, spec);
        if (!k->fallback) {
            tjc_free(k);
            return NULL;
        }
        return (tjf_kernel *)k;
    }
    if (stats_on()) {
        const tjl_plan *p = &k->plan;
        double total = t.build_ms + t.optimise_ms + t.codegen_ms + t.link_ms;
        if (t.memory_hit)
            fprintf(stderr, "tjit llvm: %s: %d nodes, %d operands: shared with an identical kernel "
                    "(%.2f ms)\n", tjl_code_symbol(k->code), p->n_nodes, p->n_operands, total);
        else
            fprintf(stderr, "tjit llvm: %s: %d nodes, %d operands, %d dims: %s in %.2f ms (build %.2f, "
                    "optimise %.2f, codegen %.2f, link %.2f)\n", tjl_code_symbol(k->code), p->n_nodes,
                    p->n_operands, p->n_dims, t.disk_hit ? "loaded from the disk cache" : "compiled",
                    total, t.build_ms, t.optimise_ms, t.codegen_ms, t.link_ms);
    }
    return (tjf_kernel *)k;
}

static tjf_kernel *compile_vec(const tj_graph *sub, const tjf_spec *spec) { return compile(sub, spec, false); }
static tjf_kernel *compile_libm(const tj_graph *sub, const tjf_spec *spec) { return compile(sub, spec, true); }

static tj_status launch(const tjf_kernel *kk, tj_tensor *const *inputs, tj_tensor *const *outputs) {
    const tjl_kernel *k = (const tjl_kernel *)kk;
    if (k->fallback) return tjf_portable_backend()->launch(k->fallback, inputs, outputs);
    const tjl_plan *p = &k->plan;
    if (p->numel == 0) return TJ_OK;
    char *ptrs[TJL_MAX_OPERANDS];
    int64_t strides[TJL_MAX_OPERANDS * TJ_MAX_DIMS + 1];
    for (int i = 0; i < p->n_operands; i++) {
        const tjl_operand *o = &p->op[i];
        const tj_tensor *t = o->kind == TJL_OUTPUT ? outputs[o->index] : inputs[o->index];
        char *base = tjc_data_ptr(t);
        if (o->kind == TJL_VIEW) /* a chunk: a pointer offset into its input */
            base += (o->piece * (t->sizes[o->dim] / o->chunks) * t->strides[o->dim]) *
                    (int64_t)tj_dtype_size(t->dtype);
        ptrs[i] = base;
        if (!o->runtime) continue;
        for (int d = 0; d < p->n_dims; d++) {
            int64_t s = 0;
            if (p->stride[d][i] < 0) { /* a single iteration dim, where it does not broadcast */
                int od = p->dim_first[d] - (p->ndim - t->ndim);
                s = t->strides[od];
            }
            strides[o->rt * p->n_dims + d] = s;
        }
    }
    /* a row kernel's range counts rows, an element kernel's elements; the
     * grain is in elements either way */
    int64_t total = p->row_len ? p->numel / p->row_len : p->numel;
    int threads = tjcpu_threads_for(p->numel);
    if (threads > total) threads = (int)total;
    if (threads <= 1) {
        k->entry(ptrs, strides, 0, total);
        return TJ_OK;
    }
    tjl_entry entry = k->entry;
    int64_t align = p->row_len ? 1 : 16;
#pragma omp parallel num_threads(threads)
    {
        /* elements split on multiples of 16, as the CPU backend does:
         * contiguous outputs' pieces start on their own cache lines */
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        int64_t lo = total * t / nt / align * align, hi = total * (t + 1) / nt / align * align;
        if (t == nt - 1) hi = total;
        if (lo < hi) entry(ptrs, strides, lo, hi);
    }
    return TJ_OK;
}

static const tjf_backend vec_backend = {"llvm", compile_vec, launch, release};
static const tjf_backend libm_backend = {"llvm-libm", compile_libm, launch, release};

const tjf_backend *tjl_backend(void) { return &vec_backend; }
const tjf_backend *tjl_libm_backend(void) { return &libm_backend; }

tjl_stats tjl_get_stats(void) {
    tjl_stats s;
    tjl_jit_stats(&s);
    return s;
}

const char *tjl_kernel_fallback(const tjf_kernel *k) {
    const tjl_kernel *x = (const tjl_kernel *)k;
    return x && x->fallback ? x->reason : NULL;
}

const char *tjl_kernel_symbol(const tjf_kernel *k) {
    const tjl_kernel *x = (const tjl_kernel *)k;
    return x && x->code ? tjl_code_symbol(x->code) : NULL;
}

char *tjl_kernel_text(const tj_graph *sub, const tjf_spec *spec, bool libm, tjl_text what) {
    tjl_ir ir;
    tjl_plan *plan = tjc_malloc(sizeof *plan);
    char *out = NULL;
    if (!plan) return tjc_error(TJ_ERR_MEMORY, "out of memory"), NULL;
    if (tjl_ir_init(&ir, libm) == TJ_OK) {
        if (tjl_generate(&ir, sub, spec, "tjl_kernel", plan) == TJ_OK) out = tjl_jit_text(&ir, "tjl_kernel", what);
        else if (ir.why[0]) tjc_error(TJ_ERR_UNSUPPORTED, "llvm backend: %s", ir.why);
    }
    tjl_ir_dispose(&ir);
    tjc_free(plan);
    return out;
}


/* One line on the plan: operands and the loops over the iteration space. */
static void describe_plan(const tjl_plan *p, FILE *out) {
    int n[3] = {0, 0, 0};
    for (int i = 0; i < p->n_operands; i++) n[p->op[i].kind]++;
    fprintf(out, "# operands: %d outputs, %d inputs read whole, %d chunks of inputs (%d with strides read "
            "at run time); iteration [",
            n[TJL_OUTPUT], n[TJL_INPUT], n[TJL_VIEW], p->n_runtime);
    for (int d = 0; d < p->ndim; d++) fprintf(out, "%s%lld", d ? ", " : "", (long long)p->sizes[d]);
    fprintf(out, "] as %s", p->n_dims <= 1 ? "one flat loop" : "rows [");
    for (int d = 0; p->n_dims > 1 && d < p->n_dims; d++)
        fprintf(out, "%s%lld", d ? ", " : "", (long long)p->dim_size[d]);
    fprintf(out, "%s", p->n_dims > 1 ? "] (the last one the inner loop)" : "");
    if (p->row_len) fprintf(out, "; a row kernel over rows of %lld", (long long)p->row_len);
    fprintf(out, "\n");
}

tj_status tjl_dump_kernels(const tj_graph *g, bool with_asm, FILE *out) {
    enum { SEEN = 64 };
    char *seen[SEEN];
    int seen_id[SEEN], n_seen = 0, n = 0;
    tjf_spec *spec = tjc_malloc(sizeof *spec);
    tjl_plan *plan = tjc_malloc(sizeof *plan);
    if (!spec || !plan) {
        tjc_free(spec);
        tjc_free(plan);
        return tjc_error(TJ_ERR_MEMORY, "out of memory");
    }
    tj_status st = TJ_OK;
    for (tj_node *x = tj_block_first(tj_graph_block((tj_graph *)g)); x && st == TJ_OK; x = tj_node_next(x)) {
        if (tj_node_kind_of(x) != TJ_NODE_FUSION_GROUP) continue;
        n++;
        tjf_spec_of_types(x, spec);
        const tj_graph *sub = tj_node_subgraph(x);
        fprintf(out, "\n# kernel of fusion group %%%d (%d nodes)", tj_node_id(x),
                tj_block_num_nodes(tj_graph_block((tj_graph *)sub)));
        if (tjf_anchor_node(sub)) { /* its kernels depend on the blocks, known at run time */
            fprintf(out, ": an epilogue group: %s runs through the CPU's kernel a block of rows at a "
                    "time, each block followed by the epilogue's kernel, compiled for the block's "
                    "geometry when the group first runs\n", tj_node_name(tjf_anchor_node(sub)));
            continue;
        }
        char *ir = tjl_kernel_text(sub, spec, false, TJL_TEXT_IR_OPT);
        if (!ir) {
            fprintf(out, ": runs on the portable runner: %s\n", tj_last_error());
            tj_clear_error();
            continue;
        }
        int same = -1;
        for (int i = 0; i < n_seen && same < 0; i++)
            if (!strcmp(seen[i], ir)) same = seen_id[i];
        if (same >= 0) { /* an unrolled loop repeats its body's groups */
            fprintf(out, ": the same code as group %%%d's\n", same);
            tjc_free(ir);
            continue;
        }
        tjl_ir scratch;
        if (tjl_ir_init(&scratch, false) == TJ_OK && tjl_generate(&scratch, sub, spec, "tjl_kernel", plan) == TJ_OK) {
            fprintf(out, "\n");
            describe_plan(plan, out);
        }
        tjl_ir_dispose(&scratch);
        fprintf(out, "# LLVM IR after optimisation\n%s", ir);
        if (with_asm) {
            char *as = tjl_kernel_text(sub, spec, false, TJL_TEXT_ASM);
            if (!as) st = tj_last_status();
            else fprintf(out, "\n# assembly\n%s", as);
            tjc_free(as);
        }
        if (n_seen < SEEN) {
            seen_id[n_seen] = tj_node_id(x);
            seen[n_seen++] = ir;
        } else {
            tjc_free(ir);
        }
    }
    if (st == TJ_OK && n == 0) fprintf(out, "\n# no fusion groups\n");
    for (int i = 0; i < n_seen; i++) tjc_free(seen[i]);
    tjc_free(spec);
    tjc_free(plan);
    return st;
}
