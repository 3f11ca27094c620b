// Crashes that must become one clear lockstep::Error: a loader thread that
// cannot start, memory running out inside a worker, a batch count that
// overflows, and directory loops in an image folder.
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <climits>
#include <new>
#include <system_error>
#include <thread>

#include "base/error.h"
#include "data/image_folder.h"
#include "data/loader.h"
#include "support/wrapped_dataset.h"
#include "test_data_util.h"

using namespace lockstep;
using namespace lockstep::data;
using Catch::Matchers::Contains;
using data_test::TempDir;

namespace {

std::shared_ptr<InMemoryDataset> small_dataset(int64_t n) {
  std::vector<uint8_t> pixels(static_cast<size_t>(n) * 4, 7);
  std::vector<int32_t> labels(static_cast<size_t>(n), 0);
  return std::make_shared<InMemoryDataset>(Shape{1, 2, 2}, pixels, labels, std::vector<std::string>{"a", "b"}, "small");
}

LoaderConfig config(int64_t batch, int threads) {
  LoaderConfig c;
  c.batch_size = batch;
  c.threads = threads;
  c.normalize = false;
  return c;
}

// Runs out of memory: in read_pixels() (a sample), or in sample_shape() called from
// a worker thread (outside any sample, where the worker itself must survive it).
class OutOfMemoryDataset final : public lockstep::testing::WrappedDataset {
public:
  enum class Where { read, worker_start };
  OutOfMemoryDataset(std::shared_ptr<const Dataset> inner, Where where) : WrappedDataset(std::move(inner)), where_(where) {}
  Shape sample_shape() const override {
    if (where_ == Where::worker_start && std::this_thread::get_id() != owner_) throw std::bad_alloc();
    return inner_->sample_shape();
  }
  void read_pixels(int64_t i, uint8_t* out) const override {
    if (where_ == Where::read && i == 3) throw std::bad_alloc();
    inner_->read_pixels(i, out);
  }
  std::string source() const override { return "oom data set"; }

private:
  Where where_;
  std::thread::id owner_ = std::this_thread::get_id();
};

}  // namespace

TEST_CASE("loader: a worker thread that cannot be started stops and joins the others, and says why", "[data][reliability]") {
  std::atomic<int> started{0}, finished{0};
  LoaderConfig c = config(2, 4);
  // The third thread fails as under a process thread limit (EAGAIN).
  c.start_thread = [&](std::function<void()> body) {
    if (started == 2) throw std::system_error(EAGAIN, std::generic_category(), "thread creation failed");
    ++started;
    return std::thread([body = std::move(body), &finished] {
      body();
      ++finished;
    });
  };
  REQUIRE_THROWS_WITH(Loader(small_dataset(8), c),
                      Contains("cannot start worker thread 3 of 4") && Contains("thread limit"));
  REQUIRE(finished == 2);  // the two started threads were stopped and joined, no std::terminate
}

TEST_CASE("loader: memory running out in a sample is a lockstep::Error naming the data set", "[data][reliability]") {
  auto data = std::make_shared<OutOfMemoryDataset>(small_dataset(8), OutOfMemoryDataset::Where::read);
  Loader loader(data, config(2, 2));
  loader.start_epoch(0, 0);
  HostBatch batch;
  auto drain = [&] {
    while (loader.next(batch)) {
    }
  };
  // Before the fix: std::bad_alloc itself, a message of only "std::bad_alloc".
  REQUIRE_THROWS_AS(drain(), Error);
  loader.start_epoch(0, 0);
  REQUIRE_THROWS_WITH(drain(), Contains("out of memory reading sample 3 of oom data set"));
}

TEST_CASE("loader: memory running out in a worker outside a sample ends the epoch with an error, not the process", "[data][reliability]") {
  auto data = std::make_shared<OutOfMemoryDataset>(small_dataset(8), OutOfMemoryDataset::Where::worker_start);
  {
    Loader loader(data, config(2, 3));
    // The workers may die before start_epoch or during the epoch: either call throws.
    auto epoch = [&](int64_t e) {
      loader.start_epoch(e, 0);
      HostBatch batch;
      while (loader.next(batch)) {
      }
    };
    // Before the fix: std::terminate from the worker thread.
    REQUIRE_THROWS_WITH(epoch(0), Contains("worker thread ran out of memory") && Contains("oom data set"));
    REQUIRE_THROWS_WITH(epoch(1), Contains("ran out of memory"));
  }  // and the destructor joins what is left
}

TEST_CASE("loader: a batch size near 2^63 gives one batch, not an overflowed count", "[data][reliability]") {
  Loader loader(small_dataset(3), config(INT64_MAX, 1));
  REQUIRE(loader.batches_per_epoch() == 1);
  loader.start_epoch(0, 0);
  HostBatch batch;
  REQUIRE(loader.next(batch));
  REQUIRE(batch.count == 3);
  REQUIRE_FALSE(loader.next(batch));
}

TEST_CASE("image folder: directory loops through links are refused, naming the link", "[data][reliability]") {
  TempDir dir;
  auto pixels = data_test::make_image(4, 4, 3, [](int y, int x, int c) { return y + x + c; });
  data_test::write_png(dir / "images/cat/a.png", 4, 4, 3, pixels);
  data_test::write_png(dir / "images/cat/sub/b.png", 4, 4, 3, pixels);
  data_test::write_png(dir / "images/dog/c.png", 4, 4, 3, pixels);
  // A link to a folder elsewhere is followed, as torchvision does.
  data_test::write_png(dir / "elsewhere/d.png", 4, 4, 3, pixels);
  data_test::fs::create_directory_symlink(dir.path() / "elsewhere", dir.path() / "images/dog/more");
  ImageFolder fine(dir / "images", {});
  REQUIRE(fine.size() == 4);

  SECTION("a loop back to its own class folder, and a second one to the root") {
    data_test::fs::create_directory_symlink("..", dir.path() / "images/cat/sub/up");
    data_test::fs::create_directory_symlink("../..", dir.path() / "images/dog/root");
    // Before the fix: followed, images listed again under other paths (and labels).
    REQUIRE_THROWS_WITH(ImageFolder(dir / "images", {}),
                        Contains(dir / "images/cat/sub/up") && Contains("leads back to " + (dir / "images/cat")) &&
                            Contains("loop"));
    data_test::fs::remove(dir.path() / "images/cat/sub/up");
    REQUIRE_THROWS_WITH(ImageFolder(dir / "images", {}),
                        Contains(dir / "images/dog/root") && Contains("leads back to " + (dir / "images")));
  }
  SECTION("two loops in one folder") {
    data_test::fs::create_directory_symlink(".", dir.path() / "images/cat/self1");
    data_test::fs::create_directory_symlink(".", dir.path() / "images/cat/self2");
    REQUIRE_THROWS_WITH(ImageFolder(dir / "images", {}), Contains("images/cat/self") && Contains("loop"));
  }
  SECTION("a class folder that is a link to the root") {
    data_test::fs::create_directory_symlink(".", dir.path() / "images/bird");
    REQUIRE_THROWS_WITH(ImageFolder(dir / "images", {}), Contains(dir / "images/bird") && Contains("loop"));
  }
}
