/* Schema positions of the optimizer updates (optimizer.c), shared with their GPU kernels
 * (kernels/cuda/optim.cu). Entries past an op's *_NATTRS are job parameters the forward
 * computes, not attributes. Internal to csrc/. */
#ifndef HG_OPS_OPTIMIZER_H
#define HG_OPS_OPTIMIZER_H

enum { SGD_LR, SGD_WD, SGD_RG, SGD_CLIP, SGD_LAZY, SGD_NATTRS };
enum { SGDM_LR, SGDM_MOM, SGDM_WD, SGDM_RG, SGDM_CLIP, SGDM_LAZY, SGDM_NATTRS };
enum { NAG_LR, NAG_MOM, NAG_WD, NAG_RG, NAG_CLIP, NAG_NATTRS };
enum { ADAM_LR, ADAM_B1, ADAM_B2, ADAM_EPS, ADAM_WD, ADAM_RG, ADAM_CLIP, ADAM_LAZY, ADAM_NATTRS };
enum {
    ADW_LR,
    ADW_B1,
    ADW_B2,
    ADW_EPS,
    ADW_WD,
    ADW_ETA,
    ADW_CLIP,
    ADW_NATTRS,
    ADW_SCALE = ADW_NATTRS /* a job parameter, not an attr */
};
enum {
    MADW_LRS,
    MADW_B1,
    MADW_B2,
    MADW_EPS,
    MADW_WDS,
    MADW_ETAS,
    MADW_CLIP,
    MADW_NUM,
    MADW_NATTRS
};
enum { RMS_LR, RMS_G1, RMS_EPS, RMS_WD, RMS_RG, RMS_CLIP, RMS_CLIPW, RMS_NATTRS };
enum { RMSA_LR, RMSA_G1, RMSA_G2, RMSA_EPS, RMSA_WD, RMSA_RG, RMSA_CLIP, RMSA_CLIPW, RMSA_NATTRS };
enum { SSGD_LR, SSGD_WD, SSGD_RG, SSGD_CLIP, SSGD_NATTRS };
enum { SGNM_LR, SGNM_MOM, SGNM_WD, SGNM_RG, SGNM_CLIP, SGNM_WDLH, SGNM_NATTRS };
enum { FTRL_LR, FTRL_L1, FTRL_BETA, FTRL_WD, FTRL_RG, FTRL_CLIP, FTRL_NATTRS };
enum {
    L1_B1,
    L1_B2,
    L1_EPS,
    L1_T,
    L1_BIAS,
    L1_WD,
    L1_RG,
    L1_CLIP,
    L1_NATTRS,
    L1_B1T = L1_NATTRS,
    L1_B2T /* job parameters, not attrs */
};
enum { L2_LR, L2_LB, L2_UB, L2_NATTRS, L2_RATE = L2_NATTRS /* a job parameter, not an attr */ };
enum {
    FT_LR,
    FT_B1,
    FT_B2,
    FT_EPS,
    FT_T,
    FT_WD,
    FT_RG,
    FT_CLIP,
    FT_NATTRS,
    FT_B1T = FT_NATTRS,
    FT_B2T
};
enum { RA_NUM, RA_NATTRS };
enum { AG_LR, AG_EPS, AG_WD, AG_RG, AG_CLIP, AG_NATTRS };
enum { AD_RHO, AD_EPS, AD_WD, AD_RG, AD_CLIP, AD_NATTRS };

#endif
