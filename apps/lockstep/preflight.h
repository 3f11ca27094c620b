#pragma once
// What `lockstep train` checks before its first step, so that nothing it
// would find out only at the end of an epoch costs the epoch, and nothing it
// writes destroys a file: the checkpoint and metrics paths (writable, not an
// input, not a file of another kind unless --force), and the test set
// (readable, of the training set's shape and classes).
#include <memory>
#include <string>

#include "data/dataset.h"
#include "runtime/batch_source.h"
#include "settings.h"

namespace lockstep::app {

// True when `path` starts with a line of a metrics file lockstep wrote (a
// JSON object with a "type").
bool is_metrics_file(const std::string& path);

// --checkpoint and --metrics (after the defaults are applied).
void check_outputs(const TrainSettings& s);

// The test set against the training set, and its first batch read through
// the loader evaluation will use.
void check_test_set(const data::Dataset& train, const data::Dataset& test, BatchSource& test_loader,
                    const std::string& test_path);

}  // namespace lockstep::app
