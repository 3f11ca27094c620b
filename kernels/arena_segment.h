#pragma once
// A contiguous run of one parameter tensor inside the flat parameter arena,
// and whether weight decay applies to it (conv/linear weights by default).
#include <cstdint>

namespace lockstep {

struct ArenaSegment {
  int64_t offset = 0;  // in elements from the arena start
  int64_t count = 0;
  bool decay = false;
};

}  // namespace lockstep
