// scaling across processes: `mpirun -np P lockstep-bench scaling` measures
// training steps with the replicas of P processes as one group (the
// hierarchical all-reduce over MPI) and compares with one process holding
// one process's share of replicas (weak scaling, same per-replica batch) and
// with one process on the same global batch (strong scaling). The one-process
// baselines run first, in a child of the first process outside the MPI world,
// while the other processes wait, so nothing else competes for the cores.
#include <cstdio>
#include <filesystem>

#include "base/error.h"
#include "child.h"
#include "suites.h"

namespace lockstep::bench {

SuiteResult run_process_scaling(const Options& given, ProcessGroup& world) {
  Options o = given;
  o.eager = true;  // the phases this suite reports need the eager step's clocks
  const std::vector<Device> devices = resolve_devices(o.devices);
  LS_CHECK(!any_gpu(devices), "scaling across processes runs on the CPU only so far: give --devices cpu");
  scaling_defaults(o, false);
  const int P = world.size();
  const int n = o.replicas_max > 0 ? o.replicas_max : 1;  // replicas per process
  const std::vector<Device> local(n, Device::cpu());
  const int64_t weak_base_global = o.batch * n, global = o.batch * n * P;

  // The child must not take the launcher's environment for a world of its own.
  const std::vector<std::pair<std::string, std::string>> alone{{"OMPI_COMM_WORLD_SIZE", "1"}, {"PMI_SIZE", "1"},
                                                                {"SLURM_STEP_NUM_TASKS", "1"}};
  auto baseline = [&](int64_t batch) {
    std::vector<std::string> argv{std::filesystem::read_symlink("/proc/self/exe").string(), "_steps"};
    for (const std::string& f : step_flags(o, local, batch)) argv.push_back(f);
    return run_json_command(argv, alone);
  };
  json weak_base, strong_base;
  if (world.rank() == 0) {
    std::fprintf(stderr, "scaling: 1 process x %d replica(s), global batch %lld and %lld ...\n", n,
                 static_cast<long long>(weak_base_global), static_cast<long long>(global));
    weak_base = baseline(weak_base_global);
    strong_base = baseline(global);
  }
  world.any(false);  // everyone waits for the baselines
  if (world.rank() == 0)
    std::fprintf(stderr, "scaling: %d processes x %d replica(s), global batch %lld ...\n", P, n,
                 static_cast<long long>(global));
  Options multi_options = o;
  multi_options.replica_devices = device_list(local);
  multi_options.batch = global;
  json multi;
  try {
    multi = measure_steps(multi_options, std::shared_ptr<ProcessGroup>(&world, [](ProcessGroup*) {}));
  } catch (const std::exception& e) {
    multi = json{{"error", e.what()}};
  }

  SuiteResult result;
  result.title = fmt("scaling across processes: %s on synthetic %s images, %d process(es) x %d replica(s) on %d "
                     "host(s) over %s, %d timed steps after %d warm-up (median)",
                     o.model.c_str(), o.input.c_str(), P, n, world.hosts(), world.transport().c_str(), o.steps,
                     o.warmup);
  result.settings = {{"model", o.model}, {"input", o.input},       {"classes", o.classes},
                     {"processes", P},   {"hosts", world.hosts()}, {"replicas_per_process", n},
                     {"batch_per_replica", o.batch}, {"steps", o.steps}, {"warmup", o.warmup},
                     {"transport", world.transport()}, {"threads", cpu_threads(o)}};
  result.table = Table({"scaling", "processes", "replicas", "global batch", "step ms", "images/s", "vs 1 process",
                        "efficiency", "fwd ms", "bwd ms", "exposed comm ms", "update ms"});
  auto add = [&](const char* kind, int processes, const json& r, const json& base) {
    json row{{"scaling", kind}, {"processes", processes}, {"replicas", processes * n}};
    if (failed(r) || failed(base)) {
      row["error"] = failed(r) ? r["error"] : base["error"];
      result.rows.push_back(row);
      result.table.add({kind, std::to_string(processes), std::to_string(processes * n), "", "", "", "", "", "", "",
                        "", "failed: " + row["error"].get<std::string>().substr(0, 120)});
      return;
    }
    const double ips = r["images_per_second"].get<double>(), vs1 = ips / base["images_per_second"].get<double>();
    const json& ph = r["phase_seconds_mean"];
    row["images_per_second"] = ips;
    row["vs_one_process"] = vs1;
    row["efficiency"] = vs1 / processes;
    row["measurement"] = r;
    result.rows.push_back(row);
    result.table.add({kind, std::to_string(processes), std::to_string(processes * n),
                      std::to_string(r["global_batch"].get<int64_t>()), ms_text(r["step_seconds_median"].get<double>()),
                      fmt("%.1f", ips), fmt("%.2fx", vs1), fmt("%.0f%%", 100.0 * vs1 / processes),
                      ms_text(ph["forward"].get<double>()), ms_text(ph["backward"].get<double>()),
                      ms_text(ph["communication"].get<double>()), ms_text(ph["update"].get<double>())});
  };
  if (world.rank() == 0) {
    add("weak", 1, weak_base, weak_base);
    add("weak", P, multi, weak_base);
    add("strong", 1, strong_base, strong_base);
    add("strong", P, multi, strong_base);
  }
  result.notes.push_back("images/s = global batch / median step time of the first process; efficiency = images/s(P) "
                         "/ (P x images/s(1 process))");
  result.notes.push_back("exposed comm = time after forward and backward spent waiting for the all-reduces "
                         "(local sum, MPI_Iallreduce per bucket, local copy) and the BN statistics, first replica "
                         "of the first process");
  if (world.hosts() == 1)
    result.notes.push_back(fmt("all %d processes share one host's cores: each runs OpenBLAS with its share of the "
                               "threads, so the figure is the cost of the multi-process path, not a speed-up", P));
  note_unused(o, {"--batches", "--epochs"}, result);
  return result;
}

}  // namespace lockstep::bench
