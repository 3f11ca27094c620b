#pragma once
// The roofline bound: a GPU's published peak dense compute and memory
// bandwidth (one table, gpu_peaks.cpp, with its source), and the least time
// a training step can take on it, from the work layers/step_cost.h counts.
// A bound, never a measurement: no GPU is asked anything.
#include <optional>
#include <string>
#include <vector>

#include "common.h"
#include "layers/step_cost.h"

namespace lockstep::bench {

struct GpuPeaks {
  std::string key;             // --gpu: h100, h200, a100, ...
  std::string name;            // the product, e.g. "H100 SXM5 80GB"
  double fp32_tflops;          // CUDA cores, no tensor cores
  double tf32_tflops;          // tensor cores, dense
  double bf16_tflops;          // tensor cores, dense
  double bandwidth_gbs;        // device memory, GB/s (10^9 bytes)
  std::string source;          // where the figures come from
  std::vector<std::string> device_names;  // substrings of cudaGetDeviceProperties' name that are this product
};

const std::vector<GpuPeaks>& gpu_peaks_table();
// Throws naming the keys it knows.
const GpuPeaks& gpu_peaks(const std::string& key);
// The entry whose device name a CUDA device reports ("NVIDIA H100 80GB
// HBM3"), or nothing when the table has none.
const GpuPeaks* gpu_peaks_for_device(const std::string& device_name);

// fp32, tf32 or bf16 (throws otherwise): the element sizes of the step's
// traffic and the peak its matrix work runs at.
void check_precision(const std::string& precision);
StepCostOptions precision_cost_options(const std::string& precision, int64_t batch);
double matrix_tflops(const GpuPeaks& gpu, const std::string& precision);

// One layer's bound: max(its FLOPs / peak, its bytes / bandwidth), the
// matrix layers' FLOPs at the precision's tensor peak, every other FLOP at
// the fp32 CUDA-core peak.
struct LayerBound {
  double compute_seconds = 0, memory_seconds = 0;
  double seconds() const { return std::max(compute_seconds, memory_seconds); }
};
LayerBound layer_bound(const LayerCost& layer, const GpuPeaks& gpu, const std::string& precision);
// The step's bound: the per-layer bounds summed (layers run one after
// another), never below the whole step's max(FLOPs/peak, bytes/bandwidth).
double step_bound_seconds(const StepCost& cost, const GpuPeaks& gpu, const std::string& precision);

// The bound of `model` (one sample `input`, `classes`) at `batch` samples on
// the GPU `device_name` names, for a suite that measured that step: the
// figures or {"not_applicable": why}.
json bound_for_device(const std::string& model, const std::string& input, int64_t classes, int64_t batch,
                      const std::string& precision, const std::string& device_name);

}  // namespace lockstep::bench
