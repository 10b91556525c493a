/* Schema positions of Convolution and _backward_Convolution (conv.c), shared with the GPU
 * kernels (kernels/cuda/dnn.cu). Internal to csrc/. */
#ifndef HG_OPS_CONV_H
#define HG_OPS_CONV_H

enum {
    CV_KERNEL,
    CV_STRIDE,
    CV_DILATE,
    CV_PAD,
    CV_NUM_FILTER,
    CV_NUM_GROUP,
    CV_WORKSPACE,
    CV_NO_BIAS,
    CV_CUDNN_TUNE,
    CV_CUDNN_OFF,
    CV_LAYOUT,
    CV_NATTRS, /* the forward's schema ends here */
    CV_GRAD_DATA = CV_NATTRS,
    CV_GRAD_WEIGHT,
    CV_BW_NATTRS
};

#endif
