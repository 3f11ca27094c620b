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

namespace {
std::string located(const std::string& message, const char* file, int line) {
  return message + " (" + source_path(file) + ":" + std::to_string(line) + ")";
}
}  // namespace

void throw_error(const std::string& message, const char* file, int line) { throw Error(located(message, file, line)); }

void throw_cancelled(const std::string& message, const char* file, int line) {
  throw Cancelled(located(message, file, line));
}

}  // namespace lockstep
