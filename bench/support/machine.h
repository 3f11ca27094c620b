#pragma once
// The CPU a benchmark figure was measured on. lockstep's CPU step and loader
// ratios against PyTorch move with the machine (0.43x on an AMD EPYC with
// AVX2, 0.88x on an Intel Xeon with AVX-512 and AMX), because oneDNN and
// OpenBLAS pick their kernels from the CPU's instruction sets and from a few
// environment variables; every figure carries what it ran on.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::bench {

struct CpuMachine {
  std::string model;  // /proc/cpuinfo "model name", or "unknown"
  unsigned cores = 0;  // hardware threads (std::thread::hardware_concurrency)
  // The flags that decide oneDNN's and OpenBLAS's kernels, of avx2, fma,
  // avx512f, avx512_bf16, avx512_vnni, amx_tile, amx_bf16: those present.
  std::vector<std::string> kernel_flags;
  // The variables that change the CPU kernels (OPENBLAS_CORETYPE,
  // OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, DNNL_MAX_CPU_ISA): those set, with
  // their values.
  std::vector<std::pair<std::string, std::string>> kernel_overrides;
};

// Reads this machine (/proc/cpuinfo and the environment).
CpuMachine read_cpu_machine();

// {"cpu_model", "cores", "cpu_flags": [...], "kernel_env": {NAME: value}}.
nlohmann::json machine_json(const CpuMachine& m);

// "machine: <model>, N cores, flags avx2 fma ..., OPENBLAS_CORETYPE=Haswell"
// (or "..., no kernel overrides"): the line printed under a figure's table.
std::string machine_line(const CpuMachine& m);

}  // namespace lockstep::bench
