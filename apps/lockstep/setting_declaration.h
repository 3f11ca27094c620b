#pragma once
// How settings_table.cpp declares one setting: from a pointer to its
// TrainSettings field, the field's codec (setting_codecs.h) gives the text
// and the reading back, and the field's type how CLI11 binds the flag; the
// rest is said of the setting by name (.saved("seed"), .agreed(), ...).
#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "setting_codecs.h"
#include "setting_entry.h"

namespace lockstep::app {

template <typename T>
class SettingDeclaration {
public:
  SettingDeclaration(T TrainSettings::*field, std::string flag, std::string help) : field_(field) {
    entry_.flag = std::move(flag);
    entry_.help = std::move(help);
    entry_.is_switch = std::is_same_v<T, bool>;
    entry_.text = [field](const TrainSettings& s) { return SettingCodec<T>::text(s.*field); };
    entry_.read = [field](TrainSettings& s, const std::string& text) { s.*field = SettingCodec<T>::read(text); };
  }

  // Saved in a checkpoint's metadata under `key`, and taken from it by a
  // resumed run unless given.
  SettingDeclaration& saved(std::string key, OnResume on_resume = OnResume::may_change) {
    entry_.key = std::move(key);
    entry_.on_resume = on_resume;
    return *this;
  }
  // Compared across the processes of a run, under `name` when not the flag.
  SettingDeclaration& agreed(std::string name = "") {
    entry_.agreed = true;
    entry_.agreement_name = std::move(name);
    return *this;
  }
  template <typename Text>
  SettingDeclaration& agreed_as(std::string name, Text text) {
    agreed(std::move(name));
    entry_.agreement_text = std::move(text);
    return *this;
  }
  // CLI11's checks of the flag's text, in order (they also make its type in --help).
  template <typename... Validators>
  SettingDeclaration& validated(const Validators&... validators) {
    // As plain Validators: IsMember's converting constructor would take a copy of one for its set.
    std::vector<CLI::Validator> checks{static_cast<const CLI::Validator&>(validators)...};
    validate_ = [checks](CLI::Option& option) {
      for (const CLI::Validator& check : checks) option.check(check);
    };
    return *this;
  }
  template <typename Check>
  SettingDeclaration& checked(Check check) {
    entry_.check = std::move(check);
    return *this;
  }
  // The value for the machine when not given (SettingEntry::machine_default):
  // `value(settings, device)` returns it.
  template <typename Value>
  SettingDeclaration& defaulted(Value value) {
    entry_.machine_default = [field = field_, value](TrainSettings& s, Device device) { s.*field = value(s, device); };
    return *this;
  }
  template <typename Note>
  SettingDeclaration& noted(Note note) {
    entry_.start_note = std::move(note);
    return *this;
  }
  // The flag turns the switch off (--no-dropout for `dropout`).
  SettingDeclaration& turned_off_by_flag() {
    static_assert(std::is_same_v<T, bool>);
    turned_off_ = true;
    return *this;
  }
  SettingDeclaration& read_in_own_words() {
    entry_.reads_in_own_words = true;
    return *this;
  }

  operator SettingEntry() const {
    SettingEntry entry = entry_;
    entry.bind = binder();
    if (turned_off_ || !binds_field())
      entry.take_buffer = [field = field_, off = turned_off_](TrainSettings& s, const FlagBuffer& buffer) {
        if constexpr (std::is_same_v<T, bool>) {
          if (off) s.*field = !buffer.on;
        } else {
          s.*field = SettingCodec<T>::read(buffer.text);
        }
      };
    return entry;
  }

private:
  // CLI11 converts these itself; other types are read from the text by their codec.
  static constexpr bool binds_field() {
    return std::is_same_v<T, bool> || std::is_same_v<T, std::string> || std::is_arithmetic_v<T>;
  }

  decltype(SettingEntry::bind) binder() const {
    return [field = field_, flag = entry_.flag, help = entry_.help, validate = validate_,
            off = turned_off_](CLI::App& command, TrainSettings& values, FlagBuffer& buffer) {
      CLI::Option* option = nullptr;
      if constexpr (std::is_same_v<T, bool>)
        option = off ? command.add_flag(flag, buffer.on, help) : command.add_flag(flag, values.*field, help);
      else if constexpr (binds_field())
        option = command.add_option(flag, values.*field, help);
      else
        option = command.add_option(flag, buffer.text, help);
      if (validate) validate(*option);
      return option;
    };
  }

  T TrainSettings::*field_;
  bool turned_off_ = false;
  std::function<void(CLI::Option&)> validate_;  // CLI11's checks
  SettingEntry entry_;
};

template <typename T>
SettingDeclaration<T> setting(T TrainSettings::*field, std::string flag, std::string help) {
  return SettingDeclaration<T>(field, std::move(flag), std::move(help));
}

}  // namespace lockstep::app
