#pragma once
// The command-line reading every benchmark executable shares (lockstep-bench
// and the bench_* programs): the loop over the arguments, and numbers, lists
// and CxHxW shapes read with errors that name the flag.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "runtime/shape.h"

namespace lockstep::bench {

// The value of the flag being read: the next argument, or an Error
// "<flag> needs a value" when there is none.
using ArgValue = std::function<std::string()>;

// Reads argv[first..] in order, handing each flag to `take(flag, value)`,
// which returns false for a flag it does not know: that is an Error
// "unknown argument '<flag>' (see <help>)". -h and --help print `usage` and
// exit 0.
void parse_args(int argc, char** argv, int first, const std::string& help, const std::function<void()>& usage,
                const std::function<bool(const std::string& flag, const ArgValue& value)>& take);

// The whole of `text` as a number; throws "<flag> expects an integer/a number, got '<text>'".
int64_t parse_int(const std::string& flag, const std::string& text);
double parse_double(const std::string& flag, const std::string& text);
// "16,32,64"; throws on an empty list or an item that is not an integer.
std::vector<int64_t> parse_int_list(const std::string& text);
// --input "3x32x32" as Shape{3, 32, 32}; throws naming the text otherwise.
Shape parse_shape(const std::string& text);

}  // namespace lockstep::bench
