/* The global random generator: xoshiro256** seeded through splitmix64. Same seed, same stream. */
#include "core/rng.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "hybridgluon/hybridgluon.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_s[4] = {0x9E3779B97F4A7C15ull, 0xBF58476D1CE4E5B9ull, 0x94D049BB133111EBull,
                          0x2545F4914F6CDD1Dull};
static int g_have_spare;
static double g_spare;

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void hg_random_seed(uint64_t seed)
{
    pthread_mutex_lock(&g_mu);
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) g_s[i] = splitmix(&x);
    g_have_spare = 0;
    pthread_mutex_unlock(&g_mu);
}

static _Thread_local uint64_t tl_draws;

uint64_t hg_rng_thread_draws(void) { return tl_draws; }

void hg_rng_acquire(hg_rng_state *st)
{
    tl_draws++;
    pthread_mutex_lock(&g_mu);
    memcpy(st->s, g_s, sizeof g_s);
}

void hg_rng_release(const hg_rng_state *st)
{
    memcpy(g_s, st->s, sizeof g_s);
    pthread_mutex_unlock(&g_mu);
}

void hg_rng_uniform(double *out, int64_t n)
{
    hg_rng_state st;
    hg_rng_acquire(&st);
    for (int64_t i = 0; i < n; i++) out[i] = hg_rng_unit(&st);
    hg_rng_release(&st);
}

void hg_rng_normal(double *out, int64_t n)
{
    hg_rng_state st;
    hg_rng_acquire(&st);
    int64_t i = 0;
    if (g_have_spare && n > 0) {
        out[i++] = g_spare;
        g_have_spare = 0;
    }
    while (i < n) { /* Box-Muller, both values used */
        double u1 = hg_rng_unit(&st), u2 = hg_rng_unit(&st);
        if (u1 <= 0x1.0p-60) u1 = 0x1.0p-60;
        double r = sqrt(-2.0 * log(u1)), th = 6.283185307179586 * u2;
        out[i++] = r * cos(th);
        if (i < n) {
            out[i++] = r * sin(th);
        } else {
            g_spare = r * sin(th);
            g_have_spare = 1;
        }
    }
    hg_rng_release(&st);
}

void hg_rng_u64(uint64_t *out, int64_t n)
{
    hg_rng_state st;
    hg_rng_acquire(&st);
    for (int64_t i = 0; i < n; i++) out[i] = hg_rng_next(&st);
    hg_rng_release(&st);
}
