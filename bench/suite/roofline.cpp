// roofline: the least time one training step of a model can take on a GPU,
// from the work layers/step_cost.h counts in the graph the library builds
// (every --model) and the GPU's published peaks (gpu_peaks.cpp). A bound,
// not a measurement: nothing runs on any device.
#include <map>

#include "gpu_peaks.h"
#include "layers/models.h"
#include "plot.h"
#include "runtime/memory_format_option.h"
#include "runtime/precision.h"
#include "suites.h"

namespace lockstep::bench {

namespace {

std::string us_text(double seconds) { return fmt("%.1f", seconds * 1e6); }

}  // namespace

SuiteResult run_roofline(const Options& given) {
  Options o = given;
  if (o.model.empty()) o.model = "resnet18";
  if (o.input.empty()) o.input = "3x32x32";
  if (o.batch == 0) o.batch = 512;
  if (o.gpu.empty()) o.gpu = "h100";
  // PyTorch's default on a GPU (cuDNN convolutions in TF32) unless told.
  const std::string prec = o.precision.empty() && !o.tf32 ? "tf32" : precision(o);
  const GpuPeaks& gpu = gpu_peaks(o.gpu);
  const std::unique_ptr<Graph> graph = build_model(o.model, parse_shape(o.input), o.classes);
  const StepCost cost = step_cost(*graph, precision_cost_options(prec, o.batch));
  // The training step's outputs and gradients as a GPU stores them (bf16 in
  // bf16 mode, fp32 otherwise; in the library's default memory format for
  // the precision on a GPU, channels-last in bf16, as the peers suite runs
  // it), from the graph's memory plan and as one buffer per node; computed,
  // not allocated.
  const DType stored = prec == "bf16" ? DType::bf16 : DType::f32;
  const MemoryFormat format = default_memory_format(parse_precision(prec), Device::cuda(0));
  const int64_t planned_bytes = graph->memory_plan(o.batch, PlanKind::train, true, format, stored).bytes();
  const int64_t unplanned_bytes = graph->memory_plan(o.batch, PlanKind::train, false, format, stored).bytes();
  const int64_t eval_bytes = graph->memory_plan(o.batch, PlanKind::eval, true, format, stored).bytes();

  SuiteResult result;
  result.kind = "bound";
  result.title = fmt("roofline BOUND (computed, not measured): %s on %s images, batch %lld, %s, on an %s -- the "
                     "least time a training step can take there",
                     o.model.c_str(), o.input.c_str(), static_cast<long long>(o.batch), prec.c_str(),
                     gpu.name.c_str());
  result.settings = {{"model", o.model},
                     {"input", o.input},
                     {"classes", o.classes},
                     {"batch", o.batch},
                     {"precision", prec},
                     {"gpu", o.gpu},
                     {"gpu_name", gpu.name},
                     {"fp32_tflops", gpu.fp32_tflops},
                     {"tf32_tflops", gpu.tf32_tflops},
                     {"bf16_tflops", gpu.bf16_tflops},
                     {"matrix_tflops", matrix_tflops(gpu, prec)},
                     {"bandwidth_gbs", gpu.bandwidth_gbs},
                     {"source", gpu.source},
                     {"quick", o.quick}};
  result.table = Table({"layer", "type", "GFLOP", "MB moved", "FLOP/byte", "compute us", "memory us", "bound us",
                        "limited by"});

  double total_bound = 0, matrix_forward_flops = 0;
  std::vector<std::string> types;  // in order of first appearance, for the figure
  std::map<std::string, double> bound_by_type;
  for (const LayerCost& l : cost.layers) {
    const LayerBound b = layer_bound(l, gpu, prec);
    total_bound += b.seconds();
    if (!bound_by_type.count(l.type)) types.push_back(l.type);
    bound_by_type[l.type] += b.seconds();
    if (l.matrix) matrix_forward_flops += l.forward_flops;
    const char* limit = b.seconds() == 0 ? "-" : b.compute_seconds >= b.memory_seconds ? "compute" : "memory";
    result.rows.push_back({{"layer", l.name},
                           {"type", l.type},
                           {"matrix", l.matrix},
                           {"parameters", l.parameters},
                           {"forward_flops", l.forward_flops},
                           {"backward_data_flops", l.backward_data_flops},
                           {"backward_weight_flops", l.backward_weight_flops},
                           {"forward_bytes", l.forward_bytes},
                           {"backward_bytes", l.backward_bytes},
                           {"compute_seconds", b.compute_seconds},
                           {"memory_seconds", b.memory_seconds},
                           {"bound_seconds", b.seconds()}});
    result.table.add({l.name, l.type, fmt("%.3f", l.flops() / 1e9), fmt("%.2f", l.bytes() / 1e6),
                      l.bytes() > 0 ? fmt("%.1f", l.flops() / l.bytes()) : "-", us_text(b.compute_seconds),
                      us_text(b.memory_seconds), us_text(b.seconds()), limit});
  }
  const double flops = cost.flops(), bytes = cost.bytes();
  const double whole_step = std::max(flops / (matrix_tflops(gpu, prec) * 1e12), bytes / (gpu.bandwidth_gbs * 1e9));
  result.table.add({"total (bound)", "", fmt("%.3f", flops / 1e9), fmt("%.2f", bytes / 1e6), fmt("%.1f", flops / bytes),
                    "", "", us_text(total_bound), ""});
  result.settings["bound_seconds"] = total_bound;
  result.settings["images_per_second_at_most"] = static_cast<double>(o.batch) / total_bound;
  result.settings["step_flops"] = flops;
  result.settings["step_bytes"] = bytes;
  result.settings["activation_bytes_planned"] = planned_bytes;
  result.settings["activation_bytes_one_per_node"] = unplanned_bytes;
  result.settings["activation_bytes_evaluation"] = eval_bytes;

  result.notes.push_back(fmt("BOUND, not a measurement: a %s training step at batch %lld cannot take less than %.3f ms "
                             "on an %s (at most %.0f images/s); the sum over layers of max(FLOPs / peak, bytes / "
                             "bandwidth), layers running one after another",
                             o.model.c_str(), static_cast<long long>(o.batch), total_bound * 1e3, gpu.name.c_str(),
                             static_cast<double>(o.batch) / total_bound));
  result.notes.push_back(fmt("whole step, no assumption on order: max(%.1f GFLOP at %.1f TFLOPS, %.1f MB at %.0f GB/s) "
                             "= %.3f ms",
                             flops / 1e9, matrix_tflops(gpu, prec), bytes / 1e6, gpu.bandwidth_gbs, whole_step * 1e3));
  result.notes.push_back(fmt("FLOPs (a multiply-add is 2) from the shapes of the graph the library builds: "
                             "convolution and linear forward, backward-data and backward-weights at %s %.1f TFLOPS "
                             "dense; every other FLOP (batch norm, ReLU, pools, loss, SGD) at fp32 %.1f TFLOPS; "
                             "matrix forward %.3f GFLOP = %.3f G multiply-adds (%.3f per sample)",
                             prec.c_str(), matrix_tflops(gpu, prec), gpu.fp32_tflops, matrix_forward_flops / 1e9,
                             matrix_forward_flops / 2e9, matrix_forward_flops / 2e9 / static_cast<double>(o.batch)));
  result.notes.push_back(fmt("bytes, the minimum traffic model (layers/step_cost.h): each layer pass reads each "
                             "tensor it needs once and writes each it produces once, nothing kept on chip between "
                             "layers, flatten and the add's backward aliased; activations %d bytes, conv/linear "
                             "weights and gradients %d, master weights and momentum 4; the update reads weight, "
                             "gradient, momentum and writes weight, momentum%s",
                             prec == "bf16" ? 2 : 4, prec == "bf16" ? 2 : 4, prec == "bf16" ? " and the bf16 copy" : ""));
  result.notes.push_back(fmt("activation memory of the training step (%s outputs and gradients, computed from "
                             "the graph's memory plan, not measured): %.1f MiB planned (LOCKSTEP_MEMORY_PLAN=on, "
                             "the default), %.1f MiB with one output and one gradient buffer per node (=off), %.2fx "
                             "less; an evaluation forward at this batch plans %.1f MiB",
                             dtype_name(stored), planned_bytes / 1048576.0, unplanned_bytes / 1048576.0,
                             static_cast<double>(unplanned_bytes) / static_cast<double>(planned_bytes),
                             eval_bytes / 1048576.0));
  result.notes.push_back("peaks: " + gpu.name + ", " + gpu.source + "; one GPU, no all-reduce, no host time");
  note_unused(o, {"--steps", "--warmup", "--batches", "--epochs"}, result);

  Series bars{"bound, microseconds", {}, {}};
  for (const std::string& t : types) bars.y.push_back(bound_by_type[t] * 1e6);
  PlotSpec spec{fmt("BOUND, not measured: %s batch %lld, %s on %s (%.3f ms in all)", o.model.c_str(),
                    static_cast<long long>(o.batch), prec.c_str(), gpu.name.c_str(), total_bound * 1e3),
                "", "microseconds per step, summed by layer type"};
  result.png = plot_bars(png_path(o), spec, types, {bars}, result.notes);
  return result;
}

}  // namespace lockstep::bench
