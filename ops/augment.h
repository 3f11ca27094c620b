#pragma once
// Augmentation of a batch of decoded images on ctx's device: bytes in,
// normalised floats out, in one pass (one kernel launch on a GPU), with the
// arithmetic of kernels/augment_math.h. The images travel as u8 tensors, a
// quarter of their size as floats; each sample's draw is made on the host
// (data/augment.h) and travels beside them as the bytes of an AugmentDraw.
#include <vector>

#include "kernels/augment_math.h"
#include "runtime/context.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

// A batch of draws as a tensor: u8 [n, sizeof(AugmentDraw)], row i the
// bytes of draws[i], on `device`.
Tensor augment_draws(const std::vector<AugmentDraw>& draws, Device device = Device::cpu());

// out = ((images / 255 cropped or box-resized and mirrored by draws) - mean[c]) / stddev[c].
// With `trivial`, the draws' TrivialAugmentWide operations act on the cropped
// bytes before the division (kernels/trivial_augment_math.h; 1 or 3 channels,
// crops only: a box gives NaN). The CPU follows each draw whatever `trivial`
// says; a GPU runs TrivialAugment's kernel only when it is set.
// images: u8 [N, C, H, W] (nchw); draws: as augment_draws makes them, N
// rows, boxes inside the sample (a box outside gives NaN for its sample);
// mean, stddev: f32 [C] (0 and 1 leave the values as they are); out: f32, or
// bf16 on a GPU, [N, C, H, W]. All on ctx's device.
void augment_images(Context& ctx, const Tensor& images, const Tensor& draws, int64_t crop_padding, const Tensor& mean,
                    const Tensor& stddev, Tensor& out, bool trivial = false);

}  // namespace lockstep::ops
