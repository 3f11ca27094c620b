#include "engine/error.h"

namespace lockstep {

void throw_error(const std::string& message, const char* file, int line) {
  std::string where = file;
  // Keep the path relative to the source tree: the absolute build path says nothing.
  for (const char* top : {"/kernels/", "/engine/", "/layers/", "/data/", "/apps/", "/tests/", "/bench/"}) {
    auto pos = where.rfind(top);
    if (pos != std::string::npos) {
      where = where.substr(pos + 1);
      break;
    }
  }
  throw Error(message + " (" + where + ":" + std::to_string(line) + ")");
}

}  // namespace lockstep
