#include "distributed/mpi/mpi_process_group.h"

#include <mpi.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "base/error.h"

namespace lockstep {

namespace {

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, length);
}

// Whether a process on this host is gone: no such process, or a zombie
// (killed, not yet reaped by its launcher). "stopped" when it is suspended.
std::string local_process_state(long long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!stat || !std::getline(stat, line)) return "gone";
  size_t close = line.rfind(')');  // the command name may hold spaces; the state follows it
  char state = close != std::string::npos && close + 2 < line.size() ? line[close + 2] : '?';
  if (state == 'Z' || state == 'X') return "gone";
  if (state == 'T' || state == 't') return "stopped";
  return "";
}

class MpiProcessGroup final : public ProcessGroup {
public:
  MpiProcessGroup() {
    int provided = 0;
    int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    LS_CHECK(code == MPI_SUCCESS, "MPI_Init_thread failed: ", mpi_error_string(code));
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      LS_FAIL("the MPI library gives thread level ", provided, ", lockstep needs MPI_THREAD_SERIALIZED (",
              MPI_THREAD_SERIALIZED, ")");
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    // Failures come back as codes, so that a lost peer becomes an Error naming it, not an abort.
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(name, &length);
    std::vector<char> names(static_cast<size_t>(size_) * MPI_MAX_PROCESSOR_NAME);
    check(MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, comm_),
          "MPI_Allgather of host names");
    long long pid = static_cast<long long>(getpid());
    pids_.resize(size_);
    check(MPI_Allgather(&pid, 1, MPI_LONG_LONG, pids_.data(), 1, MPI_LONG_LONG, comm_), "MPI_Allgather of pids");
    for (int r = 0; r < size_; ++r) hosts_.emplace_back(names.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME);
  }

  ~MpiProcessGroup() override {
    MPI_Comm_free(&comm_);
    MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int hosts() const override { return static_cast<int>(std::set<std::string>(hosts_.begin(), hosts_.end()).size()); }
  int processes_on_host() const override {
    int n = 0;
    for (const std::string& h : hosts_) n += h == hosts_[rank_] ? 1 : 0;
    return n;
  }
  std::string host() const override { return hosts_[rank_]; }
  std::string transport() const override { return "MPI (" + mpi_library_version() + ")"; }

  int64_t start_sum(float* data, int64_t count) override { return start(data, count, MPI_FLOAT, MPI_SUM, "sum"); }
  int64_t start_sum(double* data, int64_t count) override { return start(data, count, MPI_DOUBLE, MPI_SUM, "sum"); }
  int64_t start_max(int64_t* data, int64_t count) override {
    static_assert(sizeof(int64_t) == sizeof(long long));
    return start(data, count, MPI_LONG_LONG, MPI_MAX, "max");
  }
  int64_t start_broadcast(void* data, int64_t bytes, int root) override {
    LS_CHECK(bytes <= INT_MAX, "broadcast of ", bytes, " bytes: more than one MPI call carries");
    LS_CHECK(root >= 0 && root < size_, "broadcast from rank ", root, " of ", size_);
    std::lock_guard<std::mutex> lock(mutex_);
    MPI_Request request;
    check(MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm_, &request), "MPI_Ibcast");
    return add(request, "broadcast");
  }

  void progress() override {
    std::lock_guard<std::mutex> lock(mutex_);
    test_open();
  }

  void finish(int64_t ticket, const std::atomic<bool>* cancel) override {
    const auto start = std::chrono::steady_clock::now();
    auto pause = std::chrono::microseconds(20);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        test_open();
        while (!open_.empty() && open_.front().done) open_.pop_front();
        if (open_.empty() || open_.front().ticket > ticket) return;
      }
      if (cancel && cancel->load()) LS_CANCEL("process ", rank_, " stopped waiting for a collective: a local replica failed");
      auto waited = std::chrono::steady_clock::now() - start;
      if (waited > timeout()) {
        std::lock_guard<std::mutex> lock(mutex_);
        LS_FAIL("process ", rank_, " on ", hosts_[rank_], ": the ", open_.front().what, " across ", size_,
                " processes did not complete within ", timeout().count(), " ms: ", who_is_missing());
      }
      // Sleep rather than spin: the replicas' threads need the cores.
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }

  [[noreturn]] void abort_all(int code) override {
    MPI_Abort(comm_, code);
    std::_Exit(code);
  }

private:
  struct Open {
    int64_t ticket;
    MPI_Request request;
    bool done;
    const char* what;
  };

  int64_t start(void* data, int64_t count, MPI_Datatype type, MPI_Op op, const char* what) {
    LS_CHECK(count >= 0 && count <= INT_MAX, "a ", what, " of ", count, " values: more than one MPI call carries");
    std::lock_guard<std::mutex> lock(mutex_);
    MPI_Request request;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), type, op, comm_, &request), "MPI_Iallreduce");
    int64_t ticket = add(request, what);
    test_open();  // also moves the sums started before this one along
    return ticket;
  }

  int64_t add(MPI_Request request, const char* what) {
    open_.push_back({next_ticket_, request, false, what});
    return next_ticket_++;
  }

  // Tests every open request once; the caller holds mutex_.
  void test_open() {
    for (Open& o : open_) {
      if (o.done) continue;
      int flag = 0;
      MPI_Status status;
      int code = MPI_Test(&o.request, &flag, &status);
      if (code != MPI_SUCCESS)
        LS_FAIL("process ", rank_, " on ", hosts_[rank_], ": the ", o.what, " across ", size_, " processes failed: ",
                mpi_error_string(code), "; ", who_is_missing());
      o.done = flag != 0;
    }
  }

  void check(int code, const char* call) {
    if (code != MPI_SUCCESS)
      LS_FAIL("process ", rank_, ": ", call, " failed: ", mpi_error_string(code), "; ", who_is_missing());
  }

  // Names the processes that are gone, as far as this process can see: those
  // on its own host by their pid; those on other hosts only as suspects.
  std::string who_is_missing() const {
    std::string gone, elsewhere;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      if (hosts_[r] == hosts_[rank_]) {
        std::string state = local_process_state(pids_[r]);
        if (!state.empty())
          gone += (gone.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + " (pid " +
                  std::to_string(pids_[r]) + " on " + hosts_[r] + ") is " + state;
      } else {
        elsewhere += (elsewhere.empty() ? "" : ", ") + std::to_string(r) + " on " + hosts_[r];
      }
    }
    if (!gone.empty()) return "lost " + gone;
    if (!elsewhere.empty())
      return "every other rank on " + hosts_[rank_] + " is running; one of rank(s) " + elsewhere +
             " is gone or stuck";
    return "every rank is still running: one is stuck or slower than the timeout";
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::vector<std::string> hosts_;
  std::vector<long long> pids_;
  std::mutex mutex_;
  std::deque<Open> open_;
  int64_t next_ticket_ = 0;
};

std::mutex world_mutex;
std::weak_ptr<ProcessGroup> world;
bool finalized = false;

}  // namespace

std::shared_ptr<ProcessGroup> join_mpi_world() {
  std::lock_guard<std::mutex> lock(world_mutex);
  if (auto existing = world.lock()) return existing;
  LS_CHECK(!finalized, "MPI was finalised already: a process joins the MPI world once");
  finalized = true;  // from here on MPI_Init may not run again, whether or not it succeeds
  auto group = std::make_shared<MpiProcessGroup>();
  world = group;
  return group;
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string s(text, length);
  size_t cut = s.find_first_of(",\n");
  return cut == std::string::npos ? s : s.substr(0, cut);
}

}  // namespace lockstep
