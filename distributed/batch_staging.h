#pragma once
// BatchStaging: one GPU replica's batch slices on its device, in two slots,
// so that the next batch's host-to-device copy runs on the context's copy
// stream during the step before the one that uses it (Context::copy_ahead),
// and the compute stream waits for it by an event, not the host.
//
// A step takes its slice (take): the slot the step before copied it into
// when it is the same host batch, otherwise it is copied now, on the copy
// stream too. It then queues the next batch's slice into the other slot
// (copy_ahead), whose last reader, the step before, has finished: every step
// ends by waiting for its compute stream. The slots only grow in reserve()
// and take(), before the step's first collective; copy_ahead never
// allocates and skips a slice that does not fit.
//
// A batch of u8 pixels (HostBatch::raw_pixels) travels as its bytes and
// draws; take() then augments the slice on the compute stream
// (ops::augment_images) into a float buffer the staging keeps, and hands
// that out. The mean and std go to the device when their values change
// (a loader keeps the same for its life).
#include <cstdint>
#include <vector>

#include "distributed/batch_split.h"
#include "runtime/batch_source.h"
#include "runtime/context.h"

namespace lockstep {

class BatchStaging {
public:
  // Both slots hold slices of at least `count` samples of `batch`'s sample
  // shape. A slot that grows is freed after the compute stream has been
  // ordered behind every copy queued ahead (one may still be filling it).
  void reserve(Context& ctx, const HostBatch& batch, int64_t count);

  // `slice` of `batch` on the device, ordered before the compute stream's
  // later work. `ahead` tells whether the step before had copied it.
  struct Slices {
    Tensor images, labels;
    bool ahead = false;
  };
  Slices take(Context& ctx, const HostBatch& batch, Slice slice);

  // Queues the copy of `slice` of `next` into the slot the current step does
  // not use; false (and nothing queued) when it does not fit. `next` must
  // stay untouched until the step that takes it has returned.
  bool copy_ahead(Context& ctx, const HostBatch& next, Slice slice);

private:
  struct Slot {
    Tensor images, labels;  // capacity; views of the leading samples are handed out
    Tensor draws;           // with u8 images: each sample's draw
    const void* host_images = nullptr;  // what the slot holds: the host batch and slice
    const void* host_labels = nullptr;
    Slice slice{-1, -1};
  };
  static bool fits(const Slot& slot, const HostBatch& batch, int64_t count);
  bool augmented_fits(const HostBatch& batch, int64_t count) const;
  static Slices stage(Context& ctx, Slot& slot, const HostBatch& batch, Slice slice);
  // The slot's u8 slice augmented into augmented_, on the compute stream.
  Tensor augment(Context& ctx, const Slot& slot, const HostBatch& batch, int64_t count);

  Slot slots_[2];
  // u8 batches: the float images a step trains on, and the mean and std on
  // the device, with the values they were last copied from (mean, then std).
  Tensor augmented_, mean_, stddev_;
  std::vector<float> copied_stats_;
  int current_ = 0;
  int ahead_ = -1;  // the slot copy_ahead filled for the next take, or -1
};

}  // namespace lockstep
