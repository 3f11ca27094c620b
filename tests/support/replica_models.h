#pragma once
// The small models and batches the replica-manager tests (CPU and GPU) train:
// one without batch norm, one whose two BN layers read the input or a
// convolution of it (so their statistics do not depend on the split).
#include <memory>
#include <string>
#include <vector>

#include "layers/models.h"
#include "runtime/batch_source.h"
#include "runtime/model.h"

namespace lockstep::testing {

inline const Shape replica_sample_shape{3, 5, 5};
inline constexpr int64_t replica_classes = 4;

std::unique_ptr<Model> plain_model(Device device);
std::unique_ptr<Model> bn_model(Device device);
// `count` random samples in pinned host memory (as the loader's batches are);
// channel 0 of every image is shifted by channel0_mean.
HostBatch make_batch(int64_t count, uint64_t seed, float channel0_mean = 0.0f);
// `count` samples of `sample` ([C, H, W]) in pinned host memory, values in
// [-1, 1) and labels in [0, 10) drawn from `seed` (cheap: no random engine).
HostBatch pinned_batch(int64_t count, const Shape& sample, uint64_t seed);
// The same as a batch of bytes still to augment (HostBatch::raw_pixels), as
// the loader hands out with augment_on_device: pixels, crops of padding 2 and
// flips drawn from `seed`, a mean and std per channel, all pinned.
HostBatch pinned_byte_batch(int64_t count, const Shape& sample, uint64_t seed);

// The first `devices` CUDA devices, in order.
std::vector<Device> cuda_devices(int devices);
// Builds model `name` (build_model, 10 classes) for samples of `sample`,
// initialised from `init_seed`, on the device it is given.
ModelFactory named_model(const std::string& name, const Shape& sample, ModelOptions options, uint64_t init_seed);
// small-cnn without dropout for samples of `sample`, 10 classes, initialised
// from `init_seed`, its running statistics drawn away from any batch's (so
// inference differs from training), its backbone frozen or not
// (Graph::freeze_backbone).
ModelFactory small_cnn_for_fine_tuning(const Shape& sample, uint64_t init_seed, bool frozen);
// `make`'s graphs with the memory plan on or off (Graph::set_memory_planning).
ModelFactory with_memory_planning(ModelFactory make, bool on);

}  // namespace lockstep::testing
