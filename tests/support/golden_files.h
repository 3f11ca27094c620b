#pragma once
// Where the tests against PyTorch read PyTorch's results: the files stored in
// tests/golden (written by tests/torch/make_references.py, see
// tests/golden/README.md), so that they run wherever the tests do, without
// Python; or, with LOCKSTEP_TORCH_REFERENCES set, the files the CTest fixture
// torch_references has just written into the build tree with the PyTorch at
// hand (tests/torch.cmake).
#include <string>

namespace lockstep::testing {

// The path of `file` (e.g. "ops.safetensors"): in LOCKSTEP_TORCH_REFERENCES,
// else in LOCKSTEP_GOLDEN_DIR (CTest sets it to tests/golden), else in the
// tests/golden found above the test executable (a build folder of the source
// tree, run by hand). FAILs naming where it looked.
std::string golden_file(const std::string& file);

}  // namespace lockstep::testing
