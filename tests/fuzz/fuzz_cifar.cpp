// libFuzzer: the CIFAR-10 batch reader.
#include "base/error.h"
#include "data/cifar.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = lockstep_fuzz::input_file(data, size, ".bin");
  try {
    lockstep::data::read_cifar10({path}, lockstep::data::cifar10_class_names("", 10));
  } catch (const lockstep::Error&) {
  }
  return 0;
}
