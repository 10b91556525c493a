/* What the legacy layers (legacy_nn.c) share with their GPU kernels (kernels/cuda/resample.cu):
 * the schema positions. Internal to csrc/. */
#ifndef HG_OPS_LEGACY_NN_H
#define HG_OPS_LEGACY_NN_H

enum { LRN_ALPHA, LRN_BETA, LRN_KNORM, LRN_NSIZE, LRN_NATTRS };
enum { CR_NUM_ARGS, CR_OFFSET, CR_H_W, CR_CENTER, CR_NATTRS };

#endif
