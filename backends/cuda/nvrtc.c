/* nvrtc.c — tjcu_nvrtc_compile over NVRTC's C API (nvrtc.h), with the
 * options every tjit kernel is compiled with. */
#include <nvrtc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/sources.h"
#include "core/core.h"

/* --fmad=false: NVRTC would otherwise contract a * b + c into one FMA
 * (rounded once), while the CPU's kernels, compiled in ISO C mode, round the
 * product and the sum separately; without contraction every kernel computes
 * what the CPU computes, operation for operation (a - p0 * b, lerp's signed
 * zeros). Division and sqrt stay IEEE (NVRTC's defaults, --prec-div=true,
 * --prec-sqrt=true), and denormals are kept (--ftz=false), as on the CPU. */
static const char *const fixed_options[] = {"-std=c++17", "--fmad=false"};
#define N_FIXED_OPTIONS (sizeof fixed_options / sizeof fixed_options[0])

static char joined_options[128];
static void join_options(void) {
    size_t k = 0;
    for (size_t i = 0; i < N_FIXED_OPTIONS; i++)
        k += (size_t)snprintf(joined_options + k, sizeof joined_options - k, "%s%s", i ? " " : "",
                              fixed_options[i]);
}

const char *tjcu_nvrtc_options(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, join_options);
    return joined_options;
}

static bool valid_arch(const char *arch, bool want_cubin) {
    const char *digits = !strncmp(arch, "sm_", 3) ? arch + 3 : !strncmp(arch, "compute_", 8) ? arch + 8 : NULL;
    if (!digits || !digits[0] || (want_cubin && digits != arch + 3)) return false;
    for (const char *c = digits; *c; c++)
        if ((*c < '0' || *c > '9') && !(c[1] == '\0' && (*c == 'a' || *c == 'f'))) return false;
    return true;
}

/* The log's first lines, for a message. */
static void log_head(nvrtcProgram prog, char *buf, size_t n) {
    size_t len = 0;
    buf[0] = '\0';
    if (nvrtcGetProgramLogSize(prog, &len) != NVRTC_SUCCESS || len <= 1) return;
    char *log = tjc_malloc(len);
    if (!log) return;
    if (nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS) {
        snprintf(buf, n, "%s", log);
        int lines = 0;
        for (char *c = buf; *c; c++)
            if (*c == '\n' && ++lines == 12) {
                c[1] = '\0';
                break;
            }
    }
    tjc_free(log);
}

tj_status tjcu_nvrtc_compile(const char *name, const char *source, const char *arch, bool want_cubin,
                             char **image, size_t *size) {
    if (!image || !size) return tjc_error(TJ_ERR_ARG, "tjcu_nvrtc_compile: no place for the image");
    *image = NULL;
    *size = 0;
    if (!name || !source || !arch) return tjc_error(TJ_ERR_ARG, "tjcu_nvrtc_compile: no name, source or arch");
    if (!valid_arch(arch, want_cubin))
        return tjc_error(TJ_ERR_ARG, "tjcu_nvrtc_compile: %s: architecture '%s' is not sm_NN%s", name, arch,
                         want_cubin ? "" : " or compute_NN");
    const char *header_names[TJCU_MAX_HEADERS], *headers[TJCU_MAX_HEADERS];
    int n_headers = tjcu_headers(header_names, headers, TJCU_MAX_HEADERS);
    if (n_headers == 0 || n_headers > TJCU_MAX_HEADERS)
        return tjc_error(TJ_ERR_INTERNAL, "tjcu_nvrtc_compile: %d kernel headers embedded (1 to %d)",
                         n_headers, TJCU_MAX_HEADERS);
    nvrtcProgram prog;
    nvrtcResult r = nvrtcCreateProgram(&prog, source, name, n_headers, headers, header_names);
    if (r != NVRTC_SUCCESS)
        return tjc_error(TJ_ERR_INTERNAL, "tjcu_nvrtc_compile: %s: nvrtcCreateProgram: %s", name,
                         nvrtcGetErrorString(r));
    char arch_opt[64];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", arch);
    const char *opts[N_FIXED_OPTIONS + 1];
    for (size_t i = 0; i < N_FIXED_OPTIONS; i++) opts[i] = fixed_options[i];
    opts[N_FIXED_OPTIONS] = arch_opt;
    tj_status s = TJ_OK;
    r = nvrtcCompileProgram(prog, (int)N_FIXED_OPTIONS + 1, opts);
    if (r != NVRTC_SUCCESS) {
        char log[800];
        log_head(prog, log, sizeof log);
        s = tjc_error(r == NVRTC_ERROR_COMPILATION ? TJ_ERR_UNSUPPORTED : TJ_ERR_INTERNAL,
                      "tjcu_nvrtc_compile: %s for %s: %s:\n%s", name, arch, nvrtcGetErrorString(r), log);
        goto done;
    }
    size_t n = 0;
    r = want_cubin ? nvrtcGetCUBINSize(prog, &n) : nvrtcGetPTXSize(prog, &n);
    char *out = r == NVRTC_SUCCESS ? tjc_malloc(n + 1) : NULL;
    if (out) r = want_cubin ? nvrtcGetCUBIN(prog, out) : nvrtcGetPTX(prog, out);
    if (r != NVRTC_SUCCESS || !out) {
        tjc_free(out);
        s = r != NVRTC_SUCCESS ? tjc_error(TJ_ERR_INTERNAL, "tjcu_nvrtc_compile: %s for %s: %s", name, arch,
                                           nvrtcGetErrorString(r))
                               : tjc_error(TJ_ERR_MEMORY, "tjcu_nvrtc_compile: out of memory");
        goto done;
    }
    out[n] = '\0';
    if (!want_cubin && n > 0 && out[n - 1] == '\0') n--; /* NVRTC's PTX size counts its NUL */
    *image = out;
    *size = n;
done:
    nvrtcDestroyProgram(&prog);
    return s;
}

static char version[32];
static void read_version(void) {
    int major = 0, minor = 0;
    if (nvrtcVersion(&major, &minor) == NVRTC_SUCCESS) snprintf(version, sizeof version, "%d.%d", major, minor);
}

const char *tjcu_nvrtc_version(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, read_version);
    return version;
}
