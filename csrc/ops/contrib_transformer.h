/* Schema positions of the interleaved attention matmuls (contrib_transformer.c), shared with the
 * GPU kernels (kernels/cuda/transformer.cu). Internal to csrc/. */
#ifndef HG_OPS_CONTRIB_TRANSFORMER_H
#define HG_OPS_CONTRIB_TRANSFORMER_H

enum { IM_HEADS, IM_NATTRS };

#endif
