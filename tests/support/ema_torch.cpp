#include "support/ema_torch.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "support/adamw_torch.h"
#include "support/golden_files.h"
#include "training/safetensors.h"

namespace lockstep::testing {

namespace {

const SafetensorsFile& references() {
  static const SafetensorsFile file = read_safetensors(golden_file("ema.safetensors"));
  return file;
}
const HostTensor& reference(const std::string& name) { return references().at(name); }
const std::string& meta(const std::string& key) { return references().metadata.at(key); }

// [lr, unused, step as 8 bytes] in device memory, as ReplicaGraph's buffer.
const uint64_t* step_in(const Tensor& values) { return reinterpret_cast<const uint64_t*>(values.data() + 2); }

}  // namespace

int replay_torch_ema(Context& ctx, const EmaReplay& how) {
  const std::vector<std::string> names = split(meta("tensors"));
  const std::vector<std::string> lrs = split(meta("lrs"));
  const std::string kind = how.optimizer == Optimizer::adamw ? "adamw" : "sgd";
  ParameterArenas arenas = stored_arenas(references(), names, ctx.device(), how.bf16_copy);
  if (how.optimizer == Optimizer::adamw) arenas.add_adamw_state();
  arenas.add_ema(Tensor());  // starts as a copy of the weights, as timm's

  SgdConfig config;
  config.optimizer = how.optimizer;
  config.momentum = std::stof(meta("momentum"));
  config.weight_decay = std::stof(meta("weight_decay"));
  config.ema_decay = std::stod(meta("decay"));
  for (size_t step = 0; step < lrs.size(); ++step) {
    INFO(kind << " step " << step << (how.bf16_copy ? ", bf16 copy" : "") << (how.step_on_device ? ", on device" : ""));
    stored_step(ctx, arenas, references(), names, config, std::stof(lrs[step]), step, how.step_on_device);
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string at = std::to_string(step);
      const ParamEntry& e = arenas.entries()[i];
      require_close(arenas.param(i).to_vector(), reference(kind + "." + names[i] + ".param" + at), names[i] + " weight");
      require_close(arenas.ema.view(e.offset, e.shape).to_vector(), reference(kind + "." + names[i] + ".ema" + at),
                    names[i] + " average");
    }
  }
  return static_cast<int>(lrs.size());
}

int replay_torch_ema_statistics(Context& ctx, bool step_on_device) {
  const int steps = std::stoi(meta("steps"));
  const double decay = std::stod(meta("decay"));
  const HostTensor& init = reference("stats.init");
  Tensor average = Tensor::from_vector(init.shape, init.values).to(ctx.device());
  Tensor on_device = Tensor::zeros(Shape{4}, ctx.device());
  for (int step = 0; step < steps; ++step) {
    INFO("statistics, step " << step << (step_on_device ? ", on device" : ""));
    const HostTensor& value = reference("stats.value" + std::to_string(step));
    const Tensor values = Tensor::from_vector(value.shape, value.values).to(ctx.device());
    if (step_on_device) {
      const uint64_t index = static_cast<uint64_t>(step);
      std::vector<float> staged(4, 0.0f);
      std::memcpy(&staged[2], &index, sizeof index);
      on_device.copy_from(Tensor::from_vector(Shape{4}, staged));
      // The host says another step: the device's must win.
      ops::ema_average(ctx, average, values, decay, 1000, step_in(on_device));
    } else {
      ops::ema_average(ctx, average, values, decay, static_cast<uint64_t>(step));
    }
    ctx.synchronize();
    require_close(average.to_vector(), reference("stats.ema" + std::to_string(step)), "statistics' average");
  }
  return steps;
}

}  // namespace lockstep::testing
