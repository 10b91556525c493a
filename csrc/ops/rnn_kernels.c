/* The fused RNN kernels (kernels/cpu/rnn_tmpl.h) instantiated for float32 and float64. They
 * live beside the op because the kernels layer builds no template instances of its own; they
 * know nothing of the op (plain pointers and hg_rnn_dims). */
#include <math.h>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/rnn.h"
#include "kernels/cpu/rnn_gemm.h"
#include "kernels/cpu/vmath.h"

/* float64 has no vectorised exp: libm's, element by element. */
static void vexp_f64(const double *src, double *dst, int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = exp(src[i]);
}

#define RT float
#define RSFX f32
#define RGEMM hg_gemm_f32
#define RVEXP hg_vexp_f32
#define RPACKED 1
#include "kernels/cpu/rnn_tmpl.h"
#undef RT
#undef RSFX
#undef RGEMM
#undef RVEXP
#undef RPACKED

#define RT double
#define RSFX f64
#define RGEMM hg_gemm_f64
#define RVEXP vexp_f64
#define RPACKED 0
#include "kernels/cpu/rnn_tmpl.h"
#undef RT
#undef RSFX
#undef RGEMM
#undef RVEXP
#undef RPACKED
