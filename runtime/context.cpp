#include "runtime/context.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "runtime/memory_format_option.h"

#if LOCKSTEP_WITH_CUDA
#include "runtime/context_cuda.h"
#else
// Without the CUDA backend no CudaState is ever made: nothing to delete.
void std::default_delete<lockstep::CudaState>::operator()(lockstep::CudaState*) const {}
#endif

namespace lockstep {

Context::Context(Device device, ContextOptions options) : device_(device), options_(options) {
  options_.memory_format = resolve_memory_format(options, device);
  precision_policy_ = lockstep::precision_policy(options.precision, device);
  if (device.is_cuda()) {
#if LOCKSTEP_WITH_CUDA
    cuda_ = make_cuda_state(device.index, options_);
#else
    LS_FAIL("device ", device.str(), " asked for, but this build has no CUDA backend");
#endif
  }
}

Context::~Context() = default;

float* Context::workspace(size_t bytes) {
  if (!workspace_.defined() || workspace_.bytes() < bytes) {
    workspace_ = Tensor();  // free the old block first
    workspace_ = Tensor::empty(Shape{static_cast<int64_t>((bytes + 3) / 4)}, device_);
  }
  return workspace_.data();
}

void Context::synchronize() {
#if LOCKSTEP_WITH_CUDA
  if (cuda_) cuda_synchronize(*cuda_);
#endif
}

void Context::make_current() const {
#if LOCKSTEP_WITH_CUDA
  if (cuda_) cuda_make_current(*cuda_);
#endif
}

namespace {
// Checks a copy on a context of `device`; true when there is something to
// copy on a GPU (on the CPU it is done here).
bool prepare_copy(const Tensor& src, Tensor& dst, Device device) {
  LS_CHECK(src.numel() == dst.numel() && src.dtype() == dst.dtype(), "copy of ", src.shape().str(), " ",
           dtype_name(src.dtype()), " into ", dst.shape().str(), " ", dtype_name(dst.dtype()));
  for (const Tensor* t : {&src, static_cast<const Tensor*>(&dst)})
    LS_CHECK(t->device().is_cpu() || t->device() == device, "copy on a context of ", device.str(), " touches ",
             t->device().str());
  if (dst.numel() == 0) return false;
  if (device.is_cpu()) {
    std::memcpy(dst.raw(), src.raw(), dst.bytes());
    return false;
  }
  return true;
}
}  // namespace

void Context::copy(const Tensor& src, Tensor& dst) {
  if (!prepare_copy(src, dst, device_)) return;
#if LOCKSTEP_WITH_CUDA
  cuda_copy_on_compute(*cuda_, dst.raw(), src.raw(), dst.bytes());
#endif
}

void Context::copy_ahead(const Tensor& src, Tensor& dst) {
  if (!prepare_copy(src, dst, device_)) return;
#if LOCKSTEP_WITH_CUDA
  cuda_copy_ahead(*cuda_, dst.raw(), src.raw(), dst.bytes());
#endif
}

void Context::wait_for_copies_ahead() {
#if LOCKSTEP_WITH_CUDA
  if (cuda_) cuda_wait_for_copies_ahead(*cuda_);
#endif
}

namespace {
constexpr size_t kHostMarks = 64;
}  // namespace

int Context::mark_time() {
#if LOCKSTEP_WITH_CUDA
  if (cuda_) return cuda_mark_time(*cuda_);
#endif
  const size_t slot = host_marks_used_ % kHostMarks;
  if (slot == host_marks_.size()) host_marks_.emplace_back();
  host_marks_[slot] = std::chrono::steady_clock::now();
  return static_cast<int>(host_marks_used_++);
}

void Context::clear_marks() {
  host_marks_used_ = 0;
#if LOCKSTEP_WITH_CUDA
  if (cuda_) cuda_clear_marks(*cuda_);
#endif
}

double Context::seconds_between(int from, int to) {
#if LOCKSTEP_WITH_CUDA
  if (cuda_) return cuda_seconds_between(*cuda_, from, to);
#endif
  for (int m : {from, to})
    LS_CHECK(m >= 0 && static_cast<size_t>(m) < host_marks_used_ && host_marks_used_ - static_cast<size_t>(m) <= kHostMarks,
             "time mark ", m, " is not one of the last ", kHostMarks, " of ", host_marks_used_, " recorded");
  return std::chrono::duration<double>(host_marks_[to % kHostMarks] - host_marks_[from % kHostMarks]).count();
}

void Context::zero(Tensor& t) {
  LS_CHECK(t.device() == device_, "zero of a tensor on ", t.device().str(), " on a context of ", device_.str());
  if (t.numel() == 0) return;
  if (!cuda_) {
    std::memset(t.raw(), 0, t.bytes());
    return;
  }
#if LOCKSTEP_WITH_CUDA
  cuda_zero_on_compute(*cuda_, t.raw(), t.bytes());
#endif
}

}  // namespace lockstep
