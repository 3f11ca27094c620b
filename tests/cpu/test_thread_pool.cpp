// The CPU compute pool (kernels/cpu/thread_pool) and the loops that run on it:
// every index visited exactly once whatever the thread count, nesting and
// concurrent callers safe, errors carried back, and the parallel convolution,
// GEMM and batch-norm statistics equal to plain references at 1 to 4 threads.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

#include "kernels/cpu/batchnorm_cpu.h"
#include "kernels/cpu/conv_cpu.h"
#include "kernels/cpu/gemm_cpu.h"
#include "kernels/cpu/thread_pool.h"

using namespace lockstep;

namespace {

// Restores the pool's size when a test ends.
struct ThreadsFor {
  int saved;
  explicit ThreadsFor(int threads) : saved(cpu::compute_threads()) { cpu::set_compute_threads(threads); }
  ~ThreadsFor() { cpu::set_compute_threads(saved); }
};

std::vector<float> random_floats(size_t n, uint32_t seed, float mean = 0.0f, float spread = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal(mean, spread);
  std::vector<float> v(n);
  for (float& x : v) x = normal(gen);
  return v;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0.0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::fabs(a[i] - b[i])));
  return worst;
}

}  // namespace

TEST_CASE("parallel_for visits every index once, in at most compute_threads() parts", "[thread_pool]") {
  for (int threads : {1, 2, 3, 4}) {
    ThreadsFor pool(threads);
    for (int64_t n : {1, 2, 5, 64, 1000, 100003}) {
      for (int64_t min_per_part : {1, 7, 4096}) {
        std::vector<std::atomic<int>> seen(n);
        std::atomic<int> parts_seen{0};
        std::atomic<int> max_part{-1};
        cpu::parallel_for(n, min_per_part, [&](int64_t begin, int64_t end, int part) {
          REQUIRE(begin < end);
          parts_seen.fetch_add(1);
          int m = max_part.load();
          while (part > m && !max_part.compare_exchange_weak(m, part)) {
          }
          for (int64_t i = begin; i < end; ++i) seen[i].fetch_add(1);
        });
        const int expected_parts = cpu::parallel_parts(n, min_per_part);
        INFO("threads " << threads << ", n " << n << ", min_per_part " << min_per_part);
        CHECK(expected_parts <= threads);
        CHECK(expected_parts == std::min<int64_t>(threads, std::max<int64_t>(1, n / min_per_part)));
        CHECK(parts_seen.load() == expected_parts);
        CHECK(max_part.load() == expected_parts - 1);
        int wrong = 0;
        for (auto& s : seen) wrong += s.load() != 1;
        CHECK(wrong == 0);
      }
    }
  }
}

TEST_CASE("parallel_for inside a part and from several threads at once runs every part", "[thread_pool]") {
  ThreadsFor pool(3);
  const int64_t outer = 12, inner = 5000;
  std::vector<std::atomic<int>> seen(outer * inner);
  auto nested = [&] {
    cpu::parallel_for(outer, 1, [&](int64_t b, int64_t e, int) {
      for (int64_t o = b; o < e; ++o)
        cpu::parallel_for(inner, 1, [&](int64_t ib, int64_t ie, int) {
          for (int64_t i = ib; i < ie; ++i) seen[o * inner + i].fetch_add(1);
        });
    });
  };
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) callers.emplace_back(nested);
  for (auto& t : callers) t.join();
  int wrong = 0;
  for (auto& s : seen) wrong += s.load() != 4;
  CHECK(wrong == 0);
}

TEST_CASE("an exception in a part reaches the caller and the pool runs on", "[thread_pool]") {
  ThreadsFor pool(4);
  CHECK_THROWS_WITH(cpu::parallel_for(100, 1,
                                      [](int64_t begin, int64_t, int) {
                                        if (begin > 0) throw std::runtime_error("part failed");
                                      }),
                    "part failed");
  std::atomic<int64_t> total{0};
  cpu::parallel_for(100, 1, [&](int64_t b, int64_t e, int) { total.fetch_add(e - b); });
  CHECK(total.load() == 100);
}

TEST_CASE("the pool refuses a thread count below one", "[thread_pool]") {
  CHECK_THROWS_WITH(cpu::set_compute_threads(0), Catch::Contains("at least 1"));
}

TEST_CASE("sgemm split over the pool equals a double-precision product, every transpose", "[thread_pool][gemm]") {
  for (int threads : {1, 2, 4}) {
    ThreadsFor pool(threads);
    // Tall (split by rows) and wide (split by columns) shapes.
    for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{300, 7, 40}, {9, 500, 33}, {64, 64, 64}}) {
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          auto a = random_floats(size_t(m * k), 1), b = random_floats(size_t(k * n), 2);
          auto c = random_floats(size_t(m * n), 3), reference = c;
          const int64_t lda = ta ? m : k, ldb = tb ? k : n;
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
              double sum = 0.0;
              for (int64_t p = 0; p < k; ++p)
                sum += double(ta ? a[p * lda + i] : a[i * lda + p]) * double(tb ? b[j * ldb + p] : b[p * ldb + j]);
              reference[i * n + j] = float(0.5 * sum + 2.0 * reference[i * n + j]);
            }
          cpu::sgemm(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, 2.0f, c.data(), n);
          INFO("threads " << threads << ", " << m << "x" << n << "x" << k << ", trans " << ta << tb);
          CHECK(max_abs_diff(c, reference) < 1e-4);
        }
    }
  }
}

TEST_CASE("the convolution gives the same result on 1 to 4 threads", "[thread_pool][conv2d]") {
  // Chunks of several samples (small planes), one sample multiplied in place
  // (planes of 256 pixels and more), and both for a pointwise convolution.
  struct Case {
    int64_t batch, channels, h, w, out;
    int kernel, stride, padding;
  };
  for (Case c : {Case{7, 5, 9, 11, 6, 3, 2, 1}, Case{3, 4, 20, 20, 5, 3, 1, 1}, Case{5, 6, 17, 16, 4, 1, 1, 0},
                 Case{5, 6, 4, 4, 4, 1, 1, 0}}) {
    ConvGeometry g;
    REQUIRE(ConvGeometry::make(c.batch, c.channels, c.h, c.w, c.out, c.kernel, c.stride, c.padding, g).empty());
    auto x = random_floats(size_t(g.batch * g.in_sample()), 11), w = random_floats(size_t(g.weight_numel()), 12);
    auto bias = random_floats(size_t(g.out_channels), 13), dy = random_floats(size_t(g.batch * g.out_sample()), 14);
    auto dx_start = random_floats(x.size(), 15);
    std::vector<float> y1, dx1, dxa1, dw1;
    for (int threads : {1, 2, 3, 4}) {
      ThreadsFor pool(threads);
      std::vector<float> scratch(size_t(cpu::conv_scratch_floats(g)));
      std::vector<float> y(size_t(g.batch * g.out_sample())), dx(x.size(), 42.0f), dxa = dx_start, dw(w.size(), 42.0f);
      cpu::conv2d_forward(g, x.data(), w.data(), bias.data(), y.data(), scratch.data());
      cpu::conv2d_backward_data(g, dy.data(), w.data(), dx.data(), false, scratch.data());
      cpu::conv2d_backward_data(g, dy.data(), w.data(), dxa.data(), true, scratch.data());
      cpu::conv2d_backward_filter(g, x.data(), dy.data(), dw.data(), scratch.data());
      if (threads == 1) {
        y1 = y, dx1 = dx, dxa1 = dxa, dw1 = dw;
        // Accumulate mode adds exactly what write mode writes.
        for (size_t i = 0; i < dx.size(); ++i) REQUIRE(std::fabs(dxa[i] - (dx_start[i] + dx[i])) < 1e-5);
        continue;
      }
      INFO(threads << " threads against 1, case of kernel " << c.kernel << " on " << c.h << "x" << c.w);
      // OpenBLAS rounds the edge of a column block its own way, and the weight
      // gradient's partial sums are added in another order: float rounding only.
      CHECK(max_abs_diff(y, y1) < 1e-5);
      CHECK(max_abs_diff(dx, dx1) < 1e-5);
      CHECK(max_abs_diff(dxa, dxa1) < 1e-5);
      CHECK(max_abs_diff(dw, dw1) < 1e-4);
    }
  }
}

TEST_CASE("batch-norm statistics stay precise for a mean 1000 times the spread, on any thread count",
          "[thread_pool][batchnorm2d]") {
  const int64_t n = 6, channels = 5, spatial = 37;
  std::vector<float> x(size_t(n * channels * spatial));
  std::mt19937 gen(7);
  for (int64_t c = 0; c < channels; ++c) {
    std::normal_distribution<float> normal(1000.0f * float(c + 1), 1.0f);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < spatial; ++j) x[size_t((i * channels + c) * spatial + j)] = normal(gen);
  }
  for (int threads : {1, 2, 4}) {
    ThreadsFor pool(threads);
    std::vector<float> mean(channels), var(channels), inv_std(channels);
    cpu::batchnorm_batch_stats(x.data(), n, channels, spatial, 1e-5f, mean.data(), var.data(), inv_std.data());
    for (int64_t c = 0; c < channels; ++c) {
      long double sum = 0, squares = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < spatial; ++j) sum += x[size_t((i * channels + c) * spatial + j)];
      const long double m = sum / (n * spatial);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < spatial; ++j) {
          const long double d = x[size_t((i * channels + c) * spatial + j)] - m;
          squares += d * d;
        }
      const double v = double(squares / (n * spatial));
      INFO("threads " << threads << ", channel " << c);
      CHECK(std::fabs(mean[c] - double(m)) < 1e-3);
      CHECK(std::fabs(var[c] - v) < 1e-4 * v + 1e-6);
    }
  }
}
