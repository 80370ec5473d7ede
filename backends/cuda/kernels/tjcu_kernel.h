/* tjcu_kernel.h — device-side helpers shared by the backend's kernels: the
 * tensor argument (the same layout as tjcu_tensor_arg in backends/cuda/cuda.h),
 * strided offsets and grid-stride loops. Included after tjcu_builtins.h; it
 * uses only what both NVRTC and the host compiler accept. */
#ifndef TJCU_KERNEL_H
#define TJCU_KERNEL_H

#define TJCU_MAX_DIMS 8

struct TensorArg {
    void *data;
    long long sizes[TJCU_MAX_DIMS];
    long long strides[TJCU_MAX_DIMS];
    int ndim;
    int contiguous;
};

/* The element offset of row-major linear index i in t. */
__device__ __forceinline__ long long tjcu_offset(const TensorArg &t, long long i) {
    if (t.contiguous) return i;
    long long off = 0;
    for (int d = t.ndim - 1; d >= 0; d--) {
        long long s = t.sizes[d];
        long long q = i / s;
        off += (i - q * s) * t.strides[d];
        i = q;
    }
    return off;
}

template <typename T> __device__ __forceinline__ T *tjcu_ptr(const TensorArg &t) {
    return (T *)t.data;
}

/* for (i = global thread index; i < n; i += total threads) */
#define TJCU_GRID_STRIDE(i, n)                                                                   \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (long long)(n);     \
         i += (long long)blockDim.x * gridDim.x)

#endif
