#include "ops/batchnorm_combine.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "kernels/cpu/bn_combine_cpu.h"
#include "ops/checks.h"
#include "ops/dispatch.h"
#include "runtime/allocator.h"

#if LOCKSTEP_WITH_CUDA
#include "kernels/cuda/bn_combine_cuda.h"
#include "runtime/cuda/cuda_memory.h"
#endif

namespace lockstep::ops {

namespace {
// Floats that hold `bytes` bytes (the Tensor type has no double or byte dtype).
int64_t floats_for(size_t bytes) { return static_cast<int64_t>((bytes + sizeof(float) - 1) / sizeof(float)); }

// Field by field: the padding of two equal entries may differ.
bool same_layer(const BnCombineLayer& a, const BnCombineLayer& b) {
  return a.batch_mean == b.batch_mean && a.batch_var == b.batch_var && a.running_mean == b.running_mean &&
         a.running_var == b.running_var && a.channels == b.channels && a.offset == b.offset && a.count == b.count &&
         a.momentum == b.momentum;
}
}  // namespace

void BatchNormCombiner::build_table(Context& ctx, const std::vector<BatchNormState*>& layers) {
  const char* op = "batch-norm combination";
  table_.clear();
  sizes_ = {};
  max_channels_ = 0;
  for (BatchNormState* bn : layers) {
    LS_CHECK(bn && bn->running_mean.defined() && bn->running_var.defined(), op, ": layer '", (bn ? bn->name : ""),
             "' has no running statistics bound");
    const int64_t c = bn->running_mean.numel();
    check_shape_and_device(op, ctx, "batch mean", bn->batch_mean, Shape{c});
    check_shape_and_device(op, ctx, "batch variance", bn->batch_var, Shape{c});
    check_shape_and_device(op, ctx, "running mean", bn->running_mean, Shape{c});
    check_shape_and_device(op, ctx, "running variance", bn->running_var, Shape{c});
    LS_CHECK(bn->values_per_channel >= 0, op, ": layer '", bn->name, "' has ", bn->values_per_channel,
             " values per channel");
    table_.push_back({bn->batch_mean.data(), bn->batch_var.data(), bn->running_mean.data(), bn->running_var.data(), c,
                      sizes_.channels, static_cast<double>(bn->values_per_channel), bn->momentum});
    sizes_.channels += c;
    max_channels_ = std::max(max_channels_, c);
  }
  sizes_.layers = static_cast<int>(table_.size());
  const int64_t packed_floats = std::max<int64_t>(floats_for(sizes_.total() * sizeof(double)), 1);
  if (!packed_.defined() || packed_.numel() < packed_floats || packed_.device() != ctx.device())
    packed_ = Tensor::empty(Shape{packed_floats}, ctx.device());
  if (ctx.device().is_cpu()) return;
#if LOCKSTEP_WITH_CUDA
  const size_t table_bytes = table_.size() * sizeof(BnCombineLayer);
  const int64_t table_floats = std::max<int64_t>(floats_for(table_bytes), 1);
  if (!table_pinned_.defined() || table_pinned_.numel() < table_floats)
    table_pinned_ = Tensor::empty_with(Shape{table_floats}, pinned_host_allocator());
  if (!table_device_.defined() || table_device_.numel() < table_floats || table_device_.device() != ctx.device()) {
    table_device_ = Tensor::empty(Shape{table_floats}, ctx.device());
    uploaded_.clear();
  }
  if (std::equal(table_.begin(), table_.end(), uploaded_.begin(), uploaded_.end(), same_layer)) return;
  uploaded_ = table_;
  // The previous copy from the pinned table is done: a step ends with a read-back of the compute stream.
  std::memcpy(table_pinned_.raw(), table_.data(), table_bytes);
  cuda_copy_bytes_async(table_device_.raw(), table_pinned_.raw(), table_bytes, ctx.cuda()->compute_stream);
#endif
}

const BnCombineLayer* BatchNormCombiner::table_on_device() const {
  return static_cast<const BnCombineLayer*>(table_device_.raw());
}

double* BatchNormCombiner::packed() { return reinterpret_cast<double*>(packed_.raw()); }

void BatchNormCombiner::pack_means(Context& ctx, const std::vector<BatchNormState*>& layers, double weight) {
  build_table(ctx, layers);
  if (table_.empty()) return;
  dispatch("bn_combine_pack", ctx, [&] { cpu::bn_combine_pack(table_.data(), sizes_, weight, packed()); },
           LS_CUDA_TWIN(gpu, {
             cuda::bn_combine_pack(gpu.compute_stream, table_on_device(), sizes_, max_channels_, weight, packed());
           }));
}

BatchNormCombiner::Range BatchNormCombiner::means_and_counts() { return {packed(), sizes_.means_and_counts()}; }

void BatchNormCombiner::variance_terms(Context& ctx, double weight) {
  if (table_.empty()) return;
  dispatch("bn_combine_var_terms", ctx, [&] { cpu::bn_combine_var_terms(table_.data(), sizes_, weight, packed()); },
           LS_CUDA_TWIN(gpu, {
             cuda::bn_combine_var_terms(gpu.compute_stream, table_on_device(), sizes_, max_channels_, weight,
                                        packed());
           }));
}

BatchNormCombiner::Range BatchNormCombiner::variances() {
  return {packed() + sizes_.means_and_counts(), sizes_.channels};
}

void BatchNormCombiner::update_running(Context& ctx) {
  if (table_.empty()) return;
  dispatch("bn_combine_update", ctx, [&] { cpu::bn_combine_update(table_.data(), sizes_, packed()); },
           LS_CUDA_TWIN(gpu, {
             cuda::bn_combine_update(gpu.compute_stream, table_on_device(), sizes_, max_channels_, packed());
           }));
}

}  // namespace lockstep::ops
