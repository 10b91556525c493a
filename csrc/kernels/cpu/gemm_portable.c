/* The small-side GEMM kernels (gemm_small.h) in portable C: GCC vector extensions of 4 floats
 * (SSE2 on baseline x86-64, NEON on arm64), separate multiply and add. The fallback where the
 * CPU has neither AVX2+FMA nor AVX-512F, and the reference the tests compare the others with. */
#include <string.h>

#include "kernels/cpu/gemm_small.h"

#define HG_TGT
#define KNAME(x) x##_portable
#define VW 4
#define DOT_MR 2
#define AXPY_MR 2
#define AXPY_NVM 4
#define AXPY_NV1 8
typedef float vf __attribute__((vector_size(16)));

static inline vf v_zero(void) { return (vf){0, 0, 0, 0}; }
static inline vf v_set1(float x) { return (vf){x, x, x, x}; }
static inline vf v_load(const float *p)
{
    vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline vf v_loadn(const float *p, int n)
{
    vf v = v_zero();
    memcpy(&v, p, sizeof(float) * (size_t)n);
    return v;
}
static inline void v_store(float *p, vf v) { memcpy(p, &v, sizeof v); }
static inline void v_storen(float *p, vf v, int n) { memcpy(p, &v, sizeof(float) * (size_t)n); }
static inline vf v_fma(vf a, vf b, vf c) { return a * b + c; }
static inline vf v_mul(vf a, vf b) { return a * b; }
static inline vf v_add(vf a, vf b) { return a + b; }
static inline float v_hsum(vf v) { return (v[0] + v[2]) + (v[1] + v[3]); }
static inline void v_hsum4(vf a, vf b, vf c, vf d, float *out)
{
    out[0] = v_hsum(a);
    out[1] = v_hsum(b);
    out[2] = v_hsum(c);
    out[3] = v_hsum(d);
}

#include "kernels/cpu/gemm_small_tmpl.h"
