#pragma once
// Mixup and CutMix over a whole batch, as timm's Mixup in its 'batch' mode
// (timm/data/mixup.py): one draw per batch, sample i mixed with sample
// B-1-i (the batch's flip). Mixup blends the two images, x_i lam + x_{B-1-i}
// (1 - lam); CutMix pastes the partner's pixels into a box whose area is
// about 1 - lam, and lam becomes 1 - the clipped box's share (timm's
// correct_lam). The targets are lam smooth(onehot(y_i)) + (1 - lam)
// smooth(onehot(y_{B-1-i})), carried as the labels' mixed rows
// (kernels/loss_math.h). The loader mixes the whole batch before it is cut
// over replicas, so N replicas still train as one; each batch's draw comes
// from (seed, epoch, batch index), so a resumed run draws the same.
#include <cstdint>

#include "data/random.h"
#include "runtime/shape.h"

namespace lockstep::data {

struct MixConfig {
  double mixup_alpha = 0.0;   // Beta(a, a) of mixup's lam; 0: no mixup
  double cutmix_alpha = 0.0;  // Beta(a, a) of CutMix's lam; 0: no CutMix
  double prob = 1.0;          // chance that a batch is mixed at all
  double switch_prob = 0.5;   // with both alphas: chance of CutMix rather than mixup

  bool enabled() const { return mixup_alpha > 0.0 || cutmix_alpha > 0.0; }
};

// One batch's draw: whether it is mixed, how, lam as drawn from Beta, and
// CutMix's box centre (row cy in [0, H), column cx in [0, W)).
struct MixDraw {
  bool mixed = false;
  bool cutmix = false;
  double lam = 1.0;
  int64_t cy = 0, cx = 0;
};

// The draw of batch `batch` of epoch `epoch`; `height` and `width`: the samples'.
MixDraw draw_mix(const MixConfig& config, uint64_t seed, int64_t epoch, int64_t batch, int64_t height,
                 int64_t width);

// CutMix's box, rows [yl, yh) and columns [xl, xh), for a lam and centre,
// and lam corrected to the box's clipped area (timm's rand_bbox and
// cutmix_bbox_and_lam with correct_lam).
struct MixBox {
  int64_t yl = 0, yh = 0, xl = 0, xh = 0;
  double lam = 1.0;
};
MixBox cutmix_box(int64_t height, int64_t width, double lam, int64_t cy, int64_t cx);

// Mixes `count` f32 images [count, C, H, W] (`sample`: [C, H, W]) in place
// by `draw` and writes their mixed targets, `count` rows of
// kMixedTargetWidth int32, from `labels`. An unmixed draw leaves the images
// and gives lam 1. An odd batch's middle sample is its own partner (timm
// refuses odd batches; lockstep's last batch of an epoch may be one).
// Returns the lam of the targets.
double mix_batch(float* images, const int32_t* labels, int64_t count, const Shape& sample, const MixDraw& draw,
                 int32_t* targets);

// Beta(a, a) from the data pipeline's own generator (data/random.h), a > 0.
double draw_beta(Rng& rng, double a);

}  // namespace lockstep::data
