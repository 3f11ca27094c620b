#include "world_agreement.h"

#include <map>

#include "base/error.h"
#include "data/data_identity.h"
#include "training/file_checksum.h"
#include "world_errors.h"

namespace lockstep::app {

namespace {

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string joined(const std::vector<int64_t>& numbers) {
  std::vector<std::string> parts;
  for (int64_t n : numbers) parts.push_back(std::to_string(n));
  return joined(parts);
}

// The same names with or without a set (the test set may be missing on some process).
void add_data(std::vector<NamedSetting>& out, const std::string& which, const data::Dataset* set) {
  data::DataIdentity id;
  if (set) id = data::data_identity(*set);
  out.push_back({which + " samples", std::to_string(id.samples)});
  out.push_back({which + " sample shape", id.sample_shape});
  out.push_back({which + " class names", joined(id.class_names)});
  out.push_back({which + " samples per class", joined(id.class_counts)});
  out.push_back({which + " data's fingerprint (labels in order, three samples' pixels)", id.fingerprint});
}

}  // namespace

std::vector<NamedSetting> run_settings(const TrainSettings& s, const std::string& spec, const std::string& format,
                                       const data::Dataset& train, const data::Dataset* test,
                                       const std::string& resume_position) {
  // The settings a checkpoint saves, by their flags; the data's paths are
  // left out (the same data may lie elsewhere on another host): its identity
  // stands for it below.
  static const std::pair<const char*, const char*> saved[] = {
      {"epochs", "--epochs"},
      {"seed", "--seed"},
      {"batch", "--batch (the global batch)"},
      {"lr", "--lr (as scaled)"},
      {"momentum", "--momentum"},
      {"nesterov", "--nesterov"},
      {"weight_decay", "--weight-decay"},
      {"clip_grad_norm", "--clip-grad-norm"},
      {"label_smoothing", "--label-smoothing"},
      {"freeze_backbone", "--freeze-backbone"},
      {"backbone_lr_scale", "--backbone-lr-scale"},
      {"schedule", "--schedule"},
      {"warmup_epochs", "--warmup-epochs"},
      {"augment", "--augment"},
      {"normalize", "--normalize"},
      {"input", "--input"},
      {"limit", "--limit"},
      {"test_limit", "--test-limit"},
      {"drop_last", "--drop-last"},
      {"test_fraction", "--test-fraction"},
      {"sync_bn", "--sync-bn"},
      {"dropout", "--no-dropout (dropout on)"},
      {"precision", "--precision"},
      {"memory_format", "--memory-format"}};
  const std::map<std::string, std::string> meta = to_metadata(s);
  std::vector<NamedSetting> out;
  out.push_back({"the model", spec});
  for (const auto& [key, name] : saved) out.push_back({name, meta.at(key)});
  out.push_back({"--time-limit", s.time_limit ? s.time_limit->text : ""});
  // The gradient buckets are the units of the sums across processes.
  out.push_back({"--bucket-mb", std::to_string(s.bucket_mb)});
  out.push_back({"--first-bucket-mb", std::to_string(s.first_bucket_mb)});
  out.push_back({"where the run starts (--resume)", resume_position.empty() ? "a new run" : resume_position});
  // The pretrained weights by their contents (the path may differ between
  // hosts): a process that read other weights would train another model
  // under the same steps, and only the first process's would be saved.
  out.push_back({"--init (the pretrained weights' contents)", s.init.empty() ? "none" : file_checksum(s.init)});
  out.push_back({"the data's format", format});
  add_data(out, "the training", &train);
  add_data(out, "the test", test);
  return out;
}

void check_processes_agree(ProcessGroup& world, const std::vector<NamedSetting>& settings) {
  const std::vector<std::string> lines = process_disagreements(world, settings);
  if (lines.empty()) return;
  std::string message = "the " + std::to_string(world.size()) +
                        " processes were started with different settings, and a run needs the same on every "
                        "process (its data may lie at another path):";
  for (const std::string& line : lines) message += "\n  " + line;
  if (world.rank() != 0) throw ReportedByFirstProcess(message);
  LS_FAIL(message);
}

}  // namespace lockstep::app
