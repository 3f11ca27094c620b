#include "runtime/precision.h"

#include "runtime/named_value.h"

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
  return parse_named_value(text, what, {Precision::fp32, Precision::tf32, Precision::bf16}, precision_name);
}

}  // namespace lockstep
