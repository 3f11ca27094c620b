#pragma once
// LS_LAUNCH for the emulated build: checks what the hardware checks at a
// launch, sets the last error, converts the arguments to the kernel's
// parameter types (by value, as a launch does), checks every pointer
// argument is device memory of the stream's device, and queues the grid on
// the stream's worker.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <utility>

namespace lockstep::emu::kernel {

struct PointerArg {
  int index;
  const void* value;
};

struct LaunchRequest {
  const char* kernel;
  dim3 grid, block;
  size_t shared_bytes;
  cudaStream_t stream;
  size_t param_bytes;
  const PointerArg* pointers;
  int pointer_count;
  void (*body)(void*);
  std::shared_ptr<void> data;
};

// Implemented in emu/kernel/launch.cpp; returns the launch error (also set as
// the calling thread's last error).
cudaError_t launch(LaunchRequest& request);

template <class T>
T convert_arg(T value) {  // the implicit conversion a call performs
  return value;
}

template <class... P>
class Launcher {
 public:
  Launcher(dim3 grid, dim3 block, size_t shared, cudaStream_t stream, const char* name, void (*kernel)(P...))
      : grid_(grid), block_(block), shared_(shared), stream_(stream), name_(name), kernel_(kernel) {}

  template <class... A>
  void operator()(A&&... args) const {
    static_assert(sizeof...(A) == sizeof...(P), "LS_LAUNCH: wrong number of kernel arguments");
    auto data = std::make_shared<Data>(Data{kernel_, Args(convert_arg<std::decay_t<P>>(std::forward<A>(args))...)});
    PointerArg pointers[sizeof...(P) + 1];
    int count = 0;
    collect(data->args, pointers, count, std::index_sequence_for<P...>{});
    LaunchRequest r{name_, grid_, block_, shared_, stream_, param_bytes(), pointers, count, &body, data};
    launch(r);
  }

 private:
  using Args = std::tuple<std::decay_t<P>...>;
  struct Data {
    void (*kernel)(P...);
    Args args;
  };
  static void body(void* d) {
    auto* data = static_cast<Data*>(d);
    std::apply(data->kernel, data->args);  // each thread gets its own by-value copies
  }
  template <size_t... I>
  static void collect(const Args& args, PointerArg* out, int& count, std::index_sequence<I...>) {
    (
        [&] {
          using T = std::tuple_element_t<I, Args>;
          if constexpr (std::is_pointer_v<T>) out[count++] = PointerArg{int(I), static_cast<const void*>(std::get<I>(args))};
        }(),
        ...);
  }
  static constexpr size_t param_bytes() {
    size_t offset = 0;
    ((offset = (offset + alignof(std::decay_t<P>) - 1) / alignof(std::decay_t<P>) * alignof(std::decay_t<P>) +
               sizeof(std::decay_t<P>)),
     ...);
    return offset;
  }
  dim3 grid_, block_;
  size_t shared_;
  cudaStream_t stream_;
  const char* name_;
  void (*kernel_)(P...);
};

template <class... P>
Launcher<P...> make_launcher(dim3 grid, dim3 block, size_t shared, cudaStream_t stream, const char* name,
                             void (*kernel)(P...)) {
  return Launcher<P...>(grid, block, shared, stream, name, kernel);
}

}  // namespace lockstep::emu::kernel

// LS_LAUNCH(grid, block, shared_bytes, stream, kernel...)(args...): the kernel
// comes last so a template-id with commas needs no parentheses.
#define LS_LAUNCH(grid, block, shared_bytes, stream, ...) \
  ::lockstep::emu::kernel::make_launcher((grid), (block), (shared_bytes), (stream), #__VA_ARGS__, __VA_ARGS__)
