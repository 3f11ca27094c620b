#include "distributed/process_agreement.h"

#include <cstdint>
#include <cstring>

#include "base/error.h"
#include "base/printable.h"

namespace lockstep {

namespace {

// FNV-1a over the name and the value, kept to 62 bits so that the
// collective's max can also take its negation (the minimum) without overflow.
int64_t setting_hash(const NamedSetting& s) {
  uint64_t h = 1469598103934665603ULL;
  auto add = [&](const std::string& text) {
    for (unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;  // a separator no byte of the text can fake
  };
  add(s.name);
  add(s.value);
  return static_cast<int64_t>(h >> 2);
}

// "process 3", "processes 0, 2-4".
std::string process_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "process " : "processes ";
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (i > 0) out += ", ";
    out += std::to_string(ranks[i]);
    if (j > i) out += (j == i + 1 ? ", " : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

// Every process's text, on every process: each in turn broadcasts its length, then its bytes.
std::vector<std::string> gather_texts(ProcessGroup& world, const std::string& mine) {
  std::vector<std::string> texts(static_cast<size_t>(world.size()));
  for (int p = 0; p < world.size(); ++p) {
    int64_t length = p == world.rank() ? static_cast<int64_t>(mine.size()) : 0;
    world.broadcast(&length, sizeof length, p);
    std::string& text = texts[static_cast<size_t>(p)];
    text = p == world.rank() ? mine : std::string(static_cast<size_t>(length), '\0');
    if (length > 0) world.broadcast(text.data(), length, p);
  }
  return texts;
}

}  // namespace

std::vector<std::string> process_disagreements(ProcessGroup& world, const std::vector<NamedSetting>& settings) {
  const int64_t count = static_cast<int64_t>(settings.size());
  int64_t counts[2] = {count, -count};
  world.max(counts, 2);
  LS_CHECK(counts[0] == -counts[1], "process ", world.rank(), " compares ", count,
           " settings with the other processes, which compare between ", -counts[1], " and ", counts[0],
           ": every process must run the same lockstep");
  // Each setting's hash and its negation: after the max, a setting agrees
  // where its largest hash equals its smallest.
  std::vector<int64_t> hashes(static_cast<size_t>(2 * count));
  for (int64_t k = 0; k < count; ++k) {
    hashes[k] = setting_hash(settings[k]);
    hashes[count + k] = -hashes[k];
  }
  if (count > 0) world.max(hashes.data(), 2 * count);
  std::vector<int64_t> differing;
  for (int64_t k = 0; k < count; ++k)
    if (hashes[k] != -hashes[count + k]) differing.push_back(k);
  if (differing.empty()) return {};

  // This process's values of the differing settings, each as its length and bytes.
  std::string mine;
  for (int64_t k : differing) {
    const std::string& v = settings[k].value;
    const uint64_t length = v.size();
    mine.append(reinterpret_cast<const char*>(&length), sizeof length);
    mine += v;
  }
  const std::vector<std::string> texts = gather_texts(world, mine);
  std::vector<size_t> at(texts.size(), 0);
  std::vector<std::string> lines;
  for (int64_t k : differing) {
    // The values in the order of the first process that holds each.
    std::vector<std::pair<std::string, std::vector<int>>> values;
    for (int p = 0; p < world.size(); ++p) {
      const std::string& text = texts[static_cast<size_t>(p)];
      size_t& pos = at[static_cast<size_t>(p)];
      uint64_t length = 0;
      LS_CHECK(pos + sizeof length <= text.size(), "process ", p, " sent a damaged list of settings");
      std::memcpy(&length, text.data() + pos, sizeof length);
      pos += sizeof length;
      LS_CHECK(length <= text.size() - pos, "process ", p, " sent a damaged list of settings");
      std::string value = text.substr(pos, length);
      pos += length;
      auto it = values.begin();
      while (it != values.end() && it->first != value) ++it;
      if (it == values.end()) values.push_back({std::move(value), {p}});
      else it->second.push_back(p);
    }
    std::string line = settings[k].name + ": ";
    for (size_t i = 0; i < values.size(); ++i)
      line += (i ? "; " : "") + printable(values[i].first) + " on " + process_list(values[i].second);
    lines.push_back(line);
  }
  return lines;
}

}  // namespace lockstep
