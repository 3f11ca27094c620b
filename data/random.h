#pragma once
// Seeded randomness for the data pipeline. Everything random in data/ (split,
// epoch order, crops and flips) is drawn from these, never from <random>'s
// distributions, whose output differs between standard libraries: the same
// seed must give the same order and the same crops on every machine.
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace lockstep::data {

// SplitMix64's finaliser: a bijection on 64 bits that scatters every input bit.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A seed for one purpose (`stream`) derived from a user seed and up to two
// counters (epoch, sample). Different streams never share a sequence.
inline uint64_t derive_seed(uint64_t seed, uint64_t stream, uint64_t a = 0, uint64_t b = 0) {
  return mix64(mix64(mix64(mix64(seed) ^ stream) ^ a) ^ b);
}

// Streams of derive_seed, one per use.
enum : uint64_t { kSplitStream = 0x5350, kOrderStream = 0x4F52, kAugmentStream = 0x4147, kMixStream = 0x4D58 };

// SplitMix64 generator.
class Rng {
public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    state_ += 0x9E3779B97F4A7C15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) without modulo bias (Lemire's multiply-and-reject); n > 0.
  uint64_t below(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

private:
  uint64_t state_;
};

// Fisher-Yates shuffle driven by `rng`.
template <typename T> void shuffle(std::vector<T>& items, Rng& rng) {
  for (size_t i = items.size(); i > 1; --i) {
    size_t j = static_cast<size_t>(rng.below(i));
    std::swap(items[i - 1], items[j]);
  }
}

}  // namespace lockstep::data
