#include "support/adamw_torch.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/bf16_math.h"
#include "ops/sgd.h"
#include "support/golden_files.h"
#include "training/safetensors.h"

namespace lockstep::testing {

namespace {

const SafetensorsFile& references() {
  static const SafetensorsFile file = read_safetensors(golden_file("adamw.safetensors"));
  return file;
}
const HostTensor& reference(const std::string& name) { return references().at(name); }
float meta_float(const std::string& key) { return std::stof(references().metadata.at(key)); }

}  // namespace

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) out.push_back(part);
  return out;
}

// |ours - PyTorch| <= 1e-6 |PyTorch| + 1e-7 max|PyTorch|. The relative bound
// is the issue's; the floor serves values near zero that are sums of terms of
// opposite signs (exp_avg = b1 m + (1-b1) g), where the two sides' roundings
// of those terms (an FMA or not) leave an absolute error of an ulp of the
// terms, around 6e-8 of the tensor's scale.
void require_close(const std::vector<float>& got, const HostTensor& want, const std::string& what) {
  REQUIRE(got.size() == want.values.size());
  double scale = 0.0;
  for (float v : want.values) scale = std::max(scale, double(std::abs(v)));
  for (size_t i = 0; i < got.size(); ++i) {
    const double error = std::abs(double(got[i]) - double(want.values[i]));
    INFO(what << " element " << i << ": ours " << got[i] << ", PyTorch " << want.values[i]);
    REQUIRE(error <= 1e-6 * std::abs(double(want.values[i])) + 1e-7 * scale);
  }
}

ParameterArenas stored_arenas(const SafetensorsFile& file, const std::vector<std::string>& names, Device device,
                              bool bf16_copy) {
  std::vector<ParamSpec> specs;
  for (const std::string& name : names)
    specs.push_back({name, file.at(name + ".init").shape, Init::zeros, name.find("weight") != std::string::npos});
  ParameterArenas arenas(specs, device, true);
  if (bf16_copy) arenas.params_bf16 = Tensor::zeros(arenas.params.shape(), device, DType::bf16);
  for (size_t i = 0; i < names.size(); ++i)
    arenas.param(i).copy_from(Tensor::from_vector(arenas.param(i).shape(), file.at(names[i] + ".init").values));
  return arenas;
}

void stored_step(Context& ctx, ParameterArenas& arenas, const SafetensorsFile& file,
                 const std::vector<std::string>& names, const SgdConfig& config, float lr, size_t step,
                 bool on_device) {
  for (size_t i = 0; i < names.size(); ++i)
    arenas.grad(i).copy_from(
        Tensor::from_vector(arenas.grad(i).shape(), file.at(names[i] + ".grad" + std::to_string(step)).values));
  if (on_device) {
    // [lr, unused, step as 8 bytes]: as ReplicaGraph's buffer.
    std::vector<float> values(4, 0.0f);
    values[0] = lr;
    const uint64_t index = step;
    std::memcpy(&values[2], &index, sizeof index);
    const Tensor staged = Tensor::from_vector(Shape{4}, values).to(ctx.device());
    const float* lr_at = staged.data();
    const auto* step_at = reinterpret_cast<const uint64_t*>(staged.data() + 2);
    // The host's values say another step: the device's must win.
    ops::optimizer_step(ctx, arenas, config, 1.0f, 1000, lr_at, step_at);
  } else {
    ops::optimizer_step(ctx, arenas, config, lr, step);
  }
  ctx.synchronize();
  for (float g : arenas.grads.to_vector()) REQUIRE(g == 0.0f);  // cleared for the next step
  if (arenas.params_bf16.defined()) {
    const std::vector<float> w = arenas.params.to_vector(), copy = arenas.params_bf16.to_vector();
    for (size_t i = 0; i < w.size(); ++i) {
      INFO("bf16 copy element " << i);
      REQUIRE(copy[i] == bf16_to_float(float_to_bf16(w[i])));
    }
    REQUIRE_FALSE(arenas.params_bf16_stale);
  }
}

int replay_torch_adamw(Context& ctx, const AdamwReplay& how) {
  const std::vector<std::string> names = split(references().metadata.at("tensors"));
  const std::vector<std::string> lrs = split(references().metadata.at("lrs"));
  ParameterArenas arenas = stored_arenas(references(), names, ctx.device(), how.bf16_copy);
  arenas.add_adamw_state();

  SgdConfig config;
  config.optimizer = Optimizer::adamw;
  config.weight_decay = meta_float("weight_decay");
  config.beta1 = meta_float("beta1");
  config.beta2 = meta_float("beta2");
  config.eps = meta_float("eps");
  config.backbone_lr_scale = meta_float("backbone_scale");
  config.backbone_elements = arenas.entries()[2].offset;  // the conv's weight and bias
  for (size_t step = 0; step < lrs.size(); ++step) {
    INFO("step " << step << (how.bf16_copy ? ", bf16 copy" : "") << (how.rates_on_device ? ", rates on device" : ""));
    stored_step(ctx, arenas, references(), names, config, std::stof(lrs[step]), step, how.rates_on_device);
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string at = std::to_string(step);
      const ParamEntry& e = arenas.entries()[i];
      require_close(arenas.param(i).to_vector(), reference(names[i] + ".param" + at), names[i] + " weight");
      require_close(arenas.momentum.view(e.offset, e.shape).to_vector(), reference(names[i] + ".exp_avg" + at),
                    names[i] + " exp_avg");
      require_close(arenas.exp_avg_sq.view(e.offset, e.shape).to_vector(), reference(names[i] + ".exp_avg_sq" + at),
                    names[i] + " exp_avg_sq");
    }
  }
  return static_cast<int>(lrs.size());
}

}  // namespace lockstep::testing
