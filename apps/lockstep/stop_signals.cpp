#include "stop_signals.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>

namespace lockstep::app {

namespace {

std::atomic<Trainer*> active_trainer{nullptr};
std::atomic<int> signal_count{0};  // lock-free, so safe in a signal handler

void say(const char* text) { (void)!::write(STDERR_FILENO, text, std::strlen(text)); }  // async-signal-safe

void on_signal(int signal) {
  // The first signal asks for a clean stop: finish the step, write the
  // checkpoint. A second one stops at once: it takes the default action
  // (blocked while this handler runs, it is delivered as it returns). A
  // checkpoint is replaced only by a rename, so the last one written stays
  // whole; a temporary file left mid-write is removed by the next run.
  if (signal_count.fetch_add(1) > 0) {
    say("\nlockstep: stopped at once; the last checkpoint written is intact\n");
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  say("\nlockstep: stopping after this step and writing the checkpoint (again to stop at once)\n");
  if (Trainer* t = active_trainer.load()) t->request_stop();
}

// Installs on_signal for SIGINT and SIGTERM while it lives.
class SignalGuard {
public:
  explicit SignalGuard(Trainer& trainer) {
    signal_count.store(0);
    active_trainer.store(&trainer);
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int_);
    sigaction(SIGTERM, &action, &old_term_);
  }
  ~SignalGuard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    active_trainer.store(nullptr);
  }
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

private:
  struct sigaction old_int_ {}, old_term_ {};
};

}  // namespace

bool run_with_signals(Trainer& trainer) {
  SignalGuard signals(trainer);
  return trainer.run();
}

}  // namespace lockstep::app
