#include <catch2/catch.hpp>

#include "runtime/context.h"
#include "runtime/cuda/cuda_allocator.h"
#include "base/cuda/cuda_check.h"
#include "runtime/cuda/cuda_context.h"
#include "runtime/device.h"
#include "gpu_compare.h"
#include "support/layer_harness.h"

using namespace lockstep;
using lockstep::testing::random_values;
using lockstep::testing::same_bits;

TEST_CASE("the cuda build reports itself and the device", "[gpu][context][probe]") {
  REQUIRE(cuda_compiled());
  REQUIRE(cuda_device_count() >= 1);
}

TEST_CASE("a gpu context owns streams and handles bound to its compute stream", "[gpu][context]") {
  ContextOptions options;
  options.workspace_limit_bytes = size_t(8) << 20;
  Context ctx(Device::cuda(0), options);
  CudaState* state = ctx.cuda();
  REQUIRE(state != nullptr);
  REQUIRE(state->device == 0);
  REQUIRE(state->compute_stream != nullptr);
  REQUIRE(state->comm_stream != nullptr);
  REQUIRE(state->compute_stream != state->comm_stream);
  cudaStream_t stream = nullptr;
  LS_CUDNN_CHECK(cudnnGetStream(state->cudnn, &stream));
  REQUIRE(stream == state->compute_stream);
  LS_CUBLAS_CHECK(cublasGetStream(state->cublas, &stream));
  REQUIRE(stream == state->compute_stream);
  cublasMath_t mode;
  LS_CUBLAS_CHECK(cublasGetMathMode(state->cublas, &mode));
  REQUIRE(mode == CUBLAS_TF32_TENSOR_OP_MATH);  // precision tf32, the default
  REQUIRE(state->cublas_workspace_bytes() <= options.workspace_limit_bytes);
  // The communication stream is scheduled first.
  int compute_priority = 0, comm_priority = 0;
  LS_CUDA_CHECK(cudaStreamGetPriority(state->compute_stream, &compute_priority));
  LS_CUDA_CHECK(cudaStreamGetPriority(state->comm_stream, &comm_priority));
  REQUIRE(comm_priority <= compute_priority);  // lower number, higher priority
  ctx.synchronize();
}

TEST_CASE("a gpu context sets the libraries' math from its precision", "[gpu][context][precision]") {
  REQUIRE(ContextOptions{}.precision == Precision::tf32);
  // bf16 opens a context too: its bf16 operands set the libraries' math per
  // call (operand_dtype in ops/checks.h); any FP32 product stays strict FP32.
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16}) {
    ContextOptions options;
    options.precision = p;
    Context ctx(Device::cuda(0), options);
    cublasMath_t mode;
    LS_CUBLAS_CHECK(cublasGetMathMode(ctx.cuda()->cublas, &mode));
    INFO(precision_name(p));
    REQUIRE(ctx.options().precision == p);
    REQUIRE(mode == (p == Precision::tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    REQUIRE(ctx.cuda()->allow_tf32 == (p == Precision::tf32));
  }
}

TEST_CASE("a gpu context lays activations out nhwc in bf16 and nchw otherwise, unless told", "[gpu][context][nhwc]") {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16}) {
    INFO(precision_name(p));
    ContextOptions options;
    options.precision = p;
    const MemoryFormat expected = p == Precision::bf16 ? MemoryFormat::nhwc : MemoryFormat::nchw;
    CHECK(Context(Device::cuda(0), options).memory_format() == expected);
    CHECK(Context(Device::cuda(0), options).options().memory_format == expected);
    for (MemoryFormat given : {MemoryFormat::nchw, MemoryFormat::nhwc}) {
      options.memory_format = given;
      CHECK(Context(Device::cuda(0), options).memory_format() == given);
    }
  }
  // Synchronised batch norm in bf16 with no format given: nhwc, which it takes.
  ContextOptions sync;
  sync.precision = Precision::bf16;
  sync.sync_batch_norm = true;
  CHECK(Context(Device::cuda(0), sync).memory_format() == MemoryFormat::nhwc);
}

TEST_CASE("the cudnn workspace grows on demand up to the limit", "[gpu][context]") {
  ContextOptions options;
  options.workspace_limit_bytes = size_t(4) << 20;
  Context ctx(Device::cuda(0), options);
  CudaState& state = *ctx.cuda();
  void* small = state.workspace(1000);
  REQUIRE(small != nullptr);
  REQUIRE(state.workspace(500) == small);  // no growth needed
  REQUIRE(state.workspace(size_t(3) << 20) != nullptr);
  REQUIRE(state.workspace_bytes() == (size_t(3) << 20));
  REQUIRE_THROWS_WITH(state.workspace(size_t(5) << 20),
                      Catch::Contains("workspace") && Catch::Contains("limit of 4194304"));
}

TEST_CASE("a zero workspace limit leaves cublas without a workspace", "[gpu][context]") {
  ContextOptions options;
  options.workspace_limit_bytes = 0;
  Context ctx(Device::cuda(0), options);
  REQUIRE(ctx.cuda()->cublas_workspace_bytes() == 0);
}

TEST_CASE("context memory is counted by the device allocator and given back", "[gpu][context]") {
  auto alloc = cuda_allocator_for(0);
  size_t before = alloc->current_bytes();
  {
    Context ctx(Device::cuda(0));
    REQUIRE(alloc->current_bytes() > before);
  }
  REQUIRE(alloc->current_bytes() == before);
}

TEST_CASE("a cuda state moves its resources and leaves the source empty", "[gpu][context]") {
  std::unique_ptr<CudaState> made = make_cuda_state(0, ContextOptions{});
  cudaStream_t compute = made->compute_stream;
  CudaState moved(std::move(*made));
  REQUIRE(moved.compute_stream == compute);
  REQUIRE(made->compute_stream == nullptr);
  REQUIRE(made->cudnn == nullptr);
  REQUIRE(made->device == -1);
  cuda_synchronize(moved);
}

TEST_CASE("a context on a missing gpu is refused by name", "[gpu][context]") {
  REQUIRE_THROWS_WITH(Context(Device::cuda(63)), Catch::Contains("cuda:63"));
}

TEST_CASE("the device guard restores the current device", "[gpu][context]") {
  int before = -1;
  LS_CUDA_CHECK(cudaGetDevice(&before));
  {
    DeviceGuard guard(cuda_device_count() - 1);
    int inside = -1;
    LS_CUDA_CHECK(cudaGetDevice(&inside));
    REQUIRE(inside == cuda_device_count() - 1);
  }
  int after = -1;
  LS_CUDA_CHECK(cudaGetDevice(&after));
  REQUIRE(after == before);
}

TEST_CASE("failed cuda calls throw an Error naming the call, the status and the place", "[gpu][context]") {
  auto bad_call = [] { LS_CUDA_CHECK(cudaSetDevice(999)); };
  REQUIRE_THROWS_WITH(bad_call(), Catch::Contains("cudaSetDevice(999)") && Catch::Contains("cudaErrorInvalidDevice") &&
                                      Catch::Contains("cuda:") && Catch::Contains("test_gpu_context.cpp:"));
  Context ctx(Device::cuda(0));
  cublasHandle_t cublas = ctx.cuda()->cublas;
  auto bad_cublas = [&] {
    float one = 1.0f;
    LS_CUBLAS_CHECK(cublasSgemm(cublas, CUBLAS_OP_N, CUBLAS_OP_N, -1, 1, 1, &one, nullptr, 1, nullptr, 1, &one,
                                nullptr, 1));
  };
  REQUIRE_THROWS_WITH(bad_cublas(), Catch::Contains("cublasSgemm") && Catch::Contains("CUBLAS_STATUS_INVALID_VALUE"));
  auto bad_cudnn = [] {
    cudnnTensorDescriptor_t desc = nullptr;
    LS_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc));
    try {
      LS_CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, -1, 1, 1, 1));
    } catch (...) {
      LS_CUDNN_LOG(cudnnDestroyTensorDescriptor(desc));
      throw;
    }
  };
  REQUIRE_THROWS_WITH(bad_cudnn(), Catch::Contains("cudnnSetTensor4dDescriptor") && Catch::Contains("CUDNN_STATUS_"));
  auto bad_nccl = [] { LS_NCCL_CHECK(ncclCommInitAll(nullptr, -1, nullptr)); };
  REQUIRE_THROWS_WITH(bad_nccl(), Catch::Contains("ncclCommInitAll"));
}

TEST_CASE("context copies and fills run on the compute stream", "[gpu][context]") {
  Context ctx(Device::cuda(0));
  std::vector<float> values = random_values(1000, 1);
  Tensor host = Tensor::from_vector(Shape{1000}, values);
  Tensor device = Tensor::empty(Shape{1000}, Device::cuda(0));
  ctx.copy(host, device);
  Tensor back = Tensor::empty(Shape{1000});
  ctx.copy(device, back);
  ctx.synchronize();
  REQUIRE(same_bits(back.to_vector(), values));
  ctx.zero(device);
  ctx.synchronize();
  for (float v : device.to_vector()) REQUIRE(v == 0.0f);
  Tensor wrong = Tensor::empty(Shape{999}, Device::cuda(0));
  REQUIRE_THROWS_WITH(ctx.copy(host, wrong), Catch::Contains("copy of [1000]"));
}
