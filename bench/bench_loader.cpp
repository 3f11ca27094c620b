// Loader throughput: images/s, and images/s per thread, for
//   fashion-mnist+aug : Fashion-MNIST (in memory) with crop, flip and normalisation;
//   jpeg-folder       : a folder of JPEGs of 96x96 it writes itself, decoded and resized to 32x32;
//   jpeg-folder cached: the same with the decode cache on (after its warm-up epoch).
// With --peer it also runs bench/peers/pil_loader.py (PIL, one thread, what a
// PyTorch pipeline does per sample) on the same data: the JPEGs as torchvision's
// ImageFolder decodes them (whole), the same with PIL's draft mode (a reduced
// DCT scale, the equivalent of lockstep's libjpeg-turbo scaling), and
// Fashion-MNIST with the same augmentation; it reports per-thread ratios.
// Prints a Markdown table, writes JSON.
//
// With --photos N, a second table: N photo-sized JPEGs (--photo-size, default
// 500x375, made from Fashion-MNIST by bench/support/photo_folder.h) resized
// to 3x96x96 (--photo-input), per thread count: lockstep's first epoch (which
// decodes and keeps the samples in memory), its later epochs (from memory,
// as floats and as the bytes lockstep train sends GPUs), every epoch decoded (no memory cache), writing the cache file (lockstep
// cache) and the epochs read from it; with --peer, beside each, PyTorch's
// DataLoader over torchvision's ImageFolder with the same resize
// (bench/peers/torch_loader.py) at as many worker processes, as per-thread
// ratios.
//
//   bench_loader [--threads 1,2,16] [--images 500] [--epochs 4] [--repeat 3] [--peer]
//                [--json PATH] [--fashion DIR] [--python /usr/bin/python3] [--peer-script PATH]
//                [--photos N] [--photo-size WxH] [--photo-input N] [--photo-epochs N] [--photos-only]
// Each case is timed --repeat times and the best kept, for the peer too.
#include <stb/stb_image_write.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <time.h>
#include <unistd.h>
#include <vector>

#include "data/image_folder.h"
#include "data/loader.h"
#include "data/open_dataset.h"
#include "data/random.h"
#include "base/error.h"
#include "bench/support/args.h"
#include "bench/support/machine.h"
#include "bench/support/photo_folder.h"
#include "data/cache_writer.h"

namespace fs = std::filesystem;
using namespace lockstep;
using namespace lockstep::data;
using json = nlohmann::json;

namespace {

struct Options {
  std::vector<int> threads;  // default: 1, 2 and every core
  int images = 500;
  int epochs = 4;
  int repeat = 3;  // timings taken per case; the best is kept (the machine may be shared)
  bool peer = false;
  std::string json_path = "bench_loader.json";
  std::string fashion = default_data_path();
  std::string python = "/usr/bin/python3";
  std::string peer_script = LOCKSTEP_SOURCE_DIR "/bench/peers/pil_loader.py";
  std::string torch_script = LOCKSTEP_SOURCE_DIR "/bench/peers/torch_loader.py";
  int photos = 0;  // 0: no photo rows
  int photo_width = 500, photo_height = 375;
  int photo_input = 96;
  int photo_epochs = 3;  // per timing: the first, then the later ones
  bool photos_only = false;
};

void usage() {
  std::cout << "usage: bench_loader [--threads 1,2,4] [--images N] [--epochs N] [--repeat N] [--peer] [--json PATH]\n"
            << "                    [--fashion DIR] [--python PATH] [--peer-script PATH]\n"
            << "                    [--photos N] [--photo-size WxH] [--photo-input N] [--photo-epochs N] [--photos-only]\n";
}

Options parse(int argc, char** argv) {
  Options o;
  bench::parse_args(argc, argv, 1, "--help", usage, [&](const std::string& a, const bench::ArgValue& value) {
    if (a == "--threads") {
      o.threads.clear();
      for (int64_t t : bench::parse_int_list(value())) o.threads.push_back(static_cast<int>(t));
    } else if (a == "--images") o.images = static_cast<int>(bench::parse_int(a, value()));
    else if (a == "--epochs") o.epochs = static_cast<int>(bench::parse_int(a, value()));
    else if (a == "--repeat") o.repeat = static_cast<int>(bench::parse_int(a, value()));
    else if (a == "--peer") o.peer = true;
    else if (a == "--json") o.json_path = value();
    else if (a == "--fashion") o.fashion = value();
    else if (a == "--python") o.python = value();
    else if (a == "--peer-script") o.peer_script = value();
    else if (a == "--photos") o.photos = static_cast<int>(bench::parse_int(a, value()));
    else if (a == "--photo-size") {
      const std::string v = value();
      const size_t x = v.find('x');
      LS_CHECK(x != std::string::npos, "--photo-size ", v, ": expected WxH");
      o.photo_width = static_cast<int>(bench::parse_int(a, v.substr(0, x)));
      o.photo_height = static_cast<int>(bench::parse_int(a, v.substr(x + 1)));
    } else if (a == "--photo-input") o.photo_input = static_cast<int>(bench::parse_int(a, value()));
    else if (a == "--photo-epochs") o.photo_epochs = static_cast<int>(bench::parse_int(a, value()));
    else if (a == "--photos-only") o.photos_only = true;
    else return false;
    return true;
  });
  if (o.threads.empty()) {
    o.threads = {1, 2};
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    if (cores > 2) o.threads.push_back(cores);
  }
  LS_CHECK(o.images >= 10 && o.epochs >= 1 && o.repeat >= 1, "need at least 10 images, 1 epoch and 1 repeat");
  LS_CHECK(o.photos >= 0 && o.photo_epochs >= 2 && o.photo_width > 0 && o.photo_height > 0 && o.photo_input > 0,
           "--photos at least 0, --photo-epochs at least 2 (the first is timed apart), sizes positive");
  LS_CHECK(!o.photos_only || o.photos > 0, "--photos-only needs --photos N");
  return o;
}

// Ten classes of 96x96 JPEGs: smooth colour gradients with seeded noise, so
// they compress like photographs rather than like flat colour.
void write_jpeg_folder(const fs::path& root, int count) {
  Rng rng(2024);
  std::vector<uint8_t> pixels(96 * 96 * 3);
  for (int i = 0; i < count; ++i) {
    const int cls = i % 10;
    for (int y = 0; y < 96; ++y)
      for (int x = 0; x < 96; ++x)
        for (int c = 0; c < 3; ++c) {
          const int base = (x * (c + 1) + y * (3 - c) + cls * 25 + i) % 256;
          pixels[(y * 96 + x) * 3 + c] = static_cast<uint8_t>((base + static_cast<int>(rng.below(32))) % 256);
        }
    const fs::path dir = root / ("class" + std::to_string(cls));
    fs::create_directories(dir);
    char name[32];
    std::snprintf(name, sizeof name, "%05d.jpg", i);
    if (!stbi_write_jpg((dir / name).c_str(), 96, 96, 3, pixels.data(), 90))
      throw Error("bench_loader: cannot write " + (dir / name).string());
  }
}

struct Result {
  std::string workload;
  int threads = 0;
  int64_t images = 0;
  double seconds = 0;
  std::vector<double> seconds_all;  // every timing, for the spread
  // CPU time of the whole process (all loader threads), the least of the
  // timings: what an image costs when other programs share the cores.
  double cpu_seconds = 0;
  double per_s() const { return images / seconds; }
  double per_thread() const { return per_s() / threads; }
  double cpu_us_per_image() const { return cpu_seconds * 1e6 / images; }
};

double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// One warm-up epoch, then `repeat` timings of `epochs` epochs each, the
// fastest kept; the consumer only takes the batches.
Result time_loader(const std::string& workload, std::shared_ptr<const Dataset> data, LoaderConfig config,
                   int epochs, int repeat) {
  Loader loader(std::move(data), config);
  HostBatch batch;
  int64_t epoch = 0;
  loader.start_epoch(epoch++, 0);
  while (loader.next(batch)) {
  }
  Result best{workload, config.threads, 0, 0.0, {}, 0.0};
  std::vector<double> all;
  double cpu = 0;
  for (int r = 0; r < repeat; ++r) {
    int64_t images = 0;
    const double cpu_begin = process_cpu_seconds();
    const auto begin = std::chrono::steady_clock::now();
    for (int e = 0; e < epochs; ++e) {
      loader.start_epoch(epoch++, 0);
      while (loader.next(batch)) images += batch.count;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    const double cpu_seconds = process_cpu_seconds() - cpu_begin;
    all.push_back(seconds);
    cpu = r == 0 ? cpu_seconds : std::min(cpu, cpu_seconds);
    if (best.images == 0 || seconds < best.seconds) best = {workload, config.threads, images, seconds, {}, 0.0};
  }
  best.seconds_all = all;
  best.cpu_seconds = cpu;
  return best;
}

// Runs a peer script and parses the JSON object it prints.
json run_json_command(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw Error("bench_loader: cannot run " + command);
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) throw Error("bench_loader: the peer failed (" + command + ")");
  return json::parse(out);
}

json run_peer(const Options& o, const fs::path& folder) {
  return run_json_command(o.python + " " + o.peer_script + " --dir " + folder.string() + " --size 32 --epochs " +
                          std::to_string(o.epochs) + " --repeat " + std::to_string(o.repeat) + " --fashion " +
                          o.fashion);
}

// PyTorch's DataLoader over the photo folder (bench/peers/torch_loader.py).
json run_torch_peer(const Options& o, const fs::path& folder) {
  std::string workers;
  for (int t : o.threads) workers += (workers.empty() ? "" : ",") + std::to_string(t);
  return run_json_command(o.python + " " + o.torch_script + " --dir " + folder.string() + " --size " +
                          std::to_string(o.photo_input) + " --workers " + workers + " --epochs " +
                          std::to_string(o.photo_epochs) + " --repeat " + std::to_string(o.repeat));
}

// A photo row: the best of the timings of one case.
struct PhotoRow {
  std::string workload, peer_workload;  // the PyTorch case it is held against
  int threads = 0;
  int64_t images = 0;
  double seconds = 0;
  std::vector<double> seconds_all;
  void add(int64_t n, double s) {
    seconds_all.push_back(s);
    if (images == 0 || s < seconds) images = n, seconds = s;
  }
  double per_thread() const { return static_cast<double>(images) / seconds / threads; }
};

int64_t run_epoch(Loader& loader, int64_t epoch) {
  HostBatch batch;
  int64_t images = 0;
  loader.start_epoch(epoch, 0);
  while (loader.next(batch)) images += batch.count;
  return images;
}

double since(std::chrono::steady_clock::time_point begin) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
}

// The photo table (see the top of this file); returns its rows as JSON.
json photo_rows(const Options& o) {
  const fs::path root = fs::temp_directory_path() / ("lockstep_bench_photos_" + std::to_string(::getpid()));
  const fs::path folder = root / "photos", cache = root / "photos.lockstep-cache";
  fs::remove_all(root);
  // The photos (about 90 MiB for 2,000) go however this ends, a failed peer included.
  struct Remover {
    fs::path path;
    ~Remover() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } remover{root};
  DataSets fashion = open_dataset(o.fashion);
  const auto written = std::chrono::steady_clock::now();
  const int64_t bytes = bench::write_photo_folder(folder.string(), o.photos, o.photo_width, o.photo_height,
                                                  *fashion.train);
  std::printf("\n%d photos of %dx%d (%.1f MiB of JPEG) written in %.1f s\n", o.photos, o.photo_width, o.photo_height,
              static_cast<double>(bytes) / 1048576.0, since(written));

  ImageFolderOptions fo;
  fo.channels = 3;
  fo.height = fo.width = o.photo_input;
  LoaderConfig config;
  config.batch_size = 64;
  config.normalize = false;
  DataOptions cache_options;
  cache_options.channels = 3;
  cache_options.height = cache_options.width = o.photo_input;
  cache_options.test_fraction = 0.0;
  cache_options.use_cache_file = false;
  const int later = o.photo_epochs - 1;

  std::vector<PhotoRow> rows;
  for (int t : o.threads) {
    config.threads = t;
    PhotoRow first{"first epoch (decodes, keeps in memory)", "photos first epoch", t};
    PhotoRow kept{"later epochs, from memory", "photos later epochs", t};
    PhotoRow bytes{"later epochs, from memory, as bytes for GPUs", "photos later epochs", t};
    PhotoRow decoded{"every epoch decoded (--cache-mb 0)", "photos later epochs", t};
    PhotoRow writing{"lockstep cache: decode into the file", "photos first epoch", t};
    PhotoRow from_file{"epochs from the cache file", "photos later epochs", t};
    for (int r = 0; r < o.repeat; ++r) {
      ImageFolderOptions keep = fo;
      keep.cache = true;
      // From the folder's scan: a loader's workers start on epoch 0 as it is made.
      auto begin = std::chrono::steady_clock::now();
      auto kept_folder = std::make_shared<ImageFolder>(folder.string(), keep);
      Loader loader(kept_folder, config);
      const int64_t first_images = run_epoch(loader, 0);  // before since(): arguments have no order
      first.add(first_images, since(begin));
      begin = std::chrono::steady_clock::now();
      int64_t n = 0;
      for (int e = 1; e <= later; ++e) n += run_epoch(loader, e);
      kept.add(n, since(begin));

      // What lockstep train's loader does for GPUs: the kept bytes and each
      // sample's draw, the crop, flip and normalisation left to the GPU.
      LoaderConfig for_gpus = config;
      for_gpus.augment_on_device = true;
      Loader byte_loader(kept_folder, for_gpus);
      run_epoch(byte_loader, 0);  // the epoch its workers began as it was made
      begin = std::chrono::steady_clock::now();
      n = 0;
      for (int e = 1; e <= later; ++e) n += run_epoch(byte_loader, e);
      bytes.add(n, since(begin));

      Loader plain(std::make_shared<ImageFolder>(folder.string(), fo), config);
      run_epoch(plain, 0);  // the epoch its workers began as it was made
      begin = std::chrono::steady_clock::now();
      n = 0;
      for (int e = 1; e <= later; ++e) n += run_epoch(plain, e);
      decoded.add(n, since(begin));

      fs::remove(cache);
      CacheWriteOptions write;
      write.output = cache.string();
      write.threads = t;
      begin = std::chrono::steady_clock::now();
      const CacheWriteSummary summary = write_cache_file(folder.string(), cache_options, write);
      writing.add(summary.samples, since(begin));
      Loader mapped(open_dataset(cache.string(), cache_options).train, config);
      run_epoch(mapped, 0);  // the first read checks each sample's checksum
      begin = std::chrono::steady_clock::now();
      n = 0;
      for (int e = 1; e <= later; ++e) n += run_epoch(mapped, e);
      from_file.add(n, since(begin));
    }
    for (PhotoRow* row : {&first, &kept, &bytes, &decoded, &writing, &from_file}) rows.push_back(*row);
  }

  json peer;
  std::map<std::pair<std::string, int>, json> torch_cases;
  if (o.peer) {
    peer = run_torch_peer(o, folder);
    for (const json& c : peer.at("cases"))
      torch_cases[{c.at("workload").get<std::string>(), c.at("workers").get<int>()}] = c;
  }

  std::printf("\nphotos %dx%d -> 3x%dx%d, batch 64, best of %d timings (later epochs: %d per timing)%s\n\n",
              o.photo_width, o.photo_height, o.photo_input, o.photo_input, o.repeat, later,
              o.peer ? "; PyTorch: DataLoader(num_workers = threads) over ImageFolder, Resize + ToTensor" : "");
  std::printf("| lockstep | threads | images | images/s | images/s per thread |%s\n",
              o.peer ? " PyTorch images/s per worker | lockstep / PyTorch per thread |" : "");
  std::printf("|---|---:|---:|---:|---:|%s\n", o.peer ? "---:|---:|" : "");
  json out = json::array();
  for (const PhotoRow& r : rows) {
    json row = {{"workload", r.workload}, {"threads", r.threads},       {"images", r.images},
                {"seconds", r.seconds},   {"seconds_all", r.seconds_all}, {"images_per_s_per_thread", r.per_thread()}};
    std::string versus;
    auto it = torch_cases.find({r.peer_workload, r.threads});
    if (it != torch_cases.end()) {
      const double theirs = it->second.at("images_per_s").get<double>() / r.threads;
      row["pytorch_workload"] = r.peer_workload;
      row["pytorch_images_per_s_per_worker"] = theirs;
      row["ratio_per_thread"] = r.per_thread() / theirs;
      char text[96];
      const bool first_epoch = r.peer_workload == "photos first epoch";
      std::snprintf(text, sizeof text, " %.0f (%s) | %.1fx |", theirs, first_epoch ? "first epoch" : "later epochs",
                    r.per_thread() / theirs);
      versus = text;
    } else if (o.peer) {
      versus = " | |";
    }
    std::printf("| %s | %d | %lld | %.0f | %.0f |%s\n", r.workload.c_str(), r.threads,
                static_cast<long long>(r.images), static_cast<double>(r.images) / r.seconds, r.per_thread(),
                versus.c_str());
    out.push_back(row);
  }
  json report = {{"photos", o.photos},
                 {"photo_width", o.photo_width},
                 {"photo_height", o.photo_height},
                 {"photo_input", o.photo_input},
                 {"photo_epochs", o.photo_epochs},
                 {"jpeg_bytes", bytes},
                 {"rows", out}};
  if (o.peer) report["pytorch"] = peer;
  return report;
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
  if (o.photos_only) {
    const bench::CpuMachine machine = bench::read_cpu_machine();
    const json report = {{"bench", "loader"}, {"machine", bench::machine_json(machine)},
                         {"hardware_threads", std::thread::hardware_concurrency()},
                         {"repeat", o.repeat}, {"photo_rows", photo_rows(o)}};
    std::printf("\n%s\n", bench::machine_line(machine).c_str());
    std::ofstream(o.json_path) << report.dump(2) << "\n";
    std::printf("\nwrote %s\n", o.json_path.c_str());
    return 0;
  }
  std::vector<Result> results;

  // Fashion-MNIST with the CIFAR-style recipe: pad-4 crop, flip, normalisation.
  DataSets fashion = open_dataset(o.fashion);
  LoaderConfig aug;
  aug.batch_size = 256;
  aug.augment = AugmentConfig{4, true};
  aug.normalization = compute_normalization(*fashion.train);
  for (int t : o.threads) {
    aug.threads = t;
    results.push_back(time_loader("fashion-mnist+aug", fashion.train, aug, 1, o.repeat));
  }

  const fs::path folder = fs::temp_directory_path() / ("lockstep_bench_loader_" + std::to_string(::getpid()));
  fs::remove_all(folder);
  write_jpeg_folder(folder, o.images);
  ImageFolderOptions fo;
  fo.channels = 3;
  fo.height = fo.width = 32;
  auto jpegs = std::make_shared<ImageFolder>(folder.string(), fo);
  LoaderConfig decode;
  decode.batch_size = 64;
  decode.normalize = false;
  for (int t : o.threads) {
    decode.threads = t;
    results.push_back(time_loader("jpeg-folder 96->32", jpegs, decode, o.epochs, o.repeat));
  }
  // The same folder with the decode cache on: the warm-up epoch decodes, the timed ones copy.
  fo.cache = true;
  auto cached = std::make_shared<ImageFolder>(folder.string(), fo);
  for (int t : o.threads) {
    decode.threads = t;
    results.push_back(time_loader("jpeg-folder cached", cached, decode, o.epochs, o.repeat));
  }

  json peer;
  // The peer's cases by workload ("jpeg-folder 96->32 draft" too).
  std::map<std::string, json> pil;
  if (o.peer) {
    peer = run_peer(o, folder);
    for (const json& c : peer.at("cases")) pil[c.at("workload").get<std::string>()] = c;
  }
  fs::remove_all(folder);

  auto pil_cpu_us = [](const json& c) {
    return c.at("cpu_seconds").get<double>() * 1e6 / c.at("images").get<double>();
  };
  // Per-thread images/s over PIL's, and the same from CPU time per image.
  auto ratio = [&](const Result& r, const std::string& workload, json& row, const std::string& key) -> std::string {
    auto it = pil.find(workload);
    if (it == pil.end()) return " |";
    const double wall = r.per_thread() / it->second.at("images_per_s").get<double>();
    const double cpu = pil_cpu_us(it->second) / r.cpu_us_per_image();
    row[key] = wall;
    row[key + "_cpu"] = cpu;
    char text[48];
    std::snprintf(text, sizeof text, " %.2fx (CPU %.2fx) |", wall, cpu);
    return text;
  };
  if (o.peer)
    std::printf(
        "lockstep decodes JPEGs with libjpeg-turbo at the smallest DCT scale covering 32x32 (here 3/8: 36x36),\n"
        "the equivalent of PIL's draft mode: 'vs PIL' compares with the usual torchvision ImageFolder pipeline\n"
        "(PIL decodes whole images), 'vs PIL draft' with PIL given draft mode too. Best of %d timings each;\n"
        "(CPU ...) is the ratio of CPU time per image, steadier when other programs share the cores.\n\n",
        o.repeat);
  std::printf("| workload | threads | images | images/s | images/s per thread | CPU us/image |%s\n",
              o.peer ? " per thread vs PIL | per thread vs PIL draft |" : "");
  std::printf("|---|---:|---:|---:|---:|---:|%s\n", o.peer ? "---:|---:|" : "");
  json rows = json::array();
  for (const Result& r : results) {
    json row = {{"workload", r.workload},
                {"threads", r.threads},
                {"images", r.images},
                {"seconds", r.seconds},
                {"seconds_all", r.seconds_all},
                {"cpu_seconds", r.cpu_seconds},
                {"images_per_s", r.per_s()},
                {"images_per_s_per_thread", r.per_thread()}};
    const std::string vs_pil = o.peer ? ratio(r, r.workload, row, "per_thread_ratio_vs_pil") : "";
    const std::string vs_draft = o.peer ? ratio(r, r.workload + " draft", row, "per_thread_ratio_vs_pil_draft") : "";
    std::printf("| %s | %d | %lld | %.0f | %.0f | %.1f |%s%s\n", r.workload.c_str(), r.threads,
                static_cast<long long>(r.images), r.per_s(), r.per_thread(), r.cpu_us_per_image(), vs_pil.c_str(),
                vs_draft.c_str());
    rows.push_back(row);
  }
  if (o.peer)
    for (const json& c : peer.at("cases")) {
      const bool draft = c.at("workload").get<std::string>().ends_with(" draft");
      std::printf("| %s: %s (%s) | 1 | %lld | %.0f | %.0f | %.1f |%s\n", peer.value("peer", "PIL").c_str(),
                  c.at("workload").get<std::string>().c_str(), c.at("method").get<std::string>().c_str(),
                  static_cast<long long>(c.at("images").get<int64_t>()), c.at("images_per_s").get<double>(),
                  c.at("images_per_s").get<double>(), pil_cpu_us(c), draft ? " | 1.00x |" : " 1.00x | |");
    }

  const bench::CpuMachine machine = bench::read_cpu_machine();
  json report = {{"bench", "loader"},
                 {"machine", bench::machine_json(machine)},
                 {"hardware_threads", std::thread::hardware_concurrency()},
                 {"jpeg_images", o.images},
                 {"jpeg_epochs", o.epochs},
                 {"repeat", o.repeat},
                 {"results", rows}};
  if (o.peer) report["peer"] = peer;
  if (o.photos > 0) report["photo_rows"] = photo_rows(o);
  std::printf("\n%s\n", bench::machine_line(machine).c_str());  // under the last table
  std::ofstream(o.json_path) << report.dump(2) << "\n";
  std::printf("\nwrote %s\n", o.json_path.c_str());
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_loader: " << e.what() << "\n";
  return 1;
}
