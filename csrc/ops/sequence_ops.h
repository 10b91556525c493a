/* What the sequence ops (sequence_ops.c) share with their GPU kernels (kernels/cuda/seq.cu): the
 * schema positions. Internal to csrc/. */
#ifndef HG_OPS_SEQUENCE_OPS_H
#define HG_OPS_SEQUENCE_OPS_H

enum { SQ_USE_LEN, SQ_AXIS, SQ_NATTRS };

#endif
