#include "common.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "base/error.h"
#include "bench/support/machine.h"
#include "runtime/memory_format_option.h"
#include "layers/models.h"

namespace lockstep::bench {

void print_usage() {
  std::cout <<
      R"(usage: lockstep-bench SUITE [options]
       lockstep-bench [all] [options]      every suite in turn, each writing bench-out/bench-SUITE.json/.png here

suites:
  scaling     training images/s for 1..N replicas (weak and strong scaling), phases, memory
  projection  projected N-GPU step time from the measured 1-replica step and a link bandwidth
  batch-sweep epoch time and test accuracy over mini-batch sizes, 1 replica and all
  envs        time per epoch on the CPU, one GPU and all GPUs
  allreduce   all-reduce algbw/busbw over message sizes (nccl-tests definitions)
  kernels     fused SGD-momentum update against unfused passes and memcpy bandwidth
  peers       images/s against PyTorch on the same model, batch and synthetic data
  roofline    the least time a training step can take on a GPU, from its published peaks (a bound)
  profile     one replica's step layer by layer: forward, data and weight gradient, batch-norm statistics,
              update, each against its roofline bound, and host enqueue time against device time

options (every suite; a suite notes the ones it has no use for):
  --devices all|cpu|LIST  all GPUs (the CPU when there is none), the CPU, or e.g. 0,1 / cuda:0 / cpu
  --model NAME            mlp, simple-cnn, resnet18, resnet20, vgg11-bn (default: per suite and device;
                          profile: resnet18 at batch 256 on a GPU, resnet20 at 64 on the CPU)
  --batch B               scaling: per-replica batch (strong scaling: B x max replicas global);
                          peers: the batch; envs: the global batch; projection, batch-sweep: one batch only
<<<<<<< HEAD
  --steps N --warmup N    timed and untimed steps (kernels: repetitions; allreduce: iterations per size;
                          profile: rounds, each an unmarked step and one step per window of marked layers)
  --json PATH --png PATH  outputs (default bench-SUITE.json / bench-SUITE.png in the current folder)
=======
  --steps N --warmup N    timed and untimed steps (kernels: repetitions; allreduce: iterations per size)
  --json PATH --png PATH  outputs (default bench-out/bench-SUITE.json / .png in the current folder)
>>>>>>> house-data
  --quick                 small models, few steps, little data: seconds a suite on a 2-core CPU
options (some suites):
  --replicas-max N        scaling, batch-sweep: replicas on one shared device (default 4 on a GPU, 2 on the CPU)
  --batches LIST          projection (per-GPU batches), batch-sweep (mini-batches, default 16,32,64,96,128,256)
  --busbw GB/S            projection: all-reduce bus bandwidth (default 370, an 8xH100 NVLink ring)
  --data PATH             batch-sweep, envs: data set (default Debian's Fashion-MNIST)
  --limit N --test-limit N --epochs N --lr LR   batch-sweep, envs: samples (0: all), epochs, constant lr
  --input CxHxW --classes K   scaling, projection, peers, kernels, profile: synthetic data / model shape
  --threads T             CPU math threads, ours and PyTorch's (default: all hardware threads)
  --ranks LIST            allreduce: LocalCommunicator sizes (default 2, plus min(cores, 8) above 2 cores)
  --max-bytes N           allreduce: largest message (default 1 GB, quick 16 MB)
  --python PATH --peer-script PATH   peers: interpreter with torch (default: the first of
                                     $LOCKSTEP_PEER_PYTHON, python3, /usr/bin/python3 that imports it,
                                     one whose torch sees CUDA first on a GPU), peer script
  --no-compile            peers: no torch.compile rows (each compiles for a minute or more)
  --tf32                  scaling, projection, peers on GPUs: TF32 math on both sides (default strict FP32)
  --precision fp32|tf32|bf16   peers, scaling, roofline, profile: tf32 is --tf32; bf16 (mixed precision) runs the
                          PyTorch peer with AMP bf16 and channels_last; lockstep in its bf16 mode (NHWC on a GPU)
  --memory-format nchw|nhwc    peers, scaling, profile: lockstep's activation layout (default: the library's, nhwc
                          for bf16 on a GPU, else nchw); the PyTorch peer runs both layouts on a GPU
  --eager                 peers: lockstep's eager step, its phases timed (default on a GPU: the step
                          replayed from a CUDA graph, as lockstep train runs it)
  --gpu KEY               roofline: h100, h200, a100 (and h100-pcie, h100-nvl, h200-nvl, a100-pcie, a100-40gb);
                          profile: the bounds' GPU (default the device's own, else h100)
)";
}

namespace {

std::string read_command(const std::string& cmd) {
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return "";
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe)) out += buf;
  pclose(pipe);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

}  // namespace

Options parse_options(int argc, char** argv, int first) {
  Options o;
  parse_args(argc, argv, first, "lockstep-bench --help", print_usage, [&](const std::string& a, const ArgValue& value) {
    if (a == "--devices") o.devices = value();
    else if (a == "--model") o.model = value();
    else if (a == "--batch") o.batch = parse_int(a, value());
    else if (a == "--batches") o.batches = parse_int_list(value());
    else if (a == "--steps") o.steps = static_cast<int>(parse_int(a, value()));
    else if (a == "--warmup") o.warmup = static_cast<int>(parse_int(a, value()));
    else if (a == "--json") o.json_path = value();
    else if (a == "--png") o.png_path = value();
    else if (a == "--quick") o.quick = true;
    else if (a == "--no-compile") o.no_compile = true;
    else if (a == "--replicas-max") o.replicas_max = static_cast<int>(parse_int(a, value()));
    else if (a == "--busbw") o.busbw = parse_double(a, value());
    else if (a == "--data") o.data = value();
    else if (a == "--limit") o.limit = parse_int(a, value());
    else if (a == "--test-limit") o.test_limit = parse_int(a, value());
    else if (a == "--epochs") o.epochs = static_cast<int>(parse_int(a, value()));
    else if (a == "--lr") o.lr = static_cast<float>(parse_double(a, value()));
    else if (a == "--input") o.input = value();
    else if (a == "--classes") o.classes = parse_int(a, value());
    else if (a == "--threads") o.threads = static_cast<int>(parse_int(a, value()));
    else if (a == "--ranks") {
      for (int64_t r : parse_int_list(value())) o.ranks.push_back(static_cast<int>(r));
    } else if (a == "--max-bytes") o.max_bytes = parse_int(a, value());
    else if (a == "--python") o.python = value();
    else if (a == "--peer-script") o.peer_script = value();
    else if (a == "--tf32") o.tf32 = true;
    else if (a == "--precision") o.precision = value();
    else if (a == "--gpu") o.gpu = value();
    else if (a == "--memory-format") o.memory_format = value();
    else if (a == "--eager") o.eager = true;
    else if (a == "--replica-devices") o.replica_devices = value();
    else if (a == "--loader-threads") o.loader_threads = static_cast<int>(parse_int(a, value()));
    else return false;
    return true;
  });
  LS_CHECK(o.batch >= 0 && o.steps >= 0 && o.epochs >= 0 && o.replicas_max >= 0 && o.threads >= 0,
           "--batch, --steps, --epochs, --replicas-max and --threads must not be negative");
  for (int64_t b : o.batches) LS_CHECK(b > 0, "--batches: every batch must be positive");
  for (int r : o.ranks) LS_CHECK(r >= 1, "--ranks: every rank count must be at least 1");
  LS_CHECK(o.busbw > 0.0, "--busbw must be positive, got ", o.busbw);
  LS_CHECK(o.classes >= 2, "--classes must be at least 2, got ", o.classes);
  if (!o.model.empty()) {
    const std::vector<std::string> names = model_names();
    std::string known;
    for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
    LS_CHECK(std::find(names.begin(), names.end(), o.model) != names.end(), "--model ", o.model,
             ": expected one of ", known);
  }
  if (!o.input.empty()) parse_shape(o.input);
  if (!o.memory_format.empty()) parse_memory_format(o.memory_format, "--memory-format");
  if (!o.precision.empty()) {
    LS_CHECK(o.precision == "fp32" || o.precision == "tf32" || o.precision == "bf16", "--precision ", o.precision,
             ": expected fp32, tf32 or bf16");
    LS_CHECK(!o.tf32 || o.precision == "tf32", "--tf32 contradicts --precision ", o.precision);
    o.tf32 = o.precision == "tf32";
  }
  return o;
}

std::string precision(const Options& o) { return !o.precision.empty() ? o.precision : o.tf32 ? "tf32" : "fp32"; }

bool any_gpu(const std::vector<Device>& devices) {
  return std::any_of(devices.begin(), devices.end(), [](const Device& d) { return d.is_cuda(); });
}

std::string device_list(const std::vector<Device>& devices) {
  std::string out;
  for (const Device& d : devices) {
    if (!out.empty()) out += ',';
    out += d.str();
  }
  return out;
}

std::string shape_text(const Shape& s) {
  return std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(s[2]);
}

int cpu_threads(const Options& o) {
  return o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

json machine_info() {
  json machine = machine_json(read_cpu_machine());
  json gpus = json::array();
  for (const GpuInfo& g : cuda_devices())
    gpus.push_back({{"index", g.index},
                    {"name", g.name},
                    {"memory_bytes", g.memory_bytes},
                    {"compute_capability", std::to_string(g.major) + "." + std::to_string(g.minor)}});
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  machine["memory_bytes"] = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  machine["hostname"] = host;
  machine["gpus"] = gpus;
  return machine;
}

json version_info() {
  std::string commit = read_command("git -C '" LOCKSTEP_SOURCE_DIR "' rev-parse HEAD 2>/dev/null");
  std::string dirty;
  if (!commit.empty())
    dirty = read_command("git -C '" LOCKSTEP_SOURCE_DIR "' status --porcelain --untracked-files=no 2>/dev/null");
  return json{{"lockstep", LOCKSTEP_VERSION},
              {"git_commit", commit.empty() ? json(nullptr) : json(commit)},
              {"git_dirty", !dirty.empty()},
              {"backend", backend_versions()},
              {"cuda_compiled", cuda_compiled()},
              {"compiler", __VERSION__},
              {"openblas", openblas_get_config()}};
}

std::string Table::str() const {
  std::vector<size_t> width(headers_.size(), 3);
  for (size_t c = 0; c < headers_.size(); ++c) width[c] = std::max(width[c], headers_[c].size());
  for (const auto& row : rows_)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& cells) {
    out << "|";
    for (size_t c = 0; c < headers_.size(); ++c) {
      std::string cell = c < cells.size() ? cells[c] : "";
      std::string pad(width[c] - std::min(width[c], cell.size()), ' ');
      out << " " << (c == 0 ? cell + pad : pad + cell) << " |";
    }
    out << "\n";
  };
  line(headers_);
  out << "|";
  for (size_t c = 0; c < headers_.size(); ++c) out << (c == 0 ? " :" : " ") << std::string(width[c] - 1, '-')
                                                  << (c == 0 ? "" : ":") << " |";
  out << "\n";
  for (const auto& row : rows_) line(row);
  return out.str();
}

std::string fmt(const char* format, ...) {
  va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int size = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string out(static_cast<size_t>(std::max(size, 0)) + 1, '\0');
  std::vsnprintf(out.data(), out.size(), format, again);
  va_end(again);
  out.resize(static_cast<size_t>(std::max(size, 0)));
  return out;
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return bytes == static_cast<int64_t>(bytes) ? fmt("%lld %s", static_cast<long long>(bytes), units[u])
                                              : fmt("%.1f %s", bytes, units[u]);
}

std::string ms_text(double seconds) {
  const double ms = seconds * 1e3;
  return ms < 10.0 ? fmt("%.2f", ms) : fmt("%.1f", ms);
}

void note_unused(const Options& o, const std::vector<std::string>& flags, SuiteResult& result) {
  for (const std::string& f : flags) {
    const bool given = (f == "--model" && !o.model.empty()) || (f == "--batch" && o.batch > 0) ||
                       (f == "--steps" && o.steps > 0) || (f == "--warmup" && o.warmup >= 0) ||
                       (f == "--batches" && !o.batches.empty()) || (f == "--epochs" && o.epochs > 0);
    if (given) result.notes.push_back(f + " does not apply to " + o.suite + " and was ignored");
  }
}

namespace {

// The outputs' folder when none is given, made when first asked for: a run
// started in the repository writes nothing beside its tracked files
// (.gitignore ignores bench-out/), where the root's bench-SUITE files were
// once committed by mistake.
constexpr const char* kDefaultOutputFolder = "bench-out";

std::string default_output(const Options& o, const char* ending) {
  std::error_code ec;
  std::filesystem::create_directories(kDefaultOutputFolder, ec);
  LS_CHECK(!ec, "cannot make the output folder ", kDefaultOutputFolder, " (", ec.message(), "); give --json and --png");
  return std::string(kDefaultOutputFolder) + "/bench-" + o.suite + ending;
}

}  // namespace

std::string json_path(const Options& o) { return o.json_path.empty() ? default_output(o, ".json") : o.json_path; }
std::string png_path(const Options& o) { return o.png_path.empty() ? default_output(o, ".png") : o.png_path; }

void report(const Options& o, const SuiteResult& r) {
  const std::string table = r.table.str();
  std::printf("\n%s\n\n%s", r.title.c_str(), table.c_str());
  if (!r.notes.empty() || !r.skipped.empty()) std::printf("\n");
  for (const std::string& n : r.notes) std::printf("- %s\n", n.c_str());
  for (const std::string& s : r.skipped) std::printf("- skipped: %s\n", s.c_str());

  json out{{"suite", o.suite},
           {"kind", r.kind},
           {"title", r.title},
           {"machine", machine_info()},
           {"versions", version_info()},
           {"settings", r.settings},
           {"rows", r.rows},
           {"notes", r.notes},
           {"skipped", r.skipped},
           {"png", r.png.empty() ? json(nullptr) : json(r.png)},
           {"table", table}};
  const std::string path = json_path(o);
  std::ofstream file(path);
  LS_CHECK(file.good(), "cannot write ", path);
  file << out.dump(2) << "\n";
  LS_CHECK(file.good(), "cannot write ", path);
  std::printf("\nwrote %s%s%s\n", path.c_str(), r.png.empty() ? "" : " and ", r.png.c_str());
  std::fflush(stdout);
}

}  // namespace lockstep::bench
