#include "worker_thread.hpp"

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>

#include "monotonic_clock.hpp"

namespace tcptune::shim {

bool WorkerThread::start(std::function<void()> on_start, std::vector<Task> tasks) noexcept {
  on_start_ = std::move(on_start);
  tasks_ = std::move(tasks);
  sigset_t all;
  sigset_t previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  running_.store(true, std::memory_order_release);
  const bool started = pthread_create(&thread_, nullptr, &WorkerThread::run, this) == 0;
  if (!started) {
    running_.store(false, std::memory_order_release);
  }
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return started;
}

void* WorkerThread::run(void* self) {
  auto& thread = *static_cast<WorkerThread*>(self);
  pthread_setname_np(pthread_self(), "tcptune");  // before anything runs that may read it
  if (thread.on_start_) {
    thread.on_start_();
  }
  while (thread.running_.load(std::memory_order_acquire)) {
    const std::uint32_t seen = thread.wake_.load(std::memory_order_acquire);
    std::int64_t due = kDueWhenWoken;
    for (const Task& task : thread.tasks_) {
      try {
        due = std::min(due, task(monotonic_ns()));
      } catch (...) {
        // Out of memory in a task: its work waits for the next wake-up, the app is not touched.
      }
    }
    const std::int64_t now = monotonic_ns();
    const std::int64_t sleep_ns =
        due == kDueWhenWoken ? kIdleSleepNs : std::clamp(due - now, std::int64_t{1}, kIdleSleepNs);
    thread.sleep(seen, sleep_ns);
  }
  return nullptr;
}

void WorkerThread::sleep(std::uint32_t seen, std::int64_t ns) noexcept {
  timespec timeout{0, static_cast<long>(ns)};
  sleeping_.store(true, std::memory_order_seq_cst);
  syscall(SYS_futex, &wake_, FUTEX_WAIT_PRIVATE, seen, &timeout, nullptr, 0);
  sleeping_.store(false, std::memory_order_relaxed);
}

void WorkerThread::wake_if_sleeping() noexcept {
  if (sleeping_.load(std::memory_order_relaxed) && sleeping_.exchange(false, std::memory_order_acq_rel)) {
    const int saved = errno;
    wake_.fetch_add(1, std::memory_order_release);
    syscall(SYS_futex, &wake_, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
    errno = saved;
  }
}

void WorkerThread::stop() noexcept {
  if (!running_.exchange(false, std::memory_order_acq_rel)) {
    return;
  }
  wake_.fetch_add(1, std::memory_order_release);
  syscall(SYS_futex, &wake_, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
  pthread_join(thread_, nullptr);
}

void WorkerThread::forget_in_child() noexcept {
  running_.store(false, std::memory_order_relaxed);
  sleeping_.store(false, std::memory_order_relaxed);
  // The parent's tasks may hold state the child must not run; they are replaced at the next start.
}

}  // namespace tcptune::shim
