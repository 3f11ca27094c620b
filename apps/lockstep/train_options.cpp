#include "train_options.h"

#include <cstdio>
#include <cstdlib>

#include "base/error.h"
#include "data_check.h"
#include "settings_metadata.h"
#include "base/environment.h"
#include "layers/models.h"
#include "setup.h"

namespace lockstep::app {

std::chrono::milliseconds collective_timeout() {
  const std::optional<std::string> v = environment_value(EnvironmentVariable::collective_timeout);
  if (!v) return default_collective_timeout;
  char* end = nullptr;
  double seconds = std::strtod(v->c_str(), &end);
  LS_CHECK(*end == '\0' && seconds > 0 && seconds < 1e6, "LOCKSTEP_COLLECTIVE_TIMEOUT='", *v,
           "': expected a positive number of seconds");
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

std::string choose_model_spec(const TrainSettings& s, const RunFiles& files, const CheckpointInfo& resume_info,
                              const data::Dataset& train_set) {
  ModelOptions model_options;
  model_options.dropout = s.dropout;
  const std::string spec = model_spec(s.model, train_set.sample_shape(), train_set.num_classes(), model_options);
  if (!files.resuming()) return spec;
  LS_CHECK(!s.given.contains("--model") || resume_info.model_spec == spec, "--resume ", files.resume_path,
           " holds a checkpoint of '", resume_info.model_spec, "', not of '", spec, "'");
  return resume_info.model_spec;
}

ModelStart model_start(const TrainSettings& s, const SettledRun& run) {
  return ModelStart{run.plan.seed, s.freeze_backbone, run.files.init_path};
}

ReplicaOptions replica_options(const TrainSettings& s, const RunPlan& plan,
                               const std::shared_ptr<ProcessGroup>& world) {
  ReplicaOptions options;
  options.seed = plan.seed;
  options.label_smoothing = s.label_smoothing;
  options.processes = world;
  options.collective_timeout = collective_timeout();
  options.context.sync_batch_norm = s.sync_bn;
  options.context.precision = s.precision;
  options.context.memory_format = s.memory_format;
  const auto bytes = [](double mib) { return static_cast<size_t>(mib * double(1 << 20)); };
  options.bucket_bytes = bytes(s.bucket_mb);
  options.first_bucket_bytes = bytes(s.first_bucket_mb);
  options.cuda_graphs = s.cuda_graphs != "off";
  return options;
}

void check_cuda_graphs(const TrainSettings& s, const std::vector<Device>& devices, const std::string& devices_flag) {
  LS_CHECK(s.cuda_graphs != "on" || devices[0].is_cuda(),
           "--cuda-graphs on replays GPU steps from CUDA graphs; this run is on the CPU (--devices ", devices_flag,
           ")");
}

void notice_eager_steps(const TrainSettings& s, const ReplicaManager& replicas) {
  if (s.cuda_graphs == "on" && !replicas.graphs_in_use())
    std::fprintf(stderr, "notice: --cuda-graphs on: steps run eagerly, %s\n",
                 replicas.replicas_share_a_device()
                     ? "since replicas sharing a GPU wait for it on the host in each gradient sum"
                     : "since a run across processes keeps its collectives eager for their watchdog");
}

TrainerConfig trainer_config(const TrainSettings& s, const SettledRun& run, const TrainData& d,
                             const data::Normalization& normalization, int64_t head_offset) {
  const data::Dataset& train_set = *d.train;
  TrainerConfig config;
  set_run_control(config, run);
  config.schedule.kind = s.schedule;
  config.schedule.warmup_epochs = s.warmup_epochs;
  config.sgd = {s.momentum, s.weight_decay, s.nesterov, s.clip_grad_norm};
  if (s.optimizer == "adamw") {
    config.sgd.optimizer = Optimizer::adamw;
    config.sgd.beta1 = s.betas.first;
    config.sgd.beta2 = s.betas.second;
    config.sgd.eps = s.eps;
  }
  config.sgd.ema_decay = s.ema;
  config.sgd.backbone_lr_scale = s.freeze_backbone ? 0.0f : s.backbone_lr_scale;
  if (config.sgd.backbone_lr_scale != 1.0f) config.sgd.backbone_elements = head_offset;
  config.seed = run.plan.seed;
  config.class_names = train_set.class_names();
  config.checkpoint_extra = to_metadata(s);
  config.checkpoint_extra["normalization"] = normalization_to_json(normalization);
  // The test set as eval finds it again: whole, without --test-limit.
  config.checkpoint_extra["data_identity"] = data_identity_json(*d.train, d.sets.test.get());
  return config;
}

}  // namespace lockstep::app
