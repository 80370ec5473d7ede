/* random.h — Philox and its conversions, for kernels that draw random numbers
 * (dropout) with the same stream as tj_rand. */
#ifndef TJIT_CORE_RANDOM_H
#define TJIT_CORE_RANDOM_H

#include <stdint.h>

/* Philox-4x32-10 of counter under key seed. */
void tjc_philox(uint64_t seed, uint64_t counter, uint32_t out[4]);
double tjc_uniform53(uint32_t hi, uint32_t lo); /* [0, 1) with 53 bits */
float tjc_uniform24(uint32_t w);                /* [0, 1) with 24 bits */
double tjc_normal(const uint32_t w[4]);         /* Box-Muller from all four words */

#endif
