#pragma once
// A CLI11 check for unsigned flags (lockstep train's and lockstep cache's
// --seed among them): CLI11's own conversion wraps "-1" and saturates 2^64
// and beyond into an unsigned option without a word.
#include <cstdint>

namespace CLI {
class Validator;
}  // namespace CLI

namespace lockstep::app {

// A whole number written in digits alone, at most `max`.
CLI::Validator whole_number(uint64_t max);

}  // namespace lockstep::app
