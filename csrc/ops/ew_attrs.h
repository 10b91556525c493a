/* Schema positions of the _*_scalar ops' attributes (k_scalar_attrs in elemwise_binary.c; the
 * contrib ops that share the schema use them too). A header of its own so that the GPU kernels
 * (csrc/kernels/cuda/ew.cu) read the same slots without the C-only rest of ops/ew.h. */
#ifndef HG_OPS_EW_ATTRS_H
#define HG_OPS_EW_ATTRS_H

enum { SC_SCALAR, SC_IS_INT, SC_NATTRS };

#endif
