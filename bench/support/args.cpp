#include "bench/support/args.h"

#include <cstdlib>
#include <optional>
#include <sstream>

#include "base/error.h"

namespace lockstep::bench {

void parse_args(int argc, char** argv, int first, const std::string& help, const std::function<void()>& usage,
                const std::function<bool(const std::string& flag, const ArgValue& value)>& take) {
  for (int i = first; i < argc; ++i) {
    const std::string a = argv[i];
    const ArgValue value = [&]() -> std::string {
      LS_CHECK(i + 1 < argc, a, " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      usage();
      std::exit(0);
    }
    if (!take(a, value)) LS_FAIL("unknown argument '", a, "' (see ", help, ")");
  }
}

namespace {

// The whole of `text` through `convert` (std::stoll, std::stod), or an Error
// "<flag> expects <kind>": a number with anything after it is refused too.
template <typename Convert> auto parse_whole(const std::string& flag, const std::string& text, const char* kind,
                                             Convert convert) {
  try {
    size_t used = 0;
    auto v = convert(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  LS_FAIL(flag, " expects ", kind, ", got '", text, "'");
}

}  // namespace

int64_t parse_int(const std::string& flag, const std::string& text) {
  return parse_whole(flag, text, "an integer", [](const std::string& t, size_t* used) { return std::stoll(t, used); });
}

double parse_double(const std::string& flag, const std::string& text) {
  return parse_whole(flag, text, "a number", [](const std::string& t, size_t* used) { return std::stod(t, used); });
}

std::vector<int64_t> parse_int_list(const std::string& text) {
  std::vector<int64_t> values;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) values.push_back(parse_int("a list", item));
  LS_CHECK(!values.empty(), "empty list '", text, "'");
  return values;
}

Shape parse_shape(const std::string& text) {
  const std::optional<Shape> shape = parse_chw(text);
  LS_CHECK(shape, "--input expects CxHxW, got '", text, "'");
  return *shape;
}

}  // namespace lockstep::bench
