/* What the index contrib ops (contrib_index.c) share with their GPU kernels
 * (kernels/cuda/misc.cu): the schema positions. Internal to csrc/. */
#ifndef HG_OPS_CONTRIB_INDEX_H
#define HG_OPS_CONTRIB_INDEX_H

enum { IA_AXES, IA_NATTRS };
enum { AC_RTOL, AC_ATOL, AC_NAN, AC_NATTRS };
enum { AL_START, AL_STEP, AL_REPEAT, AL_CTX, AL_AXIS, AL_NATTRS };

#endif
