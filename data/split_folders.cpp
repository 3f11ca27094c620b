#include "data/split_folders.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <vector>

#include "base/error.h"

namespace lockstep::data {
namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool one_of(const std::string& name, std::initializer_list<const char*> names) {
  return std::any_of(names.begin(), names.end(), [&](const char* n) { return name == n; });
}

std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i] + "/";
  return out;
}

}  // namespace

SplitFolders find_split_folders(const std::string& dir) {
  std::vector<std::string> train, test;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name[0] == '.' || !entry.is_directory(ec)) continue;
    const std::string key = lower(name);
    if (one_of(key, {"train", "traindata"})) train.push_back(name);
    if (one_of(key, {"test", "val", "valid", "validation", "testdata", "validationdata"})) test.push_back(name);
  }
  LS_CHECK(!ec, "data path ", dir, ": cannot read (", ec.message(), ")");
  std::sort(train.begin(), train.end());
  std::sort(test.begin(), test.end());
  const std::string found = "found " + listed(train) + (train.empty() || test.empty() ? "" : ", ") + listed(test);
  LS_CHECK(train.size() <= 1, "data path ", dir, ": more than one training folder (", found,
           "); name one with --data ", (fs::path(dir) / train[0]).string(), " and its test folder with --test-data");
  LS_CHECK(test.size() <= 1, "data path ", dir, ": more than one test folder beside ", listed(train), " (", found,
           "); pick one: --data ", (fs::path(dir) / (train.empty() ? test[0] : train[0])).string(), " --test-data ",
           (fs::path(dir) / test[0]).string());
  LS_CHECK(!train.empty() || test.empty(), "data path ", dir, ": a test folder without a training folder (", found,
           "); expected train/ beside it, or give its class folders to --test-data");
  SplitFolders out;
  if (!train.empty()) out.train = (fs::path(dir) / train[0]).string();
  if (!test.empty()) out.test = (fs::path(dir) / test[0]).string();
  return out;
}

}  // namespace lockstep::data
