/* backends.c — the fusion backends built into this library, by name, and
 * which of them compiles groups when a program names none. */
#include <stdlib.h>
#include <string.h>

#include "fuser.h"
#ifdef TJIT_HAVE_LLVM
#include "backends/llvm/tjl.h"
#endif

const tjf_backend *tjf_find_backend(const char *name) {
    const tjf_backend *all[] = {
        tjf_portable_backend(),
#ifdef TJIT_HAVE_LLVM
        tjl_backend(), tjl_libm_backend(), /* "llvm", "llvm-libm" */
#endif
    };
    for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(all[i]->name, name)) return all[i];
    return NULL;
}

/* The fastest backend built (LLVM when present), unless TJIT_BACKEND names
 * another: tj_compile's choice when its options name none. A TJIT_BACKEND
 * naming no backend is not a fallback to the default: tj_compile refuses it,
 * so that a misspelt name does not go unnoticed. */
const char *tjf_default_backend_name(void) {
    const char *env = getenv("TJIT_BACKEND");
    if (env && *env) return env;
#ifdef TJIT_HAVE_LLVM
    return "llvm";
#else
    return "portable";
#endif
}

const tjf_backend *tjf_device_backend(tj_device_type d) {
    const tjc_device_backend *b = tjc_device_backend_of(d);
    return b ? b->fusion : NULL;
}
