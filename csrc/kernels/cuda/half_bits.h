/* IEEE half <-> float on the device exactly as core/half.h converts on the host (round to
 * nearest even; a NaN stays a quiet NaN with its sign), so float16 results have the CPU's bits.
 * For the .cu kernels (nvcc); the functions are static to each file that includes this. */
#ifndef HG_KERNELS_CUDA_HALF_BITS_H
#define HG_KERNELS_CUDA_HALF_BITS_H

#include <cuda_fp16.h>
#include <stdint.h>

static __device__ __forceinline__ float h2f(uint16_t h)
{
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
        return __uint_as_float(((uint32_t)(h & 0x8000) << 16) | 0x7f800000u |
                               ((uint32_t)(h & 0x3ff) << 13));
    return __half2float(__ushort_as_half(h));
}

static __device__ __forceinline__ uint16_t f2h(float f)
{
    if (f != f) return (uint16_t)(((__float_as_uint(f) >> 16) & 0x8000) | 0x7e00);
    return __half_as_ushort(__float2half_rn(f));
}

#endif
