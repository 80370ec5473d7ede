/* register.c — the CPU backend's kernel table: the kernel each row of
 * core/ops.def names, registered for TJ_CPU. Host memory is core's own. */
#include "core/core.h"

/* Every CPU kernel that a row names. */
#define TJ_OP(id, name, schema, kind, infer, cpu) tj_status cpu(const tjc_call *);
#include "core/ops.def"

static int one_device(void) { return 1; }
static tj_status nothing_queued(int index) {
    (void)index;
    return TJ_OK;
}

void tjcpu_register(void) {
    static const tjc_device_backend cpu = {
        .type = TJ_CPU,
        .name = "cpu",
        .device_count = one_device,
        .synchronize = nothing_queued,
        .kernels = {
#define TJ_OP(id, name, schema, kind, infer, cpu) [TJ_OP_##id] = cpu,
#define TJ_INPLACE(id, name, base) /* the base's kernel, given by the registry */
#include "core/ops.def"
        },
    };
    tjc_register_device_backend(&cpu);
}
