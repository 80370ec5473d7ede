/* driver.c — choosing the driver once per process: TJIT_CUDA_DRIVER=host
 * (the execution harness), =cuda (a GPU, or no device), unset (a GPU when the
 * driver finds one, else no device: the harness is only ever chosen by name). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/driver.h"
#include "core/core.h"

const char *tjcu_cuda_driver_reason(void);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const tjcu_driver *chosen;
static char reason[320];

static void choose(void) {
    const char *want = getenv("TJIT_CUDA_DRIVER");
    if (want && !strcmp(want, "host")) {
        chosen = tjcu_host_driver();
    } else if (want && *want && strcmp(want, "cuda")) {
        snprintf(reason, sizeof reason, "TJIT_CUDA_DRIVER is '%s'; it takes 'cuda' or 'host'", want);
    } else {
        chosen = tjcu_cuda_driver();
        if (!chosen) snprintf(reason, sizeof reason, "%s", tjcu_cuda_driver_reason());
    }
}

const tjcu_driver *tjcu_current_driver(void) {
    pthread_once(&once, choose);
    return chosen;
}

const char *tjcu_driver_unavailable_reason(void) {
    pthread_once(&once, choose);
    return chosen ? "" : reason;
}
