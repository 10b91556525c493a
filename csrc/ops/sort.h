/* What the ordering ops (sort.c) share with their GPU kernels (kernels/cuda/misc.cu): topk's
 * ret_typ values and the schema positions. Internal to csrc/. */
#ifndef HG_OPS_SORT_H
#define HG_OPS_SORT_H

enum { RET_VALUE, RET_INDICES, RET_MASK, RET_BOTH, RET_NTYPES };
enum { TK_AXIS, TK_K, TK_RET, TK_ASCEND, TK_DTYPE, TK_NATTRS };
enum { SO_AXIS, SO_ASCEND, SO_DTYPE, SO_NATTRS };

#endif
