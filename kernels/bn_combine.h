#pragma once
// Exact combination of batch-norm statistics over replicas, per channel,
// written once for the CPU loops and the CUDA kernels (docs/architecture.md,
// "Batch-norm statistics across replicas"). All of a model's BN layers go
// together in one packed buffer of doubles, so the combination takes two
// all-reduces whatever the depth:
//   [0, C)          weight * mean of every channel of every layer (C channels in all)
//   [C, C + L)      values per channel behind each layer's statistics (L layers), exact in a double
//   [C + L, 2C + L) weight * (var + (mean - combined mean)^2) of every channel
// The first two ranges are summed over the replicas first (the combined mean
// and count), then the third (the combined biased variance).
#include <stdint.h>

#include "kernels/bn_math.h"
#include "kernels/host_device.h"

namespace lockstep {

// One BN layer in the combination: its statistics on one replica, where its
// running statistics live, and where its channels sit in the packed buffer.
struct BnCombineLayer {
  const float* batch_mean;
  const float* batch_var;
  float* running_mean;
  float* running_var;
  int64_t channels;
  int64_t offset;   // of its first channel in [0, C)
  double count;     // values per channel behind this replica's statistics
  float momentum;
};

struct BnCombineSizes {
  int64_t channels = 0;  // C
  int layers = 0;        // L
  LS_HD int64_t means_and_counts() const { return channels + layers; }
  LS_HD int64_t total() const { return 2 * channels + layers; }
};

LS_HD void bn_combine_pack(const BnCombineLayer& l, int index, int64_t c, double weight, BnCombineSizes s,
                           double* packed) {
  packed[l.offset + c] = bn_mean_term<double>(weight, l.batch_mean[c]);
  if (c == 0) packed[s.channels + index] = l.count;
}

// After the first sum: this replica's variance term around the combined mean.
LS_HD void bn_combine_var_term(const BnCombineLayer& l, int64_t c, double weight, BnCombineSizes s, double* packed) {
  packed[s.means_and_counts() + l.offset + c] =
      bn_var_term<double>(weight, l.batch_mean[c], l.batch_var[c], packed[l.offset + c]);
}

// After the second sum: the running statistics from the combined mean,
// biased variance and count (as batchnorm_update_running does with floats).
LS_HD void bn_combine_update(const BnCombineLayer& l, int index, int64_t c, BnCombineSizes s, const double* packed) {
  const float mean = static_cast<float>(packed[l.offset + c]);
  const float var = static_cast<float>(packed[s.means_and_counts() + l.offset + c]);
  const int64_t count = static_cast<int64_t>(packed[s.channels + index]);
  l.running_mean[c] = bn_running_update(l.running_mean[c], mean, l.momentum);
  l.running_var[c] = bn_running_update(l.running_var[c], bn_unbiased_var(var, count), l.momentum);
}

}  // namespace lockstep
