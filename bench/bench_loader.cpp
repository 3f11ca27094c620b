// Loader throughput: images/s, and images/s per thread, for
//   fashion-mnist+aug : Fashion-MNIST (in memory) with crop, flip and normalisation;
//   jpeg-folder       : a folder of JPEGs of 96x96 it writes itself, decoded and resized to 32x32;
//   jpeg-folder cached: the same with the decode cache on (after its warm-up epoch).
// With --peer it also runs bench/peers/pil_loader.py (PIL, one thread) on the same
// JPEGs and reports the per-thread ratio. Prints a Markdown table, writes JSON.
//
//   bench_loader [--threads 1,2,16] [--images 500] [--epochs 4] [--repeat 3] [--peer]
//                [--json PATH] [--fashion DIR] [--python /usr/bin/python3] [--peer-script PATH]
// Each case is timed --repeat times and the best kept, for the peer too.
#include <stb/stb_image_write.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "data/image_folder.h"
#include "data/loader.h"
#include "data/open_dataset.h"
#include "data/random.h"
#include "engine/error.h"

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
  std::string peer_script = (fs::path(__FILE__).parent_path() / "peers" / "pil_loader.py").string();
};

[[noreturn]] void usage(const std::string& problem) {
  std::cerr << "bench_loader: " << problem << "\n"
            << "usage: bench_loader [--threads 1,2,4] [--images N] [--epochs N] [--repeat N] [--peer] [--json PATH]\n"
            << "                    [--fashion DIR] [--python PATH] [--peer-script PATH]\n";
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--threads") {
      o.threads.clear();
      std::stringstream list(value());
      for (std::string t; std::getline(list, t, ',');) o.threads.push_back(std::stoi(t));
    } else if (arg == "--images") {
      o.images = std::stoi(value());
    } else if (arg == "--epochs") {
      o.epochs = std::stoi(value());
    } else if (arg == "--repeat") {
      o.repeat = std::stoi(value());
    } else if (arg == "--peer") {
      o.peer = true;
    } else if (arg == "--json") {
      o.json_path = value();
    } else if (arg == "--fashion") {
      o.fashion = value();
    } else if (arg == "--python") {
      o.python = value();
    } else if (arg == "--peer-script") {
      o.peer_script = value();
    } else {
      usage("unknown argument " + arg);
    }
  }
  if (o.threads.empty()) {
    o.threads = {1, 2};
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    if (cores > 2) o.threads.push_back(cores);
  }
  if (o.images < 10 || o.epochs < 1 || o.repeat < 1) usage("need at least 10 images, 1 epoch and 1 repeat");
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
  double per_s() const { return images / seconds; }
  double per_thread() const { return per_s() / threads; }
};

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
  Result best{workload, config.threads, 0, 0.0};
  for (int r = 0; r < repeat; ++r) {
    int64_t images = 0;
    const auto begin = std::chrono::steady_clock::now();
    for (int e = 0; e < epochs; ++e) {
      loader.start_epoch(epoch++, 0);
      while (loader.next(batch)) images += batch.count;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    if (best.images == 0 || seconds < best.seconds) best = {workload, config.threads, images, seconds};
  }
  return best;
}

json run_peer(const Options& o, const fs::path& folder) {
  const std::string command = o.python + " " + o.peer_script + " --dir " + folder.string() +
                              " --size 32 --epochs " + std::to_string(o.epochs) + " --repeat " + std::to_string(o.repeat);
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) throw Error("bench_loader: cannot run " + command);
  std::string out;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) throw Error("bench_loader: the peer failed (" + command + ")");
  return json::parse(out);
}

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
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
  double pil_rate = 0;
  if (o.peer) {
    peer = run_peer(o, folder);
    pil_rate = peer.at("images_per_s").get<double>();
  }
  fs::remove_all(folder);

  std::printf("| workload | threads | images | images/s | images/s per thread |%s\n", o.peer ? " per thread vs PIL |" : "");
  std::printf("|---|---:|---:|---:|---:|%s\n", o.peer ? "---:|" : "");
  json rows = json::array();
  for (const Result& r : results) {
    const bool jpeg = r.workload == "jpeg-folder 96->32";
    std::string ratio;
    if (o.peer && jpeg) {
      char text[32];
      std::snprintf(text, sizeof text, " %.2fx |", r.per_thread() / pil_rate);
      ratio = text;
    } else if (o.peer) {
      ratio = " |";
    }
    std::printf("| %s | %d | %lld | %.0f | %.0f |%s\n", r.workload.c_str(), r.threads,
                static_cast<long long>(r.images), r.per_s(), r.per_thread(), ratio.c_str());
    json row = {{"workload", r.workload}, {"threads", r.threads},       {"images", r.images},
                {"seconds", r.seconds},   {"images_per_s", r.per_s()}, {"images_per_s_per_thread", r.per_thread()}};
    if (o.peer && jpeg) row["per_thread_ratio_vs_pil"] = r.per_thread() / pil_rate;
    rows.push_back(row);
  }
  if (o.peer)
    std::printf("| PIL (%s), jpeg-folder 96->32 | 1 | %lld | %.0f | %.0f | 1.00x |\n",
                peer.value("peer", "PIL").c_str(), static_cast<long long>(peer.at("images").get<int64_t>()), pil_rate,
                pil_rate);

  json report = {{"bench", "loader"},
                 {"hardware_threads", std::thread::hardware_concurrency()},
                 {"jpeg_images", o.images},
                 {"jpeg_epochs", o.epochs},
                 {"repeat", o.repeat},
                 {"results", rows}};
  if (o.peer) report["peer"] = peer;
  std::ofstream(o.json_path) << report.dump(2) << "\n";
  std::printf("\nwrote %s\n", o.json_path.c_str());
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_loader: " << e.what() << "\n";
  return 1;
}
