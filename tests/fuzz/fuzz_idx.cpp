// libFuzzer: the IDX reader, raw and gzip (zlib tells them apart by content;
// the seed corpus holds both), images (rank 3) and labels (rank 1).
#include "base/error.h"
#include "data/idx.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = lockstep_fuzz::input_file(data, size, ".idx");
  for (int rank : {1, 3}) {
    try {
      // A small limit: the fuzzer should find bugs, not allocate gigabytes.
      lockstep::data::read_idx(path, rank, uint64_t{64} << 20);
    } catch (const lockstep::Error&) {
    }
  }
  return 0;
}
