// profile: where one training step's time goes, layer by layer. Each node's
// forward and backward (convolution and linear: data gradient and weight
// gradient apart), the loss, the running statistics' combination and the
// update, timed by the Context's marks (profile_steps.h), beside the
// roofline bound of each (gpu_peaks.h, layers/step_cost.h) and what it
// achieved (TFLOP/s where the bound is compute, GB/s where it is memory);
// and the host's time to queue a step against the device's time to run it.
// One replica on one device. On the emulated GPU the figures mean nothing
// (docs/emulated-gpu.md); what runs there is the plumbing.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "base/error.h"
#include "gpu_peaks.h"
#include "kernels/cpu/thread_pool.h"
#include "layers/models.h"
#include "plot.h"
#include "profile_steps.h"
#include "runtime/memory_format_option.h"
#include "suites.h"

namespace lockstep::bench {

namespace {

// How far the parts (input, every node's forward and backward, loss,
// statistics, update) may lie from the marked step's total, as a fraction of
// it. Each part is a median over rounds and the windows of nodes are marked
// in different steps, so the sum of medians is not one step's time; what is
// left besides that is the time between a node's marks that no node owns.
constexpr double kSumTolerance = 0.25;

// The GPU whose published peaks bound the step: the device's own, else
// --gpu, else an H100 (the emulated GPU and the CPU have none).
struct BoundGpu {
  const GpuPeaks* peaks = nullptr;
  bool is_device = false;
  std::string why;
};

BoundGpu bound_gpu(const Options& o, const Device& device) {
  if (!o.gpu.empty()) return {&gpu_peaks(o.gpu), false, "--gpu " + o.gpu};
  if (device.is_cuda()) {
    const std::string name = cuda_devices().at(static_cast<size_t>(device.index)).name;
    if (const GpuPeaks* own = gpu_peaks_for_device(name)) return {own, true, "this device's"};
    return {&gpu_peaks("h100"), false, "an H100's: bench/suite/gpu_peaks.cpp has no figures for '" + name + "'"};
  }
  return {&gpu_peaks("h100"), false, "an H100's, for reference: this ran on the CPU"};
}

// The part of a layer's cost one pass moves and computes.
LayerCost forward_part(LayerCost c) {
  c.backward_data_flops = c.backward_weight_flops = c.backward_bytes = 0;
  return c;
}
LayerCost backward_part(LayerCost c) {
  c.forward_flops = c.forward_bytes = 0;
  return c;
}

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
std::string opt_ms(const std::optional<double>& v) { return v ? fmt("%.3f", *v * 1e3) : "-"; }

// The figures of one timed part against its bound: the JSON fields and the
// table's last three cells (bound us, time over bound, achieved).
struct Against {
  json fields;
  std::vector<std::string> cells;
};

Against against_bound(const LayerCost& cost, const BoundGpu& gpu, const std::string& prec, double seconds) {
  const LayerBound fwd = layer_bound(forward_part(cost), *gpu.peaks, prec);
  const LayerBound bwd = layer_bound(backward_part(cost), *gpu.peaks, prec);
  const LayerBound all = layer_bound(cost, *gpu.peaks, prec);
  const double bound = fwd.seconds() + bwd.seconds();
  const bool compute = all.compute_seconds >= all.memory_seconds;
  const double tflops = seconds > 0 ? cost.flops() / seconds / 1e12 : 0;
  const double gbs = seconds > 0 ? cost.bytes() / seconds / 1e9 : 0;
  Against a;
  a.fields = {{"flops", cost.flops()},
              {"bytes", cost.bytes()},
              {"bound", {{"forward_seconds", fwd.seconds()}, {"backward_seconds", bwd.seconds()},
                         {"seconds", bound}, {"limited_by", bound == 0 ? "-" : compute ? "compute" : "memory"}}},
              {"achieved_tflops", tflops},
              {"achieved_gbs", gbs},
              {"time_over_bound", bound > 0 && seconds > 0 ? json(seconds / bound) : json(nullptr)}};
  a.cells = {fmt("%.2f", bound * 1e6), bound > 0 && seconds > 0 ? fmt("%.1f", seconds / bound) : "-",
             bound == 0 || seconds <= 0 ? "-" : compute ? fmt("%.3g TFLOP/s", tflops) : fmt("%.3g GB/s", gbs)};
  return a;
}

// Synthetic images and labels on `device`, the same every run.
std::pair<Tensor, Tensor> synthetic_batch(const Shape& input, int64_t batch, int64_t classes, Device device) {
  Tensor images = Tensor::empty(Shape{batch, input[0], input[1], input[2]});
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  std::mt19937 gen(0);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int32_t> label(0, static_cast<int32_t>(classes - 1));
  for (int64_t i = 0; i < images.numel(); ++i) images.data()[i] = normal(gen);
  for (int32_t& l : labels) l = label(gen);
  Tensor on_device = Tensor::empty(images.shape(), device);
  on_device.copy_from(images);
  return {on_device, Tensor::from_labels(labels, device)};
}

}  // namespace

SuiteResult run_profile(const Options& given) {
  Options o = given;
  const std::vector<Device> devices = resolve_devices(o.devices);
  const Device device = devices.front();
  const bool gpu = device.is_cuda();
  if (o.model.empty()) o.model = o.quick ? "resnet20" : gpu ? "resnet18" : "resnet20";
  if (o.input.empty()) o.input = o.quick ? "3x8x8" : "3x32x32";
  if (o.batch == 0) o.batch = o.quick ? 8 : gpu ? 256 : 64;
  if (o.steps == 0) o.steps = o.quick ? 3 : gpu ? 10 : 5;
  if (o.warmup < 0) o.warmup = o.quick ? 1 : gpu ? 5 : 2;
  // The library's default, as lockstep train runs (roofline's too).
  const std::string prec = o.precision.empty() && !o.tf32 ? "tf32" : precision(o);
  const Shape input = parse_shape(o.input);
  LS_CHECK(input.rank() == 3, "profile: --input must be CxHxW, got ", o.input);
  if (!gpu) cpu::set_compute_threads(cpu_threads(o));

  ContextOptions context;
  context.precision = parse_precision(prec);
  if (!o.memory_format.empty()) context.memory_format = parse_memory_format(o.memory_format, "--memory-format");
  Context ctx(device, context);
  ctx.make_current();
  std::unique_ptr<Graph> graph = build_model_from_spec(model_spec(o.model, input, o.classes, {}), device, 1);
  const StepCost cost = step_cost(*graph, precision_cost_options(prec, o.batch));
  const size_t nodes = graph->node_count();
  LS_CHECK(cost.layers.size() == nodes + 2, "profile: step_cost gave ", cost.layers.size(), " rows for ", nodes,
           " nodes (expected the nodes, the loss and the update)");

  ProfileSetup setup;
  setup.warmup = o.warmup;
  setup.rounds = o.steps;
  setup.batch = o.batch;
  for (size_t n = 0; n < nodes; ++n) {
    const std::vector<int>& in = graph->node_inputs(n);
    if (cost.layers[n].matrix && std::any_of(in.begin(), in.end(), [](int i) { return i >= 0; }))
      setup.split_nodes.push_back(n);
  }
  const auto [images, labels] = synthetic_batch(input, o.batch, o.classes, device);
  const StepProfile p = profile_steps(*graph, ctx, images, labels, setup);

  const BoundGpu bgpu = bound_gpu(o, device);
  const std::string device_name = gpu ? cuda_devices().at(static_cast<size_t>(device.index)).name : "CPU";
  const bool emulated = device_name.find("emulated") != std::string::npos;
  SuiteResult result;
  result.title = fmt("profile: %s, batch %lld of synthetic %s images, %s, on %s; per layer, median of %d rounds "
                     "after %d warm-up steps%s",
                     o.model.c_str(), static_cast<long long>(o.batch), o.input.c_str(), prec.c_str(),
                     device_name.c_str(), o.steps, o.warmup,
                     emulated ? " -- EMULATED GPU: the figures mean nothing" : "");
  result.table = Table({"layer", "type", "forward ms", "backward ms", "data grad ms", "weight grad ms", "total ms",
                        "bound us", "time / bound", "achieved"});

  // The nodes, then the phases that are not a node's.
  double parts = p.input + p.loss + p.statistics + p.update;
  std::map<std::string, std::pair<double, double>> by_type;  // type: measured, bound
  std::vector<std::string> types;
  for (size_t n = 0; n < nodes; ++n) {
    const NodeProfile& np = p.nodes[n];
    const LayerCost& c = cost.layers[n];
    const double seconds = np.forward.value_or(0) + np.backward.value_or(0);
    parts += seconds;
    std::optional<double> weight, data;
    std::string split = "none";
    if (np.weight_alone && np.data_and_weight) {
      weight = np.weight_alone;
      split = "apart";  // timed outside the step, on buffers of the same shapes
      // Below the noise of the weight gradient's own time the difference says nothing.
      if (*np.data_and_weight > *np.weight_alone) data = *np.data_and_weight - *np.weight_alone;
    } else if (c.matrix) {
      weight = np.backward;  // reads the data: its backward is the weight gradient alone
      split = "weight gradient only";
    }
    const Against a = against_bound(c, bgpu, prec, seconds);
    json row{{"kind", "layer"},
             {"index", n},
             {"layer", graph->node_name(n)},
             {"type", graph->layer(n).type()},
             {"forward_seconds", opt(np.forward)},
             {"backward_seconds", opt(np.backward)},
             {"seconds", seconds},
             {"split", split},
             {"data_gradient_seconds", opt(data)},
             {"weight_gradient_seconds", opt(weight)},
             {"backward_apart_seconds", opt(np.data_and_weight)}};
    row.update(a.fields);
    result.rows.push_back(row);
    std::vector<std::string> cells{graph->node_name(n), graph->layer(n).type(), opt_ms(np.forward), opt_ms(np.backward),
                                   opt_ms(data), opt_ms(weight), fmt("%.3f", seconds * 1e3)};
    cells.insert(cells.end(), a.cells.begin(), a.cells.end());
    result.table.add(cells);
    if (!by_type.count(c.type)) types.push_back(c.type);
    by_type[c.type].first += seconds;
    by_type[c.type].second += a.fields["bound"]["seconds"].get<double>();
  }
  // The phases outside the nodes: the loss and the update have a bound (the
  // last two rows of step_cost), the input's conversion and the statistics none.
  auto phase = [&](const std::string& name, double seconds, const LayerCost* c) {
    json row{{"kind", "phase"}, {"layer", name}, {"seconds", seconds}};
    std::vector<std::string> cells{name, "", "", "", "", "", fmt("%.3f", seconds * 1e3), "-", "-", "-"};
    if (c) {
      const Against a = against_bound(*c, bgpu, prec, seconds);
      row.update(a.fields);
      std::copy(a.cells.begin(), a.cells.end(), cells.begin() + 7);
      types.push_back(name);
      by_type[name] = {seconds, a.fields["bound"]["seconds"].get<double>()};
    }
    result.rows.push_back(row);
    result.table.add(cells);
  };
  phase("input (conversion)", p.input, nullptr);
  phase("loss", p.loss, &cost.layers[nodes]);
  phase("batch-norm statistics", p.statistics, nullptr);
  phase("sgd update", p.update, &cost.layers[nodes + 1]);

  const double bound = step_bound_seconds(cost, *bgpu.peaks, prec);
  const double other = p.marked_step - parts;
  const bool consistent = std::abs(other) <= kSumTolerance * p.marked_step;
  auto total_row = [&](const std::string& name, double seconds, bool against) {
    result.table.add({name, "", "", "", "", "", fmt("%.3f", seconds * 1e3), against ? fmt("%.2f", bound * 1e6) : "",
                      against ? fmt("%.1f", seconds / bound) : "", ""});
  };
  total_row("sum of the rows", parts, true);
  total_row("step, marked (device)", p.marked_step, false);
  total_row("step, unmarked (device)", p.unmarked_step, true);
  total_row("step, host enqueue", p.host_enqueue, false);
  const bool host_bound = p.host_enqueue >= 0.9 * p.unmarked_step;

  result.settings = {{"model", o.model},
                     {"input", o.input},
                     {"classes", o.classes},
                     {"batch", o.batch},
                     {"precision", prec},
                     {"memory_format", memory_format_name(ctx.memory_format())},
                     {"device", device.str()},
                     {"device_name", device_name},
                     {"emulated", emulated},
                     {"warmup", o.warmup},
                     {"rounds", o.steps},
                     {"nodes", nodes},
                     {"window_nodes", p.window_nodes},
                     {"windows", p.windows},
                     {"bound_gpu", bgpu.peaks->key},
                     {"bound_gpu_name", bgpu.peaks->name},
                     {"bound_gpu_is_this_device", bgpu.is_device},
                     {"quick", o.quick},
                     {"step",
                      {{"parts_seconds", parts},
                       {"marked_seconds", p.marked_step},
                       {"other_seconds", other},
                       {"tolerance", kSumTolerance},
                       {"consistent", consistent},
                       {"unmarked_seconds", p.unmarked_step},
                       {"host_enqueue_seconds", p.host_enqueue},
                       {"host_step_seconds", p.host_step},
                       {"host_bound", host_bound},
                       {"bound_seconds", bound},
                       {"last_loss", p.last_loss}}}};

  if (emulated)
    result.notes.push_back("EMULATED GPU: every time here is the emulator's, on the CPU; they say nothing of a real "
                           "GPU (docs/emulated-gpu.md). Only the plumbing runs here.");
  result.notes.push_back(fmt("times: %s, each a median over %d rounds; a node's forward and backward run from the mark "
                             "before it to its own (Graph::set_node_hook), marked %d nodes a step (%d windows; a "
                             "Context reads back its last 64 marks)",
                             gpu ? "CUDA events on the compute stream" : "the host clock (CPU marks)", o.steps,
                             p.window_nodes, p.windows));
  result.notes.push_back("data grad and weight grad: a convolution's or linear layer's backward run again apart, on "
                         "buffers of its shapes, without its input gradient (the weight gradient alone) and with it; "
                         "the data gradient is the difference (- when below the weight gradient's noise); a layer "
                         "reading the images has no data gradient");
  result.notes.push_back(fmt("sum of the rows %.3f ms against the marked step's %.3f ms: %+.1f%% unowned (between "
                             "marks, and medians of different steps), %s the %.0f%% tolerance",
                             parts * 1e3, p.marked_step * 1e3, 100.0 * other / p.marked_step,
                             consistent ? "within" : "OUTSIDE", 100.0 * kSumTolerance));
  result.notes.push_back(fmt("host enqueue %.3f ms against %.3f ms of device time for an unmarked step (%.3f ms with "
                             "its read-back): %s",
                             p.host_enqueue * 1e3, p.unmarked_step * 1e3, p.host_step * 1e3,
                             !gpu ? "on the CPU the host does the work as it queues it, so they are one"
                             : host_bound ? "HOST-BOUND: the device waits for the host to queue its work"
                                          : "device-bound: the host queues ahead of the device"));
  result.notes.push_back(fmt("bound: %s, %s (%s); per row max(FLOPs / peak, bytes / bandwidth) for forward plus the "
                             "same for backward (layers/step_cost.h's minimum traffic model); achieved is TFLOP/s "
                             "where the bound is compute, GB/s where it is memory; the step's bound %.4f ms",
                             bgpu.peaks->name.c_str(), bgpu.why.c_str(), bgpu.peaks->source.c_str(), bound * 1e3));
  if (devices.size() > 1) result.notes.push_back("profile times one replica, on " + device.str() + " (the first of --devices)");
  note_unused(o, {"--batches", "--epochs"}, result);

  Series measured{"measured", {}, {}}, bounds{"bound (" + bgpu.peaks->key + ")", {}, {}};
  for (const std::string& t : types) {
    measured.y.push_back(by_type[t].first * 1e3);
    bounds.y.push_back(by_type[t].second * 1e3);
  }
  PlotSpec spec{fmt("profile: %s batch %lld, %s on %s%s", o.model.c_str(), static_cast<long long>(o.batch),
                    prec.c_str(), device_name.c_str(), emulated ? " (EMULATED: meaningless)" : ""),
                "", "milliseconds per step, summed by layer type"};
  result.png = plot_bars(png_path(o), spec, types, {measured, bounds}, result.notes);
  return result;
}

}  // namespace lockstep::bench
