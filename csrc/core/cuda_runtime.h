/* The CUDA build's device runtime as the rest of the core and the GPU kernels see it: the one
 * stream of each device and CUDA's errors as hg errors (core/cuda_runtime.c). Included only
 * where HG_CUDA is defined (the CUDA build). */
#ifndef HG_CORE_CUDA_RUNTIME_H
#define HG_CORE_CUDA_RUNTIME_H

#include <cuda_runtime_api.h>

#include "core/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The one stream of gpu(dev) (non-blocking, created at first use); NULL with the error set. All
 * work on a device is ordered on it, which is what lets freed device memory be reused at once. */
cudaStream_t hg_cuda_stream(int dev);
/* Makes dev the calling thread's current device. */
hg_status hg_cuda_use(int dev);
/* HG_OK for cudaSuccess; otherwise an error naming `what` and CUDA's message (out of memory
 * gives HG_ERR_MEMORY). Clears CUDA's sticky last error for recoverable errors. */
hg_status hg_cuda_status(cudaError_t e, const char *what);
/* After a kernel launch: a launch error (bad configuration) as an hg error naming the op. */
hg_status hg_cuda_launched(const char *op);

#ifdef __cplusplus
}
#endif

#endif
