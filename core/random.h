/* random.h — Philox and its conversions, for kernels that draw random numbers
 * (dropout) with the same stream as tj_rand. */
#ifndef TJIT_CORE_RANDOM_H
#define TJIT_CORE_RANDOM_H

#include <stdint.h>

#include "tjit/tjit.h"

/* Philox-4x32-10 of counter under key seed. */
void tjc_philox(uint64_t seed, uint64_t counter, uint32_t out[4]);
double tjc_uniform53(uint32_t hi, uint32_t lo); /* [0, 1) with 53 bits */
float tjc_uniform24(uint32_t w);                /* [0, 1) with 24 bits */
double tjc_normal(const uint32_t w[4]);         /* Box-Muller from all four words */

/* Reserves n counters for a draw of op from g, or, when g is NULL, from the
 * process-wide default generator (seed 0, created on first use, shared by all
 * threads under a lock): *seed is the key and *first the first counter. Every
 * device's dropout kernel reserves here, so the default stream is one stream
 * whichever device draws from it. */
tj_status tjc_generator_reserve_for(const char *op, tj_generator *g, uint64_t n, uint64_t *seed,
                                    uint64_t *first);

#endif
