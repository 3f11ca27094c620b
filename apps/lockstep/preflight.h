#pragma once
// What `lockstep train` checks before its first step, so that nothing it
// would find out only at the end of an epoch costs the epoch, and nothing it
// writes destroys a file: the checkpoint, metrics and training-curve paths
// (writable, not an input, not each other, not a file of another kind unless
// --force), and the test set (readable, of the training set's shape and
// classes).
#include <memory>
#include <string>

#include "data/dataset.h"
#include "runtime/batch_source.h"
#include "run_plan.h"
#include "training/output_files.h"

namespace lockstep::app {

// True when `path` starts with a line of a metrics file lockstep wrote (a
// JSON object with a "type").
bool is_metrics_file(const std::string& path);

// True when `path` starts with PNG's signature.
bool is_png_file(const std::string& path);

// A CPU run whose replicas' activations would not fit the memory available
// (setup.h's available_memory_bytes) is refused before anything is
// allocated, naming --batch, --input and the model: `batch` is the global
// batch, `spec` the model's, `replicas_in_world` every replica of every
// process, `local_replicas` this process's.
void check_step_memory(int64_t batch, const std::string& spec, int64_t replicas_in_world, int64_t local_replicas);

// --checkpoint, --metrics, the training curve and --keep-best's checkpoint
// (after the defaults are applied).
void check_outputs(const RunFiles& files);

// A picture lockstep will draw at `path` (`option` names it in errors): a
// regular file, not one of `inputs`, a PNG already or empty or absent unless
// `force`.
void check_picture_output(const std::string& path, const std::string& option, const std::vector<InputPath>& inputs,
                          bool force);

// A new run whose --checkpoint, --keep-best's file (or --metrics) holds an earlier run's file,
// which it would replace: a checkpoint of another model than `spec` is
// refused unless --force (or --resume, which goes on with it); otherwise
// returns the notices that say what will be replaced (empty: nothing).
std::vector<std::string> check_replaced_outputs(const RunFiles& files, const std::string& spec);

// The test set against the training set, and its first batch read through
// the loader evaluation will use.
void check_test_set(const data::Dataset& train, const data::Dataset& test, BatchSource& test_loader,
                    const std::string& test_path);

}  // namespace lockstep::app
