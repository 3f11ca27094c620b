#pragma once
// One long-lived thread that runs submitted jobs in order. A replica owns one,
// so its device context (streams, cuDNN/cuBLAS handles) is made and used on a
// single thread for its whole life.
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace lockstep {

class WorkerThread {
public:
  WorkerThread();
  ~WorkerThread();  // finishes queued jobs, then joins
  WorkerThread(const WorkerThread&) = delete;
  WorkerThread& operator=(const WorkerThread&) = delete;

  // Queues a job; the future carries its exception, if any.
  std::future<void> submit(std::function<void()> job);

private:
  void loop();
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::packaged_task<void()>> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace lockstep
