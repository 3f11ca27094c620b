#include "start_report.h"

#include <cstdio>
#include <string>

#include "base/printable.h"
#include "settings_table.h"

namespace lockstep::app {

namespace {

// "on 3 processes x 2 replicas (6 in all) on 2 hosts over MPI (Open MPI v4.1.4)", or "on 2 replicas".
std::string world_text(const std::vector<Device>& devices, const ProcessGroup* world) {
  std::string local = std::to_string(devices.size()) + " replica" + (devices.size() == 1 ? "" : "s");
  if (!world) return "on " + local;
  return "on " + std::to_string(world->size()) + " processes x " + local + " (" +
         std::to_string(world->size() * devices.size()) + " in all) on " + std::to_string(world->hosts()) + " host" +
         (world->hosts() == 1 ? "" : "s") + " over " + world->transport();
}

}  // namespace

void print_start(const TrainSettings& s, const SettledRun& run, const std::string& spec, const TrainData& d,
                 const ProcessGroup* world, const Trainer& trainer) {
  const std::vector<Device>& devices = run.replica_devices;
  const RunPlan& plan = run.plan;
  if (plan.no_gpu_found) std::fprintf(stderr, "notice: no GPU found, training on the CPU\n");
  std::printf("training %s on %s (%s, %lld training samples%s) %s [%s], batch %lld, lr %g, %lld epoch%s\n",
              spec.c_str(), run.files.data_path.c_str(), data::format_name(d.sets.format),
              static_cast<long long>(d.train->size()),
              d.test ? (", " + std::to_string(d.test->size()) + " test").c_str() : "",
              world_text(devices, world).c_str(), devices[0].str().c_str(), static_cast<long long>(plan.global_batch),
              plan.base_lr, static_cast<long long>(plan.epoch_count), plan.epoch_count == 1 ? "" : "s");
  const std::string& resumed = run.files.resume_path;
  if (run.files.resuming())
    std::printf("resuming from %s at epoch %lld, batch %lld (step %lld)\n", resumed.c_str(),
                static_cast<long long>(trainer.epoch() + 1), static_cast<long long>(run.resume_info.batch_in_epoch),
                static_cast<long long>(trainer.step()));
  if (trainer.ema_restarted())
    std::printf("notice: %s holds no moving average of its weights; --ema starts one from them now, its warm-up "
                "at step %lld\n", resumed.c_str(), static_cast<long long>(trainer.step()));
  if (augmented_on_gpus(s, devices[0].is_cuda()))
    std::printf("training batches cross to the GPU%s as bytes; crop, flip and normalisation run there\n",
                devices.size() == 1 ? "" : "s");
  else if (devices[0].is_cuda())
    std::printf("training batches are augmented by the loader's threads and cross to the GPU%s as floats "
                "(%s)\n", devices.size() == 1 ? "" : "s",
                mixes_batches(s) ? "mixup and CutMix mix the whole float batch there" : "--augment-on cpu");
  std::fflush(stdout);
}

void print_data_and_model_notes(const TrainSettings& s, const RunPlan& plan, const TrainData& d,
                                const std::string& normalize_note) {
  if (d.decoded_bytes > 0) {
    const auto mib = [](int64_t bytes) { return static_cast<double>(bytes) / 1048576.0; };
    if (d.decoded_kept)
      std::printf("decoded images kept in memory: %.1f MiB of a %.1f MiB budget (--cache-mb), each decoded once\n",
                  mib(d.decoded_bytes), mib(d.cache_budget));
    else
      std::printf("images decoded in every epoch (all or some): kept they would take %.1f MiB, more than the "
                  "%.1f MiB budget (--cache-mb)\n",
                  mib(d.decoded_bytes), mib(d.cache_budget));
  }
  if (!d.sets.cache_file.empty())
    std::printf("decoded images read from the cache file %s (lockstep cache)%s%s\n", d.sets.cache_file.c_str(),
                s.from_cache_file.empty() ? "" : ", with its ", s.from_cache_file.c_str());
  if (!d.sets.cache_note.empty()) std::fprintf(stderr, "notice: %s\n", d.sets.cache_note.c_str());
  if (plan.loader_threads_chosen)
    std::printf("%d loader thread%s (--threads to change)\n", plan.loader_threads,
                plan.loader_threads == 1 ? "" : "s");
  if (!normalize_note.empty()) std::printf("%s\n", normalize_note.c_str());
  for (const SettingEntry& e : train_setting_table())
    if (e.start_note) e.start_note(s);
}

namespace {

std::string numbers(const std::vector<float>& values) {
  std::string out;
  char text[32];
  for (float v : values) {
    std::snprintf(text, sizeof text, "%.4g", v);
    out += (out.empty() ? "" : " ") + std::string(text);
  }
  return "[" + out + "]";
}

bool leaves_pixels(const data::Normalization& n) {
  for (size_t c = 0; c < n.mean.size(); ++c)
    if (n.mean[c] != 0.0f || n.std[c] != 1.0f) return false;
  return true;
}

std::string normalisation_text(const std::vector<float>& mean, const std::vector<float>& std) {
  return "normalised with mean " + numbers(mean) + " and std " + numbers(std);
}

// The input an export's model was trained on, and a notice when this run
// feeds it otherwise (features learned on other statistics).
void print_file_input(const InputPreprocessing& file, const data::Normalization& used, const std::string& input) {
  const bool as_is = file.mean.empty();
  const std::string trained = as_is ? "its pixels as they are" : normalisation_text(file.mean, file.std);
  std::printf("the file's model was trained on inputs %s, %s\n", file.size.c_str(), trained.c_str());
  const bool same_size = input.empty() || input == file.size;
  const bool same_normalisation = as_is ? leaves_pixels(used) : file.mean == used.mean && file.std == used.std;
  if (same_size && same_normalisation) return;
  std::string here = same_normalisation ? "" : normalisation_text(used.mean, used.std);
  if (!same_size) here += (here.empty() ? "" : ", ") + std::string("inputs ") + input;
  std::fprintf(stderr, "notice: this run's inputs are %s, not as the model of --init's file was trained (%s, %s)\n",
               here.c_str(), file.size.c_str(), trained.c_str());
}

}  // namespace

void print_init(const RunFiles& files, const TrainData& d, const PretrainedLoad& init_result,
                const data::Normalization& used) {
  const int64_t classes = d.train->num_classes();
  std::printf("initialised from %s: %lld tensors (%s names)\n", files.init_path.c_str(),
              static_cast<long long>(init_result.tensors),
              init_result.names == StateDictNames::timm ? "timm" : "torchvision");
  if (init_result.other_classes) {
    std::string names;
    for (const std::string& n : init_result.file_class_names) names += (names.empty() ? "" : ", ") + n;
    std::printf("the classifier %s was re-initialised: the file's %lld classes are others (%s)\n",
                init_result.head.c_str(), static_cast<long long>(init_result.file_classes),
                printable(names, 200, "").c_str());
  } else if (init_result.head_reinitialised) {
    std::printf("the classifier %s was re-initialised: %lld classes in the file, %lld here\n",
                init_result.head.c_str(), static_cast<long long>(init_result.file_classes),
                static_cast<long long>(classes));
  }
  if (init_result.file_input) print_file_input(*init_result.file_input, used, d.input_size);
  std::fflush(stdout);
}

}  // namespace lockstep::app
