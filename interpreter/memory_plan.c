/* memory_plan.c — placing a plan's arena buffers (plan.h): offsets chosen by
 * liveness, and the check that the placement is sound.
 *
 * The placement walks the steps in order, as a replay would: at each step it
 * places the buffers defined there, then frees the ones last read there, so
 * a result never takes the bytes of an operand of its own step. A free byte
 * range is a chunk; chunks sit in bins by the power of two of their size,
 * and a freed chunk merges with free neighbours (found through maps from
 * start and end offsets). A request takes the best fit among the first few
 * chunks of its own bin, else any chunk of a larger bin, else grows the arena
 * at its end. Each placement costs a bounded amount of work, so a plan of a
 * million buffers places in linear time; this is the scheme of ggml's graph
 * allocator and of PyTorch's static runtime, in a size-binned form.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/ptrmap.h"
#include "plan.h"

enum { ALIGN = 64, N_BINS = 64, BEST_FIT_SCAN = 16 };

typedef struct chunk {
    int64_t off, size;
    int prev, next; /* in its bin; -1 ends */
} chunk;

typedef struct arena {
    chunk *chunks;
    int n_chunks, cap_chunks;
    int *spare; /* chunk records free for reuse */
    int n_spare;
    int bin[N_BINS];
    tjc_ptrmap by_start, by_end; /* free chunks: offset + 1 -> chunk + 1 */
    int64_t end;
} arena;

static int bin_of(int64_t size) { return 63 - __builtin_clzll((unsigned long long)size); }

static void unlink_chunk(arena *A, int c) {
    chunk *k = &A->chunks[c];
    if (k->prev >= 0) A->chunks[k->prev].next = k->next;
    else A->bin[bin_of(k->size)] = k->next;
    if (k->next >= 0) A->chunks[k->next].prev = k->prev;
    /* keys already present: replacing their values cannot fail */
    tjc_ptrmap_put(&A->by_start, (void *)(intptr_t)(k->off + 1), NULL);
    tjc_ptrmap_put(&A->by_end, (void *)(intptr_t)(k->off + k->size + 1), NULL);
    A->spare[A->n_spare++] = c;
}

static bool link_chunk(arena *A, int64_t off, int64_t size) {
    int c;
    if (A->n_spare) {
        c = A->spare[--A->n_spare];
    } else {
        if (A->n_chunks == A->cap_chunks) {
            int cap = A->cap_chunks ? 2 * A->cap_chunks : 64;
            chunk *grown = tjc_realloc(A->chunks, sizeof *grown * (size_t)cap);
            int *spare = tjc_realloc(A->spare, sizeof *spare * (size_t)cap);
            if (grown) A->chunks = grown;
            if (spare) A->spare = spare;
            if (!grown || !spare) return false;
            A->cap_chunks = cap;
        }
        c = A->n_chunks++;
    }
    int b = bin_of(size);
    A->chunks[c] = (chunk){off, size, -1, A->bin[b]};
    if (A->bin[b] >= 0) A->chunks[A->bin[b]].prev = c;
    A->bin[b] = c;
    return tjc_ptrmap_put(&A->by_start, (void *)(intptr_t)(off + 1), (void *)(intptr_t)(c + 1)) &&
           tjc_ptrmap_put(&A->by_end, (void *)(intptr_t)(off + size + 1), (void *)(intptr_t)(c + 1));
}

static int chunk_at(const tjc_ptrmap *m, int64_t key) {
    return (int)(intptr_t)tjc_ptrmap_get(m, (void *)(intptr_t)(key + 1)) - 1;
}

/* The offset of size bytes, or -1 when out of memory. */
static int64_t place(arena *A, int64_t size) {
    int found = -1, b = bin_of(size);
    int scanned = 0;
    for (int c = A->bin[b]; c >= 0 && scanned < BEST_FIT_SCAN; c = A->chunks[c].next, scanned++)
        if (A->chunks[c].size >= size && (found < 0 || A->chunks[c].size < A->chunks[found].size))
            found = c;
    for (int bb = b + 1; found < 0 && bb < N_BINS; bb++)
        if (A->bin[bb] >= 0) found = A->bin[bb];
    if (found >= 0) {
        chunk k = A->chunks[found];
        unlink_chunk(A, found);
        if (k.size > size && !link_chunk(A, k.off + size, k.size - size)) return -1;
        return k.off;
    }
    /* grow the arena, starting inside a free chunk that reaches its end */
    int tail = chunk_at(&A->by_end, A->end);
    int64_t off = A->end;
    if (tail >= 0) {
        off = A->chunks[tail].off;
        unlink_chunk(A, tail);
    }
    A->end = off + size;
    return off;
}

static bool give_back(arena *A, int64_t off, int64_t size) {
    int left = chunk_at(&A->by_end, off), right = chunk_at(&A->by_start, off + size);
    if (left >= 0) {
        off = A->chunks[left].off;
        size += A->chunks[left].size;
        unlink_chunk(A, left);
    }
    if (right >= 0) {
        size += A->chunks[right].size;
        unlink_chunk(A, right);
    }
    return link_chunk(A, off, size);
}

static int arena_of(tji_plan *P, tj_device d) {
    for (int a = 0; a < P->n_arenas; a++)
        if (tjc_same_device(P->arena_device[a], d)) return a;
    if (P->n_arenas == (int)(sizeof P->arena_device / sizeof P->arena_device[0])) return -1;
    P->arena_device[P->n_arenas] = d;
    return P->n_arenas++;
}

static int64_t aligned(int64_t bytes) { return bytes <= 0 ? ALIGN : (bytes + ALIGN - 1) / ALIGN * ALIGN; }

/* Buffers to place (or free) at each instruction, as counting-sorted lists. */
typedef struct by_instr {
    int *start, *items; /* items[start[k] .. start[k+1]) */
} by_instr;

static bool sort_by_instr(const tji_plan *P, bool by_last, by_instr *out) {
    int n = P->code->n_instrs;
    out->start = tjc_calloc((size_t)n + 2, sizeof(int));
    out->items = tjc_calloc((size_t)(P->n_buffers ? P->n_buffers : 1), sizeof(int));
    if (!out->start || !out->items) return false;
    for (int b = 0; b < P->n_buffers; b++) {
        const tji_buffer *B = &P->buffers[b];
        if (B->external || B->bytes < 0) continue;
        out->start[(by_last ? B->last : B->first) + 2]++;
    }
    for (int k = 0; k < n; k++) out->start[k + 2] += out->start[k + 1];
    for (int b = 0; b < P->n_buffers; b++) {
        const tji_buffer *B = &P->buffers[b];
        if (B->external || B->bytes < 0) continue;
        out->items[out->start[(by_last ? B->last : B->first) + 1]++] = b;
    }
    return true;
}

tj_status tji_plan_memory(tji_plan *P) {
    P->buffer_arena = tjc_calloc((size_t)(P->n_buffers ? P->n_buffers : 1), sizeof(int));
    arena A[4];
    memset(A, 0, sizeof A);
    for (int a = 0; a < 4; a++) {
        for (int b = 0; b < N_BINS; b++) A[a].bin[b] = -1;
        tjc_ptrmap_init(&A[a].by_start);
        tjc_ptrmap_init(&A[a].by_end);
    }
    by_instr defs = {0}, deaths = {0};
    tj_status st = TJ_OK;
    if (!P->buffer_arena || !sort_by_instr(P, false, &defs) || !sort_by_instr(P, true, &deaths))
        st = tjc_error(TJ_ERR_MEMORY, "planning memory: out of memory");
    int64_t live = 0;
    for (int b = 0; !st && b < P->n_buffers; b++) {
        const tji_buffer *B = &P->buffers[b];
        P->buffer_arena[b] = -1;
        if (B->external) P->external_bytes += B->bytes;
    }
    for (int k = 0; !st && k < P->code->n_instrs; k++) {
        for (int i = defs.start[k]; !st && i < defs.start[k + 1]; i++) {
            tji_buffer *B = &P->buffers[defs.items[i]];
            int a = arena_of(P, B->device);
            if (a < 0) {
                st = tjc_error(TJ_ERR_UNSUPPORTED, "planning memory: values on more than 4 devices");
                break;
            }
            P->buffer_arena[defs.items[i]] = a;
            B->offset = place(&A[a], aligned(B->bytes));
            if (B->offset < 0) st = tjc_error(TJ_ERR_MEMORY, "planning memory: out of memory");
            P->intermediate_bytes += B->bytes;
            live += aligned(B->bytes);
        }
        if (live > P->peak_live_bytes) P->peak_live_bytes = live;
        for (int i = deaths.start[k]; !st && i < deaths.start[k + 1]; i++) {
            int b = deaths.items[i];
            tji_buffer *B = &P->buffers[b];
            if (!give_back(&A[P->buffer_arena[b]], B->offset, aligned(B->bytes)))
                st = tjc_error(TJ_ERR_MEMORY, "planning memory: out of memory");
            live -= aligned(B->bytes);
        }
    }
    for (int a = 0; a < 4; a++) {
        if (a < P->n_arenas) P->arena_bytes[a] = A[a].end;
        tjc_free(A[a].chunks);
        tjc_free(A[a].spare);
        tjc_ptrmap_free(&A[a].by_start);
        tjc_ptrmap_free(&A[a].by_end);
    }
    tjc_free(defs.start);
    tjc_free(defs.items);
    tjc_free(deaths.start);
    tjc_free(deaths.items);
#ifdef TJIT_VERIFY_PLANS
    if (!st) st = tji_plan_verify(P); /* debug and sanitizer builds check every plan they make */
#endif
    return st;
}

/* ---- verification ----------------------------------------------------------- */

typedef struct live_range {
    int64_t lo, hi;
    int buffer;
} live_range;

/* Index of the first entry of v[0..n) with lo >= key. */
static int lower_bound(const live_range *v, int n, int64_t key) {
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (v[mid].lo < key) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Replays the lifetimes step by step, keeping each arena's live byte ranges
 * sorted by offset: a buffer placed where a live one lies is an error. Costs
 * the number of live buffers per placement, not the number of buffers. */
tj_status tji_plan_verify(const tji_plan *P) {
    by_instr defs = {0}, deaths = {0};
    live_range *live[4] = {0};
    int n_live[4] = {0};
    tj_status st = TJ_OK;
    for (int a = 0; a < P->n_arenas && !st; a++)
        if (!(live[a] = tjc_calloc((size_t)(P->n_buffers ? P->n_buffers : 1), sizeof(live_range))))
            st = tjc_error(TJ_ERR_MEMORY, "verifying a plan: out of memory");
    if (!st && (!sort_by_instr(P, false, &defs) || !sort_by_instr(P, true, &deaths)))
        st = tjc_error(TJ_ERR_MEMORY, "verifying a plan: out of memory");
    for (int k = 0; !st && k < P->code->n_instrs; k++) {
        for (int i = defs.start[k]; !st && i < defs.start[k + 1]; i++) {
            int b = defs.items[i], a = P->buffer_arena[b];
            const tji_buffer *B = &P->buffers[b];
            if (B->bytes == 0) continue;
            if (B->offset < 0 || B->offset % ALIGN || B->offset + B->bytes > P->arena_bytes[a]) {
                st = tjc_error(TJ_ERR_INTERNAL, "plan: buffer %d lies outside its arena", b);
                break;
            }
            live_range r = {B->offset, B->offset + B->bytes, b}, *v = live[a];
            int at = lower_bound(v, n_live[a], r.lo);
            int other = at > 0 && v[at - 1].hi > r.lo ? at - 1 : at < n_live[a] && v[at].lo < r.hi ? at : -1;
            if (other >= 0) {
                const tji_buffer *O = &P->buffers[v[other].buffer];
                st = tjc_error(TJ_ERR_INTERNAL, "plan: buffers %d (steps %d..%d) and %d (steps "
                               "%d..%d) are live together but share bytes", b, B->first, B->last,
                               v[other].buffer, O->first, O->last);
                break;
            }
            memmove(&v[at + 1], &v[at], sizeof *v * (size_t)(n_live[a] - at));
            v[at] = r;
            n_live[a]++;
        }
        for (int i = deaths.start[k]; !st && i < deaths.start[k + 1]; i++) {
            int b = deaths.items[i], a = P->buffer_arena[b];
            const tji_buffer *B = &P->buffers[b];
            if (B->bytes == 0) continue;
            live_range *v = live[a];
            int at = lower_bound(v, n_live[a], B->offset);
            if (at == n_live[a] || v[at].buffer != b) {
                st = tjc_error(TJ_ERR_INTERNAL, "plan: buffer %d is freed but not live", b);
                break;
            }
            memmove(&v[at], &v[at + 1], sizeof *v * (size_t)(n_live[a] - at - 1));
            n_live[a]--;
        }
    }
    for (int a = 0; a < 4; a++) tjc_free(live[a]);
    tjc_free(defs.start);
    tjc_free(defs.items);
    tjc_free(deaths.start);
    tjc_free(deaths.items);
    return st;
}
