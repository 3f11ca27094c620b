#include "distributed/batch_staging.h"

#include <vector>

#include "base/error.h"
#include "ops/augment.h"

namespace lockstep {

namespace {
Shape with_samples(const Shape& shape, int64_t count) {
  Shape s = shape;
  s[0] = count;
  return s;
}
}  // namespace

bool BatchStaging::fits(const Slot& slot, const HostBatch& batch, int64_t count) {
  return slot.images.defined() && slot.images.dim(0) >= count && slot.images.dtype() == batch.images.dtype() &&
         slot.images.shape().per_sample() == batch.images.shape().per_sample() &&
         slot.images.shape().rank() == batch.images.shape().rank() && slot.labels.defined() && slot.labels.dim(0) >= count &&
         slot.labels.shape().per_sample() == batch.labels.shape().per_sample() &&
         (!batch.raw_pixels() || (slot.draws.defined() && slot.draws.dim(0) >= count));
}

bool BatchStaging::augmented_fits(const HostBatch& batch, int64_t count) const {
  if (!batch.raw_pixels()) return true;
  const int64_t channels = batch.images.dim(1);
  return augmented_.defined() && augmented_.dim(0) >= count &&
         augmented_.shape().per_sample() == batch.images.shape().per_sample() && mean_.defined() &&
         mean_.numel() == channels;
}

void BatchStaging::reserve(Context& ctx, const HostBatch& batch, int64_t count) {
  const Device device = ctx.device();
  LS_CHECK(device.is_cuda(), "batch staging is for GPU replicas, got ", device.str());
  bool ordered = false;
  for (Slot& slot : slots_) {
    if (fits(slot, batch, count)) continue;
    // The old block's readers of earlier steps are done (each step ends by
    // waiting for its compute stream); a copy queued ahead may still write
    // it, so the compute stream, where its next user will be queued, waits
    // for that first. The slot no longer holds what was copied ahead.
    if (!ordered) ctx.wait_for_copies_ahead();
    ordered = true;
    if (ahead_ >= 0 && &slots_[ahead_] == &slot) ahead_ = -1;
    slot = Slot{};
    slot.images = Tensor::empty(with_samples(batch.images.shape(), count), device, batch.images.dtype());
    slot.labels = Tensor::empty(with_samples(batch.labels.shape(), count), device, batch.labels.dtype());
    if (batch.raw_pixels()) slot.draws = Tensor::empty(with_samples(batch.draws.shape(), count), device, DType::u8);
  }
  if (augmented_fits(batch, count)) return;
  // Its last reader, an earlier step, has finished, as for a slot.
  const int64_t channels = batch.images.dim(1);
  augmented_ = Tensor::empty(with_samples(batch.images.shape(), count), device);
  mean_ = Tensor::empty(Shape{channels}, device);
  stddev_ = Tensor::empty(Shape{channels}, device);
  copied_stats_.clear();
}

BatchStaging::Slices BatchStaging::stage(Context& ctx, Slot& slot, const HostBatch& batch, Slice slice) {
  Slices out;
  out.images = slot.images.batch_slice(0, slice.count);
  out.labels = slot.labels.batch_slice(0, slice.count);
  ctx.copy_ahead(batch.images.batch_slice(slice.offset, slice.count), out.images);
  ctx.copy_ahead(batch.labels.batch_slice(slice.offset, slice.count), out.labels);
  if (batch.raw_pixels()) {
    Tensor draws = slot.draws.batch_slice(0, slice.count);
    ctx.copy_ahead(batch.draws.batch_slice(slice.offset, slice.count), draws);
  }
  slot.host_images = batch.images.raw();
  slot.host_labels = batch.labels.raw();
  slot.slice = slice;
  return out;
}

BatchStaging::Slices BatchStaging::take(Context& ctx, const HostBatch& batch, Slice slice) {
  const int ahead = ahead_;
  ahead_ = -1;
  Slices out;
  if (ahead >= 0) {
    const Slot& s = slots_[ahead];
    if (s.host_images == batch.images.raw() && s.host_labels == batch.labels.raw() &&
        s.slice.offset == slice.offset && s.slice.count == slice.count) {
      current_ = ahead;
      out.images = s.images.batch_slice(0, slice.count);
      out.labels = s.labels.batch_slice(0, slice.count);
      out.ahead = true;
    }
  }
  if (!out.ahead) {
    reserve(ctx, batch, slice.count);
    current_ = 1 - current_;
    out = stage(ctx, slots_[current_], batch, slice);
  } else if (!augmented_fits(batch, slice.count)) {
    reserve(ctx, batch, slice.count);  // only the float buffer: the slots fit what was copied ahead
  }
  if (batch.raw_pixels()) {
    // By value, not by address: a freed host tensor's address may come back
    // holding other statistics.
    std::vector<float> stats = batch.mean.to_vector();
    const std::vector<float> stddev = batch.stddev.to_vector();
    stats.insert(stats.end(), stddev.begin(), stddev.end());
    if (stats != copied_stats_) {
      ctx.copy_ahead(batch.mean, mean_);
      ctx.copy_ahead(batch.stddev, stddev_);
      copied_stats_ = std::move(stats);
    }
  }
  ctx.wait_for_copies_ahead();
  if (batch.raw_pixels()) out.images = augment(ctx, slots_[current_], batch, slice.count);
  return out;
}

Tensor BatchStaging::augment(Context& ctx, const Slot& slot, const HostBatch& batch, int64_t count) {
  Tensor images = augmented_.batch_slice(0, count);
  ops::augment_images(ctx, slot.images.batch_slice(0, count), slot.draws.batch_slice(0, count), batch.crop_padding,
                      mean_, stddev_, images, batch.trivial);
  return images;
}

bool BatchStaging::copy_ahead(Context& ctx, const HostBatch& next, Slice slice) {
  Slot& other = slots_[1 - current_];
  if (slice.count == 0 || !fits(other, next, slice.count)) return false;
  stage(ctx, other, next, slice);
  ahead_ = 1 - current_;
  return true;
}

}  // namespace lockstep
