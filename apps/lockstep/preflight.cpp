#include "preflight.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/error.h"
#include "layers/models.h"
#include "output_link.h"
#include "run_locks.h"
#include "setup.h"
#include "training/checkpoint.h"
#include "training/output_files.h"

namespace lockstep::app {

bool is_metrics_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line(4096, '\0');  // a metrics line is far shorter: no need to read more
  in.read(line.data(), static_cast<std::streamsize>(line.size()));
  line.resize(static_cast<size_t>(in.gcount()));
  line = line.substr(0, line.find('\n'));
  const nlohmann::json first = nlohmann::json::parse(line, nullptr, false);
  return first.is_object() && first.contains("type") && first["type"].is_string();
}

bool is_png_file(const std::string& path) {
  static const char signature[8] = {'\x89', 'P', 'N', 'G', '\r', '\n', '\x1a', '\n'};
  std::ifstream in(path, std::ios::binary);
  char head[8] = {};
  in.read(head, sizeof head);
  return in.gcount() == sizeof head && std::equal(head, head + sizeof head, signature);
}

namespace {

OutputFile picture(const std::string& path, const std::string& option) {
  return OutputFile{path, option, "a PNG picture", is_png_file};
}

// A picture may go into a folder that does not exist yet: it is made, as
// gnuplot::draw_png would make it, before the checks that need it.
void make_picture_folder(const std::string& path, const std::string& option) {
  const std::filesystem::path folder = std::filesystem::absolute(path).parent_path();
  std::error_code ec;
  if (std::filesystem::exists(folder, ec)) return;
  std::filesystem::create_directories(folder, ec);
  LS_CHECK(!ec, option, " ", path, ": cannot make the folder ", folder.string(), " (", ec.message(), ")");
}

}  // namespace

void check_picture_output(const std::string& path, const std::string& option, const std::vector<InputPath>& inputs,
                          bool force) {
  make_picture_folder(path, option);
  refuse_output_link(picture(path, option));
  check_output_file(picture(path, option), inputs, force);
}

void check_step_memory(int64_t batch, const std::string& spec, int64_t replicas_in_world, int64_t local_replicas) {
  // The largest slice a replica gets (the remainder goes to the first ones);
  // the CPU keeps activations in FP32 whatever the precision.
  const int64_t per_replica = batch / replicas_in_world + (batch % replicas_in_world != 0 ? 1 : 0);
  const std::unique_ptr<Graph> graph = graph_from_spec(spec);
  // The replicas' activations and the loader's batches (the two the trainer
  // holds and the two prepared ahead, data::LoaderConfig::prefetch), in FP32.
  // Summed in double: in int64_t a --batch near 2^63 overflowed to a need
  // below the memory and was let through. Past 2^20 samples a slice's plan is
  // not made (its byte counts would overflow too): a sample's, times the slice.
  const double loader = 4.0 * static_cast<double>(batch) * static_cast<double>(graph->input_shape().numel()) *
                        static_cast<double>(sizeof(float));
  const double slice_bytes = per_replica <= (int64_t{1} << 20)
                                 ? static_cast<double>(graph->activation_bytes(per_replica))
                                 : static_cast<double>(graph->activation_bytes(1)) * static_cast<double>(per_replica);
  const double need = static_cast<double>(local_replicas) * slice_bytes + loader;
  const int64_t available = available_memory_bytes();
  if (available <= 0 || need <= static_cast<double>(available)) return;
  const auto gb = [](double bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GB", bytes / 1e9);
    return std::string(text);
  };
  LS_FAIL("--batch ", batch, " of samples ", graph->input_shape().str(), ": the activations of a training step of '",
          spec, "' and its batches take ", gb(need), " (", local_replicas, " replica", local_replicas == 1 ? "" : "s",
          " of ", per_replica, " samples), more than the ", gb(static_cast<double>(available)),
          " of memory available (within ulimit -v); give a smaller --batch, a smaller --input (image folders) or "
          "another --model");
}

void check_outputs(const RunFiles& files) {
  const std::vector<InputPath> inputs = {
      {files.data_path, "--data"}, {files.test_data_path, "--test-data"}, {files.init_path, "--init"}};
  OutputFile checkpoint{files.checkpoint_path, "--checkpoint", "a lockstep checkpoint", is_checkpoint_file};
  refuse_output_link(checkpoint);
  check_output_file(checkpoint, inputs, files.forced);
  std::vector<OutputFile> outputs = {checkpoint};
  if (files.keeps_best()) {
    OutputFile best{files.best_path, "--keep-best", "a lockstep checkpoint", is_checkpoint_file};
    refuse_output_link(best);
    check_output_file(best, inputs, files.forced);
    outputs.push_back(best);
  }
  if (!files.metrics_path.empty()) {
    OutputFile metrics{files.metrics_path, "--metrics", "a lockstep metrics file", is_metrics_file,
                       /*allow_special=*/true};
    refuse_output_link(metrics);
    check_output_file(metrics, inputs, files.forced);
    outputs.push_back(metrics);
  }
  // The curve: --plot, or beside the checkpoint under its name with .png
  // (so `--checkpoint m.png` names the curve's file too, and is refused).
  const OutputFile curve = picture(files.curve_path, files.curve_option);
  make_picture_folder(curve.path, curve.option);
  refuse_output_link(curve);
  check_output_file(curve, inputs, files.forced);
  outputs.push_back(curve);
  // The locks the run takes beside its outputs (run_locks.h) are outputs
  // too: no other output may name one.
  for (const RunOutput& locked : locked_outputs(files))
    outputs.push_back(OutputFile{locked.path + ".lock", "the lock file of " + locked.option, "a lock file", nullptr});
  check_distinct_outputs(outputs);
}

namespace {

// A checkpoint file this run will replace (--checkpoint, --keep-best's) that
// holds an earlier run's: refused when of another model (unless --force),
// else a notice. `when`: when the run replaces it.
void check_replaced_checkpoint(const RunFiles& files, const std::string& spec, const std::string& path,
                               const std::string& option, const std::string& when,
                               std::vector<std::string>& notices) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) || !is_checkpoint_file(path)) return;
  std::optional<CheckpointInfo> info;
  try {
    info = read_checkpoint_info(path);
  } catch (const Error&) {  // damaged: replaced as lockstep's own file, with a word
  }
  const std::string held = !info ? std::string("a damaged checkpoint")
                                 : "an earlier run's checkpoint of '" + info->model_spec + "' (epoch " +
                                       std::to_string(info->epoch) + ", step " + std::to_string(info->step) + ")";
  LS_CHECK(!info || info->model_spec == spec || files.forced, option, " ", path, " holds ", held,
           ", and this run of '", spec, "' would replace it: give another --checkpoint, --resume ",
           files.checkpoint_path, " to go on with it, or --force to replace it");
  notices.push_back("notice: " + option + " " + path + " holds " + held + ", which this run replaces " + when);
}

}  // namespace

std::vector<std::string> check_replaced_outputs(const RunFiles& files, const std::string& spec) {
  std::vector<std::string> notices;
  std::error_code ec;
  const bool own = files.resuming() && std::filesystem::equivalent(files.resume_path, files.checkpoint_path, ec);
  if (!own)
    check_replaced_checkpoint(files, spec, files.checkpoint_path, "--checkpoint", "at the end of its first epoch",
                              notices);
  // A resumed run's best file is its own, beaten only by a better epoch.
  if (files.keeps_best() && !files.resuming())
    check_replaced_checkpoint(files, spec, files.best_path, "--keep-best", "at the end of its first evaluated epoch",
                              notices);
  const std::string& metrics = files.metrics_path;
  if (!metrics.empty() && !files.resuming() && std::filesystem::is_regular_file(metrics, ec) &&
      std::filesystem::file_size(metrics, ec) > 0)
    notices.push_back("notice: --metrics " + metrics + " holds an earlier run's lines, which this run replaces");
  return notices;
}

void check_test_set(const data::Dataset& train, const data::Dataset& test, BatchSource& test_loader,
                    const std::string& test_path) {
  const std::string where = test_path.empty() ? std::string("the test set of --data") : "--test-data " + test_path;
  LS_CHECK(test.sample_shape() == train.sample_shape(), where, " has samples of ", test.sample_shape().str(),
           ", the training set ", train.sample_shape().str());
  LS_CHECK(test.num_classes() == train.num_classes(), where, " has ", test.num_classes(), " classes, the training set ",
           train.num_classes());
  LS_CHECK(test.size() > 0, where, " holds no sample");
  // One batch end to end (files, decoding, normalisation), not after an epoch.
  HostBatch batch;
  test_loader.start_epoch(0, 0);
  test_loader.next(batch);
  test_loader.stop();
}

}  // namespace lockstep::app
