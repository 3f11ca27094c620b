// ProcessSpan over MPI (built when CMake finds MPI): a communicator of its
// own (a duplicate of MPI_COMM_WORLD) per spanning NCCL communicator, so its
// collectives never match lockstep's or another communicator's.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "emu/nccl/span.h"

namespace lockstep::emu::nccl {

namespace {

// The emulator's MPI calls, one at a time: MPI_THREAD_SERIALIZED allows no more.
std::mutex mpi_mutex;

bool mpi_live() {
  // Both may be called from any thread, before MPI_Init and after MPI_Finalize.
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

// Polls `request` until it completes (true) or `aborted()` (false: the
// request is left in flight, its buffers owned by MPI from then on).
bool wait(MPI_Request& request, const Aborted& aborted) {
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    int done = 0;
    {
      std::lock_guard lock(mpi_mutex);
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    }
    if (done) return true;
    if (aborted()) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(1000));
  }
}

// FNV-1a: the same on every process, unlike a hash that may be seeded.
int64_t fingerprint(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return static_cast<int64_t>(h);
}

class MpiSpan final : public ProcessSpan {
public:
  MpiSpan(MPI_Comm comm, std::vector<std::vector<int>> ranks_of, std::vector<int> process_of)
      : comm_(comm), ranks_of_(std::move(ranks_of)), process_of_(std::move(process_of)) {}

  ~MpiSpan() override {
    std::lock_guard lock(mpi_mutex);
    if (mpi_live()) MPI_Comm_free(&comm_);  // after MPI_Finalize there is nothing left to free
  }

  int processes() const override { return static_cast<int>(ranks_of_.size()); }

  Agreement agree(const std::vector<int64_t>& record, const Aborted& aborted) override {
    const size_t n = record.size();
    auto all = std::make_unique<std::vector<int64_t>>(n * ranks_of_.size());
    auto mine = std::make_unique<std::vector<int64_t>>(record);
    MPI_Request request;
    {
      std::lock_guard lock(mpi_mutex);
      MPI_Iallgather(mine->data(), static_cast<int>(n), MPI_INT64_T, all->data(), static_cast<int>(n), MPI_INT64_T,
                     comm_, &request);
    }
    Agreement a;
    if (!wait(request, aborted)) {
      (void)all.release(), (void)mine.release();  // MPI may still write them
      return a;
    }
    a.completed = true;
    for (int p = 0; p < processes(); ++p)
      if (!std::equal(record.begin(), record.end(), all->begin() + static_cast<ptrdiff_t>(p * n))) {
        a.same = false;
        a.process = p;
        a.theirs.assign(all->begin() + static_cast<ptrdiff_t>(p * n), all->begin() + static_cast<ptrdiff_t>((p + 1) * n));
        break;
      }
    return a;
  }

  bool gather(const unsigned char* block, size_t bytes_per_rank, unsigned char* all,
              const Aborted& aborted) override {
    // One element per rank, so the counts stay small whatever the buffers' size.
    MPI_Datatype buffer;
    std::vector<int> counts, displacements;
    int offset = 0;
    for (const auto& ranks : ranks_of_) {
      counts.push_back(static_cast<int>(ranks.size()));
      displacements.push_back(offset);
      offset += counts.back();
    }
    // Received in process order, then put in rank order (a process's ranks need not be contiguous).
    auto received = std::make_unique<std::vector<unsigned char>>(bytes_per_rank * process_of_.size());
    MPI_Request request;
    {
      std::lock_guard lock(mpi_mutex);
      MPI_Type_contiguous(static_cast<int>(bytes_per_rank), MPI_BYTE, &buffer);
      MPI_Type_commit(&buffer);
      const int mine = counts[static_cast<size_t>(rank())];
      MPI_Iallgatherv(block, mine, buffer, received->data(), counts.data(), displacements.data(), buffer, comm_,
                      &request);
      MPI_Type_free(&buffer);  // in-flight operations keep what they need
    }
    if (!wait(request, aborted)) {
      (void)received.release();
      return false;
    }
    size_t slot = 0;
    for (const auto& ranks : ranks_of_)
      for (int r : ranks) std::memcpy(all + static_cast<size_t>(r) * bytes_per_rank, received->data() + slot++ * bytes_per_rank, bytes_per_rank);
    return true;
  }

  bool broadcast(unsigned char* data, size_t bytes, int root, const Aborted& aborted) override {
    auto buffer = std::make_unique<std::vector<unsigned char>>(data, data + bytes);
    MPI_Request request;
    {
      std::lock_guard lock(mpi_mutex);
      MPI_Ibcast(buffer->data(), static_cast<int>(bytes), MPI_BYTE, process_of_[static_cast<size_t>(root)], comm_,
                 &request);
    }
    if (!wait(request, aborted)) {
      (void)buffer.release();
      return false;
    }
    std::memcpy(data, buffer->data(), bytes);
    return true;
  }

private:
  int rank() const {
    int r = 0;
    MPI_Comm_rank(comm_, &r);  // local: no traffic
    return r;
  }

  MPI_Comm comm_;
  std::vector<std::vector<int>> ranks_of_;  // per process: its global ranks, ascending
  std::vector<int> process_of_;             // per global rank: its process
};

}  // namespace

int mpi_world_size() {
  std::lock_guard lock(mpi_mutex);
  if (!mpi_live()) return 1;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

std::unique_ptr<ProcessSpan> ProcessSpan::join(const std::string& key, int nranks, const std::vector<int>& local_ranks,
                                               std::string& why) {
  std::lock_guard lock(mpi_mutex);
  if (!mpi_live()) {
    why = "MPI is not initialised";
    return nullptr;
  }
  // Blocking calls: an init waits for every process, as NCCL's bootstrap does.
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  int processes = 0, me = 0;
  MPI_Comm_size(comm, &processes);
  MPI_Comm_rank(comm, &me);
  const int64_t offer[3] = {fingerprint(key), nranks, static_cast<int64_t>(local_ranks.size())};
  std::vector<int64_t> offers(3 * static_cast<size_t>(processes));
  MPI_Allgather(offer, 3, MPI_INT64_T, offers.data(), 3, MPI_INT64_T, comm);
  std::vector<int> counts(static_cast<size_t>(processes)), displacements(static_cast<size_t>(processes));
  int total = 0;
  for (int p = 0; p < processes; ++p) {
    counts[size_t(p)] = static_cast<int>(offers[3 * size_t(p) + 2]);
    displacements[size_t(p)] = total;
    total += counts[size_t(p)];
  }
  std::vector<int> ranks(static_cast<size_t>(total));
  MPI_Allgatherv(local_ranks.data(), static_cast<int>(local_ranks.size()), MPI_INT, ranks.data(), counts.data(),
                 displacements.data(), MPI_INT, comm);
  // Every process reached the same verdict from the same data: all fail alike, none hangs.
  auto refuse = [&](const std::string& text) {
    why = text;
    MPI_Comm_free(&comm);
    return nullptr;
  };
  for (int p = 0; p < processes; ++p) {
    if (offers[3 * size_t(p)] != offer[0])
      return refuse("process " + std::to_string(p) + " of the MPI world initialises another unique id than process " +
                    std::to_string(me) + " (an emulated communicator across processes spans every process)");
    if (offers[3 * size_t(p) + 1] != nranks)
      return refuse("nranks " + std::to_string(offers[3 * size_t(p) + 1]) + " on process " + std::to_string(p) +
                    ", " + std::to_string(nranks) + " on process " + std::to_string(me));
  }
  std::vector<int> process_of(static_cast<size_t>(nranks), -1);
  std::vector<std::vector<int>> ranks_of(static_cast<size_t>(processes));
  for (int p = 0; p < processes; ++p)
    for (int i = 0; i < counts[size_t(p)]; ++i) {
      const int r = ranks[size_t(displacements[size_t(p)] + i)];
      if (r < 0 || r >= nranks || process_of[size_t(r)] != -1)
        return refuse("rank " + std::to_string(r) + " offered by process " + std::to_string(p) +
                      (r >= 0 && r < nranks ? " and process " + std::to_string(process_of[size_t(r)]) : " is out of range"));
      process_of[size_t(r)] = p;
      ranks_of[size_t(p)].push_back(r);
    }
  for (int r = 0; r < nranks; ++r)
    if (process_of[size_t(r)] == -1)
      return refuse("no process holds rank " + std::to_string(r) + " of " + std::to_string(nranks) +
                    " when its init completes (the emulated NCCL needs each process's ranks initialised "
                    "together: one per process, or all of them in one ncclGroupStart/End)");
  for (auto& list : ranks_of) std::sort(list.begin(), list.end());
  return std::make_unique<MpiSpan>(comm, std::move(ranks_of), std::move(process_of));
}

}  // namespace lockstep::emu::nccl
