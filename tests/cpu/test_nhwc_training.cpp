// Training with channels-last activations (ContextOptions::memory_format
// nhwc) on the CPU: the graph converts the images once, every node keeps
// NHWC, flatten hands the linear layers NCHW order. Batch norm sums in the
// NCHW loops' order (tests/cpu/test_batchnorm_nhwc.cpp: the same bits), the
// other passes over images are elementwise, and the convolutions are the one
// difference: oneDNN's channels-last kernels sum the products in another
// order than its blocked ones (NCHW), so where they run (the default build)
// NHWC trains as NCHW within the rounding of those sums; on the im2col
// reference, which computes NHWC on NCHW copies, bit for bit. A checkpoint of
// an NHWC run loads into an NCHW model; synchronised batch norm trains in
// NHWC as in NCHW; the default format (nhwc on the CPU where the
// convolutions run on oneDNN, and for bf16 on a GPU) and the option's names
// parse.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <unistd.h>

#include "distributed/replica_manager.h"
#include "runtime/cpu_convolution.h"
#include "runtime/memory_format_option.h"
#include "runtime/precision.h"
#include "support/format_runs.h"
#include "support/replica_models.h"
#include "training/checkpoint.h"

using namespace lockstep;
using namespace lockstep::testing;
using Catch::Matchers::Contains;

namespace {

ReplicaOptions in_format(MemoryFormat format) {
  ReplicaOptions options;
  options.context.memory_format = format;
  return options;
}

Shape sample_for(const std::string& name) { return name == "resnet20" ? Shape{3, 8, 8} : Shape{1, 12, 12}; }

// ||a - b|| / ||b||.
double normwise(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    norm += double(b[i]) * b[i];
  }
  return norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// The convolutions' orders of summing differ by float rounding (a few 1e-8
// of a sum, tests/cpu/test_conv2d_onednn.cpp); over these three steps that
// moved the parameters by at most 3.3e-7 of their norm, and the momentum and
// held-out logits by up to 7.6e-6, where a max-pool window's two largest
// values swapped (measured on a Xeon with AVX-512; the CLI test holds the
// same against a control run on the im2col reference). 1e-4 leaves room for
// other machines and stays far below a wrong tap or channel (tens of percent).
constexpr double kConvOrderBound = 1e-4;

// NHWC's outcome against NCHW's: bit for bit on the im2col reference, else
// within the convolutions' rounding, the same samples counted and (but for a
// tie at the margin) classified alike.
void check_formats_agree(const FormatRun& nhwc, const FormatRun& nchw) {
  if (!cpu_conv_on_dnnl()) {
    check_same_outcome(nhwc.outcome, nchw.outcome);
    CHECK(nhwc.logits == nchw.logits);
    return;
  }
  REQUIRE(nhwc.outcome.metrics.size() == nchw.outcome.metrics.size());
  for (size_t i = 0; i < nchw.outcome.metrics.size(); ++i) {
    INFO("step " << i);
    CHECK(nhwc.outcome.metrics[i].count == nchw.outcome.metrics[i].count);
    CHECK(std::abs(nhwc.outcome.metrics[i].correct - nchw.outcome.metrics[i].correct) <= 1);
    CHECK(std::fabs(nhwc.outcome.metrics[i].loss_sum - nchw.outcome.metrics[i].loss_sum) <=
          kConvOrderBound * std::fabs(nchw.outcome.metrics[i].loss_sum));
  }
  const double params = normwise(nhwc.outcome.params, nchw.outcome.params),
               momentum = normwise(nhwc.outcome.momentum, nchw.outcome.momentum),
               state = normwise(nhwc.outcome.state, nchw.outcome.state);
  INFO("normwise from nchw: parameters " << params << ", momentum " << momentum << ", running statistics "
                                         << state);
  CHECK(params <= kConvOrderBound);
  CHECK(momentum <= kConvOrderBound);
  CHECK(state <= kConvOrderBound);
  REQUIRE(nhwc.logits.size() == nchw.logits.size());
  for (size_t i = 0; i < nchw.logits.size(); ++i) CHECK(normwise(nhwc.logits[i], nchw.logits[i]) <= kConvOrderBound);
}

}  // namespace

TEST_CASE("simple-cnn small-cnn and resnet20 train in nhwc as in nchw on the cpu", "[nhwc][replica]") {
  const std::string name = GENERATE(as<std::string>{}, "simple-cnn", "small-cnn", "resnet20");
  const int replicas = GENERATE(1, 2);
  INFO(name << " on " << replicas << " CPU replica(s)");
  const std::vector<Device> devices(replicas, Device::cpu());
  const FormatRun nchw = train_in_format(name, sample_for(name), devices, in_format(MemoryFormat::nchw));
  const FormatRun nhwc = train_in_format(name, sample_for(name), devices, in_format(MemoryFormat::nhwc));
  check_formats_agree(nhwc, nchw);
  // The NHWC run did lay its values out channels-last.
  CHECK(nhwc.activation_format == MemoryFormat::nhwc);
  CHECK(nchw.activation_format == MemoryFormat::nchw);
}

TEST_CASE("a checkpoint of an nhwc run loads into an nchw model and predicts the same", "[nhwc][checkpoint]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("lockstep-nhwc-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "ck.safetensors").string();
  const Shape sample{1, 12, 12};
  ReplicaManager trained(named_model("simple-cnn", sample, ModelOptions{.dropout = true}, 5), {Device::cpu()},
                         in_format(MemoryFormat::nhwc));
  const SgdConfig sgd{0.9f, 5e-4f, false};
  for (int s = 0; s < 2; ++s) trained.train_step(pinned_batch(8, sample, 40 + s), 0.05f, sgd);
  CheckpointInfo info;
  info.model_spec = trained.model(0).spec();
  save_checkpoint(path, trained.model(0), info);

  // Other initial weights, then the checkpoint's: the predictions are the
  // NHWC model's (in NHWC bit for bit; in NCHW but for the convolutions' order).
  const HostBatch held_out = pinned_batch(7, sample, 90);
  for (MemoryFormat format : {MemoryFormat::nhwc, MemoryFormat::nchw}) {
    INFO("loaded into an " << memory_format_name(format) << " model");
    ReplicaManager loaded(named_model("simple-cnn", sample, ModelOptions{.dropout = true}, 6), {Device::cpu()},
                          in_format(format));
    REQUIRE(loaded.logits(held_out) != trained.logits(held_out));
    load_into(loaded.model(0), read_checkpoint(path), path);
    if (format == MemoryFormat::nhwc || !cpu_conv_on_dnnl())
      CHECK(loaded.logits(held_out) == trained.logits(held_out));
    else
      CHECK(normwise(loaded.logits(held_out), trained.logits(held_out)) <= kConvOrderBound);
    CHECK(loaded.model(0).arenas().params.to_vector() == trained.model(0).arenas().params.to_vector());
  }
  fs::remove_all(dir);
}

TEST_CASE("resnet20 with synchronised batch norm trains in nhwc as in nchw on cpu replicas",
          "[nhwc][replica][sync-bn]") {
  // The all-reduced statistics and gradient sums are per channel, so only the
  // passes over the images see the format: NHWC changes no bit but the
  // convolutions'.
  for (int replicas : {2, 3}) {
    INFO(replicas << " CPU replicas");
    const std::vector<Device> devices(replicas, Device::cpu());
    ReplicaOptions nchw_options = in_format(MemoryFormat::nchw), nhwc_options = in_format(MemoryFormat::nhwc);
    nchw_options.context.sync_batch_norm = nhwc_options.context.sync_batch_norm = true;
    const FormatRun nchw = train_in_format("resnet20", sample_for("resnet20"), devices, nchw_options);
    const FormatRun nhwc = train_in_format("resnet20", sample_for("resnet20"), devices, nhwc_options);
    REQUIRE(nhwc.activation_format == MemoryFormat::nhwc);
    check_formats_agree(nhwc, nchw);
  }
}

TEST_CASE("the memory format defaults to nhwc for bf16 on a gpu and on a cpu with onednn, and a given one is kept",
          "[nhwc][precision]") {
  // The rule itself (runtime/memory_format_option.h), for both kinds of device:
  // resolving needs no device, a Context on a GPU (tests/gpu) does.
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16})
    for (Device device : {Device::cpu(), Device::cuda(0)}) {
      INFO(precision_name(p) << " on " << device.str());
      ContextOptions options;
      options.precision = p;
      const bool channels_last = device.is_cuda() ? p == Precision::bf16 : cpu_conv_on_dnnl();
      CHECK(resolve_memory_format(options, device) == (channels_last ? MemoryFormat::nhwc : MemoryFormat::nchw));
      for (MemoryFormat given : {MemoryFormat::nchw, MemoryFormat::nhwc}) {
        options.memory_format = given;
        CHECK(resolve_memory_format(options, device) == given);
      }
    }
  // A Context on the CPU holds the resolved format, in every precision.
  const MemoryFormat cpu_default = cpu_conv_on_dnnl() ? MemoryFormat::nhwc : MemoryFormat::nchw;
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16}) {
    ContextOptions options;
    options.precision = p;
    REQUIRE_FALSE(options.memory_format.has_value());
    CHECK(Context(Device::cpu(), options).memory_format() == cpu_default);
    CHECK(Context(Device::cpu(), options).options().memory_format == cpu_default);
    for (MemoryFormat given : {MemoryFormat::nchw, MemoryFormat::nhwc}) {
      options.memory_format = given;
      CHECK(Context(Device::cpu(), options).memory_format() == given);
    }
  }
  // Synchronised batch norm takes either format: the same rule with it.
  ContextOptions sync;
  sync.precision = Precision::bf16;
  sync.sync_batch_norm = true;
  CHECK(resolve_memory_format(sync, Device::cuda(0)) == MemoryFormat::nhwc);
  CHECK(resolve_memory_format(sync, Device::cpu()) == cpu_default);
  REQUIRE_NOTHROW(Context(Device::cpu(), sync));
}

TEST_CASE("a bf16 run on the cpu with no memory format given trains in the cpu's default format",
          "[nhwc][precision][replica]") {
  ReplicaOptions options;
  options.context.precision = Precision::bf16;
  const FormatRun run = train_in_format("simple-cnn", sample_for("simple-cnn"), {Device::cpu()}, options);
  CHECK(run.activation_format == (cpu_conv_on_dnnl() ? MemoryFormat::nhwc : MemoryFormat::nchw));
  CHECK(run.activation_dtype == DType::f32);  // the CPU's bf16 mode rounds in FP32 storage
}

TEST_CASE("memory formats and precisions parse from their names and name the option otherwise", "[nhwc][precision]") {
  CHECK(parse_memory_format("nchw") == MemoryFormat::nchw);
  CHECK(parse_memory_format("nhwc") == MemoryFormat::nhwc);
  REQUIRE_THROWS_WITH(parse_memory_format("NHWC", "--memory-format"),
                      Contains("--memory-format 'NHWC': expected nchw or nhwc"));
  REQUIRE_THROWS_WITH(parse_memory_format(""), Contains("memory format '': expected nchw or nhwc"));
  CHECK(parse_precision("bf16") == Precision::bf16);
  REQUIRE_THROWS_WITH(parse_precision("fp16", "--precision"), Contains("--precision 'fp16': expected fp32, tf32 or bf16"));
}
