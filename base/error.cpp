#include "base/error.h"

namespace lockstep {

std::string source_path(const char* file) {
  std::string where = file;
  // Keep the path relative to the source tree: the absolute build path says nothing.
  for (const char* top : {"/base/", "/kernels/", "/runtime/", "/ops/", "/distributed/", "/training/", "/layers/",
                          "/data/", "/apps/", "/tests/", "/bench/"}) {
    auto pos = where.rfind(top);
    if (pos != std::string::npos) return where.substr(pos + 1);
  }
  return where;
}

void throw_error(const std::string& message, const char* file, int line) {
  throw Error(message + " (" + source_path(file) + ":" + std::to_string(line) + ")");
}

}  // namespace lockstep
