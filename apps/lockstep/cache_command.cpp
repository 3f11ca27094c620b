// `lockstep cache`: an image folder decoded once into a cache file
// (data/cache_format.h) that `lockstep train --data` reads, or finds
// beside the folder by itself.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "base/error.h"
#include "commands.h"
#include "data/cache_writer.h"
#include "data/loader_threads.h"
#include "output_link.h"
#include "progress.h"
#include "setup.h"
#include "training/output_files.h"

namespace lockstep::app {

int run_cache(const CacheSettings& s) {
  if (s.threads != 0) data::check_loader_threads(s.threads, "--threads");  // 0: one per core
  data::DataOptions options = sample_options(s.input, s.augment, s.skip_bad_images, s.max_image_pixels, s.seed);
  options.test_fraction = s.test_fraction;
  const std::string data = std::filesystem::absolute(s.data).lexically_normal().string();
  const std::string output = s.output.empty() ? data::default_cache_path(data)
                                              : std::filesystem::absolute(s.output).lexically_normal().string();
  // Never through a link (the cache is renamed over the path): output_link.h.
  const OutputFile out{output, "-o", "a lockstep cache file", data::is_cache_file};
  refuse_output_link(out);
  check_output_file(out, {{data, "DATA"}}, s.force);

  data::CacheWriteOptions write;
  write.output = output;
  write.threads = s.threads > 0 ? s.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::unique_ptr<CountProgress> bar;
  write.progress = [&](int64_t done, int64_t total) {
    if (!bar) bar = std::make_unique<CountProgress>("decoding", total);
    bar->update(done);
  };
  const auto start = std::chrono::steady_clock::now();
  const data::CacheWriteSummary summary = data::write_cache_file(data, options, write);
  if (bar) bar->finish();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!summary.skipped.empty()) std::fprintf(stderr, "%s\n", summary.skipped.summary().c_str());
  std::printf("cache %s: %lld images (%lld train, %lld test) of %s from %s, %.1f MiB, written in %.1f s\n",
              summary.path.c_str(), static_cast<long long>(summary.samples), static_cast<long long>(summary.train),
              static_cast<long long>(summary.test), s.input.c_str(), data.c_str(),
              static_cast<double>(summary.bytes) / 1048576.0, seconds);
  if (summary.path == data::default_cache_path(data))
    std::printf("lockstep train --data %s reads it by itself while the folder stays as it is\n", data.c_str());
  else
    std::printf("train from it with: lockstep train --data %s\n", summary.path.c_str());
  return 0;
}

}  // namespace lockstep::app
