/* The global random generator (xoshiro256** with splitmix64 seeding). Serialised by a mutex:
 * draws happen in creation ops and initialisers, not in hot kernels. */
#ifndef HG_CORE_RNG_H
#define HG_CORE_RNG_H

#include <stdint.h>

/* Fills n uniform doubles in [0, 1) / standard normals / 64-bit integers. */
void hg_rng_uniform(double *out, int64_t n);
void hg_rng_normal(double *out, int64_t n);
void hg_rng_u64(uint64_t *out, int64_t n);

/* Batch access for samplers that convert as they draw: hg_rng_acquire locks the generator and
 * copies its state into *st; draw with hg_rng_next / hg_rng_unit on a local copy (so the state
 * stays in registers), then hg_rng_release stores the advanced state and unlocks. Between the
 * two no other hg_rng_* call may be made on this thread. The values are the same stream as
 * hg_rng_u64 / hg_rng_uniform give. */
typedef struct hg_rng_state {
    uint64_t s[4];
} hg_rng_state;

void hg_rng_acquire(hg_rng_state *st);
void hg_rng_release(const hg_rng_state *st);

/* How many times the calling thread has drawn from the generator. A CUDA graph capture checks
 * that no draw happened while it recorded: a replay would repeat the same numbers. */
uint64_t hg_rng_thread_draws(void);

/* xoshiro256**: the next 64-bit value. */
static inline uint64_t hg_rng_next(hg_rng_state *st)
{
    uint64_t *s = st->s, x = s[1] * 5, t = s[1] << 17;
    uint64_t r = ((x << 7) | (x >> 57)) * 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return r;
}

/* A uniform double in [0, 1): the top 53 bits of the next value. */
static inline double hg_rng_unit(hg_rng_state *st)
{
    return (double)(hg_rng_next(st) >> 11) * 0x1.0p-53;
}

#endif
