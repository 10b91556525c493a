/* The global random generator (xoshiro256** with splitmix64 seeding). Serialised by a mutex:
 * draws happen in creation ops and initialisers, not in hot kernels. */
#ifndef HG_CORE_RNG_H
#define HG_CORE_RNG_H

#include <stdint.h>

/* Fills n uniform doubles in [0, 1) / standard normals / 64-bit integers. */
void hg_rng_uniform(double *out, int64_t n);
void hg_rng_normal(double *out, int64_t n);
void hg_rng_u64(uint64_t *out, int64_t n);
/* A uniformly distributed integer in [0, bound) (bound > 0), without modulo bias. */
uint64_t hg_rng_below(uint64_t bound);

#endif
