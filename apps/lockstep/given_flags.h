#pragma once
// The flags a command line gave, by name ("--batch"). A setting given is the
// user's choice and stays; one left out takes the checkpoint's when resuming,
// else the machine's default, and some checks apply only to flags given.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::app {

class GivenFlags {
public:
  bool contains(std::string_view flag) const { return std::find(flags_.begin(), flags_.end(), flag) != flags_.end(); }
  void add(std::string flag) {
    if (!contains(flag)) flags_.push_back(std::move(flag));
  }

private:
  std::vector<std::string> flags_;
};

}  // namespace lockstep::app
