#include "world_agreement.h"

#include <utility>

#include "base/error.h"
#include "data/data_identity.h"
#include "settings_table.h"
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

std::vector<NamedSetting> setting_agreement(const TrainSettings& s) {
  std::vector<NamedSetting> out;
  for (const SettingEntry& e : train_setting_table())
    if (e.agreed) out.push_back({e.agreement_label(), e.agreement_text ? e.agreement_text(s) : e.text(s)});
  return out;
}

std::vector<NamedSetting> run_settings(const TrainSettings& s, const std::string& spec, const std::string& format,
                                       const data::Dataset& train, const data::Dataset* test,
                                       const std::string& resume_position) {
  std::vector<NamedSetting> out;
  out.push_back({"the model", spec});
  for (NamedSetting& setting : setting_agreement(s)) out.push_back(std::move(setting));
  out.push_back({"where the run starts (--resume)", resume_position.empty() ? "a new run" : resume_position});
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
