#pragma once
// What every suite of lockstep-bench shares: the options, the devices they
// name, the machine and versions a result is stamped with, Markdown tables,
// medians, and the JSON file each suite writes.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/support/args.h"
#include "bench/support/median.h"
#include "runtime/device.h"
#include "runtime/shape.h"

namespace lockstep::bench {

using json = nlohmann::ordered_json;  // keys stay in the order written

// Every flag of every suite; a suite reads the ones it needs, and a value the
// user did not give (0, empty, negative) means the suite's own default, which
// depends on --quick and on whether a GPU takes part.
struct Options {
  std::string suite;
  std::string devices = "all";   // all | cpu | list such as 0,1 or cpu,0
  std::string model;
  int64_t batch = 0;
  std::vector<int64_t> batches;  // --batches 16,32,64
  int steps = 0;
  int warmup = -1;
  std::string json_path;
  std::string png_path;
  bool quick = false;
  bool no_compile = false;       // peers: leave out the torch.compile rows (compiling takes a minute or more)
  int replicas_max = 0;
  double busbw = 370.0;          // GB/s
  std::string data;
  int64_t limit = -1;            // training samples (0: all)
  int64_t test_limit = -1;
  int epochs = 0;
  float lr = 0.05f;
  std::string input;             // CxHxW of the synthetic images
  int64_t classes = 10;
  int threads = 0;               // CPU math threads (OpenBLAS, torch.set_num_threads)
  std::vector<int> ranks;        // allreduce: LocalCommunicator sizes
  int64_t max_bytes = 0;         // allreduce: largest message
  std::string python;            // peers: empty finds one (peers.cpp: $LOCKSTEP_PEER_PYTHON, python3, /usr/bin/python3)
  std::string peer_script;
  bool tf32 = false;             // peers and scaling on GPUs: TF32 math on both sides
  std::string precision;         // fp32 | tf32 | bf16; empty: tf32 with --tf32, else fp32 (precision())
  std::string gpu;               // roofline: the GPU of gpu_peaks.cpp's table (default h100)
  std::string memory_format;     // peers, scaling: lockstep's activations, nchw | nhwc; empty: the library's default
  // peers: lockstep's eager step with its phase clocks instead of the step
  // replayed from a CUDA graph (what `lockstep train` runs on one GPU per
  // replica); scaling and projection always measure the eager step, whose
  // phases they report.
  bool eager = false;
  // Internal (the child processes that measure one configuration):
  std::string replica_devices;   // one entry per replica, e.g. cpu,cpu
  int loader_threads = 2;
};

Options parse_options(int argc, char** argv, int first);
// --precision as given, or what --tf32 (or its absence) means.
std::string precision(const Options& o);
void print_usage();

// --devices is read by resolve_devices and --replica-devices by
// parse_device_list (runtime/device.h); flags, numbers and --input by
// bench/support/args.h; medians by bench/support/median.h.
bool any_gpu(const std::vector<Device>& devices);
std::string device_list(const std::vector<Device>& devices);  // "cpu,cpu" (the child's --replica-devices)
std::string shape_text(const Shape& shape);  // "3x32x32" of [3, 32, 32]

// Threads for CPU math: --threads, or every hardware thread.
int cpu_threads(const Options& o);

// CPU model, cores, kernel flags and overrides (bench/support/machine.h),
// memory and GPUs of this machine.
json machine_info();
// backend_versions(), the lockstep version, the git commit of the source
// tree (when it is a git checkout), compiler and OpenBLAS build.
json version_info();

// A Markdown table, columns right-aligned except the first.
class Table {
public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string str() const;

private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// printf into a std::string.
std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string human_bytes(double bytes);  // "4 KB", "16 MB", "1 GB" (powers of 1024)
std::string ms_text(double seconds);    // "12.3" / "0.42" milliseconds

// What a suite hands back: its table (printed), its rows and notes (in the JSON).
struct SuiteResult {
  std::string title;            // a line above the table
  std::string kind = "measurement";  // or "projection"
  Table table{{}};
  json settings = json::object();
  json rows = json::array();
  std::vector<std::string> notes;   // printed under the table and stored
  std::vector<std::string> skipped; // rows not run and why (no GPU, ...)
  std::string png;                  // the PNG written, empty when none
};

// Prints the result and writes the JSON file: suite, kind, machine, versions,
// settings, rows, notes, skipped, png, table.
void report(const Options& o, const SuiteResult& result);

// Adds a note for each of `flags` the user gave that this suite has no use for.
void note_unused(const Options& o, const std::vector<std::string>& flags, SuiteResult& result);

// Default file names: bench-out/bench-<suite>.json / .png in the current folder.
std::string json_path(const Options& o);
std::string png_path(const Options& o);

}  // namespace lockstep::bench
