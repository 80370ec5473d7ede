/* op_nn.c — the nn family's registration (losses, indexing, dropout) and the
 * helpers of op_nn.h. */
#include "backends/cuda/op_nn.h"

#include <stdio.h>
#include <string.h>

tjcu_dim3 tjcu_nn_grid(const tjc_call *c, int64_t n) {
    tjcu_dim3 grid = tjcu_grid_for(c->device, n, TJCU_NN_THREADS);
    if (grid.x == 0) grid.x = 1;
    return grid;
}

tj_status tjcu_nn_launch(const tjc_call *c, const char *module, const char *kernel, int64_t n,
                         void **args) {
    if (n <= 0) return TJ_OK;
    return tjcu_launch(c->op->name, c->device, module, kernel, tjcu_nn_grid(c, n),
                       (tjcu_dim3){TJCU_NN_THREADS, 1, 1}, 0, args);
}

const char *tjcu_nn_size_suffix(tj_dtype dt) {
    switch (tj_dtype_size(dt)) {
    case 1: return "1";
    case 4: return "4";
    default: return "8";
    }
}

const char *tjcu_nn_dtype_suffix(tj_dtype dt) {
    return dt == TJ_F32 ? "f32" : dt == TJ_F64 ? "f64" : dt == TJ_BOOL ? "b8" : "i64";
}

void *tjcu_nn_scratch(const tjc_call *c, size_t bytes) {
    void *p = tjcu_malloc(c->device, bytes ? bytes : 1);
    if (!p)
        tjc_last_or(TJ_ERR_MEMORY, "%s: out of device memory for %zu bytes of scratch",
                    c->op->name, bytes);
    return p;
}

tj_status tjcu_nn_copy(const tjc_call *c, tj_tensor *dst, const tj_tensor *src) {
    int64_t n = tjc_numel(src->sizes, src->ndim);
    if (tj_is_contiguous(src))
        return n ? tjcu_copy_d2d(c->device, tjc_data_ptr(dst), tjc_data_ptr(src),
                                 (size_t)n * tj_dtype_size(src->dtype))
                 : TJ_OK;
    tjcu_tensor_arg x = tjcu_arg(src);
    void *out = tjc_data_ptr(dst);
    char kernel[32];
    snprintf(kernel, sizeof kernel, "copy_strided_%s", tjcu_nn_size_suffix(src->dtype));
    void *args[] = {&x, &out, &n};
    return tjcu_nn_launch(c, "index", kernel, n, args);
}

/* ---- index checks ---------------------------------------------------------------------- */

tj_status tjcu_nn_check_begin(const tjc_call *c, const tj_tensor *idx, int64_t size,
                              bool has_ignore, int64_t ignore, tjcu_nn_check *chk) {
    chk->word = NULL;
    chk->idx = idx;
    int64_t n = tjc_numel(idx->sizes, idx->ndim);
    if (n == 0) return TJ_OK;
    if (!(chk->word = tjcu_nn_scratch(c, sizeof(uint64_t)))) return tj_last_status();
    tjcu_tensor_arg ia = tjcu_arg(idx);
    int32_t has = has_ignore;
    void *args[] = {&ia, &n, &size, &has, &ignore, &chk->word};
    tj_status st = tjcu_memset(c->device, chk->word, 0xff, sizeof(uint64_t));
    if (!st) st = tjcu_nn_launch(c, "index", "index_check", n, args);
    if (st) tjcu_nn_check_drop(c, chk);
    return st;
}

void tjcu_nn_check_drop(const tjc_call *c, tjcu_nn_check *chk) {
    if (chk->word) tjcu_free(c->device, chk->word);
    chk->word = NULL;
}

/* The element offset of row-major element e of t. */
static int64_t offset_of(const tj_tensor *t, int64_t e) {
    int64_t off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        off += (e % t->sizes[d]) * t->strides[d];
        e /= t->sizes[d];
    }
    return off;
}

tj_status tjcu_nn_check_end(const tjc_call *c, tjcu_nn_check *chk, int64_t *element,
                            int64_t *value) {
    *element = -1;
    if (!chk->word) return TJ_OK;
    uint64_t first = 0;
    tj_status st = tjcu_copy_to_host(c->device, &first, chk->word, sizeof first);
    tjcu_nn_check_drop(c, chk);
    if (st || first == UINT64_MAX) return st;
    *element = (int64_t)first;
    const char *base = tjc_data_ptr(chk->idx);
    return tjcu_copy_to_host(c->device, value,
                             base + offset_of(chk->idx, *element) * (int64_t)sizeof(int64_t),
                             sizeof *value);
}

/* ---- registration ------------------------------------------------------------------------ */

void tjcu_register_nn(tjc_kernel_fn *kernels) {
    kernels[TJ_OP_mse_loss] = tjcu_mse_loss;
    kernels[TJ_OP_mse_loss_backward] = tjcu_mse_loss_backward;
    kernels[TJ_OP_nll_loss] = tjcu_nll_loss;
    kernels[TJ_OP_nll_loss_backward] = tjcu_nll_loss_backward;
    kernels[TJ_OP_cross_entropy_loss] = tjcu_cross_entropy_loss;
    kernels[TJ_OP_binary_cross_entropy_with_logits] = tjcu_bce_with_logits;
    kernels[TJ_OP_binary_cross_entropy_with_logits_backward] = tjcu_bce_with_logits_backward;
    kernels[TJ_OP_embedding] = tjcu_embedding;
    kernels[TJ_OP_embedding_dense_backward] = tjcu_embedding_dense_backward;
    kernels[TJ_OP_index_select] = tjcu_index_select;
    kernels[TJ_OP_gather] = tjcu_gather;
    kernels[TJ_OP_scatter_add] = tjcu_scatter_add;
    kernels[TJ_OP_one_hot] = tjcu_one_hot;
    kernels[TJ_OP_native_dropout] = tjcu_native_dropout;
    kernels[TJ_OP_dropout] = tjcu_dropout;
    kernels[TJ_OP_native_dropout_backward] = tjcu_native_dropout_backward;
}
