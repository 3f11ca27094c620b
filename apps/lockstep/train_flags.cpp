#include "train_flags.h"

#include <CLI/CLI.hpp>
#include <cstdint>

namespace lockstep::app {

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
