#include "data/split.h"

#include <algorithm>
#include <cmath>

#include "data/random.h"
#include "base/error.h"

namespace lockstep::data {

SplitIndices stratified_split(const std::vector<int32_t>& labels, int64_t num_classes, double test_fraction,
                              uint64_t seed) {
  LS_CHECK(test_fraction >= 0.0 && test_fraction < 1.0, "stratified_split: test fraction ", test_fraction,
           " is outside [0, 1)");
  std::vector<std::vector<int64_t>> by_class(static_cast<size_t>(num_classes));
  for (size_t i = 0; i < labels.size(); ++i) {
    LS_CHECK(labels[i] >= 0 && labels[i] < num_classes, "stratified_split: label ", labels[i], " of sample ", i,
             " is out of range [0, ", num_classes, ")");
    by_class[labels[i]].push_back(static_cast<int64_t>(i));
  }
  SplitIndices split;
  for (int64_t c = 0; c < num_classes; ++c) {
    std::vector<int64_t>& members = by_class[c];
    const int64_t n = static_cast<int64_t>(members.size());
    if (n == 0) continue;
    const int64_t to_test = std::clamp<int64_t>(std::llround(test_fraction * static_cast<double>(n)), 0, n - 1);
    Rng rng(derive_seed(seed, kSplitStream, static_cast<uint64_t>(c)));
    shuffle(members, rng);
    split.test.insert(split.test.end(), members.begin(), members.begin() + to_test);
    split.train.insert(split.train.end(), members.begin() + to_test, members.end());
  }
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.test.begin(), split.test.end());
  return split;
}

TrainTest split_dataset(std::shared_ptr<const Dataset> dataset, double test_fraction, uint64_t seed) {
  SplitIndices split = stratified_split(dataset->labels(), dataset->num_classes(), test_fraction, seed);
  TrainTest out;
  out.train = std::make_shared<Subset>(dataset, std::move(split.train), "train split");
  out.test = std::make_shared<Subset>(dataset, std::move(split.test), "test split");
  return out;
}

}  // namespace lockstep::data
