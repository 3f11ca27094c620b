#include "gpu_peaks.h"

#include <algorithm>
#include <cctype>

#include "base/error.h"
#include "layers/models.h"

namespace lockstep::bench {

namespace {

// NVIDIA's datasheets print the tensor-core figures with 2:4 structured
// sparsity and footnote that dense is half of them: the dense figures below
// are those halves. FP32 is the CUDA-core figure, which has no sparse form.
const char* const h100_source = "NVIDIA H100 Tensor Core GPU datasheet (SXM5, PCIe, NVL columns): FP32; "
                                "TF32 and BF16 Tensor Core with sparsity, halved; GPU memory bandwidth";
const char* const h200_source = "NVIDIA H200 Tensor Core GPU datasheet (H200 SXM, H200 NVL columns): FP32; "
                                "TF32 and BF16 Tensor Core with sparsity, halved; GPU memory bandwidth";
const char* const a100_source = "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM, 80GB PCIe, 40GB columns): FP32; "
                                "TF32 and BF16 Tensor Core dense (the figure without sparsity); GPU memory bandwidth";

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

const std::vector<GpuPeaks>& gpu_peaks_table() {
  // key, product, FP32, TF32 dense, BF16 dense (TFLOPS), bandwidth (GB/s), source, device names.
  // More specific device names first: a device takes the first entry one of whose names it contains.
  static const std::vector<GpuPeaks> table{
      {"h100-pcie", "H100 PCIe 80GB", 51.0, 756.0 / 2, 1513.0 / 2, 2000.0, h100_source, {"h100 pcie"}},
      {"h100-nvl", "H100 NVL 94GB", 60.0, 835.0 / 2, 1671.0 / 2, 3900.0, h100_source, {"h100 nvl"}},
      {"h100", "H100 SXM5 80GB", 67.0, 989.0 / 2, 1979.0 / 2, 3350.0, h100_source, {"h100 80gb hbm3", "h100 sxm"}},
      {"h200-nvl", "H200 NVL 141GB", 60.0, 835.0 / 2, 1671.0 / 2, 4800.0, h200_source, {"h200 nvl"}},
      {"h200", "H200 SXM 141GB", 67.0, 989.0 / 2, 1979.0 / 2, 4800.0, h200_source, {"h200"}},
      {"a100-pcie", "A100 80GB PCIe", 19.5, 156.0, 312.0, 1935.0, a100_source, {"a100 80gb pcie"}},
      {"a100-40gb", "A100 40GB (SXM4 or PCIe)", 19.5, 156.0, 312.0, 1555.0, a100_source,
       {"a100-sxm4-40gb", "a100-pcie-40gb"}},
      {"a100", "A100 80GB SXM4", 19.5, 156.0, 312.0, 2039.0, a100_source, {"a100-sxm4-80gb", "a100-sxm-80gb"}},
  };
  return table;
}

const GpuPeaks& gpu_peaks(const std::string& key) {
  std::string known;
  for (const GpuPeaks& g : gpu_peaks_table()) {
    if (g.key == key) return g;
    known += (known.empty() ? "" : ", ") + g.key;
  }
  LS_FAIL("--gpu ", key, ": no published figures for it; known: ", known);
}

const GpuPeaks* gpu_peaks_for_device(const std::string& device_name) {
  const std::string name = lower(device_name);
  for (const GpuPeaks& g : gpu_peaks_table())
    for (const std::string& n : g.device_names)
      if (name.find(n) != std::string::npos) return &g;
  return nullptr;
}

void check_precision(const std::string& precision) {
  LS_CHECK(precision == "fp32" || precision == "tf32" || precision == "bf16", "--precision ", precision,
           ": expected fp32, tf32 or bf16");
}

StepCostOptions precision_cost_options(const std::string& precision, int64_t batch) {
  check_precision(precision);
  StepCostOptions o;
  o.batch = batch;
  // TF32 is a way of multiplying fp32 numbers: the tensors stay 4 bytes.
  const bool bf16 = precision == "bf16";
  o.activation_bytes = bf16 ? 2 : 4;
  o.weight_bytes = bf16 ? 2 : 4;
  o.weight_copy = bf16;  // fp32 master weights plus the bf16 copy the next forward reads
  return o;
}

double matrix_tflops(const GpuPeaks& gpu, const std::string& precision) {
  check_precision(precision);
  return precision == "fp32" ? gpu.fp32_tflops : precision == "tf32" ? gpu.tf32_tflops : gpu.bf16_tflops;
}

LayerBound layer_bound(const LayerCost& layer, const GpuPeaks& gpu, const std::string& precision) {
  const double peak = (layer.matrix ? matrix_tflops(gpu, precision) : gpu.fp32_tflops) * 1e12;
  return {layer.flops() / peak, layer.bytes() / (gpu.bandwidth_gbs * 1e9)};
}

double step_bound_seconds(const StepCost& cost, const GpuPeaks& gpu, const std::string& precision) {
  double sum = 0;
  for (const LayerCost& l : cost.layers) sum += layer_bound(l, gpu, precision).seconds();
  return sum;
}

json bound_for_device(const std::string& model, const std::string& input, int64_t classes, int64_t batch,
                      const std::string& precision, const std::string& device_name) {
  const GpuPeaks* gpu = gpu_peaks_for_device(device_name);
  if (!gpu) return json{{"not_applicable", "no published peaks for '" + device_name + "' in bench/suite/gpu_peaks.cpp"}};
  if (batch <= 0) return json{{"not_applicable", "no samples on this device"}};
  const StepCost cost =
      step_cost(*build_model(model, parse_shape(input), classes), precision_cost_options(precision, batch));
  const double bound = step_bound_seconds(cost, *gpu, precision);
  return json{{"gpu", gpu->key}, {"precision", precision}, {"batch", batch}, {"bound_seconds", bound}};
}

}  // namespace lockstep::bench
