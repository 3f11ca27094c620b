#pragma once
// Text from outside (a class folder's name, a setting's value) as a message
// or a terminal may show it: every byte outside printable ASCII written as
// \xNN, so that no name can break a line, a quote or the terminal.
#include <cstddef>
#include <string>

namespace lockstep {

// `bytes` escaped; cut after about `max` characters with "...". An empty
// text is shown as `empty`.
std::string printable(const std::string& bytes, size_t max = 160, const char* empty = "(none)");

}  // namespace lockstep
