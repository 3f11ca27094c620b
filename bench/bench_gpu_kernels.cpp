// GPU kernels and a GPU training step, on GPU 0:
//
//   bench_gpu_kernels [--quick] [--params N] [--batch B] [--steps N] [--warmup N] [--json PATH]
//
// 1. Memory bandwidth: the device's theoretical peak (2 x memory clock x bus
//    width, from cudaDeviceGetAttribute) and a measured device-to-device copy
//    (bytes read + written per second), the practical peak.
// 2. SGD-momentum over N parameters (default 32M, beyond any L2): the fused
//    kernel (reads w, g, v and writes them back: 24 bytes per parameter)
//    against the unfused sequence g += wd*w; v = mu*v + g; w -= lr*v; g = 0
//    (four passes, 40 bytes per parameter). Effective bandwidth is the 24
//    bytes a parameter needs, over the time taken, as a fraction of both peaks.
// 3. resnet18 (CIFAR variant) forward + backward (the loss included) at batch
//    B (default 256) on 3x32x32, through Graph::train_step on one context:
//    FP32 (TF32 off, the default) and TF32 allowed, the median step, images/s
//    and the forward/backward split (synchronised timing).
// A table on stdout, JSON to --json (default bench_gpu_kernels.json). Without
// a GPU (or without the CUDA backend) it says so and exits 0.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "runtime/context.h"
#include "runtime/device.h"
#include "base/error.h"
#include "bench/support/args.h"
#include "bench/support/median.h"
#include "layers/models.h"

#if LOCKSTEP_WITH_CUDA
#include <cuda_runtime_api.h>

#include "base/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "kernels/cuda/sgd_cuda.h"
#include "bench/cuda/sgd_unfused_cuda.h"
#endif

using namespace lockstep;
using json = nlohmann::json;

namespace {

struct Options {
  bool quick = false;
  int64_t params = int64_t(32) << 20;
  int64_t batch = 256;
  int steps = 20;
  int warmup = 5;
  std::string json_path = "bench_gpu_kernels.json";
};

void usage() {
  std::cout << "usage: bench_gpu_kernels [--quick] [--params N] [--batch B] [--steps N] [--warmup N] [--json PATH]\n"
               "  --quick   a short run: fewer repetitions and steps, FP32 step only\n";
}

Options parse(int argc, char** argv) {
  Options o;
  bench::parse_args(argc, argv, 1, "--help", usage, [&](const std::string& a, const bench::ArgValue& value) {
    if (a == "--quick") o.quick = true;
    else if (a == "--params") o.params = bench::parse_int(a, value());
    else if (a == "--batch") o.batch = bench::parse_int(a, value());
    else if (a == "--steps") o.steps = static_cast<int>(bench::parse_int(a, value()));
    else if (a == "--warmup") o.warmup = static_cast<int>(bench::parse_int(a, value()));
    else if (a == "--json") o.json_path = value();
    else return false;
    return true;
  });
  if (o.quick) {
    o.steps = std::min(o.steps, 5);
    o.warmup = std::min(o.warmup, 2);
  }
  LS_CHECK(o.params >= 1024 && o.batch > 0 && o.steps > 0 && o.warmup >= 0,
           "--params must be at least 1024, --batch and --steps positive, --warmup >= 0");
  return o;
}

using bench::median;

#if LOCKSTEP_WITH_CUDA

// Median seconds of `reps` runs of `work` on `stream`, timed with events.
template <typename Work> double time_on_stream(cudaStream_t stream, int reps, Work work) {
  cudaEvent_t start, stop;
  LS_CUDA_CHECK(cudaEventCreate(&start));
  LS_CUDA_CHECK(cudaEventCreate(&stop));
  work();  // warm-up
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    LS_CUDA_CHECK(cudaEventRecord(start, stream));
    work();
    LS_CUDA_CHECK(cudaEventRecord(stop, stream));
    LS_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.0f;
    LS_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms * 1e-3);
  }
  LS_CUDA_CHECK(cudaEventDestroy(start));
  LS_CUDA_CHECK(cudaEventDestroy(stop));
  return median(times);
}

json bandwidth(Context& ctx, const Options& o) {
  int clock_khz = 0, bus_bits = 0;
  LS_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, 0));
  LS_CUDA_CHECK(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0));
  // Double data rate: two transfers per clock. A runtime that no longer
  // reports the memory clock gives 0: the measured copy then stands in.
  const bool known = clock_khz > 0 && bus_bits > 0;
  const int64_t floats = std::max<int64_t>(o.params, int64_t(64) << 20);  // 256 MB each way at least
  Tensor a = Tensor::zeros(Shape{floats}, Device::cuda(0)), b = Tensor::zeros(Shape{floats}, Device::cuda(0));
  cudaStream_t stream = ctx.cuda()->compute_stream;
  double copy = time_on_stream(stream, o.quick ? 5 : 20, [&] {
    LS_CUDA_CHECK(cudaMemcpyAsync(b.data(), a.data(), floats * 4, cudaMemcpyDeviceToDevice, stream));
  });
  const double copy_rate = 2.0 * floats * 4 / copy;
  return json{{"memory_clock_khz", clock_khz},
              {"bus_width_bits", bus_bits},
              {"theoretical_known", known},
              {"theoretical_bytes_per_second", known ? 2.0 * clock_khz * 1e3 * bus_bits / 8.0 : copy_rate},
              {"copy_bytes", floats * 4},
              {"copy_seconds", copy},
              {"copy_bytes_per_second", copy_rate}};
}

json sgd(Context& ctx, const Options& o, const json& peak) {
  const int64_t n = o.params;
  Device d = Device::cuda(0);
  Tensor w = Tensor::zeros(Shape{n}, d), g = Tensor::zeros(Shape{n}, d), v = Tensor::zeros(Shape{n}, d);
  std::vector<ArenaSegment> segments = {{0, n, true}};
  SgdHyper hyper{0.01f, 0.9f, 5e-4f, false};
  cudaStream_t stream = ctx.cuda()->compute_stream;
  const int reps = o.quick ? 10 : 50;
  double fused = time_on_stream(stream, reps,
                                [&] { cuda::sgd_momentum(stream, w.data(), g.data(), v.data(), n, segments, hyper); });
  double unfused = time_on_stream(stream, reps,
                                  [&] { cuda::sgd_momentum_unfused(stream, w.data(), g.data(), v.data(), n, hyper); });
  const double needed = 24.0 * n;  // the bytes an update must move: w, g, v read and written
  const double theoretical = peak["theoretical_bytes_per_second"].get<double>();
  const double copy = peak["copy_bytes_per_second"].get<double>();
  auto entry = [&](double seconds, double moved) {
    return json{{"seconds", seconds},
                {"bytes_moved_per_parameter", moved},
                {"effective_bytes_per_second", needed / seconds},
                {"fraction_of_theoretical_peak", needed / seconds / theoretical},
                {"fraction_of_copy_bandwidth", needed / seconds / copy}};
  };
  return json{{"parameters", n},
              {"fused", entry(fused, 24.0)},
              {"unfused", entry(unfused, 40.0)},
              {"unfused_over_fused_time", unfused / fused}};
}

json resnet_step(const Options& o, bool tf32) {
  ContextOptions options;
  options.precision = tf32 ? Precision::tf32 : Precision::fp32;
  Context ctx(Device::cuda(0), options);
  const Shape input{3, 32, 32};
  auto model = build_model("resnet18", input, 10, ModelOptions{.dropout = false});
  model->finalize(Device::cuda(0), 1);

  std::mt19937 gen(0);
  std::normal_distribution<float> normal;
  std::vector<float> images(o.batch * input.numel());
  for (float& x : images) x = normal(gen);
  std::vector<int32_t> labels(o.batch);
  for (int64_t i = 0; i < o.batch; ++i) labels[i] = static_cast<int32_t>(i % 10);
  Tensor x = Tensor::from_vector(Shape{o.batch, 3, 32, 32}, images, Device::cuda(0));
  Tensor y = Tensor::from_labels(labels, Device::cuda(0));

  for (int i = 0; i < o.warmup; ++i) model->train_step(ctx, {}, x, y, 1.0f / o.batch);
  ctx.synchronize();
  std::vector<double> steps, forward, backward;
  for (int i = 0; i < o.steps; ++i) {
    auto start = std::chrono::steady_clock::now();
    ctx.clear_marks();
    TrainStepResult result = model->train_step(ctx, {}, x, y, 1.0f / o.batch);
    ctx.synchronize();
    steps.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    // The forward/backward split from events on the stream, read after the drain.
    forward.push_back(ctx.seconds_between(result.forward_mark, result.backward_mark));
    backward.push_back(ctx.seconds_between(result.backward_mark, result.end_mark));
  }
  const double med = median(steps);
  return json{{"model", "resnet18"},
              {"input", "3x32x32"},
              {"batch", o.batch},
              {"tf32", tf32},
              {"steps", o.steps},
              {"step_seconds", steps},
              {"step_seconds_median", med},
              {"forward_seconds_median", median(forward)},
              {"backward_seconds_median", median(backward)},
              {"images_per_second", double(o.batch) / med},
              {"cudnn_workspace_bytes", ctx.cuda()->workspace_bytes()}};
}

int run(const Options& o) {
  std::vector<GpuInfo> gpus = cuda_devices();
  Context ctx(Device::cuda(0));
  ctx.make_current();
  std::cerr << "bench_gpu_kernels on " << gpus[0].name << (o.quick ? " (quick)" : "") << "\n";
  json peak = bandwidth(ctx, o);
  json update = sgd(ctx, o, peak);
  json steps = json::array();
  steps.push_back(resnet_step(o, false));
  if (!o.quick) steps.push_back(resnet_step(o, true));

  std::printf("\n%s: memory bandwidth %.0f GB/s theoretical (clock %d kHz, %d-bit bus%s), %.0f GB/s measured copy\n\n",
              gpus[0].name.c_str(), peak["theoretical_bytes_per_second"].get<double>() / 1e9,
              peak["memory_clock_khz"].get<int>(), peak["bus_width_bits"].get<int>(),
              peak["theoretical_known"].get<bool>() ? "" : "; not reported: the copy stands in",
              peak["copy_bytes_per_second"].get<double>() / 1e9);
  std::printf("SGD-momentum over %lld parameters (24 bytes each must move)\n\n", static_cast<long long>(o.params));
  std::printf("| kernel | time | bytes moved / param | effective GB/s | of theoretical peak | of copy bandwidth |\n"
              "|---|---:|---:|---:|---:|---:|\n");
  for (const char* name : {"fused", "unfused"}) {
    const json& e = update[name];
    std::printf("| %s | %.3f ms | %.0f | %.0f | %.1f%% | %.1f%% |\n", name, e["seconds"].get<double>() * 1e3,
                e["bytes_moved_per_parameter"].get<double>(), e["effective_bytes_per_second"].get<double>() / 1e9,
                100.0 * e["fraction_of_theoretical_peak"].get<double>(),
                100.0 * e["fraction_of_copy_bandwidth"].get<double>());
  }
  std::printf("\nunfused / fused time: %.2fx\n\n", update["unfused_over_fused_time"].get<double>());
  std::printf("resnet18 forward + backward, batch %lld of 3x32x32\n\n| math | step (median) | forward | backward | "
              "images/s |\n|---|---:|---:|---:|---:|\n",
              static_cast<long long>(o.batch));
  for (const json& s : steps)
    std::printf("| %s | %.2f ms | %.2f ms | %.2f ms | %.0f |\n", s["tf32"].get<bool>() ? "TF32" : "FP32",
                s["step_seconds_median"].get<double>() * 1e3, s["forward_seconds_median"].get<double>() * 1e3,
                s["backward_seconds_median"].get<double>() * 1e3, s["images_per_second"].get<double>());

  json result{{"benchmark", "gpu_kernels"}, {"device", gpus[0].name}, {"quick", o.quick},
              {"bandwidth", peak},         {"sgd_momentum", update},  {"resnet18_step", steps}};
  std::ofstream(o.json_path) << result.dump(2) << "\n";
  std::printf("\nwrote %s\n", o.json_path.c_str());
  return 0;
}

#endif

}  // namespace

int main(int argc, char** argv) {
  try {
    Options o = parse(argc, argv);
#if LOCKSTEP_WITH_CUDA
    if (cuda_device_count() == 0) {
      std::printf("bench_gpu_kernels: needs a CUDA GPU and none is visible; nothing measured\n");
      return 0;
    }
    return run(o);
#else
    (void)o;
    std::printf("bench_gpu_kernels: needs a CUDA GPU, and this build has no CUDA backend; nothing measured\n");
    return 0;
#endif
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpu_kernels: %s\n", e.what());
    return 1;
  }
}
