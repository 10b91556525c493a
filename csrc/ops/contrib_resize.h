/* What the resize contrib ops (contrib_resize.c) share with their GPU kernels
 * (kernels/cuda/resample.cu): the schema positions and modes. Internal to csrc/. */
#ifndef HG_OPS_CONTRIB_RESIZE_H
#define HG_OPS_CONTRIB_RESIZE_H

enum { AP_OUT, AP_NATTRS };
enum { BR_H, BR_W, BR_SH, BR_SW, BR_MODE, BR_ALIGN, BR_NATTRS };
enum { M_SIZE, M_ODD_SCALE, M_LIKE, M_EVEN_DOWN, M_EVEN_UP, M_ODD_DOWN, M_ODD_UP };

#endif
