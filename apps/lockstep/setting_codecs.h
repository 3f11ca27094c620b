#pragma once
// How each type of training setting is written as text and read back: the
// text a checkpoint's metadata holds, the processes of a run compare, and a
// resumed run compares with its checkpoint's. One codec per field type, so
// that every setting of a type reads and writes alike (settings_table.h).
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>

#include "duration.h"
#include "settings.h"
#include "runtime/memory_format_option.h"
#include "runtime/precision.h"
#include "training/lr_schedule.h"

namespace lockstep::app {

// Enough digits to read back the same value (std::to_string keeps only 6 decimals).
inline std::string exact_text(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

// read() throws on text that is not a value of the type: the standard
// conversions' own exceptions, or Error naming the flag for the named kinds.
template <typename T>
struct SettingCodec;

template <>
struct SettingCodec<int64_t> {
  static std::string text(int64_t v) { return std::to_string(v); }
  static int64_t read(const std::string& t) { return std::stoll(t); }
};
template <>
struct SettingCodec<uint64_t> {
  static std::string text(uint64_t v) { return std::to_string(v); }
  static uint64_t read(const std::string& t) { return std::stoull(t); }
};
template <>
struct SettingCodec<int> {
  static std::string text(int v) { return std::to_string(v); }
  static int read(const std::string& t) { return std::stoi(t); }
};
template <>
struct SettingCodec<float> {
  static std::string text(float v) { return exact_text(v); }
  static float read(const std::string& t) { return std::stof(t); }
};
template <>
struct SettingCodec<double> {
  static std::string text(double v) { return exact_text(v); }
  static double read(const std::string& t) { return std::stod(t); }
};
// A switch: "1" on, anything else off.
template <>
struct SettingCodec<bool> {
  static std::string text(bool v) { return v ? "1" : "0"; }
  static bool read(const std::string& t) { return t == "1"; }
};
template <>
struct SettingCodec<std::string> {
  static std::string text(const std::string& v) { return v; }
  static std::string read(const std::string& t) { return t; }
};
// A schedule this build does not know is refused in parse_schedule's own
// words, which list the known ones.
template <>
struct SettingCodec<ScheduleKind> {
  static std::string text(ScheduleKind v) { return schedule_name(v); }
  static ScheduleKind read(const std::string& t) { return parse_schedule(t); }
};
template <>
struct SettingCodec<Precision> {
  static std::string text(Precision v) { return precision_name(v); }
  static Precision read(const std::string& t) { return parse_precision(t, "--precision"); }
};
template <>
struct SettingCodec<MemoryFormat> {
  static std::string text(MemoryFormat v) { return memory_format_name(v); }
  static MemoryFormat read(const std::string& t) { return parse_memory_format(t, "--memory-format"); }
};
// "B1,B2": two numbers and nothing else, or an Error naming --betas.
template <>
struct SettingCodec<AdamBetas> {
  static std::string text(const AdamBetas& v) { return exact_text(v.first) + "," + exact_text(v.second); }
  static AdamBetas read(const std::string& t) { return parse_betas(t); }
};
// No limit: "", as a --time-limit left out.
template <>
struct SettingCodec<std::optional<Duration>> {
  static std::string text(const std::optional<Duration>& v) { return v ? v->text : ""; }
  static std::optional<Duration> read(const std::string& t) {
    if (t.empty()) return std::nullopt;
    return parse_duration(t, "--time-limit");
  }
};

}  // namespace lockstep::app
