#include "train_flags.h"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdlib>

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

TrainFlags::TrainFlags(CLI::App& command)
    : command_(command), buffers_(train_setting_table().size()) {
  const std::vector<SettingEntry>& table = train_setting_table();
  for (size_t i = 0; i < table.size(); ++i) table[i].bind(command, values_, buffers_[i]);
}

TrainSettings TrainFlags::settings() const {
  TrainSettings s = values_;
  for (const CLI::Option* option : command_.get_options())
    if (option->count() > 0) s.given.add(option->get_name());
  const std::vector<SettingEntry>& table = train_setting_table();
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i].take_buffer && s.given.contains(table[i].flag)) table[i].take_buffer(s, buffers_[i]);
  return s;
}

}  // namespace lockstep::app
