/* What the element-wise contrib ops (contrib_elemwise.c) share with their GPU kernels
 * (kernels/cuda/misc.cu): the schema positions of quadratic. Internal to csrc/. */
#ifndef HG_OPS_CONTRIB_ELEMWISE_H
#define HG_OPS_CONTRIB_ELEMWISE_H

enum { QA, QB, QC, Q_NATTRS };

#endif
