#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/random_math.h"

using namespace lockstep;

TEST_CASE("random_uniform is uniform on 0 <= u < 1: mean, variance, buckets", "[random]") {
  const uint64_t key = random_key(1234, 5);
  const int64_t n = 1000000, buckets = 1000;
  std::vector<int64_t> counts(buckets, 0);
  double sum = 0, sum_sq = 0, lag_product = 0;
  float previous = random_uniform(key, 0);
  for (int64_t i = 0; i < n; ++i) {
    float u = random_uniform(key, i);
    REQUIRE((u >= 0.0f && u < 1.0f));
    sum += u;
    sum_sq += static_cast<double>(u) * u;
    if (i > 0) lag_product += static_cast<double>(u) * previous;
    previous = u;
    ++counts[static_cast<int64_t>(u * buckets)];
  }
  double mean = sum / n, variance = sum_sq / n - mean * mean;
  // Standard errors: mean sqrt(1/12/n) ~ 2.9e-4, variance sqrt(1/180/n) ~ 7.5e-5;
  // the bounds are about 5 of them.
  REQUIRE(mean == Approx(0.5).margin(1.5e-3));
  REQUIRE(variance == Approx(1.0 / 12.0).margin(4e-4));
  // Neighbouring counters are uncorrelated: E[u_i u_(i+1)] = 1/4.
  REQUIRE(lag_product / (n - 1) == Approx(0.25).margin(1.5e-3));
  // Chi-square with 999 degrees of freedom: mean 999, sd ~44.7.
  double expected = static_cast<double>(n) / buckets, chi2 = 0;
  for (int64_t c : counts) chi2 += (c - expected) * (c - expected) / expected;
  INFO("chi-square " << chi2);
  REQUIRE(chi2 < 999 + 5 * 44.7);
}

TEST_CASE("random_bits never repeats in the first million draws of a key", "[random]") {
  for (uint64_t seed : {0ull, 1ull, 0xffffffffffffffffull}) {
    const uint64_t key = random_key(seed, 0);
    std::vector<uint64_t> draws(1000000);
    for (size_t i = 0; i < draws.size(); ++i) draws[i] = random_bits(key, i);
    std::sort(draws.begin(), draws.end());
    REQUIRE(std::adjacent_find(draws.begin(), draws.end()) == draws.end());
  }
}

TEST_CASE("random draws are a pure function of key and counter, and nearby keys differ", "[random]") {
  REQUIRE(random_bits(random_key(7, 3), 11) == random_bits(random_key(7, 3), 11));
  // Neighbouring seeds and streams give unrelated sequences: compare 10k draws.
  const uint64_t base = random_key(7, 3);
  for (uint64_t other : {random_key(8, 3), random_key(7, 4), random_key(6, 3), random_key(3, 7)}) {
    REQUIRE(other != base);
    int matches = 0;
    double product = 0;
    for (uint64_t i = 0; i < 10000; ++i) {
      matches += random_bits(base, i) == random_bits(other, i);
      product += static_cast<double>(random_uniform(base, i)) * random_uniform(other, i);
    }
    REQUIRE(matches == 0);
    REQUIRE(product / 10000 == Approx(0.25).margin(0.015));
  }
}

TEST_CASE("hash_bytes tells names apart", "[random]") {
  std::vector<std::string> names = {"", "drop", "drop1", "drop2", "fc.drop", "1drop"};
  std::vector<uint64_t> hashes;
  for (const auto& s : names) hashes.push_back(hash_bytes(s.data(), s.size()));
  std::sort(hashes.begin(), hashes.end());
  REQUIRE(std::adjacent_find(hashes.begin(), hashes.end()) == hashes.end());
}
