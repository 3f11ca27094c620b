// The emulated cuDNN's pooling: forward and backward with the stand-in's own
// loops (direct_math.h), never the CPU kernels the emulated tests check them
// against, with strided descriptors gathered into
// packed planes and results blended back as y = alpha * op + beta * y.
#include <string>
#include <vector>

#include "emu/cudnn/internal.h"
#include "emu/cudnn/layout.h"
#include "emu/runtime/emu_runtime.h"
#include "emu/cudnn/direct_math.h"
#include "kernels/pool_geometry.h"

using namespace lockstep::emu::cudnn;

namespace {

struct PoolProblem {
  lockstep::PoolGeometry g;
  bool max = true;
  cudnnTensorStruct x, y;
};

// What the stand-in computes: square windows, one padding and stride,
// max (NaN propagated) or an average that counts the padding.
cudnnStatus_t resolve(const char* call, cudnnPoolingDescriptor_t pool, cudnnTensorDescriptor_t x,
                      cudnnTensorDescriptor_t y, PoolProblem& out) {
  if (!pool) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, at(call, "pooling descriptor is null"));
  if (!pool->set) return fail(CUDNN_STATUS_BAD_PARAM, at(call, "pooling descriptor never set"));
  if (cudnnStatus_t s = check_tensor(x, call, "x")) return s;
  if (cudnnStatus_t s = check_tensor(y, call, "y")) return s;
  // cudnnPoolingForward/Backward's configurations give x and y (dx, dy) one
  // data type: float, or bf16 computed in float (PSEUDO_BFLOAT16_CONFIG).
  if (x->type != y->type) return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, at(call, "x and y differ in data type"));
  const bool max = pool->mode == CUDNN_POOLING_MAX || pool->mode == CUDNN_POOLING_MAX_DETERMINISTIC;
  if (pool->mode == CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, at(call, "CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING is not emulated"));
  if (max && pool->nan != CUDNN_PROPAGATE_NAN)
    return fail(CUDNN_STATUS_NOT_SUPPORTED, at(call, "max pooling without NaN propagation is not emulated"));
  if (pool->window[0] != pool->window[1] || pool->pad[0] != pool->pad[1] || pool->stride[0] != pool->stride[1])
    return fail(CUDNN_STATUS_NOT_SUPPORTED, at(call, "different vertical and horizontal window, padding or stride"));
  const lockstep::PoolWindow window{pool->window[0], pool->stride[0], pool->pad[0]};
  const std::string why = lockstep::pool_error(x->dims[2], x->dims[3], window);
  if (!why.empty()) return fail(CUDNN_STATUS_BAD_PARAM, at(call, why));
  lockstep::PoolGeometry g = lockstep::pool_geometry(int64_t(x->dims[0]) * x->dims[1], x->dims[2], x->dims[3], window);
  const int expected[4] = {x->dims[0], x->dims[1], int(g.out_h), int(g.out_w)};
  for (int i = 0; i < 4; ++i)
    if (y->dims[i] != expected[i])
      return fail(CUDNN_STATUS_BAD_PARAM, at(call, "y " + dims_text(y->dims) + " is not the " + dims_text(expected) +
                                                       " that x " + dims_text(x->dims) + " and the window give"));
  out = PoolProblem{g, max, *x, *y};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t check_data(const char* call, int device, const cudnnTensorStruct& t, const void* p, const char* what) {
  return check_device_pointer(p, tensor_span_bytes(t), device, call, what);
}

cudnnStatus_t queue(cudnnHandle_t handle, const char* call, std::function<void()> work) {
  cudaError_t e = lockstep::emu::enqueue(handle->stream, call, std::move(work));
  if (e != cudaSuccess)
    return fail(CUDNN_STATUS_EXECUTION_FAILED_CUDART, at(call, std::string("queueing failed: ") + cudaGetErrorName(e)));
  return CUDNN_STATUS_SUCCESS;
}

DirectPool direct(const lockstep::PoolGeometry& g) {
  return {g.planes, g.in_h, g.in_w, g.out_h, g.out_w, g.window.kernel, g.window.stride, g.window.padding};
}

bool same_dims(const cudnnTensorStruct& a, const cudnnTensorStruct& b) {
  for (int i = 0; i < 4; ++i)
    if (a.dims[i] != b.dims[i]) return false;
  return true;
}

}  // namespace

extern "C" {

cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t pool, const void* alpha,
                                  const cudnnTensorDescriptor_t xd, const void* x, const void* beta,
                                  const cudnnTensorDescriptor_t yd, void* y) {
  const char* call = "cudnnPoolingForward";
  if (cudnnStatus_t s = check_handle(handle, call)) return s;
  if (!alpha || !beta) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, at(call, "alpha or beta is null"));
  PoolProblem p;
  if (cudnnStatus_t s = resolve(call, pool, xd, yd, p)) return s;
  if (cudnnStatus_t s = check_data(call, handle->device, p.x, x, "x")) return s;
  if (cudnnStatus_t s = check_data(call, handle->device, p.y, y, "y")) return s;
  if (self_overlapping(p.y)) return fail(CUDNN_STATUS_BAD_PARAM, at(call, "y's strides make elements overlap"));
  if (ranges_overlap(y, tensor_span_bytes(p.y), x, tensor_span_bytes(p.x)))
    return fail(CUDNN_STATUS_BAD_PARAM, at(call, "y overlaps x (not in place)"));
  const float a = scalar(alpha), b = scalar(beta);
  const void* in = x;
  void* out = y;
  return queue(handle, call, [p, a, b, in, out] {
    std::vector<float> xs(size_t(tensor_count(p.x))), ys(size_t(tensor_count(p.y)));
    gather(p.x, in, xs.data());
    if (p.max)
      direct_max_pool_forward(direct(p.g), xs.data(), ys.data());
    else
      direct_avg_pool_forward(direct(p.g), xs.data(), ys.data());
    blend(p.y, ys.data(), a, b, out);
  });
}

cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t handle, const cudnnPoolingDescriptor_t pool, const void* alpha,
                                   const cudnnTensorDescriptor_t yd, const void* y, const cudnnTensorDescriptor_t dyd,
                                   const void* dy, const cudnnTensorDescriptor_t xd, const void* x, const void* beta,
                                   const cudnnTensorDescriptor_t dxd, void* dx) {
  const char* call = "cudnnPoolingBackward";
  if (cudnnStatus_t s = check_handle(handle, call)) return s;
  if (!alpha || !beta) return fail(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, at(call, "alpha or beta is null"));
  PoolProblem p;
  if (cudnnStatus_t s = resolve(call, pool, xd, yd, p)) return s;
  if (cudnnStatus_t s = check_tensor(dyd, call, "dy")) return s;
  if (cudnnStatus_t s = check_tensor(dxd, call, "dx")) return s;
  if (dyd->type != p.x.type || dxd->type != p.x.type)
    return fail(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE, at(call, "dy and dx must have x's and y's data type"));
  if (!same_dims(*dyd, p.y) || !same_dims(*dxd, p.x))
    return fail(CUDNN_STATUS_BAD_PARAM, at(call, "dy " + dims_text(dyd->dims) + " and dx " + dims_text(dxd->dims) +
                                                     " must have the extents of y " + dims_text(p.y.dims) +
                                                     " and x " + dims_text(p.x.dims)));
  const cudnnTensorStruct dy_layout = *dyd, dx_layout = *dxd;
  const int device = handle->device;
  if (cudnnStatus_t s = check_data(call, device, p.y, y, "y")) return s;
  if (cudnnStatus_t s = check_data(call, device, dy_layout, dy, "dy")) return s;
  if (cudnnStatus_t s = check_data(call, device, p.x, x, "x")) return s;
  if (cudnnStatus_t s = check_data(call, device, dx_layout, dx, "dx")) return s;
  if (self_overlapping(dx_layout)) return fail(CUDNN_STATUS_BAD_PARAM, at(call, "dx's strides make elements overlap"));
  const size_t dx_bytes = tensor_span_bytes(dx_layout);
  if (ranges_overlap(dx, dx_bytes, dy, tensor_span_bytes(dy_layout)) ||
      ranges_overlap(dx, dx_bytes, x, tensor_span_bytes(p.x)) || ranges_overlap(dx, dx_bytes, y, tensor_span_bytes(p.y)))
    return fail(CUDNN_STATUS_BAD_PARAM, at(call, "dx overlaps an input (not in place)"));
  const float a = scalar(alpha), b = scalar(beta);
  const void *xin = x, *dyin = dy;
  void* out = dx;
  return queue(handle, call, [p, dy_layout, dx_layout, a, b, xin, dyin, out] {
    std::vector<float> xs(size_t(tensor_count(p.x))), dys(size_t(tensor_count(p.y))), dxs(xs.size());
    gather(dy_layout, dyin, dys.data());
    if (p.max) {
      // The arg-max is found again from x (the first on ties), as the
      // deterministic cuDNN mode routes each gradient to one place.
      gather(p.x, xin, xs.data());
      direct_max_pool_backward(direct(p.g), xs.data(), dys.data(), dxs.data());
    } else {
      direct_avg_pool_backward(direct(p.g), dys.data(), dxs.data());
    }
    blend(dx_layout, dxs.data(), a, b, out);
  });
}

}  // extern "C"
