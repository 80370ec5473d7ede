/* dim3.h — a launch's grid or block extent, shared by the drivers. */
#ifndef TJIT_CUDA_DIM3_H
#define TJIT_CUDA_DIM3_H

typedef struct tjcu_dim3 {
    unsigned x, y, z;
} tjcu_dim3;

#endif
