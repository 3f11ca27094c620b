#include "bench/support/machine.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace lockstep::bench {

namespace {

// In the order printed; /proc/cpuinfo lists them in another.
const char* const kKernelFlags[] = {"avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16"};
const char* const kKernelVariables[] = {"OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                        "DNNL_MAX_CPU_ISA"};

// The value of a "key<tabs>: value" line of /proc/cpuinfo.
std::string cpuinfo_value(const std::string& line) {
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return "";
  const size_t start = line.find_first_not_of(' ', colon + 1);
  return start == std::string::npos ? "" : line.substr(start);
}

}  // namespace

CpuMachine read_cpu_machine() {
  CpuMachine m;
  m.model = "unknown";
  m.cores = std::thread::hardware_concurrency();
  std::set<std::string> flags;
  // The first processor's lines: every core of the machines we run on is alike.
  std::ifstream cpuinfo("/proc/cpuinfo");
  bool have_model = false, have_flags = false;
  for (std::string line; (!have_model || !have_flags) && std::getline(cpuinfo, line);) {
    if (!have_model && line.rfind("model name", 0) == 0) {
      m.model = cpuinfo_value(line);
      have_model = true;
    } else if (!have_flags && line.rfind("flags", 0) == 0) {
      std::istringstream words(cpuinfo_value(line));
      for (std::string flag; words >> flag;) flags.insert(flag);
      have_flags = true;
    }
  }
  for (const char* flag : kKernelFlags)
    if (flags.count(flag)) m.kernel_flags.push_back(flag);
  for (const char* name : kKernelVariables)
    if (const char* value = std::getenv(name)) m.kernel_overrides.emplace_back(name, value);
  return m;
}

nlohmann::json machine_json(const CpuMachine& m) {
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [name, value] : m.kernel_overrides) env[name] = value;
  return {{"cpu_model", m.model}, {"cores", m.cores}, {"cpu_flags", m.kernel_flags}, {"kernel_env", env}};
}

std::string machine_line(const CpuMachine& m) {
  std::ostringstream out;
  out << "machine: " << m.model << ", " << m.cores << (m.cores == 1 ? " core" : " cores");
  if (m.kernel_flags.empty()) out << ", no avx2/fma/avx512/amx flags";
  for (size_t i = 0; i < m.kernel_flags.size(); ++i) out << (i == 0 ? ", flags " : " ") << m.kernel_flags[i];
  if (m.kernel_overrides.empty()) out << ", no kernel overrides";
  for (size_t i = 0; i < m.kernel_overrides.size(); ++i)
    out << (i == 0 ? ", " : " ") << m.kernel_overrides[i].first << "=" << m.kernel_overrides[i].second;
  return out.str();
}

}  // namespace lockstep::bench
