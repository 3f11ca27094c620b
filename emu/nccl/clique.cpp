#include "emu/nccl/clique.h"

#include <cstdio>
#include <cstring>

namespace lockstep::emu::nccl {

namespace {

const char* op_name(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return "sum";
    case ncclProd: return "prod";
    case ncclMax: return "max";
    case ncclMin: return "min";
    case ncclAvg: return "avg";
    default: return "op?";
  }
}

bool same(const Call& a, const Call& b) {
  if (a.kind != b.kind || a.count != b.count || a.type != b.type) return false;
  return a.kind == Kind::all_reduce ? a.op == b.op : a.root == b.root;
}

// bf16 as the top half of a float (round to nearest even on the way back).
float from_bf16(uint16_t v) {
  uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x40);  // NaN stays NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

// Reduces the ranks' buffers `sources` (in rank order) into `out`.
template <typename T, typename Acc = T>
void reduce(const std::vector<const void*>& sources, ncclRedOp_t op, size_t count, unsigned char* out,
            Acc (*load)(T) = nullptr, T (*store)(Acc) = nullptr) {
  auto get = [&](int r, size_t i) {
    T v = static_cast<const T*>(sources[size_t(r)])[i];
    return load ? load(v) : static_cast<Acc>(v);
  };
  const int n = int(sources.size());
  T* result = reinterpret_cast<T*>(out);
  for (size_t i = 0; i < count; ++i) {
    Acc acc = get(0, i);  // rank order: every replica gets the same bits
    for (int r = 1; r < n; ++r) {
      Acc v = get(r, i);
      switch (op) {
        case ncclProd: acc = acc * v; break;
        case ncclMax: acc = v > acc ? v : acc; break;
        case ncclMin: acc = v < acc ? v : acc; break;
        default: acc = acc + v; break;  // sum, avg
      }
    }
    if (op == ncclAvg) acc = acc / static_cast<Acc>(n);
    result[i] = store ? store(acc) : static_cast<T>(acc);
  }
}

}  // namespace

size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;  // half and fp8 are not emulated
  }
}

std::string describe(const Call& c) {
  std::string s = c.kind == Kind::all_reduce ? "ncclAllReduce" : "ncclBroadcast";
  s += "(count " + std::to_string(c.count) + ", type " + std::to_string(int(c.type));
  s += c.kind == Kind::all_reduce ? std::string(", ") + op_name(c.op) : ", root " + std::to_string(c.root);
  return s + ")";
}

Clique::Clique(uint64_t id, int nranks)
    : id_(id), nranks_(nranks), local_ranks_count_(nranks), next_seq_(size_t(nranks), 0) {}

bool Clique::aborted() const {
  std::lock_guard lock(m_);
  return aborted_;
}

bool Clique::saw_mismatch() const {
  std::lock_guard lock(m_);
  return mismatch_;
}

namespace {

void reduce_any(const Call& c, const std::vector<const void*>& sources, unsigned char* out) {
  switch (c.type) {
    case ncclInt8: reduce<int8_t, int>(sources, c.op, c.count, out); break;
    case ncclUint8: reduce<uint8_t, unsigned>(sources, c.op, c.count, out); break;
    case ncclInt32: reduce<int32_t>(sources, c.op, c.count, out); break;
    case ncclUint32: reduce<uint32_t>(sources, c.op, c.count, out); break;
    case ncclInt64: reduce<int64_t>(sources, c.op, c.count, out); break;
    case ncclUint64: reduce<uint64_t>(sources, c.op, c.count, out); break;
    case ncclFloat32: reduce<float>(sources, c.op, c.count, out); break;
    case ncclFloat64: reduce<double>(sources, c.op, c.count, out); break;
    case ncclBfloat16: reduce<uint16_t, float>(sources, c.op, c.count, out, from_bf16, to_bf16); break;
    default: break;  // refused when the call was made
  }
}

std::vector<int64_t> record_of(const Call& c) {
  return {int64_t(c.kind), int64_t(c.count), int64_t(c.type), int64_t(c.op), int64_t(c.root)};
}

Call call_of(const std::vector<int64_t>& r) {
  Call c;
  c.kind = Kind(r[0]), c.count = size_t(r[1]), c.type = ncclDataType_t(r[2]), c.op = ncclRedOp_t(r[3]);
  c.root = int(r[4]);
  return c;
}

}  // namespace

void Clique::span(std::unique_ptr<ProcessSpan> processes, std::vector<int> local_ranks) {
  std::lock_guard lock(m_);
  processes_ = std::move(processes);
  local_ranks_ = std::move(local_ranks);
  local_ranks_count_ = int(local_ranks_.size());
}

bool Clique::spans_processes() const {
  std::lock_guard lock(m_);
  return processes_ != nullptr;
}

void Clique::compute(Slot& s) {
  const Call& c = *s.calls[0];
  s.result.resize(c.count * type_size(c.type));
  unsigned char* out = s.result.data();
  if (c.kind == Kind::broadcast) {
    std::memcpy(out, s.calls[size_t(c.root)]->send, s.result.size());
    return;
  }
  std::vector<const void*> sources;
  for (const auto& call : s.calls) sources.push_back(call->send);
  reduce_any(c, sources, out);
}

bool Clique::compute_across(Slot& s, const Call& call, std::vector<unsigned char> block) {
  // The ranks of one process agreed already; now the processes must.
  auto aborted = [this] { return this->aborted(); };
  const ProcessSpan::Agreement agreement = processes_->agree(record_of(call), aborted);
  if (!agreement.completed) return false;
  if (!agreement.same) {
    std::fprintf(stderr,
                 "lockstep emulated NCCL: a collective of communicator %llu differs between processes: this process "
                 "calls %s, process %d calls %s; they stay blocked (as on GPUs) until ncclCommAbort\n",
                 static_cast<unsigned long long>(id_), describe(call).c_str(), agreement.process,
                 describe(call_of(agreement.theirs)).c_str());
    return false;
  }
  const size_t bytes = call.count * type_size(call.type);
  s.result.resize(bytes);
  if (call.kind == Kind::broadcast) {
    // `block` holds the root's buffer where the root is local, nothing elsewhere.
    if (!block.empty()) std::memcpy(s.result.data(), block.data(), bytes);
    return processes_->broadcast(s.result.data(), bytes, call.root, aborted);
  }
  // MPI owns these from the start of the gather: left allocated if it is abandoned.
  auto sent = std::make_unique<std::vector<unsigned char>>(std::move(block));
  auto all = std::make_unique<std::vector<unsigned char>>(bytes * size_t(nranks_));
  if (!processes_->gather(sent->data(), bytes, all->data(), aborted)) {
    (void)sent.release();
    return false;
  }
  std::vector<const void*> sources;
  for (int r = 0; r < nranks_; ++r) sources.push_back(all->data() + size_t(r) * bytes);
  reduce_any(call, sources, s.result.data());  // global rank order, the same bits in every process
  return true;
}

bool Clique::run(int rank, const Call& call) {
  std::unique_lock lock(m_);
  if (aborted_) return false;
  const uint64_t seq = next_seq_[size_t(rank)]++;
  Slot& s = slots_[seq];
  if (s.calls.empty()) s.calls.resize(size_t(nranks_));
  s.calls[size_t(rank)] = call;
  ++s.arrived;
  if (!s.mismatch)
    for (int r = 0; r < nranks_; ++r)
      if (r != rank && s.calls[size_t(r)] && !same(*s.calls[size_t(r)], call)) {
        s.mismatch = mismatch_ = true;
        std::fprintf(stderr,
                     "lockstep emulated NCCL: collective #%llu of communicator %llu differs between ranks: rank %d "
                     "calls %s, rank %d calls %s; both stay blocked (as on GPUs) until ncclCommAbort\n",
                     static_cast<unsigned long long>(seq), static_cast<unsigned long long>(id_), r,
                     describe(*s.calls[size_t(r)]).c_str(), rank, describe(call).c_str());
        break;
      }
  cv_.notify_all();
  if (s.arrived == local_ranks_count_ && !s.mismatch) {
    // The last to arrive reduces, reading every rank's send buffer while all
    // of them wait here.
    s.computing = true;
    ++moving_;
    lock.unlock();
    if (!processes_) {
      compute(s);
      lock.lock();
      --moving_;
      s.computed = true;
    } else {
      // Only the copy of the local send buffers counts as moving data: the
      // MPI part may outlive an abort (span.h), the user's buffers not.
      std::vector<unsigned char> block;
      const size_t bytes = call.count * type_size(call.type);
      for (int r : local_ranks_) {
        const Call& mine = *s.calls[size_t(r)];
        if (call.kind == Kind::broadcast && r != call.root) continue;
        const auto* from = static_cast<const unsigned char*>(mine.send);
        block.insert(block.end(), from, from + bytes);
      }
      lock.lock();
      --moving_;
      lock.unlock();
      const bool done = compute_across(s, call, std::move(block));
      lock.lock();
      if (done) s.computed = true;
      else if (!aborted_) s.mismatch = mismatch_ = true;
    }
    cv_.notify_all();
  }
  cv_.wait(lock, [&] { return aborted_ || s.computed; });
  // Aborted, even after the reduction: the caller may be freeing buffers now.
  if (aborted_) return false;
  ++moving_;
  lock.unlock();
  std::memcpy(call.recv, s.result.data(), s.result.size());
  lock.lock();
  --moving_;
  cv_.notify_all();
  if (++s.left == local_ranks_count_) slots_.erase(seq);
  return true;
}

void Clique::abort(int by_rank) {
  std::unique_lock lock(m_);
  if (!aborted_) {
    int blocked = 0;
    for (auto& [seq, s] : slots_) blocked += s.arrived - s.left;
    if (blocked > 0)
      std::fprintf(stderr,
                   "lockstep emulated NCCL: ncclCommAbort on rank %d of communicator %llu releases %d blocked "
                   "collective(s); they end without writing their buffers\n",
                   by_rank, static_cast<unsigned long long>(id_), blocked);
  }
  aborted_ = true;
  cv_.notify_all();
  cv_.wait(lock, [&] { return moving_ == 0; });
}

}  // namespace lockstep::emu::nccl
