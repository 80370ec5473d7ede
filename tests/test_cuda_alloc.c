/* test_cuda_alloc.c — the caching device allocator (backends/cuda/alloc.c)
 * over a counting fake raw allocator: host memory from malloc, a budget past
 * which it fails, and a record of the live segments. Blocks carry tags at
 * both ends, so two blocks handed out over the same bytes are caught. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cuda/alloc.h"
#include "core/core.h"
#include "tests/support/testing.h"

#define MiB ((size_t)1 << 20)
#define MAX_LIVE_SEGMENTS 4096
#define STREAM_A ((void *)0x1000)
#define STREAM_B ((void *)0x2000)

typedef struct fake_raw {
    pthread_mutex_t lock;
    int device;
    size_t budget, in_use;
    uint64_t allocs, frees, failures, bad_calls;
    void *live[MAX_LIVE_SEGMENTS];
    size_t live_size[MAX_LIVE_SEGMENTS];
    int n_live;
} fake_raw;

static tj_status fake_alloc(void *ctx, int device, size_t bytes, void **ptr) {
    fake_raw *f = ctx;
    pthread_mutex_lock(&f->lock);
    f->allocs++;
    tj_status st = TJ_OK;
    if (device != f->device || f->n_live == MAX_LIVE_SEGMENTS) {
        f->bad_calls++;
        st = tjc_error(TJ_ERR_ARG, "fake device: bad alloc call");
    } else if (bytes > f->budget - f->in_use) {
        f->failures++;
        st = tjc_error(TJ_ERR_MEMORY, "fake device: %zu bytes over its budget", bytes);
    } else if (!(*ptr = malloc(bytes))) {
        st = tjc_error(TJ_ERR_MEMORY, "fake device: host malloc failed");
    } else {
        f->live[f->n_live] = *ptr;
        f->live_size[f->n_live++] = bytes;
        f->in_use += bytes;
    }
    pthread_mutex_unlock(&f->lock);
    return st;
}

static tj_status fake_free(void *ctx, int device, void *ptr) {
    fake_raw *f = ctx;
    pthread_mutex_lock(&f->lock);
    f->frees++;
    int i = 0;
    while (i < f->n_live && f->live[i] != ptr) i++;
    tj_status st = TJ_OK;
    if (device != f->device || i == f->n_live) {
        f->bad_calls++;
        st = tjc_error(TJ_ERR_ARG, "fake device: free of %p, which it did not allocate", ptr);
    } else {
        free(ptr);
        f->in_use -= f->live_size[i];
        f->live[i] = f->live[--f->n_live];
        f->live_size[i] = f->live_size[f->n_live];
    }
    pthread_mutex_unlock(&f->lock);
    return st;
}

static fake_raw *fake_new(size_t budget) {
    fake_raw *f = calloc(1, sizeof *f);
    assert_non_null(f);
    pthread_mutex_init(&f->lock, NULL);
    f->device = 3;
    f->budget = budget;
    return f;
}

static tjcu_allocator *alloc_new(fake_raw *f) {
    tjcu_raw_allocator raw = {f, fake_alloc, fake_free};
    tjcu_allocator *a = tjcu_allocator_new(&raw, f->device);
    assert_non_null(a);
    return a;
}

/* Frees the allocator and checks that every segment went back, once. */
static void finish(tjcu_allocator *a, fake_raw *f) {
    tjcu_allocator_free(a);
    assert_int_equal(f->n_live, 0);
    assert_int_equal(f->in_use, 0);
    assert_int_equal(f->bad_calls, 0);
    assert_int_equal(f->frees, f->allocs - f->failures);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

static tjcu_memory_stats stats_of(tjcu_allocator *a) {
    tjcu_memory_stats s;
    tjcu_allocator_stats(a, &s);
    return s;
}

static void check(tjcu_allocator *a) {
    if (tjcu_allocator_check(a) != TJ_OK) fail_msg("%s", tj_last_error());
}

static void *take(tjcu_allocator *a, size_t bytes, void *stream) {
    void *p = NULL;
    if (tjcu_allocator_malloc(a, bytes, stream, &p) != TJ_OK) fail_msg("malloc %zu: %s", bytes, tj_last_error());
    return p;
}

static void give(tjcu_allocator *a, void *p) {
    if (tjcu_allocator_release(a, p) != TJ_OK) fail_msg("release %p: %s", p, tj_last_error());
}

/* ---- sizes, pools, splitting and merging ----------------------------------------- */

static void requests_are_rounded_to_512_bytes(void **state) {
    (void)state;
    fake_raw *f = fake_new(SIZE_MAX);
    tjcu_allocator *a = alloc_new(f);
    void *z = (void *)1;
    assert_int_equal(tjcu_allocator_malloc(a, 0, NULL, &z), TJ_OK);
    assert_null(z); /* zero bytes: NULL, and nothing taken */
    assert_int_equal(stats_of(a).n_alloc_calls, 0);
    assert_int_equal(tjcu_allocator_release(a, NULL), TJ_OK);
    char *p1 = take(a, 1, NULL), *p2 = take(a, 512, NULL), *p3 = take(a, 513, NULL), *p4 = take(a, 7, NULL);
    assert_ptr_equal(p2, p1 + 512);
    assert_ptr_equal(p3, p2 + 512);
    assert_ptr_equal(p4, p3 + 1024);
    tjcu_memory_stats s = stats_of(a);
    assert_int_equal(s.allocated, 512 + 512 + 1024 + 512);
    assert_int_equal(s.reserved, TJCU_SMALL_SEGMENT);
    assert_int_equal(s.n_alloc_calls, 1);
    check(a);
    give(a, p1), give(a, p2), give(a, p3), give(a, p4);
    assert_int_equal(stats_of(a).allocated, 0);
    check(a);
    finish(a, f);
}

static void small_and_large_pools_split_at_1_mib(void **state) {
    (void)state;
    fake_raw *f = fake_new(SIZE_MAX);
    tjcu_allocator *a = alloc_new(f);
    char *s1 = take(a, MiB, NULL), *s2 = take(a, MiB, NULL); /* two fill one small segment */
    assert_ptr_equal(s2, s1 + MiB);
    assert_int_equal(stats_of(a).reserved, 2 * MiB);
    char *l1 = take(a, MiB + 1, NULL); /* large: a 20 MiB segment */
    tjcu_memory_stats s = stats_of(a);
    assert_int_equal(s.reserved, 22 * MiB);
    assert_int_equal(s.allocated, 3 * MiB + 512);
    assert_int_equal(s.n_alloc_calls, 2);
    char *s3 = take(a, 4096, NULL); /* small: never from the large segment's free tail */
    assert_int_equal(stats_of(a).n_alloc_calls, 3);
    assert_true(s3 < l1 || s3 >= l1 + 20 * MiB);
    char *l2 = take(a, 10 * MiB - 512, NULL); /* the large segment's tail serves */
    assert_ptr_equal(l2, l1 + MiB + 512);
    assert_int_equal(stats_of(a).n_alloc_calls, 3);
    char *l3 = take(a, 10 * MiB + 1, NULL); /* 10 MiB and more: its own segment, rounded to 2 MiB */
    s = stats_of(a);
    assert_int_equal(s.n_alloc_calls, 4);
    assert_int_equal(s.reserved, 2 * MiB + 20 * MiB + 2 * MiB + 12 * MiB);
    assert_int_equal(s.n_free_blocks, 3); /* tails: of s3, of l2, of l3 (2 MiB - 512 > 1 MiB) */
    check(a);
    give(a, l3);
    give(a, l2);
    give(a, l1);
    give(a, s1), give(a, s2), give(a, s3);
    assert_int_equal(tjcu_allocator_empty_cache(a), TJ_OK);
    /* a large block keeps a tail of 1 MiB or less */
    char *l4 = take(a, 11 * MiB + 1, NULL);
    s = stats_of(a);
    assert_int_equal(s.reserved, 12 * MiB);
    assert_int_equal(s.allocated, 12 * MiB);
    assert_int_equal(s.n_free_blocks, 0);
    give(a, l4);
    check(a);
    finish(a, f);
}

static void three_neighbours_merge_back_into_one_block(void **state) {
    (void)state;
    fake_raw *f = fake_new(SIZE_MAX);
    tjcu_allocator *a = alloc_new(f);
    for (int order = 0; order < 2; order++) {
        char *x = take(a, 4096, NULL), *y = take(a, 4096, NULL), *z = take(a, 4096, NULL);
        assert_ptr_equal(y, x + 4096);
        assert_ptr_equal(z, y + 4096);
        assert_int_equal(stats_of(a).n_free_blocks, 1);
        if (order == 0) { /* the middle first, then its neighbours */
            give(a, y);
            assert_int_equal(stats_of(a).n_free_blocks, 2);
            give(a, x); /* x and y merge */
            assert_int_equal(stats_of(a).n_free_blocks, 2);
            check(a);
            char *xy = take(a, 8192, NULL); /* exactly the merged block: best fit */
            assert_ptr_equal(xy, x);
            give(a, xy);
            give(a, z);
        } else { /* the ends first; the middle merges with both */
            give(a, x);
            give(a, z); /* z merges with the segment's tail */
            assert_int_equal(stats_of(a).n_free_blocks, 2);
            check(a);
            give(a, y);
        }
        tjcu_memory_stats s = stats_of(a);
        assert_int_equal(s.n_free_blocks, 1);
        assert_int_equal(s.n_segments, 1);
        check(a);
        char *whole = take(a, MiB, NULL); /* starts at x only if all merged */
        assert_ptr_equal(whole, x);
        give(a, whole);
    }
    assert_int_equal(stats_of(a).n_alloc_calls, 1);
    finish(a, f);
}

static void blocks_stay_on_their_stream(void **state) {
    (void)state;
    fake_raw *f = fake_new(SIZE_MAX);
    tjcu_allocator *a = alloc_new(f);
    for (size_t bytes = 4096; bytes <= 12 * MiB; bytes += 12 * MiB - 4096) { /* a small and a large pool */
        uint64_t calls = stats_of(a).n_alloc_calls;
        char *p = take(a, bytes, STREAM_A);
        give(a, p);
        char *q = take(a, bytes, STREAM_B);
        assert_int_equal(stats_of(a).n_alloc_calls, calls + 2); /* A's free block is not B's */
        assert_ptr_not_equal(q, p);
        char *r = take(a, bytes, STREAM_A);
        assert_ptr_equal(r, p);
        assert_int_equal(stats_of(a).n_alloc_calls, calls + 2);
        give(a, q);
        give(a, r);
        check(a);
    }
    finish(a, f);
}

/* ---- steady state, failures, emptying, stats ---------------------------------------- */

typedef struct script_op {
    size_t bytes; /* 0: release live[slot] */
    int slot;
    void *stream;
} script_op;

/* A replay-like pattern: mixed sizes and streams, temporaries released in
 * between, everything released at the end. */
static int make_script(script_op *ops, int cap, uint32_t seed) {
    int n = 0, live = 0;
    while (n + live + 2 <= cap) { /* room for this op and every release after it */
        seed = seed * 1664525u + 1013904223u;
        uint32_t r = seed >> 8;
        if (live > 0 && r % 5 < 2) {
            ops[n++] = (script_op){0, (int)(r / 5 % (uint32_t)live), NULL};
            live--;
            continue;
        }
        size_t bytes = r % 10 < 7 ? 1 + r % 65536 : r % 10 < 9 ? 1 + r % MiB : MiB + r % (12 * MiB);
        ops[n++] = (script_op){bytes, live++, (r & 1) ? STREAM_A : STREAM_B};
    }
    while (live > 0) ops[n++] = (script_op){0, --live, NULL};
    return n;
}

static void run_script(tjcu_allocator *a, const script_op *ops, int n) {
    void *live[512];
    int n_live = 0;
    for (int i = 0; i < n; i++) {
        if (ops[i].bytes) {
            live[n_live++] = take(a, ops[i].bytes, ops[i].stream);
        } else {
            give(a, live[ops[i].slot]);
            live[ops[i].slot] = live[--n_live];
        }
    }
    assert_int_equal(n_live, 0);
}

static void steady_state_makes_no_raw_calls(void **state) {
    (void)state;
    fake_raw *f = fake_new(SIZE_MAX);
    tjcu_allocator *a = alloc_new(f);
    static script_op ops[600];
    int n = make_script(ops, 600, 7), n_malloc = 0;
    for (int i = 0; i < n; i++) n_malloc += ops[i].bytes != 0;
    /* the state after a run that made no raw call is the state before it,
     * and best fit is a function of that state: warm-up ends there */
    int warm_up = 0;
    for (uint64_t before = UINT64_MAX; before != stats_of(a).n_alloc_calls; warm_up++) {
        assert_true(warm_up < 10);
        before = stats_of(a).n_alloc_calls;
        run_script(a, ops, n);
    }
    tjcu_memory_stats s0 = stats_of(a);
    assert_true(s0.n_alloc_calls > 0);
    for (int rep = 0; rep < 50; rep++) run_script(a, ops, n);
    tjcu_memory_stats s1 = stats_of(a);
    assert_int_equal(s1.n_alloc_calls, s0.n_alloc_calls);
    assert_int_equal(s1.n_free_calls, 0);
    assert_int_equal(s1.n_cache_hits, s0.n_cache_hits + 50 * (uint64_t)n_malloc);
    assert_int_equal(s1.reserved, s0.reserved);
    check(a);
    print_message("steady state: %d mallocs per run, %d warm-up runs, %llu segments\n", n_malloc, warm_up,
                  (unsigned long long)s1.n_segments);
    finish(a, f);
}

static void out_of_memory_empties_the_cache_and_retries_once(void **state) {
    (void)state;
    fake_raw *f = fake_new(13 * MiB);
    tjcu_allocator *a = alloc_new(f);
    give(a, take(a, MiB, NULL)); /* 2 MiB cached */
    char *big = take(a, 11 * MiB, NULL); /* 12 MiB: fits only without the cached 2 */
    tjcu_memory_stats s = stats_of(a);
    assert_int_equal(s.n_oom_retries, 1);
    assert_int_equal(s.n_alloc_calls, 3);
    assert_int_equal(s.n_free_calls, 1);
    assert_int_equal(s.reserved, 12 * MiB);
    assert_int_equal(f->in_use, 12 * MiB);
    void *p = (void *)1;
    tj_clear_error();
    assert_int_equal(tjcu_allocator_malloc(a, 5 * MiB, NULL, &p), TJ_ERR_MEMORY);
    assert_null(p);
    tt_assert_error("tried to allocate 5242880 bytes");
    tt_assert_error("12582912 bytes (12.00 MiB) allocated");
    tt_assert_error("12582912 bytes (12.00 MiB) reserved");
    tt_assert_error("fake device: 20971520 bytes over its budget");
    s = stats_of(a);
    assert_int_equal(s.n_oom_retries, 2);
    assert_int_equal(s.n_alloc_calls, 5);
    assert_int_equal(f->failures, 3);
    check(a);
    give(a, big);
    f->budget = 64 * MiB; /* still usable */
    give(a, take(a, 5 * MiB, NULL));
    check(a);
    finish(a, f);
}

static void empty_cache_frees_exactly_the_unused_segments(void **state) {
    (void)state;
    fake_raw *f = fake_new(SIZE_MAX);
    tjcu_allocator *a = alloc_new(f);
    char *kept = take(a, 4096, STREAM_A);
    give(a, take(a, 4096, STREAM_B));
    give(a, take(a, 11 * MiB, STREAM_A));
    char *big = take(a, 30 * MiB, STREAM_B);
    assert_int_equal(stats_of(a).n_segments, 4);
    assert_int_equal(tjcu_allocator_empty_cache(a), TJ_OK);
    tjcu_memory_stats s = stats_of(a);
    assert_int_equal(s.n_free_calls, 2);
    assert_int_equal(s.n_segments, 2);
    assert_int_equal(s.reserved, 2 * MiB + 30 * MiB);
    assert_int_equal(f->n_live, 2);
    assert_true((f->live[0] == kept && f->live[1] == big) || (f->live[0] == big && f->live[1] == kept));
    check(a);
    give(a, kept);
    give(a, big);
    assert_int_equal(tjcu_allocator_empty_cache(a), TJ_OK);
    s = stats_of(a);
    assert_int_equal(s.n_free_calls, 4);
    assert_int_equal(s.reserved, 0);
    assert_int_equal(f->n_live, 0);
    check(a);
    finish(a, f);
}

static void stats_count_bytes_peaks_and_calls(void **state) {
    (void)state;
    fake_raw *f = fake_new(SIZE_MAX);
    tjcu_allocator *a = alloc_new(f);
    char *small = take(a, 3000, NULL);
    char *big = take(a, 10 * MiB, NULL);
    tjcu_memory_stats s = stats_of(a);
    assert_int_equal(s.allocated, 3072 + 10 * MiB);
    assert_int_equal(s.reserved, 12 * MiB);
    assert_int_equal(s.peak_allocated, 3072 + 10 * MiB);
    assert_int_equal(s.peak_reserved, 12 * MiB);
    assert_int_equal(s.n_alloc_calls, 2);
    assert_int_equal(s.n_cache_hits, 0);
    give(a, big);
    s = stats_of(a);
    assert_int_equal(s.allocated, 3072);
    assert_int_equal(s.peak_allocated, 3072 + 10 * MiB);
    tjcu_allocator_reset_peak(a);
    s = stats_of(a);
    assert_int_equal(s.peak_allocated, 3072);
    assert_int_equal(s.peak_reserved, 12 * MiB);
    assert_int_equal(tjcu_allocator_empty_cache(a), TJ_OK);
    tjcu_allocator_reset_peak(a);
    s = stats_of(a);
    assert_int_equal(s.reserved, 2 * MiB);
    assert_int_equal(s.peak_reserved, 2 * MiB);
    assert_int_equal(s.n_free_calls, 1);
    give(a, small);
    give(a, take(a, 3000, NULL));
    s = stats_of(a);
    assert_int_equal(s.n_cache_hits, 1);
    assert_int_equal(s.n_alloc_calls, 2);
    assert_int_equal(s.n_oom_retries, 0);
    check(a);
    finish(a, f);
}

static void bad_releases_are_errors(void **state) {
    (void)state;
    fake_raw *f = fake_new(SIZE_MAX);
    tjcu_allocator *a = alloc_new(f);
    char *p = take(a, 4096, NULL);
    int local;
    assert_int_equal(tjcu_allocator_release(a, &local), TJ_ERR_ARG);
    tt_assert_error("not a block in use on device 3");
    assert_int_equal(tjcu_allocator_release(a, p + 512), TJ_ERR_ARG);
    give(a, p);
    assert_int_equal(tjcu_allocator_release(a, p), TJ_ERR_ARG); /* twice */
    void *q = (void *)1;
    assert_int_equal(tjcu_allocator_malloc(a, SIZE_MAX - 5, NULL, &q), TJ_ERR_MEMORY);
    assert_null(q);
    tjcu_raw_allocator none = {NULL, NULL, NULL};
    assert_null(tjcu_allocator_new(&none, 0));
    check(a);
    /* blocks still handed out go back with their segments */
    take(a, 4096, NULL);
    take(a, 20 * MiB, STREAM_B);
    finish(a, f);
}

/* ---- stress ---------------------------------------------------------------------- */

typedef struct tagged {
    uint64_t *ptr;
    size_t bytes;
    uint64_t tag;
} tagged;

static size_t random_size(uint64_t *rng) {
    *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
    uint64_t r = *rng >> 8;
    switch (r % 20) {
    case 0: return MiB + r / 20 % (9 * MiB);        /* large, from 20 MiB segments */
    case 1: return 10 * MiB + r / 20 % (30 * MiB); /* large, a segment of its own */
    case 2: case 3: case 4: case 5: return 8193 + r / 20 % (MiB - 8192);
    default: return 1 + r / 20 % 8192;
    }
}

/* Tags both ends of a block; a block handed out twice loses them. */
static void stamp(tagged *t) {
    t->ptr[0] = t->tag;
    if (t->bytes >= 16) memcpy((char *)t->ptr + t->bytes - 8, &t->tag, 8);
}

static bool stamp_intact(const tagged *t) {
    uint64_t end = t->tag;
    if (t->bytes >= 16) memcpy(&end, (char *)t->ptr + t->bytes - 8, 8);
    return t->ptr[0] == t->tag && end == t->tag;
}

static void random_operations_keep_every_invariant(void **state) {
    (void)state;
    fake_raw *f = fake_new(400 * MiB);
    tjcu_allocator *a = alloc_new(f);
    enum { N_OPS = 10000, MAX_LIVE = 200 };
    static tagged live[MAX_LIVE];
    int n_live = 0, n_oom = 0;
    uint64_t rng = 0x1234567, n_malloc = 0;
    void *streams[3] = {NULL, STREAM_A, STREAM_B};
    for (int op = 0; op < N_OPS; op++) {
        size_t bytes = random_size(&rng);
        if (n_live == MAX_LIVE || (n_live > 0 && rng % 5 < 2)) {
            int i = (int)((rng >> 20) % (uint64_t)n_live);
            assert_true(stamp_intact(&live[i]));
            give(a, live[i].ptr);
            live[i] = live[--n_live];
        } else {
            void *p = NULL;
            tj_status st = tjcu_allocator_malloc(a, bytes, streams[(rng >> 40) % 3], &p);
            n_malloc++;
            if (st == TJ_ERR_MEMORY) {
                tt_assert_error("out of memory");
                n_oom++;
                continue;
            }
            assert_int_equal(st, TJ_OK);
            live[n_live] = (tagged){p, bytes, n_malloc};
            stamp(&live[n_live++]);
        }
        if (op % 250 == 0) {
            check(a);
            tjcu_memory_stats s = stats_of(a);
            assert_int_equal(s.reserved, f->in_use);
            assert_true(f->in_use <= f->budget);
            assert_int_equal(s.n_segments, f->n_live);
        }
        if (op % 2000 == 1999) assert_int_equal(tjcu_allocator_empty_cache(a), TJ_OK);
    }
    check(a);
    while (n_live > 0) {
        assert_true(stamp_intact(&live[n_live - 1]));
        give(a, live[--n_live].ptr);
    }
    tjcu_memory_stats s = stats_of(a);
    assert_int_equal(s.allocated, 0);
    assert_int_equal(s.reserved, f->in_use);
    assert_int_equal(s.n_alloc_calls, f->allocs);
    assert_int_equal(s.n_free_calls, f->frees);
    assert_int_equal(tjcu_allocator_empty_cache(a), TJ_OK);
    assert_int_equal(stats_of(a).reserved, 0);
    assert_int_equal(f->n_live, 0);
    check(a);
    print_message("stress: %llu mallocs, %d out of memory, %llu raw allocs, %llu cache hits, %llu retries\n",
                  (unsigned long long)n_malloc, n_oom, (unsigned long long)s.n_alloc_calls,
                  (unsigned long long)s.n_cache_hits, (unsigned long long)s.n_oom_retries);
    finish(a, f);
}

typedef struct hammer_arg {
    tjcu_allocator *a;
    int id;
    int errors;
} hammer_arg;

static void *hammer(void *p) {
    hammer_arg *h = p;
    enum { MAX_LIVE = 64 };
    tagged live[MAX_LIVE];
    int n_live = 0;
    uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(h->id + 1);
    void *streams[2] = {(void *)(uintptr_t)(0x10000 * (h->id + 1)), STREAM_A}; /* its own, and a shared one */
    for (int op = 0; op < 5000; op++) {
        size_t bytes = random_size(&rng);
        if (bytes > 2 * MiB) bytes = bytes % (2 * MiB) + 1;
        if (n_live == MAX_LIVE || (n_live > 0 && rng % 2)) {
            int i = (int)((rng >> 24) % (uint64_t)n_live);
            h->errors += !stamp_intact(&live[i]);
            h->errors += tjcu_allocator_release(h->a, live[i].ptr) != TJ_OK;
            live[i] = live[--n_live];
        } else {
            void *q = NULL;
            if (tjcu_allocator_malloc(h->a, bytes, streams[rng >> 33 & 1], &q) != TJ_OK) {
                h->errors++;
                continue;
            }
            live[n_live] = (tagged){q, bytes, ((uint64_t)h->id << 32) | (uint64_t)op};
            stamp(&live[n_live++]);
        }
        if (op % 1000 == 999) h->errors += tjcu_allocator_empty_cache(h->a) != TJ_OK;
    }
    while (n_live > 0) {
        h->errors += !stamp_intact(&live[n_live - 1]);
        h->errors += tjcu_allocator_release(h->a, live[--n_live].ptr) != TJ_OK;
    }
    return NULL;
}

static void four_threads_share_one_allocator(void **state) {
    (void)state;
    fake_raw *f = fake_new(SIZE_MAX);
    tjcu_allocator *a = alloc_new(f);
    pthread_t th[4];
    hammer_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (hammer_arg){a, i, 0};
        assert_int_equal(pthread_create(&th[i], NULL, hammer, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].errors, 0);
    }
    check(a);
    tjcu_memory_stats s = stats_of(a);
    assert_int_equal(s.allocated, 0);
    assert_int_equal(s.reserved, f->in_use);
    assert_true(s.n_cache_hits > 0);
    finish(a, f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(requests_are_rounded_to_512_bytes),
        cmocka_unit_test(small_and_large_pools_split_at_1_mib),
        cmocka_unit_test(three_neighbours_merge_back_into_one_block),
        cmocka_unit_test(blocks_stay_on_their_stream),
        cmocka_unit_test(steady_state_makes_no_raw_calls),
        cmocka_unit_test(out_of_memory_empties_the_cache_and_retries_once),
        cmocka_unit_test(empty_cache_frees_exactly_the_unused_segments),
        cmocka_unit_test(stats_count_bytes_peaks_and_calls),
        cmocka_unit_test(bad_releases_are_errors),
        cmocka_unit_test(random_operations_keep_every_invariant),
        cmocka_unit_test(four_threads_share_one_allocator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
