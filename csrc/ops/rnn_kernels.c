/* The fused RNN kernels (kernels/cpu/rnn_tmpl.h) instantiated for float32 and float64. They
 * live beside the op because the kernels layer builds no template instances of its own; they
 * know nothing of the op (plain pointers and hg_rnn_dims). */
#include <math.h>

#include "kernels/cpu/gemm.h"
#include "kernels/cpu/rnn.h"

#define RT float
#define RSFX f32
#define RGEMM hg_gemm_f32
#define REXP expf
#define RTANH tanhf
#include "kernels/cpu/rnn_tmpl.h"
#undef RT
#undef RSFX
#undef RGEMM
#undef REXP
#undef RTANH

#define RT double
#define RSFX f64
#define RGEMM hg_gemm_f64
#define REXP exp
#define RTANH tanh
#include "kernels/cpu/rnn_tmpl.h"
#undef RT
#undef RSFX
#undef RGEMM
#undef REXP
#undef RTANH
