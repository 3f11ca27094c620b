#pragma once
// Counter-based random numbers: a draw is a pure function of (key, counter),
// so any thread, replica or backward pass can recompute any draw without
// carrying generator state. A key names one stream of draws; counter c of a
// key is the bijective 64-bit mix of key + c * odd constant, so one key never
// repeats a 64-bit value within 2^64 counters.
#include <cstddef>
#include <cstdint>

#include "kernels/host_device.h"

namespace lockstep {

// A bijection of 64-bit words with full avalanche (the splitmix64 finaliser:
// two xor-shift-multiply rounds with odd multipliers).
LS_HD uint64_t mix64(uint64_t z) {
  z ^= z >> 30;
  z *= 0xbf58476d1ce4e5b9ull;
  z ^= z >> 27;
  z *= 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z;
}

// The key of stream `stream` under `seed`; nest calls to add coordinates
// (random_key(random_key(seed, a), b)).
LS_HD uint64_t random_key(uint64_t seed, uint64_t stream) {
  // Mixing the stream before combining keeps nearby (seed, stream) pairs apart.
  return mix64(seed ^ mix64(stream + 0x632be59bd9b4e019ull));
}

LS_HD uint64_t random_bits(uint64_t key, uint64_t counter) {
  // The Weyl step (odd increment) makes counter -> state injective, and mix64
  // is a bijection, so distinct counters give distinct outputs.
  return mix64(key + (counter + 1) * 0x9e3779b97f4a7c15ull);
}

// Uniform in [0, 1) on a grid of 2^-24: every float that can come out is exact,
// and 1.0f cannot (rounding 53 bits into a float could round up to 1).
LS_HD float random_uniform(uint64_t key, uint64_t counter) {
  return static_cast<float>(random_bits(key, counter) >> 40) * (1.0f / 16777216.0f);
}

// FNV-1a over bytes: turns a name into a stream number.
LS_HD uint64_t hash_bytes(const char* bytes, size_t count) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < count; ++i) {
    h ^= static_cast<unsigned char>(bytes[i]);
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace lockstep
