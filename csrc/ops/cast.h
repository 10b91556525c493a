/* Schema positions of Cast (cast.c), shared with its GPU kernel (kernels/cuda/layout.cu).
 * Internal to csrc/. */
#ifndef HG_OPS_CAST_H
#define HG_OPS_CAST_H

enum { CA_DTYPE, CA_NATTRS };

#endif
