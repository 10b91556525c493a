/* GPU kernels of the optimizer updates (ops/optimizer.c): every update op there, reset_arrays,
 * _adagrad_update and _adadelta_update, for float16, float32 and float64 weights (all the CPU
 * accepts).
 *
 * One thread per element runs the CPU kernel's body in the same order of loads and stores, so
 * the results match it up to float rounding (nvcc may fuse a multiply and an add), and the
 * in-place contract holds: out may be the weight (the Python optimizer passes out=weight), and a
 * body that re-reads the weight after writing the output (NAG) sees what the CPU sees. States in
 * the weight's dtype are stored and re-read as the CPU does, so float16 states round alike.
 *
 * Scalar attributes are MXNet's float32 values: job_init rounds them through float, and the
 * bodies compute in float for float16/float32 weights and in double for float64 ones. Values the
 * CPU reads from one-element arrays (AdamW's rescale_grad, LAMB's norms) are read by every thread
 * from device memory, never by the host, so nothing waits for the GPU.
 */
#include <cuda_fp16.h>
#include <math.h>
#include <string.h>

#include "kernels/cuda/cuda_rt.h"
#include "kernels/cuda/half_bits.h"
#include "kernels/cuda/kernel_util.h"

extern "C" {
#include "ops/optimizer.h"

/* ops/ops_util.h (its graph headers are C only): MXNet's Tuple<float> attribute text into v. */
int hg_ops_parse_floats(const hg_op_def *op, const char *attr, const char *text, float *v, int max,
                        bool min_one);
}

namespace
{

#define OPT_MAX_IN 6
#define MULTI_MAX_WEIGHTS (HG_MAX_STR / 2) /* optimizer.c's bound on num_weights */

/* What a kernel needs: the arrays (device pointers) and the attributes in schema order as
 * MXNet's float32 values, with job parameters after them (optimizer.h). */
struct opt_args {
    void *in[OPT_MAX_IN];
    void *out;
    double p[HG_MAX_ATTRS];
};

/* Element access in the weight's storage type; R is the type the CPU computes in. */
struct S_f32 {
    typedef float R;
    typedef float raw;
    static __device__ __forceinline__ R ld(const void *p, int64_t i)
    {
        return ((const float *)p)[i];
    }
    static __device__ __forceinline__ void st(void *p, int64_t i, R v) { ((float *)p)[i] = v; }
};
struct S_f64 {
    typedef double R;
    typedef double raw;
    static __device__ __forceinline__ R ld(const void *p, int64_t i)
    {
        return ((const double *)p)[i];
    }
    static __device__ __forceinline__ void st(void *p, int64_t i, R v) { ((double *)p)[i] = v; }
};
struct S_f16 {
    typedef float R;
    typedef uint16_t raw;
    static __device__ __forceinline__ R ld(const void *p, int64_t i)
    {
        return h2f(((const uint16_t *)p)[i]);
    }
    static __device__ __forceinline__ void st(void *p, int64_t i, R v)
    {
        ((uint16_t *)p)[i] = f2h(v);
    }
};

__device__ __forceinline__ float SQRT(float x) { return sqrtf(x); }
__device__ __forceinline__ double SQRT(double x) { return sqrt(x); }
/* mshadow_op::clip: NaN passes through. */
template <class T> __device__ __forceinline__ T CLIP(T x, T b)
{
    return x > b ? b : (x < -b ? -b : x);
}
template <class T> __device__ __forceinline__ T SIGN(T x) { return (T)((x > 0) - (x < 0)); }

/* The body macros read like optimizer.c's: P(k) an attribute in the compute type, LD/ST element
 * access in the weight's storage type, W/G/S(k) the inputs, F32(k) a float32 input (mp_*). */
#define P(k) ((R)j.p[k])
#define LD(p, i) S::ld(p, i)
#define ST(p, i, v) S::st(p, i, v)
#define W j.in[0]
#define G j.in[1]
#define S_(k) j.in[2 + (k)]
#define F32(k) ((float *)j.in[k])
#define BODY(NAME)                                                                             \
    template <class S> struct NAME {                                                           \
        typedef typename S::R R;                                                               \
        static __device__ __forceinline__ void run(const opt_args &j, int64_t i);              \
    };                                                                                         \
    template <class S> __device__ __forceinline__ void NAME<S>::run(const opt_args &j, int64_t i)

/* ---- SGD, momentum, NAG ---------------------------------------------------------------------- */

BODY(sgd_body)
{
    const R lr = P(SGD_LR), wd = P(SGD_WD), rg = P(SGD_RG), cg = P(SGD_CLIP);
    const R w = LD(W, i), g = LD(G, i);
    ST(j.out, i,
       cg >= 0 ? (1 - lr * wd) * w - lr * CLIP(rg * g, cg) : (1 - lr * wd) * w - (lr * rg) * g);
}

BODY(sgd_mom_body)
{
    const R lr = P(SGDM_LR), mu = P(SGDM_MOM), wd = P(SGDM_WD), rg = P(SGDM_RG);
    const R cg = P(SGDM_CLIP), w = LD(W, i), g = LD(G, i);
    R m = LD(S_(0), i);
    m = cg >= 0 ? mu * m - lr * wd * w - lr * CLIP(rg * g, cg) : mu * m - lr * wd * w - lr * rg * g;
    ST(S_(0), i, m);
    ST(j.out, i, w + LD(S_(0), i));
}

/* mp: inputs (weight, grad, weight32). */
BODY(mp_sgd_body)
{
    const float lr = (float)j.p[SGD_LR], wd = (float)j.p[SGD_WD];
    const float rg = (float)j.p[SGD_RG], cg = (float)j.p[SGD_CLIP];
    const float g = (float)LD(G, i);
    float w = F32(2)[i];
    w = cg >= 0 ? (1 - lr * wd) * w - lr * CLIP(rg * g, cg) : (1 - lr * wd) * w - (lr * rg) * g;
    F32(2)[i] = w;
    ST(j.out, i, (R)w);
}

/* mp: inputs (weight, grad, mom, weight32). */
BODY(mp_sgd_mom_body)
{
    const float lr = (float)j.p[SGDM_LR], mu = (float)j.p[SGDM_MOM];
    const float wd = (float)j.p[SGDM_WD], rg = (float)j.p[SGDM_RG];
    const float cg = (float)j.p[SGDM_CLIP], g = (float)LD(G, i);
    float w = F32(3)[i], m = F32(2)[i];
    m = cg >= 0 ? mu * m - lr * wd * w - lr * CLIP(rg * g, cg) : mu * m - lr * wd * w - lr * rg * g;
    F32(2)[i] = m;
    w = w + m;
    F32(3)[i] = w;
    ST(j.out, i, (R)w);
}

/* The momentum's weight decay term re-reads the weight after the output is written, as the CPU
 * (and MXNet) do: with out=weight it is the new weight. */
BODY(nag_body)
{
    const R lr = P(NAG_LR), mu = P(NAG_MOM), wd = P(NAG_WD), rg = P(NAG_RG);
    const R cg = P(NAG_CLIP), w = LD(W, i), g = LD(G, i);
    const R gr = cg >= 0 ? CLIP(rg * g, cg) : rg * g;
    ST(S_(0), i, mu * LD(S_(0), i));
    const R m = LD(S_(0), i);
    ST(j.out, i, w - m + (mu + 1) * (m - lr * (gr + wd * w)));
    ST(S_(0), i, m - lr * (gr + wd * LD(W, i)));
}

BODY(mp_nag_body)
{
    const float lr = (float)j.p[NAG_LR], mu = (float)j.p[NAG_MOM];
    const float wd = (float)j.p[NAG_WD], rg = (float)j.p[NAG_RG];
    const float cg = (float)j.p[NAG_CLIP], g = (float)LD(G, i);
    const float gr = cg >= 0 ? CLIP(rg * g, cg) : rg * g;
    float w = F32(3)[i], m = mu * F32(2)[i];
    w = w - m + (mu + 1) * (m - lr * (gr + wd * w));
    F32(2)[i] = m - lr * (gr + wd * w);
    F32(3)[i] = w;
    ST(j.out, i, (R)w);
}

/* ---- Adam, AdamW ----------------------------------------------------------------------------- */

BODY(adam_body)
{
    const R lr = P(ADAM_LR), b1 = P(ADAM_B1), b2 = P(ADAM_B2), eps = P(ADAM_EPS);
    const R wd = P(ADAM_WD), rg = P(ADAM_RG), cg = P(ADAM_CLIP);
    const R w = LD(W, i);
    R gr = LD(G, i) * rg + w * wd;
    if (cg >= 0) gr = CLIP(gr, cg);
    ST(S_(0), i, b1 * LD(S_(0), i) + (1 - b1) * gr);
    ST(S_(1), i, b2 * LD(S_(1), i) + (1 - b2) * gr * gr);
    ST(j.out, i, w - lr * LD(S_(0), i) / (SQRT(LD(S_(1), i)) + eps));
}

/* A non-finite or zero rescale_grad (a one-value float32 array) skips the step: the output is
 * the weight's bits, nothing else changes. */
template <class S>
__device__ __forceinline__ bool adamw_skip(const opt_args &j, const void *scale, int64_t i,
                                           float *rg)
{
    *rg = *(const float *)scale;
    if (isfinite(*rg) && *rg != 0) return false;
    typedef typename S::raw T;
    if (j.out != W) ((T *)j.out)[i] = ((const T *)W)[i];
    return true;
}

/* Inputs (weight, grad, mean, var, rescale_grad). */
BODY(adamw_body)
{
    float scale;
    if (adamw_skip<S>(j, j.in[4], i, &scale)) return;
    const R lr = P(ADW_LR), b1 = P(ADW_B1), b2 = P(ADW_B2), eps = P(ADW_EPS);
    const R wd = P(ADW_WD), eta = P(ADW_ETA), cg = P(ADW_CLIP), rg = (R)scale;
    const R w = LD(W, i);
    R gr = rg * LD(G, i);
    if (cg >= 0) gr = CLIP(gr, cg);
    ST(S_(0), i, b1 * LD(S_(0), i) + (1 - b1) * gr);
    ST(S_(1), i, b2 * LD(S_(1), i) + (1 - b2) * gr * gr);
    ST(j.out, i, w - eta * (lr * LD(S_(0), i) / (SQRT(LD(S_(1), i)) + eps) + wd * w));
}

/* Inputs (weight, grad, mean, var, weight32, rescale_grad). */
BODY(mp_adamw_body)
{
    float rg;
    if (adamw_skip<S>(j, j.in[5], i, &rg)) return;
    const float lr = (float)j.p[ADW_LR], b1 = (float)j.p[ADW_B1];
    const float b2 = (float)j.p[ADW_B2], eps = (float)j.p[ADW_EPS];
    const float wd = (float)j.p[ADW_WD], eta = (float)j.p[ADW_ETA];
    const float cg = (float)j.p[ADW_CLIP];
    float w = F32(4)[i];
    float gr = rg * (float)LD(G, i);
    if (cg >= 0) gr = CLIP(gr, cg);
    const float m = b1 * F32(2)[i] + (1 - b1) * gr;
    const float v = b2 * F32(3)[i] + (1 - b2) * gr * gr;
    F32(2)[i] = m;
    F32(3)[i] = v;
    w = w - eta * (lr * m / (sqrtf(v) + eps) + wd * w);
    F32(4)[i] = w;
    ST(j.out, i, (R)w);
}

/* ---- RMSProp, signSGD, Signum, FTRL ---------------------------------------------------------- */

BODY(rmsprop_body)
{
    const R lr = P(RMS_LR), g1 = P(RMS_G1), eps = P(RMS_EPS), wd = P(RMS_WD);
    const R rg = P(RMS_RG), cg = P(RMS_CLIP), cw = P(RMS_CLIPW);
    const R w = LD(W, i);
    R gr = rg * LD(G, i) + wd * w;
    if (cg >= 0) gr = CLIP(gr, cg);
    ST(S_(0), i, (1 - g1) * (gr * gr) + g1 * LD(S_(0), i));
    R nw = w - lr * (gr / SQRT(LD(S_(0), i) + eps));
    if (cw >= 0) nw = CLIP(nw, cw);
    ST(j.out, i, nw);
}

BODY(rmspropalex_body)
{
    const R lr = P(RMSA_LR), g1 = P(RMSA_G1), g2 = P(RMSA_G2), eps = P(RMSA_EPS);
    const R wd = P(RMSA_WD), rg = P(RMSA_RG), cg = P(RMSA_CLIP), cw = P(RMSA_CLIPW);
    const R w = LD(W, i);
    R gr = rg * LD(G, i) + wd * w;
    if (cg >= 0) gr = CLIP(gr, cg);
    ST(S_(0), i, (1 - g1) * gr * gr + g1 * LD(S_(0), i));
    ST(S_(1), i, (1 - g1) * gr + g1 * LD(S_(1), i));
    const R n = LD(S_(0), i), gm = LD(S_(1), i);
    ST(S_(2), i, g2 * LD(S_(2), i) - (lr * gr / SQRT(n - gm * gm + eps)));
    R nw = w + LD(S_(2), i);
    if (cw >= 0) nw = CLIP(nw, cw);
    ST(j.out, i, nw);
}

BODY(signsgd_body)
{
    const R lr = P(SSGD_LR), wd = P(SSGD_WD), g = LD(G, i);
    ST(j.out, i, (1 - lr * wd) * LD(W, i) - lr * SIGN(g));
}

BODY(signum_body)
{
    const R lr = P(SGNM_LR), mu = P(SGNM_MOM), wd = P(SGNM_WD), rg = P(SGNM_RG);
    const R cg = P(SGNM_CLIP), wdlh = P(SGNM_WDLH), w = LD(W, i), g = LD(G, i);
    R m = LD(S_(0), i);
    m = cg >= 0 ? mu * m - (1 - mu) * wd * w - (1 - mu) * CLIP(rg * g, cg)
                : mu * m - (1 - mu) * wd * w - (1 - mu) * rg * g;
    ST(S_(0), i, m);
    m = LD(S_(0), i);
    ST(j.out, i, (1 - lr * wdlh) * w + lr * SIGN(m));
}

BODY(ftrl_body)
{
    const R lr = P(FTRL_LR), l1 = P(FTRL_L1), beta = P(FTRL_BETA), wd = P(FTRL_WD);
    const R rg = P(FTRL_RG), cg = P(FTRL_CLIP), w = LD(W, i);
    R gr = LD(G, i) * rg;
    if (cg >= 0) gr = CLIP(gr, cg);
    const R n0 = LD(S_(1), i);
    ST(S_(0), i, LD(S_(0), i) + (gr - (SQRT(n0 + gr * gr) - SQRT(n0)) * w / lr));
    ST(S_(1), i, n0 + gr * gr);
    const R z = LD(S_(0), i), n = LD(S_(1), i);
    ST(j.out, i, (SIGN(z) * l1 - z) / ((beta + SQRT(n)) / lr + wd) * (R)(z > l1 || z < -l1));
}

/* ---- LAMB, FTML ------------------------------------------------------------------------------ */

BODY(lamb1_body)
{
    const R b1 = P(L1_B1), b2 = P(L1_B2), eps = P(L1_EPS), wd = P(L1_WD);
    const R rg = P(L1_RG), cg = P(L1_CLIP), b1t = P(L1_B1T), b2t = P(L1_B2T);
    R gr = LD(G, i) * rg;
    if (cg >= 0) gr = CLIP(gr, cg);
    ST(S_(0), i, b1 * LD(S_(0), i) + (1 - b1) * gr);
    ST(S_(1), i, b2 * LD(S_(1), i) + (1 - b2) * gr * gr);
    R m = LD(S_(0), i), v = LD(S_(1), i);
    if (j.p[L1_BIAS] != 0) {
        m = m / (1 - b1t);
        v = v / (1 - b2t);
    }
    ST(j.out, i, m / (SQRT(v) + eps) + wd * LD(W, i));
}

/* Phase 2 reads the norms r1 = |weight|, r2 = |g| (one value each, the weight's dtype) on the
 * device and forms the rate as the CPU forward does on the host. */
BODY(lamb2_body)
{
    const double lb = j.p[L2_LB], ub = j.p[L2_UB];
    double r1 = (double)LD(j.in[2], 0), r2 = (double)LD(j.in[3], 0), lr = j.p[L2_LR];
    if (lb >= 0) r1 = fmax(r1, lb);
    if (ub >= 0) r1 = fmin(r1, ub);
    if (r1 != 0 && r2 != 0) {
        if (sizeof(R) == sizeof(double)) lr = lr * r1 / r2;
        else lr = (float)lr * (float)r1 / (float)r2; /* in the weight's precision */
    }
    const R rate = (R)lr;
    ST(j.out, i, LD(W, i) - rate * LD(G, i));
}

/* mp phase 1: inputs (weight, grad, mean, var, weight32); the output is float32. */
BODY(mplamb1_body)
{
    const float b1 = (float)P(L1_B1), b2 = (float)P(L1_B2), eps = (float)P(L1_EPS);
    const float wd = (float)P(L1_WD), rg = (float)P(L1_RG), cg = (float)P(L1_CLIP);
    float gr = (float)LD(G, i) * rg;
    if (cg >= 0) gr = CLIP(gr, cg);
    F32(2)[i] = b1 * F32(2)[i] + (1 - b1) * gr;
    F32(3)[i] = b2 * F32(3)[i] + (1 - b2) * gr * gr;
    float m = F32(2)[i], v = F32(3)[i];
    if (j.p[L1_BIAS] != 0) {
        m = (float)(m / (1. - j.p[L1_B1T]));
        v = v / (1 - (float)j.p[L1_B2T]);
    }
    ((float *)j.out)[i] = m / (sqrtf(v) + eps) + wd * F32(4)[i];
}

/* mp phase 2: inputs (weight, g, r1, r2, weight32); g, r1, r2 and weight32 are float32. */
BODY(mplamb2_body)
{
    float r1 = F32(2)[0], r2 = F32(3)[0], lr = (float)j.p[L2_LR];
    if (j.p[L2_LB] >= 0) r1 = fmaxf(r1, (float)j.p[L2_LB]);
    if (j.p[L2_UB] >= 0) r1 = fminf(r1, (float)j.p[L2_UB]);
    if (r1 != 0.0f && r2 != 0.0f) lr = lr * r1 / r2;
    const float rate = lr;
    ST(j.out, i, (R)(F32(4)[i] - rate * F32(1)[i]));
}

BODY(ftml_body)
{
    const R lr = P(FT_LR), b1 = P(FT_B1), b2 = P(FT_B2), eps = P(FT_EPS), wd = P(FT_WD);
    const R rg = P(FT_RG), cg = P(FT_CLIP), b1t = P(FT_B1T), b2t = P(FT_B2T);
    const R w = LD(W, i);
    R gr = rg * LD(G, i) + wd * w;
    if (cg >= 0) gr = CLIP(gr, cg);
    const R v = b2 * LD(S_(1), i) + (1 - b2) * gr * gr;
    ST(S_(1), i, v);
    const R dt = (1 - b1t) / lr * (SQRT(LD(S_(1), i) / (1 - b2t)) + eps);
    const R z = b1 * LD(S_(2), i) + (1 - b1) * gr - (dt - b1 * LD(S_(0), i)) * w;
    ST(S_(2), i, z);
    ST(S_(0), i, dt);
    ST(j.out, i, -LD(S_(2), i) / LD(S_(0), i));
}

/* ---- AdaGrad, AdaDelta ----------------------------------------------------------------------- */

BODY(adagrad_body)
{
    const R lr = P(AG_LR), eps = P(AG_EPS), wd = P(AG_WD), rg = P(AG_RG);
    const R cg = P(AG_CLIP), w = LD(W, i);
    R gr = LD(G, i) * rg;
    if (cg >= 0) gr = CLIP(gr, cg);
    ST(S_(0), i, LD(S_(0), i) + gr * gr);
    const R div = gr / SQRT(LD(S_(0), i) + eps);
    ST(j.out, i, w + (div + w * wd) * -lr);
}

BODY(adadelta_body)
{
    const R rho = P(AD_RHO), eps = P(AD_EPS), wd = P(AD_WD), rg = P(AD_RG);
    const R cg = P(AD_CLIP), w = LD(W, i);
    R gr = LD(G, i) * rg;
    if (cg >= 0) gr = CLIP(gr, cg);
    ST(S_(0), i, LD(S_(0), i) * rho + (1 - rho) * gr * gr);
    const R d = SQRT(LD(S_(1), i) + eps) / SQRT(LD(S_(0), i) + eps) * gr;
    ST(S_(1), i, LD(S_(1), i) * rho + (1 - rho) * d * d);
    ST(j.out, i, w - (d + wd * w));
}

#undef BODY

/* ---- launching ------------------------------------------------------------------------------- */

template <template <class> class B, class S> __global__ void opt_kernel(opt_args j, int64_t n)
{
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
        B<S>::run(j, i);
}

/* Runs body B over n elements for a weight of dtype dt (infer accepted only float types). */
template <template <class> class B>
hg_status launch(const hg_op_def *op, const hg_exec_ctx *ctx, hg_dtype dt, const opt_args &j,
                 int64_t n)
{
    if (n <= 0) return HG_OK;
    cudaStream_t s;
    HG_TRY(stream_of(ctx->device_id, &s));
    const unsigned blocks = hg_cuda_blocks(n);
    switch (dt) {
    case HG_DTYPE_F32: opt_kernel<B, S_f32><<<blocks, HG_CUDA_THREADS, 0, s>>>(j, n); break;
    case HG_DTYPE_F64: opt_kernel<B, S_f64><<<blocks, HG_CUDA_THREADS, 0, s>>>(j, n); break;
    case HG_DTYPE_F16: opt_kernel<B, S_f16><<<blocks, HG_CUDA_THREADS, 0, s>>>(j, n); break;
    default:
        return hg_error(HG_ERR_TYPE, "%s: dtype %s is not supported on GPU", op->name,
                        hg_dtype_name(dt));
    }
    return hg_cuda_launched(op->name);
}

/* optimizer.c's job_init: the arrays and the attributes as MXNet's float32 params. */
void job_init(opt_args *j, const hg_op_def *op, const hg_attrs *a, int nin, hg_tensor *const *in,
              hg_tensor *out)
{
    memset(j, 0, sizeof *j);
    for (int k = 0; k < nin && k < OPT_MAX_IN; k++) j->in[k] = hg_data(in[k]);
    j->out = hg_data(out);
    for (int k = 0; k < op->num_attrs && k < HG_MAX_ATTRS; k++) {
        const hg_attr_value *v = &a->v[k];
        switch (op->attrs[k].type) {
        case HG_ATTR_FLOAT: j->p[k] = (double)(float)v->f; break;
        case HG_ATTR_INT: j->p[k] = (double)v->i; break;
        case HG_ATTR_BOOL: j->p[k] = v->b ? 1.0 : 0.0; break;
        default: break;
        }
    }
}

/* The forward of every op whose attributes (and device arrays) are all its body needs. */
template <template <class> class B>
hg_status plain_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                    hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    opt_args j;
    job_init(&j, op, a, nin, in, out[0]);
    return launch<B>(op, ctx, in[0]->dtype, j, out[0]->size);
}

/* LAMB phase 1 and FTML: beta^t as the CPU forms it, std::pow(float beta, int t), rounded to
 * float unless the weight is float64 (mp: always float). */
hg_status lamb1_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                    hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    opt_args j;
    job_init(&j, op, a, nin, in, out[0]);
    const double t = (double)a->v[L1_T].i;
    j.p[L1_B1T] = pow(j.p[L1_B1], t);
    j.p[L1_B2T] = pow(j.p[L1_B2], t);
    if (in[0]->dtype != HG_DTYPE_F64) {
        j.p[L1_B1T] = (float)j.p[L1_B1T];
        j.p[L1_B2T] = (float)j.p[L1_B2T];
    }
    return launch<lamb1_body>(op, ctx, in[0]->dtype, j, out[0]->size);
}

hg_status mplamb1_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                      hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    opt_args j;
    job_init(&j, op, a, nin, in, out[0]);
    j.p[L1_B1T] = (float)pow(j.p[L1_B1], (double)a->v[L1_T].i);
    j.p[L1_B2T] = (float)pow(j.p[L1_B2], (double)a->v[L1_T].i);
    return launch<mplamb1_body>(op, ctx, in[0]->dtype, j, out[0]->size);
}

hg_status ftml_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                   hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    opt_args j;
    job_init(&j, op, a, nin, in, out[0]);
    j.p[FT_B1T] = pow(j.p[FT_B1], (double)a->v[FT_T].i);
    j.p[FT_B2T] = pow(j.p[FT_B2], (double)a->v[FT_T].i);
    if (in[0]->dtype != HG_DTYPE_F64) {
        j.p[FT_B1T] = (float)j.p[FT_B1T];
        j.p[FT_B2T] = (float)j.p[FT_B2T];
    }
    return launch<ftml_body>(op, ctx, in[0]->dtype, j, out[0]->size);
}

/* _multi_adamw_update / _multi_mp_adamw_update: num_weights groups of 4 (5 with weight32) inputs
 * then one rescale_grad; each group is one launch of the single-weight body, whose rescale_grad
 * input is the shared last array. */
hg_status multi_adamw_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                          hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    const int st = strstr(op->name, "_mp_") ? 5 : 4;
    const int keys[3] = {MADW_LRS, MADW_WDS, MADW_ETAS};
    float v[3][MULTI_MAX_WEIGHTS]; /* lrs, wds, etas */
    for (int t = 0; t < 3; t++) {
        int n = hg_ops_parse_floats(op, op->attrs[keys[t]].name, a->v[keys[t]].s, v[t],
                                    MULTI_MAX_WEIGHTS, false);
        if (n < 0) return HG_ERR_VALUE;
        if (n != nout)
            return hg_error(HG_ERR_VALUE, "%s: %s has %d values for num_weights=%d", op->name,
                            op->attrs[keys[t]].name, n, nout);
    }
    for (int k = 0; k < nout; k++) {
        opt_args j;
        memset(&j, 0, sizeof j);
        for (int i = 0; i < st; i++) j.in[i] = hg_data(in[k * st + i]);
        j.in[st] = hg_data(in[nin - 1]);
        j.out = hg_data(out[k]);
        j.p[ADW_LR] = v[0][k];
        j.p[ADW_B1] = (float)a->v[MADW_B1].f;
        j.p[ADW_B2] = (float)a->v[MADW_B2].f;
        j.p[ADW_EPS] = (float)a->v[MADW_EPS].f;
        j.p[ADW_WD] = v[1][k];
        j.p[ADW_ETA] = v[2][k];
        j.p[ADW_CLIP] = (float)a->v[MADW_CLIP].f;
        hg_dtype dt = in[k * st]->dtype;
        if (st == 5) HG_TRY(launch<mp_adamw_body>(op, ctx, dt, j, out[k]->size));
        else HG_TRY(launch<adamw_body>(op, ctx, dt, j, out[k]->size));
    }
    return HG_OK;
}

/* reset_arrays: every input set to zero bits (0 in every dtype), in stream order. */
hg_status reset_arrays_gpu(const hg_op_def *op, const hg_attrs *a, const hg_exec_ctx *ctx, int nin,
                           hg_tensor *const *in, int nout, hg_tensor *const *out)
{
    cudaStream_t s;
    HG_TRY(stream_of(ctx->device_id, &s));
    for (int k = 0; k < nin; k++) {
        size_t n = (size_t)in[k]->size * hg_dtype_size(in[k]->dtype);
        if (n) HG_TRY(hg_cuda_status(cudaMemsetAsync(hg_data(in[k]), 0, n, s), op->name));
    }
    return HG_OK;
}

} // namespace

extern "C" const hg_gpu_kernel hg_gpu_kernels_optim[] = {
    {"sgd_update", plain_gpu<sgd_body>},
    {"sgd_mom_update", plain_gpu<sgd_mom_body>},
    {"mp_sgd_update", plain_gpu<mp_sgd_body>},
    {"mp_sgd_mom_update", plain_gpu<mp_sgd_mom_body>},
    {"nag_mom_update", plain_gpu<nag_body>},
    {"mp_nag_mom_update", plain_gpu<mp_nag_body>},
    {"adam_update", plain_gpu<adam_body>},
    {"_adamw_update", plain_gpu<adamw_body>},
    {"_mp_adamw_update", plain_gpu<mp_adamw_body>},
    {"_multi_adamw_update", multi_adamw_gpu},
    {"_multi_mp_adamw_update", multi_adamw_gpu},
    {"rmsprop_update", plain_gpu<rmsprop_body>},
    {"rmspropalex_update", plain_gpu<rmspropalex_body>},
    {"signsgd_update", plain_gpu<signsgd_body>},
    {"signum_update", plain_gpu<signum_body>},
    {"ftrl_update", plain_gpu<ftrl_body>},
    {"lamb_update_phase1", lamb1_gpu},
    {"lamb_update_phase2", plain_gpu<lamb2_body>},
    {"mp_lamb_update_phase1", mplamb1_gpu},
    {"mp_lamb_update_phase2", plain_gpu<mplamb2_body>},
    {"ftml_update", ftml_gpu},
    {"reset_arrays", reset_arrays_gpu},
    {"_adagrad_update", plain_gpu<adagrad_body>},
    {"_adadelta_update", plain_gpu<adadelta_body>},
    {NULL, NULL},
};
