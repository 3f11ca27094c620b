#include "whole_number.h"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdlib>
#include <string>

namespace lockstep::app {

CLI::Validator whole_number(uint64_t max) {
  return CLI::Validator(
      [max](std::string& text) -> std::string {
        const std::string bound = std::to_string(max);
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
          return "expected a whole number from 0 to " + bound + ", got " + text;
        errno = 0;
        const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
        if (errno == ERANGE || value > max) return text + " is above the largest allowed, " + bound;
        return std::string();
      },
      "UINT");
}

}  // namespace lockstep::app
