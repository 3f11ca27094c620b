// lockstep-bench SUITE [options]: the benchmark suite (see bench/README.md).
// Every suite prints a Markdown table, writes JSON stamped with the machine,
// the versions and the settings, and draws a PNG with gnuplot.
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>

#include "child.h"
#include "base/error.h"
#include "common.h"
#include "distributed/world.h"
#include "suites.h"

using namespace lockstep::bench;

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  // No suite named (only options, as scripts/gpu-check calls it) or "all": every suite in turn.
  const bool all = argv[1][0] == '-' || !std::strcmp(argv[1], "all");
  const std::string suite = all ? "all" : argv[1];
  const std::map<std::string, std::function<SuiteResult(const Options&)>> suites{
      {"scaling", run_scaling}, {"projection", run_projection}, {"batch-sweep", run_batch_sweep},
      {"envs", run_envs},       {"allreduce", run_allreduce},   {"kernels", run_kernels},
      {"peers", run_peers},     {"roofline", run_roofline},     {"profile", run_profile}};
  if (all) {
    int failures = 0;
    try {
      Options o = parse_options(argc, argv, argv[1][0] == '-' ? 1 : 2);
      if (!o.json_path.empty() || !o.png_path.empty()) {
        std::fprintf(stderr, "lockstep-bench all: --json and --png name one suite's files; every suite writes "
                             "bench-out/bench-SUITE.json and .png here\n");
        return 2;
      }
      for (const char* name : {"scaling", "projection", "batch-sweep", "envs", "allreduce", "kernels", "peers",
                               "roofline", "profile"}) {
        o.suite = name;
        try {
          report(o, suites.at(name)(o));
        } catch (const std::exception& e) {
          std::fprintf(stderr, "lockstep-bench %s: %s\n", name, e.what());
          ++failures;
        }
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "lockstep-bench: %s\n", e.what());
      return 1;
    }
    return failures == 0 ? 0 : 1;
  }
  try {
    Options o = parse_options(argc, argv, 2);
    o.suite = suite;
    if (suite == "_steps" || suite == "_train") return child_main(suite, o);
    auto it = suites.find(suite);
    if (it == suites.end()) {
      std::fprintf(stderr, "lockstep-bench: unknown suite '%s' (scaling, projection, batch-sweep, envs, allreduce, "
                           "kernels, peers, roofline, profile)\n",
                   suite.c_str());
      return 2;
    }
    // Under mpirun every process measures; the first alone prints and writes.
    std::shared_ptr<lockstep::ProcessGroup> world = lockstep::join_world();
    LS_CHECK(!world || suite == "scaling", "lockstep-bench ", suite, " runs in one process; under mpirun only "
             "scaling does");
    SuiteResult result = it->second(o);
    if (!world || world->rank() == 0) report(o, result);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lockstep-bench %s: %s\n", suite.c_str(), e.what());
    return 1;
  }
}
