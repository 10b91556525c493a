/* Every other element: dst[i] = src[2 * i] for i in [0, n), reading no element past
 * src[2 * n - 2] (the odd one after the last may lie outside the buffer). The copy that
 * im2col and the depthwise kernels make of a stride-2 row: vectorised with AVX-512 (two loads,
 * one two-source permute per 16) or AVX2 (two shuffles per 8) as the CPU allows, where the
 * plain loop ran one element at a time (21% of a 3x3 stride-2 convolution's forward). */
#ifndef HG_KERNELS_CPU_GATHER2_H
#define HG_KERNELS_CPU_GATHER2_H

#include <stdint.h>

#include "hybridgluon/hybridgluon.h" /* HG_API */

void hg_gather2_f32(float *dst, const float *src, int64_t n);
void hg_gather2_f64(double *dst, const double *src, int64_t n); /* the plain loop */

/* The same through one instruction set (tests): isa 1 the plain loop, 2 AVX2, 3 AVX-512, other
 * values the best the CPU has. Returns 0, having done nothing, where the CPU lacks the set. */
HG_API int hg_gather2_f32_isa(float *dst, const float *src, int64_t n, int isa);

#endif
