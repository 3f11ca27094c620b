#pragma once
// The best test score of a run so far, for --keep-best and --early-stop: which
// epoch reached it, and how many epochs have passed since without beating it.
// Kept in each checkpoint's metadata, so a resumed run compares against the
// epochs before it and counts on where it stopped.
#include <cstdint>
#include <map>
#include <string>

namespace lockstep {

struct BestScore {
  int64_t epoch = 0;             // 1-based; 0: no epoch evaluated yet
  double test_accuracy = -1.0;   // the score: the test set's accuracy
  int64_t epochs_since = 0;      // evaluated epochs after `epoch` that did not beat it

  // Takes epoch `epoch`'s (1-based) accuracy; true when it beats the best so
  // far. A tie keeps the earlier epoch: a later one is no better, and early
  // stopping must not be put off by a plateau.
  bool record(int64_t epoch, double accuracy);

  // Into and out of a checkpoint's metadata; one without the keys (written
  // before, or by a run that tracked no score) starts afresh. `path` names the
  // checkpoint in the error about values that are not numbers.
  void save_to(std::map<std::string, std::string>& metadata) const;
  static BestScore from_metadata(const std::map<std::string, std::string>& metadata, const std::string& path);
};

}  // namespace lockstep
