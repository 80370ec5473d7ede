/* onnx_absent.c — the ONNX entry points of a build without TJIT_ONNX: each
 * fails, naming what the build lacks. */
#include "core/core.h"
#include "tjit/onnx.h"

static tj_status absent(const char *fn) {
    return tjc_error(TJ_ERR_UNSUPPORTED, "%s: this tjit was built without ONNX interchange "
                     "(TJIT_ONNX=OFF: install libprotobuf-c-dev, protobuf-c-compiler and "
                     "libonnx-dev, then configure again)", fn);
}

tj_status tj_graph_export_onnx(const tj_graph *g, const char *path,
                               const tj_onnx_export_options *opts) {
    (void)g, (void)path, (void)opts;
    return absent("tj_graph_export_onnx");
}

tj_status tj_graph_export_onnx_bytes(const tj_graph *g, const tj_onnx_export_options *opts,
                                     void **data, size_t *len) {
    (void)g, (void)opts, (void)data, (void)len;
    return absent("tj_graph_export_onnx_bytes");
}

tj_graph *tj_graph_import_onnx(const char *path) {
    (void)path;
    absent("tj_graph_import_onnx");
    return NULL;
}

tj_graph *tj_graph_import_onnx_ex(const char *path, const tj_onnx_import_options *opts) {
    (void)path, (void)opts;
    absent("tj_graph_import_onnx");
    return NULL;
}

tj_graph *tj_graph_import_onnx_bytes(const void *data, size_t len,
                                     const tj_onnx_import_options *opts) {
    (void)data, (void)len, (void)opts;
    absent("tj_graph_import_onnx_bytes");
    return NULL;
}

tj_tensor *tj_onnx_load_tensor(const char *path) {
    (void)path;
    absent("tj_onnx_load_tensor");
    return NULL;
}

const char *tj_onnx_export_form(const tj_op_info *op, bool *exportable) {
    if (!exportable) return tjc_error(TJ_ERR_ARG, "tj_onnx_export_form: exportable is NULL"), NULL;
    if (!op) tjc_last_or(TJ_ERR_ARG, "tj_onnx_export_form: the op is NULL");
    *exportable = false;
    return "this tjit was built without ONNX interchange (TJIT_ONNX=OFF)";
}

bool tj_onnx_available(void) { return false; }
