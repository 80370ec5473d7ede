/* dim3.h — a launch's grid or block extent, as CUDA's dim3: shared by the
 * host execution harness (harness.h) and the device driver. */
#ifndef TJIT_CUDA_DIM3_H
#define TJIT_CUDA_DIM3_H

typedef struct tjcu_dim3 {
    unsigned x, y, z;
} tjcu_dim3;

static inline tjcu_dim3 tjcu_dim3_of(unsigned x, unsigned y, unsigned z) {
    tjcu_dim3 d = {x, y, z};
    return d;
}

#endif
