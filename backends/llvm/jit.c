/* jit.c — from a kernel's module to callable code: the host target machine
 * (CPU name and features, without which LLVM keeps loops scalar), the new
 * pass manager at O3, object code, and ORC LLJIT to link it into the
 * process. Kernels are keyed by their text: the IR as generated plus the
 * target, CPU and features. The key's hash names the kernel's symbol, so an
 * identical kernel (another group or program with the same code) shares the
 * loaded copy, counted by references and unloaded with the last one; and
 * with TJIT_CACHE_DIR (or TJIT_LLVM_CACHE=1: $XDG_CACHE_HOME/tjit) the object
 * code is kept in the disk cache (fuser/disk_cache.h, which decides whether
 * the directory can be trusted), so a second process links it without
 * compiling. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "core/alloc.h"
#include "backends/cpu/isa.h"
#include "core/pw_math.h"
#include "fuser/disk_cache.h"
#include "internal.h"

#define KEY_VERSION "; tjit llvm kernel v1\n" /* bump when the generator's output changes meaning */

struct tjl_code {
    tjl_code *next;
    char symbol[48];
    char *key;
    LLVMOrcResourceTrackerRef rt;
    tjl_entry entry;
    int refs;
};

/* The process's JIT and registry: shared by all programs, thread-safe. */
static struct {
    pthread_once_t once;
    char init_error[256];
    LLVMOrcLLJITRef jit;
    LLVMOrcJITDylibRef jd;
    char *triple, *cpu, *features;
    pthread_mutex_t lock;
    tjl_code *codes;
    atomic_llong compiled, disk_hits, memory_hits, fallbacks, compile_ns, loaded;
} J = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Copies an LLVM error's message into buf and consumes the error. */
static const char *take_error(LLVMErrorRef err, char *buf, size_t n) {
    char *msg = LLVMGetErrorMessage(err);
    snprintf(buf, n, "%s", msg);
    LLVMDisposeErrorMessage(msg);
    return buf;
}

/* pw_math.h's integer power, for i64 pow (no vector form: a loop per element). */
static int64_t tjl_ipow(int64_t b, int64_t e) { return tjm_ipow(b, e); }

/* Turns off, in LLVM's "+a,+b,-c" feature list, the extensions above the
 * level the CPU kernels run at (TJIT_ISA lowers it; backends/cpu/isa.c), so
 * that TJIT_ISA=avx2 measures the AVX2 code of both on an AVX-512 machine.
 * Baseline: no AVX, nor anything built on it. */
static bool feature_above(const char *name, tjcpu_isa_level level) {
    static const char *const above_avx2[] = {"avx512", "avx10", "amx", "evex512"};
    static const char *const above_baseline[] = {"avx", "fma", "f16c", "vaes", "vpclmulqdq", "xop",
                                                 "sha512", "sm3", "sm4"};
    for (size_t i = 0; level < TJCPU_ISA_AVX512 && i < sizeof above_avx2 / sizeof *above_avx2; i++)
        if (!strncmp(name, above_avx2[i], strlen(above_avx2[i]))) return true;
    for (size_t i = 0; level < TJCPU_ISA_AVX2 && i < sizeof above_baseline / sizeof *above_baseline; i++)
        if (!strncmp(name, above_baseline[i], strlen(above_baseline[i]))) return true;
    return false;
}
static void lower_features(char *features, tjcpu_isa_level level) {
    for (char *tok = features; *tok; tok++) {
        if ((tok == features || tok[-1] == ',') && *tok == '+' && feature_above(tok + 1, level)) *tok = '-';
    }
}

static void init_jit(void) {
    char buf[200];
    if (LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter()) {
        snprintf(J.init_error, sizeof J.init_error, "LLVM has no code generator for this host");
        return;
    }
    J.triple = LLVMGetDefaultTargetTriple();
    J.cpu = LLVMGetHostCPUName();
    J.features = LLVMGetHostCPUFeatures();
    lower_features(J.features, tjcpu_isa());
    LLVMErrorRef err = LLVMOrcCreateLLJIT(&J.jit, LLVMOrcCreateLLJITBuilder());
    if (err) {
        snprintf(J.init_error, sizeof J.init_error, "cannot create the JIT: %s", take_error(err, buf, sizeof buf));
        J.jit = NULL;
        return;
    }
    J.jd = LLVMOrcLLJITGetMainJITDylib(J.jit);
    /* the C library functions kernels call, by address (whatever the
     * executable exports), and the process's other symbols for the rest */
    static const struct {
        const char *name;
        void *addr;
    } syms[] = {
        {"tjl_ipow", (void *)tjl_ipow}, {"exp", (void *)exp},     {"log", (void *)log},
        {"tanh", (void *)tanh},         {"erf", (void *)erf},     {"erff", (void *)erff},
        {"pow", (void *)pow},           {"powf", (void *)powf},   {"log1p", (void *)log1p},
        {"log1pf", (void *)log1pf},     {"expm1", (void *)expm1}, {"expm1f", (void *)expm1f},
        {"sin", (void *)sin},           {"sinf", (void *)sinf},   {"cos", (void *)cos},
        {"cosf", (void *)cosf},
    };
    enum { N = sizeof syms / sizeof syms[0] };
    LLVMOrcCSymbolMapPair pairs[N];
    for (int i = 0; i < N; i++) {
        pairs[i].Name = LLVMOrcLLJITMangleAndIntern(J.jit, syms[i].name);
        pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)syms[i].addr;
        pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
        pairs[i].Sym.Flags.TargetFlags = 0;
    }
    err = LLVMOrcJITDylibDefine(J.jd, LLVMOrcAbsoluteSymbols(pairs, N));
    if (err) {
        snprintf(J.init_error, sizeof J.init_error, "cannot define symbols: %s", take_error(err, buf, sizeof buf));
        return;
    }
    LLVMOrcDefinitionGeneratorRef gen;
    err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(J.jit), NULL, NULL);
    if (err) {
        snprintf(J.init_error, sizeof J.init_error, "%s", take_error(err, buf, sizeof buf));
        return;
    }
    LLVMOrcJITDylibAddGenerator(J.jd, gen);
}

static tj_status ready(void) {
    pthread_once(&J.once, init_jit);
    if (J.init_error[0]) return tjc_error(TJ_ERR_UNSUPPORTED, "llvm backend: %s", J.init_error);
    return TJ_OK;
}

static LLVMTargetMachineRef host_machine(void) {
    LLVMTargetRef target;
    char *msg = NULL;
    if (LLVMGetTargetFromTriple(J.triple, &target, &msg)) {
        tjc_error(TJ_ERR_UNSUPPORTED, "llvm backend: %s", msg ? msg : "no target");
        LLVMDisposeMessage(msg);
        return NULL;
    }
    return LLVMCreateTargetMachine(target, J.triple, J.cpu, J.features, LLVMCodeGenLevelAggressive,
                                   LLVMRelocPIC, LLVMCodeModelSmall);
}

/* Target, data layout and CPU attributes on the module; its kernel renamed. */
static tj_status prepare(tjl_ir *ir, LLVMTargetMachineRef tm) {
    unsigned vector_bits = strstr(J.features, "+avx512f") ? 512 : strstr(J.features, "+avx") ? 256 : 128;
    tjl_math_outline(ir, vector_bits);
    LLVMSetTarget(ir->mod, J.triple);
    LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(ir->mod, dl);
    LLVMDisposeTargetData(dl);
    for (LLVMValueRef f = LLVMGetFirstFunction(ir->mod); f; f = LLVMGetNextFunction(f)) {
        if (LLVMIsDeclaration(f)) continue;
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                LLVMCreateStringAttribute(ir->ctx, "target-cpu", 10, J.cpu, (unsigned)strlen(J.cpu)));
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                LLVMCreateStringAttribute(ir->ctx, "target-features", 15, J.features,
                                                          (unsigned)strlen(J.features)));
        if (strstr(J.features, "+avx512f"))
            LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                                    LLVMCreateStringAttribute(ir->ctx, "prefer-vector-width", 19, "512", 3));
    }
    char *msg = NULL;
    if (LLVMVerifyModule(ir->mod, LLVMReturnStatusAction, &msg)) {
        tjc_error(TJ_ERR_INTERNAL, "llvm backend: the generated IR is invalid: %.300s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        return TJ_ERR_INTERNAL;
    }
    LLVMDisposeMessage(msg);
    return TJ_OK;
}

static tj_status optimise(tjl_ir *ir, LLVMTargetMachineRef tm) {
    LLVMPassBuilderOptionsRef o = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopVectorization(o, 1);
    LLVMPassBuilderOptionsSetSLPVectorization(o, 1);
    LLVMPassBuilderOptionsSetLoopInterleaving(o, 1);
    LLVMPassBuilderOptionsSetLoopUnrolling(o, 1);
    LLVMErrorRef err = LLVMRunPasses(ir->mod, "default<O3>", tm, o);
    LLVMDisposePassBuilderOptions(o);
    if (err) {
        char buf[200];
        return tjc_error(TJ_ERR_INTERNAL, "llvm backend: optimiser: %s", take_error(err, buf, sizeof buf));
    }
    tjl_math_drop_unused(ir); /* vector variants the vectoriser did not call: no code for them */
    return TJ_OK;
}

static LLVMMemoryBufferRef emit(tjl_ir *ir, LLVMTargetMachineRef tm, LLVMCodeGenFileType kind) {
    LLVMMemoryBufferRef buf = NULL;
    char *msg = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, ir->mod, kind, &msg, &buf)) {
        tjc_error(TJ_ERR_INTERNAL, "llvm backend: code generation: %s", msg ? msg : "");
        LLVMDisposeMessage(msg);
        return NULL;
    }
    return buf;
}

static bool rename_kernel(tjl_ir *ir, const char *name, const char *symbol) {
    LLVMValueRef f = LLVMGetNamedFunction(ir->mod, name);
    if (!f) return false;
    LLVMSetValueName2(f, symbol, strlen(symbol));
    return true;
}

/* ---- loading ------------------------------------------------------------------ */

static uint64_t fnv1a(const char *s, uint64_t h) {
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static tjl_code *find(const char *symbol, const char *key) {
    for (tjl_code *c = J.codes; c; c = c->next)
        if (!strcmp(c->symbol, symbol) && !strcmp(c->key, key)) return c;
    return NULL;
}

/* Links obj (taken) into the JIT under the registry's lock; the existing
 * copy when another thread got there first. */
static tjl_code *link_object(const char *symbol, char *key, LLVMMemoryBufferRef obj, bool *shared) {
    char buf[200];
    pthread_mutex_lock(&J.lock);
    tjl_code *c = find(symbol, key);
    if (c) {
        c->refs++;
        *shared = true;
        LLVMDisposeMemoryBuffer(obj);
        tjc_free(key);
        pthread_mutex_unlock(&J.lock);
        return c;
    }
    c = tjc_calloc(1, sizeof *c);
    LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(J.jd);
    LLVMErrorRef err = c ? LLVMOrcLLJITAddObjectFileWithRT(J.jit, rt, obj) : NULL;
    LLVMOrcExecutorAddress addr = 0;
    if (!c) {
        LLVMDisposeMemoryBuffer(obj);
        tjc_error(TJ_ERR_MEMORY, "out of memory");
    } else if (err || (err = LLVMOrcLLJITLookup(J.jit, &addr, symbol))) {
        tjc_error(TJ_ERR_INTERNAL, "llvm backend: linking %s: %s", symbol, take_error(err, buf, sizeof buf));
    }
    if (!c || !addr) {
        LLVMErrorRef e2 = LLVMOrcResourceTrackerRemove(rt);
        if (e2) LLVMConsumeError(e2);
        LLVMOrcReleaseResourceTracker(rt);
        tjc_free(c);
        tjc_free(key);
        pthread_mutex_unlock(&J.lock);
        return NULL;
    }
    snprintf(c->symbol, sizeof c->symbol, "%s", symbol);
    c->key = key;
    c->rt = rt;
    c->entry = (tjl_entry)(uintptr_t)addr;
    c->refs = 1;
    c->next = J.codes;
    J.codes = c;
    atomic_fetch_add(&J.loaded, 1);
    pthread_mutex_unlock(&J.lock);
    *shared = false;
    return c;
}

tjl_code *tjl_jit_load(tjl_ir *ir, const char *name, tjl_timing *tm_out) {
    tjl_timing t = *tm_out;
    double t0 = now_ms();
    if (ready() != TJ_OK) return NULL;
    LLVMTargetMachineRef tm = host_machine();
    if (!tm) return NULL;
    tjl_code *code = NULL;
    char *key = NULL;
    if (prepare(ir, tm) != TJ_OK) goto done;
    char *text = LLVMPrintModuleToString(ir->mod);
    size_t n = strlen(KEY_VERSION) + strlen(J.triple) + strlen(J.cpu) + strlen(J.features) + strlen(text) + 16;
    key = tjc_malloc(n);
    if (!key) {
        LLVMDisposeMessage(text);
        tjc_error(TJ_ERR_MEMORY, "out of memory");
        goto done;
    }
    snprintf(key, n, "%s; %s %s %s\n%s", KEY_VERSION, J.triple, J.cpu, J.features, text);
    LLVMDisposeMessage(text);
    char symbol[48];
    snprintf(symbol, sizeof symbol, "tjl_%016llx%016llx", (unsigned long long)fnv1a(key, 0xcbf29ce484222325ull),
             (unsigned long long)fnv1a(key, 0x84222325cbf29ce4ull));
    pthread_mutex_lock(&J.lock);
    code = find(symbol, key);
    if (code) code->refs++;
    pthread_mutex_unlock(&J.lock);
    if (code) {
        t.memory_hit = true;
        atomic_fetch_add(&J.memory_hits, 1);
        goto done;
    }
    char file[64];
    snprintf(file, sizeof file, "%s.o", symbol);
    LLVMMemoryBufferRef obj = NULL;
    void *stored = NULL;
    size_t stored_size = 0;
    if (tjf_disk_cache_read(file, key, &stored, &stored_size) && stored_size > 0)
        obj = LLVMCreateMemoryBufferWithMemoryRangeCopy(stored, stored_size, symbol);
    tjc_free(stored);
    t.disk_hit = obj != NULL;
    if (!obj) {
        if (!rename_kernel(ir, name, symbol)) {
            tjc_error(TJ_ERR_INTERNAL, "llvm backend: no function %s", name);
            goto done;
        }
        double t1 = now_ms();
        if (optimise(ir, tm) != TJ_OK) goto done;
        double t2 = now_ms();
        obj = emit(ir, tm, LLVMObjectFile);
        t.optimise_ms = t2 - t1;
        t.codegen_ms = now_ms() - t2;
        if (!obj) goto done;
        tjf_disk_cache_write(file, key, LLVMGetBufferStart(obj), LLVMGetBufferSize(obj));
    }
    double t3 = now_ms();
    bool shared = false;
    code = link_object(symbol, key, obj, &shared); /* takes obj and key */
    key = NULL;
    t.link_ms = now_ms() - t3;
    if (code && shared) {
        t.memory_hit = true;
        atomic_fetch_add(&J.memory_hits, 1);
    } else if (code) {
        atomic_fetch_add(t.disk_hit ? &J.disk_hits : &J.compiled, 1);
    }
done:
    tjc_free(key);
    LLVMDisposeTargetMachine(tm);
    tjl_ir_dispose(ir); /* the module is spent either way */
    atomic_fetch_add(&J.compile_ns, (long long)((now_ms() - t0) * 1e6));
    *tm_out = t;
    return code;
}

tjl_entry tjl_code_entry(const tjl_code *c) { return c->entry; }
const char *tjl_code_symbol(const tjl_code *c) { return c->symbol; }

void tjl_code_release(tjl_code *c) {
    if (!c) return;
    pthread_mutex_lock(&J.lock);
    if (--c->refs == 0) {
        for (tjl_code **p = &J.codes; *p; p = &(*p)->next)
            if (*p == c) {
                *p = c->next;
                break;
            }
        LLVMErrorRef err = LLVMOrcResourceTrackerRemove(c->rt);
        if (err) LLVMConsumeError(err);
        LLVMOrcReleaseResourceTracker(c->rt);
        tjc_free(c->key);
        tjc_free(c);
        atomic_fetch_sub(&J.loaded, 1);
    }
    pthread_mutex_unlock(&J.lock);
}

char *tjl_jit_text(tjl_ir *ir, const char *name, tjl_text what) {
    if (ready() != TJ_OK) return NULL;
    LLVMTargetMachineRef tm = host_machine();
    if (!tm) return NULL;
    char *out = NULL;
    if (prepare(ir, tm) == TJ_OK && rename_kernel(ir, name, name) &&
        (what == TJL_TEXT_IR || optimise(ir, tm) == TJ_OK)) {
        if (what == TJL_TEXT_ASM) {
            LLVMMemoryBufferRef buf = emit(ir, tm, LLVMAssemblyFile);
            if (buf) {
                size_t n = LLVMGetBufferSize(buf);
                if ((out = tjc_malloc(n + 1))) {
                    memcpy(out, LLVMGetBufferStart(buf), n);
                    out[n] = 0;
                }
                LLVMDisposeMemoryBuffer(buf);
            }
        } else {
            char *s = LLVMPrintModuleToString(ir->mod);
            out = tjc_strdup(s);
            LLVMDisposeMessage(s);
        }
    }
    LLVMDisposeTargetMachine(tm);
    return out;
}

void tjl_count_fallback(void) { atomic_fetch_add(&J.fallbacks, 1); }

void tjl_jit_stats(tjl_stats *s) {
    s->compiled = atomic_load(&J.compiled);
    s->disk_hits = atomic_load(&J.disk_hits);
    s->memory_hits = atomic_load(&J.memory_hits);
    s->fallbacks = atomic_load(&J.fallbacks);
    s->compile_ms = (double)atomic_load(&J.compile_ns) * 1e-6;
    s->loaded = atomic_load(&J.loaded);
}
