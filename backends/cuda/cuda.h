/* cuda.h — the CUDA backend's internals (prefix tjcu_): what its op kernels
 * program against. The backend owns device memory (a caching allocator per
 * device), one stream per device per thread, modules of CUDA C compiled at run
 * time (NVRTC for a GPU; the host C++ compiler for the host execution
 * harness), launching, cuBLAS and cuDNN handles, and the kernel table it
 * registers for TJ_CUDA. Nothing outside backends/cuda/ includes this.
 *
 * Two drivers sit under it (driver.h): the real one (libcuda, loaded with
 * dlopen) and the host execution harness, where "device memory" is host
 * memory and the same CUDA C runs on the host, a block's threads as
 * cooperative fibers. Everything in this header behaves the same on both,
 * except that cuBLAS and cuDNN exist only on the real one (tjcu_has_libraries).
 */
#ifndef TJIT_CUDA_H
#define TJIT_CUDA_H

#include "backends/cuda/dim3.h"
#include "core/core.h"

/* ---- launching ---------------------------------------------------------------
 * A module is CUDA C source: one of the backend's files under kernels/
 * (embedded in the library, named by file name without .cu, e.g. "reduce"),
 * or text generated at run time (pointwise kernels). It is compiled once per
 * device and kept. Kernels are `extern "C" __global__` and written in the
 * subset that NVRTC and the host compiler both accept (kernels/tjcu_builtins.h
 * is the only place that knows the difference). Arguments follow
 * cuLaunchKernel's convention: args[i] points at the i-th parameter's value.
 * Errors name `what` (the op), the kernel and the driver's message. */
tj_status tjcu_launch(const char *what, tj_device dev, const char *module, const char *kernel,
                      tjcu_dim3 grid, tjcu_dim3 block, size_t dynamic_shared, void **args);
/* The same for a generated source; key names it in the module cache (the
 * source itself is compared too, so a key collision cannot run wrong code). */
tj_status tjcu_launch_source(const char *what, tj_device dev, const char *key, const char *source,
                             const char *kernel, tjcu_dim3 grid, tjcu_dim3 block,
                             size_t dynamic_shared, void **args);

/* The two halves of tjcu_launch_source, for callers that keep the function:
 * the kernel of a generated source on dev (compiled and loaded on first use;
 * NULL with the compiler's message), and a launch of it. kernel must outlive
 * the launch's error reports (a name kept for the process). */
void *tjcu_function(const char *what, tj_device dev, const char *key, const char *source,
                    const char *kernel);
tj_status tjcu_launch_function(const char *what, tj_device dev, void *fn, const char *kernel,
                               tjcu_dim3 grid, tjcu_dim3 block, size_t dynamic_shared, void **args);

/* A 1-D launch over n elements with grid-stride loops: block threads per
 * block, at most enough blocks to fill the device a few times over. */
tjcu_dim3 tjcu_grid_for(tj_device dev, int64_t n, unsigned block);
/* Multiprocessors of the device (the harness reports its OpenMP threads). */
int tjcu_sm_count(tj_device dev);

/* ---- tensor arguments ----------------------------------------------------------
 * How kernels see a tensor: data at element 0 and the geometry in elements.
 * Mirrored by TensorArg in kernels/tjcu_kernel.h (same layout). */
#define TJCU_MAX_DIMS 8
typedef struct tjcu_tensor_arg {
    void *data;
    int64_t sizes[TJCU_MAX_DIMS];
    int64_t strides[TJCU_MAX_DIMS];
    int32_t ndim;
    int32_t contiguous;
} tjcu_tensor_arg;

tjcu_tensor_arg tjcu_arg(const tj_tensor *t);
/* t's geometry broadcast to sizes (ndim of them): stride 0 along new and
 * size-1 dims, as an expanded view. */
tjcu_tensor_arg tjcu_arg_broadcast(const tj_tensor *t, const int64_t *sizes, int ndim);

/* ---- memory and streams ----------------------------------------------------------- */

/* Scratch device memory for one kernel call (from the caching allocator;
 * freed with tjcu_free, which makes it reusable by later work on the stream). */
void *tjcu_malloc(tj_device dev, size_t bytes);
void tjcu_free(tj_device dev, void *ptr);
/* The calling thread's stream on dev (the driver's opaque handle). */
void *tjcu_stream(tj_device dev);
/* Byte copies and fills on dev, queued on the thread's stream. */
tj_status tjcu_memset(tj_device dev, void *dst, int byte, size_t bytes);
tj_status tjcu_copy_d2d(tj_device dev, void *dst, const void *src, size_t bytes);
/* Host <-> device; the host side may be read or reused on return. */
tj_status tjcu_copy_to_host(tj_device dev, void *dst, const void *src, size_t bytes);
tj_status tjcu_copy_from_host(tj_device dev, void *dst, const void *src, size_t bytes);

/* What the calling process has launched on dev: kernels queued directly
 * (a launch recorded into a graph is not one), and graph launches. */
typedef struct tjcu_launch_counts {
    uint64_t kernels, graphs;
} tjcu_launch_counts;
tjcu_launch_counts tjcu_get_launch_counts(tj_device dev);

/* ---- libraries -------------------------------------------------------------------- */

/* True on a real GPU, where cuBLAS and cuDNN serve matmul and conv; on the
 * harness those ops run the backend's own kernels. */
bool tjcu_has_libraries(tj_device dev);

/* ---- the kernel table --------------------------------------------------------------- */

/* Registers the TJ_CUDA backend with core/ (backends/registry.c calls it). */
void tjcu_register(void);
/* Each family fills its rows of the table (kernels is indexed by op id;
 * in-place forms left NULL get their base op's kernel). */
#define TJCU_FAMILIES(X)                                                      \
    X(pointwise) /* core/ops_pointwise.def */                                 \
    X(shape)     /* core/ops_view.def */                                      \
    X(reduce)    /* core/ops_reduce.def */                                    \
    X(norm)      /* softmax and norms of ops_nn.def */                        \
    X(nn)        /* losses, indexing, dropout */                              \
    X(pool)      /* pooling rows of ops_linalg.def */                         \
    X(linalg)    /* matmul and conv rows */
#define TJCU_DECLARE_FAMILY(f) void tjcu_register_##f(tjc_kernel_fn *kernels);
TJCU_FAMILIES(TJCU_DECLARE_FAMILY)

#endif
