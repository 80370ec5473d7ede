/* hello.c — a program built against an installed tjit only (check_install.sh):
 * traces a two-op model, compiles it, replays it and compares the replay
 * with the eager result; checks the header's version against the library's. */
#include <stdio.h>
#include <string.h>

#include <tjit/tjit.h>

/* y = tanh(x + b) */
static tj_status model(void *ctx, tj_tensor *const *in, int n_in, tj_tensor **out, int n_out) {
    (void)ctx, (void)n_in, (void)n_out;
    tj_scope_begin();
    out[0] = tj_keep(tj_tanh(tj_add(in[0], in[1], 1.0)));
    tj_scope_end();
    return out[0] ? TJ_OK : tj_last_status();
}

int main(void) {
    if (strcmp(tj_version(), TJIT_VERSION_STRING) != 0) {
        fprintf(stderr, "hello: header %s, library %s\n", TJIT_VERSION_STRING, tj_version());
        return 1;
    }
    tj_generator *gen = tj_generator_new(7);
    int64_t sizes[2] = {3, 4};
    tj_tensor *in[2] = {tj_randn(sizes, 2, TJ_F32, gen), tj_randn(sizes, 2, TJ_F32, gen)};
    tj_tensor *eager = NULL, *replayed = NULL;
    tj_graph *g = tj_trace(model, NULL, in, 2, 1, NULL);
    tj_program *p = g ? tj_compile(g, NULL) : NULL;
    int rc = 1;
    if (p && model(NULL, in, 2, &eager, 1) == TJ_OK && tj_run(p, in, &replayed) == TJ_OK) {
        double a, b;
        int64_t last[2] = {2, 3};
        a = tj_get(eager, last);
        b = tj_get(replayed, last);
        rc = a == b ? 0 : 1;
        printf("hello from tjit %s: %d nodes traced, y[2, 3] = %.6f eager, %.6f replayed\n",
               tj_version(), tj_block_num_nodes(tj_graph_block(g)), a, b);
    } else {
        fprintf(stderr, "hello: %s\n", tj_last_error());
    }
    tj_release(eager);
    tj_release(replayed);
    tj_program_free(p);
    tj_graph_free(g);
    tj_release(in[0]);
    tj_release(in[1]);
    tj_generator_free(gen);
    return rc;
}
