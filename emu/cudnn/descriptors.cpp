// Tensor, filter, convolution and pooling descriptors of the emulated cuDNN.
// Setting one checks what the real library checks at that point (positive
// extents, known enums: BAD_PARAM otherwise); whether the stand-in can compute
// with it (float only, no dilation or groups, square windows) is decided at
// execution, as cuDNN decides NOT_SUPPORTED there too.
#include <string>

#include "emu/cudnn/internal.h"

using namespace lockstep::emu::cudnn;

namespace {

bool known_type(cudnnDataType_t t) { return t >= CUDNN_DATA_FLOAT && t <= CUDNN_DATA_COMPLEX_FP64; }

template <typename T> cudnnStatus_t create(T** out, const char* call) {
  if (!out) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": null output");
  *out = new T{};
  return CUDNN_STATUS_SUCCESS;
}

std::string extents(int a, int b, int c, int d) {
  int dims[4] = {a, b, c, d};
  return dims_text(dims);
}

// Output extent of a dilated window along one axis (cuDNN's formula).
int conv_out(int in, int pad, int filter, int stride, int dilation) {
  return 1 + (in + 2 * pad - ((filter - 1) * dilation + 1)) / stride;
}

}  // namespace

extern "C" {

// ---- tensors ----

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* d) {
  return create(d, "cudnnCreateTensorDescriptor");
}

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t d, cudnnDataType_t type, int n, int c, int h,
                                           int w, int ns, int cs, int hs, int ws) {
  const char* call = "cudnnSetTensor4dDescriptorEx";
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": descriptor is null");
  if (!known_type(type)) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": unknown data type");
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": extents " + extents(n, c, h, w) + " must be positive");
  if (ns <= 0 || cs <= 0 || hs <= 0 || ws <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": strides " + extents(ns, cs, hs, ws) +
                                            " must be positive");
  *d = cudnnTensorStruct{true, type, {n, c, h, w}, {ns, cs, hs, ws}};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                                         cudnnDataType_t type, int n, int c, int h, int w) {
  const char* call = "cudnnSetTensor4dDescriptor";
  if (format == CUDNN_TENSOR_NCHW) return cudnnSetTensor4dDescriptorEx(d, type, n, c, h, w, c * h * w, h * w, w, 1);
  if (format == CUDNN_TENSOR_NHWC) return cudnnSetTensor4dDescriptorEx(d, type, n, c, h, w, h * w * c, 1, w * c, c);
  if (format == CUDNN_TENSOR_NCHW_VECT_C)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT, std::string(call) + ": CUDNN_TENSOR_NCHW_VECT_C is not emulated");
  return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": unknown format");
}

cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t d, cudnnDataType_t* type, int* n, int* c,
                                         int* h, int* w, int* ns, int* cs, int* hs, int* ws) {
  if (!d || !type || !n || !c || !h || !w || !ns || !cs || !hs || !ws)
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnGetTensor4dDescriptor: null argument");
  *type = d->type;
  *n = d->dims[0], *c = d->dims[1], *h = d->dims[2], *w = d->dims[3];
  *ns = d->strides[0], *cs = d->strides[1], *hs = d->strides[2], *ws = d->strides[3];
  return CUDNN_STATUS_SUCCESS;
}

// ---- filters ----

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* d) {
  return create(d, "cudnnCreateFilterDescriptor");
}

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t type, cudnnTensorFormat_t format,
                                         int k, int c, int h, int w) {
  const char* call = "cudnnSetFilter4dDescriptor";
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": descriptor is null");
  if (!known_type(type)) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": unknown data type");
  if (format < CUDNN_TENSOR_NCHW || format > CUDNN_TENSOR_NCHW_VECT_C)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": unknown format");
  if (k <= 0 || c <= 0 || h <= 0 || w <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": extents " + extents(k, c, h, w) + " must be positive");
  *d = cudnnFilterStruct{true, type, format, {k, c, h, w}};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t d, cudnnDataType_t* type,
                                         cudnnTensorFormat_t* format, int* k, int* c, int* h, int* w) {
  if (!d || !type || !format || !k || !c || !h || !w)
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnGetFilter4dDescriptor: null argument");
  *type = d->type, *format = d->format;
  *k = d->dims[0], *c = d->dims[1], *h = d->dims[2], *w = d->dims[3];
  return CUDNN_STATUS_SUCCESS;
}

// ---- convolutions ----

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* d) {
  return create(d, "cudnnCreateConvolutionDescriptor");
}

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h, int pad_w, int u, int v,
                                              int dilation_h, int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute) {
  const char* call = "cudnnSetConvolution2dDescriptor";
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": descriptor is null");
  if (pad_h < 0 || pad_w < 0) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": negative padding");
  if (u <= 0 || v <= 0) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": strides must be positive");
  if (dilation_h <= 0 || dilation_w <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": dilations must be positive");
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": unknown mode");
  if (!known_type(compute)) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": unknown compute type");
  const cudnnMathType_t math = d->math;
  const int groups = d->groups;
  *d = cudnnConvolutionStruct{true, {pad_h, pad_w}, {u, v}, {dilation_h, dilation_w}, mode, compute, math, groups};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t d, int* pad_h, int* pad_w, int* u,
                                              int* v, int* dilation_h, int* dilation_w, cudnnConvolutionMode_t* mode,
                                              cudnnDataType_t* compute) {
  if (!d || !pad_h || !pad_w || !u || !v || !dilation_h || !dilation_w || !mode || !compute)
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnGetConvolution2dDescriptor: null argument");
  *pad_h = d->pad[0], *pad_w = d->pad[1], *u = d->stride[0], *v = d->stride[1];
  *dilation_h = d->dilation[0], *dilation_w = d->dilation[1], *mode = d->mode, *compute = d->compute;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t math) {
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnSetConvolutionMathType: descriptor is null");
  if (math != CUDNN_DEFAULT_MATH && math != CUDNN_TENSOR_OP_MATH && math != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION &&
      math != CUDNN_FMA_MATH)
    return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionMathType: unknown math type");
  d->math = math;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t* math) {
  if (!d || !math) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnGetConvolutionMathType: null argument");
  *math = d->math;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groups) {
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnSetConvolutionGroupCount: descriptor is null");
  if (groups < 1) return fail(CUDNN_STATUS_BAD_PARAM, "cudnnSetConvolutionGroupCount: group count must be >= 1");
  d->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int* groups) {
  if (!d || !groups) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnGetConvolutionGroupCount: null argument");
  *groups = d->groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t conv,
                                                    const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
                                                    int* n, int* c, int* h, int* wd) {
  const char* call = "cudnnGetConvolution2dForwardOutputDim";
  if (!conv || !x || !w || !n || !c || !h || !wd)
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": null argument");
  if (!conv->set || !x->set || !w->set) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": unset descriptor");
  if (x->dims[1] != w->dims[1] * conv->groups)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": input channels " + std::to_string(x->dims[1]) +
                                            " differ from the filter's " + std::to_string(w->dims[1]));
  const int oh = conv_out(x->dims[2], conv->pad[0], w->dims[2], conv->stride[0], conv->dilation[0]);
  const int ow = conv_out(x->dims[3], conv->pad[1], w->dims[3], conv->stride[1], conv->dilation[1]);
  if (oh <= 0 || ow <= 0)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": the filter is larger than the padded input");
  *n = x->dims[0], *c = w->dims[0], *h = oh, *wd = ow;
  return CUDNN_STATUS_SUCCESS;
}

// ---- pooling ----

cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* d) {
  return create(d, "cudnnCreatePoolingDescriptor");
}

cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t d) {
  delete d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t d, cudnnPoolingMode_t mode,
                                          cudnnNanPropagation_t nan, int window_h, int window_w, int pad_v,
                                          int pad_h, int stride_v, int stride_h) {
  const char* call = "cudnnSetPooling2dDescriptor";
  if (!d) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": descriptor is null");
  if (mode < CUDNN_POOLING_MAX || mode > CUDNN_POOLING_MAX_DETERMINISTIC)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": unknown mode");
  if (nan != CUDNN_NOT_PROPAGATE_NAN && nan != CUDNN_PROPAGATE_NAN)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": unknown NaN option");
  if (window_h <= 0 || window_w <= 0 || stride_v <= 0 || stride_h <= 0 || pad_v < 0 || pad_h < 0)
    return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": window and stride must be positive, padding not negative");
  *d = cudnnPoolingStruct{true, mode, nan, {window_h, window_w}, {pad_v, pad_h}, {stride_v, stride_h}};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetPooling2dDescriptor(const cudnnPoolingDescriptor_t d, cudnnPoolingMode_t* mode,
                                          cudnnNanPropagation_t* nan, int* window_h, int* window_w, int* pad_v,
                                          int* pad_h, int* stride_v, int* stride_h) {
  if (!d || !mode || !nan || !window_h || !window_w || !pad_v || !pad_h || !stride_v || !stride_h)
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnGetPooling2dDescriptor: null argument");
  *mode = d->mode, *nan = d->nan, *window_h = d->window[0], *window_w = d->window[1];
  *pad_v = d->pad[0], *pad_h = d->pad[1], *stride_v = d->stride[0], *stride_h = d->stride[1];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetPooling2dForwardOutputDim(const cudnnPoolingDescriptor_t pool, const cudnnTensorDescriptor_t x,
                                                int* n, int* c, int* h, int* w) {
  const char* call = "cudnnGetPooling2dForwardOutputDim";
  if (!pool || !x || !n || !c || !h || !w)
    return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, std::string(call) + ": null argument");
  if (!pool->set || !x->set) return fail(CUDNN_STATUS_BAD_PARAM, std::string(call) + ": unset descriptor");
  *n = x->dims[0], *c = x->dims[1];
  *h = 1 + (x->dims[2] + 2 * pool->pad[0] - pool->window[0]) / pool->stride[0];
  *w = 1 + (x->dims[3] + 2 * pool->pad[1] - pool->window[1]) / pool->stride[1];
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
