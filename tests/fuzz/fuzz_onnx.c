/* fuzz_onnx.c — a libFuzzer target for the ONNX importer (see Makefile here).
 *
 * Any input must import or fail with a message. What imports must verify and
 * print; it is exported again, and that export must import back into a graph
 * with as many inputs and outputs. Sanitizers catch crashes, leaks and
 * undefined behaviour; a broken round trip aborts. Seeded with the node tests
 * of libonnx-testdata and tjit's own exports (make -C tests/fuzz seed-onnx). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tjit/tjit.h"

static void must(bool ok, const char *what) {
    if (ok) return;
    fprintf(stderr, "fuzz_onnx: %s: %s\n", what, tj_last_error());
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    tj_graph *g = tj_graph_import_onnx_bytes(data, size, NULL);
    if (!g) {
        must(tj_last_error()[0] != '\0', "a failed import set no error");
        tj_clear_error();
        return 0;
    }
    must(tj_graph_verify(g) == TJ_OK, "an imported graph does not verify");
    char *text = tj_graph_to_string(g, TJ_PRINT_CANONICAL);
    must(text != NULL, "printing failed");
    free(text);
    void *bytes = NULL;
    size_t len = 0;
    if (tj_graph_export_onnx_bytes(g, NULL, &bytes, &len) == TJ_OK) {
        tj_graph *h = tj_graph_import_onnx_bytes(bytes, len, NULL);
        must(h != NULL, "an export of an imported graph does not import");
        must(tj_graph_num_inputs(h) <= tj_graph_num_inputs(g) &&
                 tj_graph_num_outputs(h) == tj_graph_num_outputs(g),
             "the re-imported graph has other inputs or outputs");
        tj_graph_free(h);
    }
    free(bytes);
    tj_graph_free(g);
    tj_clear_error();
    return 0;
}
