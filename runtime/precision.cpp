#include "runtime/precision.h"

#include <string>

#include "base/error.h"

namespace lockstep {

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
  }
  return "unknown";
}

Precision parse_precision(std::string_view text, std::string_view what) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::bf16})
    if (text == precision_name(p)) return p;
  LS_FAIL(what, " '", std::string(text), "': expected fp32, tf32 or bf16");
}

}  // namespace lockstep
