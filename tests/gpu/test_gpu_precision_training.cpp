// The precision modes end to end on a GPU: fp32, tf32 (cuDNN and cuBLAS on
// TF32 operands; the emulated libraries round them to TF32 as tensor cores
// do) and bf16 (bf16 activations and operands, FP32 master weights) train
// simple-cnn on a Fashion-MNIST subset to within a point of fp32's test
// accuracy after the same steps. The CPU twin (tests/cpu/test_precision_training.cpp)
// holds the CPU backend to the same for simple-cnn and resnet20; resnet20's
// bf16 GPU path trains as the CPU's (tests/gpu/test_gpu_bf16_training.cpp).
// 300 steps, not the CPU test's 150: at 150 both tf32 and bf16 lay about a
// point below fp32 on the emulated GPU (81.2% and 81.15% against 82.25%),
// where the accuracy still climbs two points per 50 steps; at 300 the three
// lie within 0.75 of each other (fp32 85.25%, tf32 86%, bf16 85.65%).
// fp32 trains on the CPU, the reference every GPU path is held to (the GPU's
// fp32 steps follow it to 1e-4, tests/gpu/test_gpu_graph.cpp): an
// emulated fp32 run cost a third of the test's two and a half minutes and
// checked nothing the CPU run does not (at 300 steps on a Xeon: fp32 on the
// CPU 85.45%, tf32 85.8% and bf16 85.75% on the emulated GPU). CI runs it in
// the 1-device pass only.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "runtime/device.h"
#include "support/fashion_training.h"

using namespace lockstep;

TEST_CASE("tf32 and bf16 train simple-cnn on a gpu to within a point of fp32", "[gpu][precision][bf16][train]") {
  constexpr int64_t kSteps = 300;  // batches of 32
  const std::string name = "simple-cnn";
  const double fp32 = testing::accuracy_after_training(name, Precision::fp32, Device::cpu(), kSteps);
  const double tf32 = testing::accuracy_after_training(name, Precision::tf32, Device::cuda(0), kSteps);
  const double bf16 = testing::accuracy_after_training(name, Precision::bf16, Device::cuda(0), kSteps);
  INFO(name << ": fp32 (cpu) " << fp32 << "%, tf32 " << tf32 << "%, bf16 " << bf16 << "% after " << kSteps
            << " steps of 32");
  REQUIRE(fp32 > 60.0);  // it learned: chance is 10%
  REQUIRE(std::fabs(tf32 - fp32) <= 1.0);
  REQUIRE(std::fabs(bf16 - fp32) <= 1.0);
}
