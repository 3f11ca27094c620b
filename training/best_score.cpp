#include "training/best_score.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/error.h"

namespace lockstep {

namespace {

const char* const kEpoch = "best_epoch";
const char* const kAccuracy = "best_test_accuracy";
const char* const kSince = "epochs_since_best";

double number(const std::map<std::string, std::string>& metadata, const char* key, const std::string& path) {
  const std::string& text = metadata.at(key);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  LS_CHECK(!text.empty() && *end == '\0' && std::isfinite(value) && value >= 0.0, "checkpoint ", path, ": ", key,
           " '", text, "' is not a number of 0 or more");
  return value;
}

}  // namespace

bool BestScore::record(int64_t at_epoch, double accuracy) {
  if (epoch > 0 && accuracy <= test_accuracy) {
    ++epochs_since;
    return false;
  }
  epoch = at_epoch;
  test_accuracy = accuracy;
  epochs_since = 0;
  return true;
}

void BestScore::save_to(std::map<std::string, std::string>& metadata) const {
  if (epoch == 0) return;
  char accuracy[32];
  std::snprintf(accuracy, sizeof accuracy, "%.17g", test_accuracy);  // exact: a resumed run compares against it
  metadata[kEpoch] = std::to_string(epoch);
  metadata[kAccuracy] = accuracy;
  metadata[kSince] = std::to_string(epochs_since);
}

BestScore BestScore::from_metadata(const std::map<std::string, std::string>& metadata, const std::string& path) {
  BestScore best;
  if (!metadata.contains(kEpoch) || !metadata.contains(kAccuracy) || !metadata.contains(kSince)) return best;
  best.epoch = static_cast<int64_t>(number(metadata, kEpoch, path));
  best.test_accuracy = number(metadata, kAccuracy, path);
  best.epochs_since = static_cast<int64_t>(number(metadata, kSince, path));
  return best;
}

}  // namespace lockstep
