// libFuzzer: the safetensors reader (header, offsets, data), with and without the data.
#include "base/error.h"
#include "fuzz_input.h"
#include "training/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = lockstep_fuzz::input_file(data, size, ".safetensors");
  try {
    lockstep::read_safetensors(path);
  } catch (const lockstep::Error&) {
  }
  try {
    lockstep::read_safetensors(path, false);
  } catch (const lockstep::Error&) {
  }
  return 0;
}
