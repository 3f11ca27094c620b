#pragma once
// The settings every process of a multi-process run must share (batch,
// epochs, model, the data's identity, ...), compared before the first
// collective of the run. Processes started with different ones would start
// collectives of different sizes, or different numbers of them: heap
// corruption or a crash inside MPI, a hang, or a run whose figures belong to
// no single set of settings.
#include <string>
#include <vector>

#include "distributed/process_group.h"

namespace lockstep {

struct NamedSetting {
  std::string name;   // as the user knows it: "--batch", "the model"
  std::string value;  // as text; compared byte for byte
};

// One line per setting whose value is not the same on every process, in the
// order given, e.g. "--batch: 256 on processes 0, 2-3; 128 on process 1";
// empty when all agree. Every process must call it with the same names in
// the same order, and each gets the same lines. Two small collectives when
// all agree; when not, one more pair per process carries the values that
// differ, so that every process can name them.
std::vector<std::string> process_disagreements(ProcessGroup& world, const std::vector<NamedSetting>& settings);

}  // namespace lockstep
