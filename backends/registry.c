/* registry.c — the device backends built into this library, registered with
 * core/ before the first op runs (core/ calls tjc_register_builtin_backends
 * and knows none of them). */
#include "core/core.h"

void tjcpu_register(void);
#ifdef TJIT_HAVE_CUDA
void tjcu_register(void);
#endif

void tjc_register_builtin_backends(void) {
    tjcpu_register();
#ifdef TJIT_HAVE_CUDA
    tjcu_register();
#endif
}
