/* Schema positions and enum values of Dropout and L2Normalization (nn_train.c), shared with
 * their GPU kernels (kernels/cuda/layout.cu). Internal to csrc/. */
#ifndef HG_OPS_NN_TRAIN_H
#define HG_OPS_NN_TRAIN_H

enum { D_P, D_MODE, D_AXES, D_CUDNN_OFF, D_NATTRS };
enum { MODE_TRAINING, MODE_ALWAYS, MODE_NMODES };
enum { L2_EPS, L2_MODE, L2_NATTRS };
enum { L2_INSTANCE, L2_CHANNEL, L2_SPATIAL, L2_NMODES };

#endif
