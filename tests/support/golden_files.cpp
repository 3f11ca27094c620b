#include "support/golden_files.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace lockstep::testing {

std::string golden_file(const std::string& file) {
  namespace fs = std::filesystem;
  for (const char* var : {"LOCKSTEP_TORCH_REFERENCES", "LOCKSTEP_GOLDEN_DIR"}) {
    const char* dir = std::getenv(var);
    if (!dir || !*dir) continue;
    const fs::path path = fs::path(dir) / file;
    if (!fs::exists(path)) FAIL(path.string() << " does not exist (" << var << " is " << dir << ")");
    return path.string();
  }
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (!error)
    for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      const fs::path path = dir / "tests" / "golden" / file;
      if (fs::exists(path)) return path.string();
      if (dir == dir.parent_path()) break;
    }
  FAIL("no tests/golden/" << file << " above " << exe.string()
                          << ": run the test through ctest, or set LOCKSTEP_GOLDEN_DIR to the source tree's "
                             "tests/golden");
  return {};
}

}  // namespace lockstep::testing
