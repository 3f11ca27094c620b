#pragma once
// The interface the trainer pulls global batches from. data/'s loader
// implements it; the engine knows no file format.
#include <cstdint>

#include "runtime/shape.h"
#include "runtime/tensor.h"

namespace lockstep {

// One global batch in (pinned) host memory: labels [count] as i32, and
// images [count, C, H, W], either as f32 ready to train on, or as u8 decoded
// pixels that the replica augments on its own device (ops::augment_images),
// a quarter of the bytes to copy. The replica manager cuts it into
// consecutive slices.
struct HostBatch {
  Tensor images;
  Tensor labels;
  int64_t count = 0;
  // With u8 images, what turns them into the f32 images a step trains on:
  // each sample's draw as its bytes (u8 [count, sizeof(AugmentDraw)],
  // ops::augment_draws' layout), the crop padding, whether the draws hold
  // TrivialAugment's operations, and the per-channel mean and standard
  // deviation (f32 [C]; 0 and 1 leave the pixels in [0, 1]).
  Tensor draws;
  int64_t crop_padding = 0;
  bool trivial = false;
  Tensor mean, stddev;

  bool raw_pixels() const { return images.defined() && images.dtype() == DType::u8; }
};

class BatchSource {
public:
  virtual ~BatchSource() = default;
  virtual Shape sample_shape() const = 0;     // [C, H, W]
  virtual int64_t num_classes() const = 0;
  virtual int64_t size() const = 0;           // samples per epoch
  virtual int64_t batches_per_epoch() const = 0;
  // Begins epoch `epoch` (its order depends only on the seed and the epoch),
  // at batch `first_batch` of it (non-zero when resuming mid-epoch).
  virtual void start_epoch(int64_t epoch, int64_t first_batch) = 0;
  // Fills `batch` with the next batch of the epoch; false once the epoch is
  // done. The batch's memory stays valid until the second call to next()
  // after this one, so the caller may hold two: the batch a step trains on
  // and the next, copied to the devices while that step runs.
  virtual bool next(HostBatch& batch) = 0;
  // Ends the epoch early (safe to call from another thread); next() then returns false.
  virtual void stop() = 0;
};

}  // namespace lockstep
