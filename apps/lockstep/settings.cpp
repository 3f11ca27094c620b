#include "settings.h"

#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <utility>

#include "base/error.h"
#include "runtime/memory_format_option.h"

namespace lockstep::app {

void apply_defaults(TrainSettings& s, Device device, const GivenFlags& settled) {
  auto set = [&](const char* flag, auto& field, auto value) {
    if (!settled.contains(flag)) field = value;
  };
  if (!settled.contains("--memory-format"))  // the library's rule, for what this run trains with
    s.memory_format = default_memory_format(s.precision, device);
  // AdamW's, as timm's: SGD's rates would make it diverge.
  const bool adamw = s.optimizer == "adamw";
  if (adamw) set("--weight-decay", s.weight_decay, 0.05f);
  if (device.is_cuda()) {
    set("--model", s.model, std::string("resnet18"));
    set("--epochs", s.epochs, int64_t(15));
    set("--batch", s.batch, int64_t(512));
    set("--lr", s.lr, adamw ? 1e-3f : 0.2f);
    set("--warmup-epochs", s.warmup_epochs, 1.0);
    set("--augment", s.augment, std::string("crop-flip"));
  } else {
    // small-cnn (batch norm, 'same' convolutions, pooling before BN): about
    // half simple-cnn's step time and past 90% on Fashion-MNIST by its third
    // epoch; 5 cosine epochs end near 91.5% in under 4 minutes on 2 cores.
    set("--model", s.model, std::string("small-cnn"));
    set("--epochs", s.epochs, int64_t(5));
    set("--batch", s.batch, int64_t(64));
    set("--lr", s.lr, adamw ? 1e-3f : 0.05f);
    set("--augment", s.augment, std::string("none"));
  }
}

AdamBetas parse_betas(const std::string& text) {
  const auto comma = text.find(',');
  float values[2] = {-1.0f, -1.0f};
  bool read = comma != std::string::npos;
  for (int i = 0; read && i < 2; ++i) {
    const std::string part = i == 0 ? text.substr(0, comma) : text.substr(comma + 1);
    char* end = nullptr;
    values[i] = std::strtof(part.c_str(), &end);
    read = !part.empty() && end == part.c_str() + part.size() && std::isfinite(values[i]);
  }
  LS_CHECK(read && values[0] >= 0.0f && values[0] < 1.0f && values[1] >= 0.0f && values[1] < 1.0f, "--betas '", text,
           "': expected two numbers in [0, 1) with a comma between them, as 0.9,0.999");
  return {values[0], values[1]};
}

std::string curve_path(const TrainSettings& s) {
  if (!s.plot.empty()) return s.plot;
  return std::filesystem::path(s.checkpoint).replace_extension(".png").string();
}

std::string best_checkpoint_path(const TrainSettings& s) {
  const std::string suffix = ".safetensors";
  const std::string& c = s.checkpoint;
  const bool named = c.size() > suffix.size() && c.compare(c.size() - suffix.size(), suffix.size(), suffix) == 0;
  return (named ? c.substr(0, c.size() - suffix.size()) : c) + ".best" + suffix;
}

}  // namespace lockstep::app
