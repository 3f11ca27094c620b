// The tensor ops' kernels on the GPU: the local sum of replica buffers.
// Their vectorised paths on misaligned views: test_gpu_vectorised.cpp.
#include <catch2/catch.hpp>

#include <vector>

#include "kernels/cuda/tensor_ops_cuda.h"
#include "runtime/cuda/cuda_context.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::random_values;

TEST_CASE("the local sum kernel adds buffers in rank order", "[gpu][tensor_ops][handwritten]") {
  Context ctx(Device::cuda(0));
  const int64_t n = 1001;
  std::vector<Tensor> buffers;
  std::vector<std::vector<float>> host;
  for (int r = 0; r < 3; ++r) {
    host.push_back(random_values(n, 10 + r, -1e3f, 1e3f));
    buffers.push_back(Tensor::from_vector(Shape{n}, host.back(), Device::cuda(0)));
  }
  Tensor out = Tensor::zeros(Shape{n}, Device::cuda(0));
  std::vector<const float*> srcs = {buffers[0].data(), buffers[1].data(), buffers[2].data()};
  cuda::sum_buffers(ctx.cuda()->compute_stream, srcs.data(), 3, out.data(), 100, n);
  ctx.synchronize();
  std::vector<float> got = out.to_vector();
  for (int64_t i = 0; i < n; ++i) {
    float expected = i < 100 ? 0.0f : (host[0][i] + host[1][i]) + host[2][i];
    REQUIRE(got[i] == expected);
  }
}
