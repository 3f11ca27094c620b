#pragma once
// What the stages of a `lockstep train` run (the preflight, the output locks,
// the loop, the start and end reports) read of its run-control settings: the
// files it reads and writes, and how long and on what it runs. Computed once
// from the settled settings (settled_run.cpp, the one place that reads those
// settings), so that a setting of the run's control is read in one place and
// the stages take these values: a new output file or stopping rule changes
// the settings, their table, settled_run.cpp and the stage that uses it,
// never a list of stages that each look at the flag.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "duration.h"
#include "runtime/device.h"
#include "training/checkpoint.h"
#include "training/trainer.h"

namespace lockstep::app {

// The files a run reads and writes, as settled.
struct RunFiles {
  std::string data_path;        // --data, absolute (the default data set when not given)
  std::string test_data_path;   // --test-data, absolute; "" when the data holds its own test set
  std::string init_path;        // --init's pretrained weights; "" when none
  std::string resume_path;      // --resume's checkpoint; "" for a new run
  std::string checkpoint_path;  // --checkpoint; not given, the checkpoint resumed or lockstep.safetensors
  std::string best_path;        // --keep-best's checkpoint; "" when the best epoch is not kept
  std::string metrics_path;     // --metrics; "" when none
  std::string curve_path;       // --plot, or the checkpoint's name with .png
  std::string curve_option;     // how messages name the curve's file: "--plot" or "the training curve (--plot)"
  // --force: an output may replace a file of another kind, and a resumed run
  // may change what would make it another run.
  bool forced = false;

  bool resuming() const { return !resume_path.empty(); }
  bool keeps_best() const { return !best_path.empty(); }
};

// How long, with what batch, rate and seed, and on what the run trains, as settled.
struct RunPlan {
  int64_t epoch_count = 0;
  int64_t global_batch = 0;  // --batch, or --batch-per-device times every replica
  float base_lr = 0.0f;      // --lr, times the replicas with --scale-lr
  std::optional<Duration> wall_time_limit;  // --time-limit
  int64_t early_stop_patience = 0;  // --early-stop: epochs without a better test accuracy (0: never stop)
  int loader_threads = 0;           // --threads, or the default for the cores
  bool loader_threads_chosen = false;  // not given: the start report says how many
  // --seed, or the checkpoint's when resuming: every draw of the run (the
  // weights' initialisation, a folder's held-out samples, the order,
  // augmentation and mixing of batches, dropout) comes from it.
  uint64_t seed = 0;
  bool no_gpu_found = false;  // --devices all found no GPU: the run trains on the CPU
  // " --devices SPEC" and " --replicas N" where given: the flags the printed
  // resume command repeats, as a checkpoint holds no devices (it resumes on
  // any), and the same devices are what continue the run bit for bit.
  std::string resume_flags;
};

// A run's settings settled (settled_run.h): the replicas' devices, the
// checkpoint resumed (empty for a new run), its files and its plan.
struct SettledRun {
  std::vector<Device> replica_devices;
  CheckpointInfo resume_info;
  RunFiles files;
  RunPlan plan;
};

// The trainer's part of the run's control: its epochs and base learning
// rate (with the step schedule's step at a third of the run), where it
// writes its checkpoints, and when it stops early.
void set_run_control(TrainerConfig& config, const SettledRun& run);

}  // namespace lockstep::app
