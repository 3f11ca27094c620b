#pragma once
// Options that name one value of a small enum (--precision bf16,
// --memory-format nhwc): the value a name gives, or an Error naming the
// option and listing the valid names. The enums keep their own name
// functions; this is only the lookup and the message they share.
#include <initializer_list>
#include <string>
#include <string_view>

#include "base/error.h"

namespace lockstep {

template <class Enum>
Enum parse_named_value(std::string_view text, std::string_view what, std::initializer_list<Enum> values,
                       const char* (*name)(Enum)) {
  for (Enum v : values)
    if (text == name(v)) return v;
  std::string expected;
  size_t i = 0;
  for (Enum v : values) {
    if (i > 0) expected += i + 1 == values.size() ? " or " : ", ";
    expected += name(v);
    ++i;
  }
  LS_FAIL(what, " '", std::string(text), "': expected ", expected);
}

}  // namespace lockstep
