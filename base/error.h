#pragma once
// lockstep::Error is the one exception type the library throws. Its message
// names what failed (the call or the check), why, and where (device, file:line).
#include <sstream>
#include <stdexcept>
#include <string>

namespace lockstep {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A collective that gave up because the communicator was aborted (another
// rank failed, or the owner shut it down): a second-hand failure, which the
// replica manager reports only when no first-hand one exists.
class Cancelled : public Error {
public:
  using Error::Error;
};

[[noreturn]] void throw_error(const std::string& message, const char* file, int line);
[[noreturn]] void throw_cancelled(const std::string& message, const char* file, int line);
// `file` (a __FILE__) relative to the source tree, as error messages name it.
std::string source_path(const char* file);

namespace detail {
template <typename... Parts> std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

}  // namespace lockstep

// LS_CHECK(cond, parts...): throws lockstep::Error with the parts streamed
// together (a message a user can act on), followed by file:line.
#define LS_CHECK(cond, ...)                                                                              \
  do {                                                                                                   \
    if (!(cond)) ::lockstep::throw_error(::lockstep::detail::concat(__VA_ARGS__), __FILE__, __LINE__); \
  } while (0)

#define LS_FAIL(...) ::lockstep::throw_error(::lockstep::detail::concat(__VA_ARGS__), __FILE__, __LINE__)

// LS_CANCEL(parts...): throws lockstep::Cancelled, worded and located as LS_FAIL.
#define LS_CANCEL(...) ::lockstep::throw_cancelled(::lockstep::detail::concat(__VA_ARGS__), __FILE__, __LINE__)
