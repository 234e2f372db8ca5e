#include "shim_log.hpp"

#include <spdlog/logger.h>
#include <spdlog/sinks/basic_file_sink.h>

#include <atomic>
#include <memory>
#include <mutex>

namespace tcptune::shim {

namespace {

// Never destroyed: hooks may log from other libraries' exit handlers after our statics
// would have been torn down.
spdlog::logger* g_logger = nullptr;
std::atomic<int> g_level{static_cast<int>(config::LogLevel::off)};
std::mutex& log_mutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}
// Set while this thread is inside the logger, so that a signal handler that closes a
// socket mid-message skips logging instead of deadlocking.
thread_local bool t_in_logger = false;

spdlog::level::level_enum to_spdlog(config::LogLevel level) {
  switch (level) {
    case config::LogLevel::trace: return spdlog::level::trace;
    case config::LogLevel::debug: return spdlog::level::debug;
    case config::LogLevel::info: return spdlog::level::info;
    case config::LogLevel::warn: return spdlog::level::warn;
    case config::LogLevel::error: return spdlog::level::err;
    case config::LogLevel::off: return spdlog::level::off;
  }
  return spdlog::level::off;
}

}  // namespace

std::string open_log(const std::string& path, config::LogLevel level) {
  if (path.empty() || level == config::LogLevel::off) {
    return {};
  }
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_st>(path, false);
    auto* logger = new spdlog::logger("tcptune", std::move(sink));
    logger->set_pattern("%Y-%m-%dT%H:%M:%S.%f%z %l tcptune[%P] %v");
    logger->set_level(to_spdlog(level));
    logger->flush_on(spdlog::level::trace);  // every line complete on disk, even after kill -9
    const std::lock_guard lock(log_mutex());
    g_logger = logger;
    g_level.store(static_cast<int>(level), std::memory_order_release);
    return {};
  } catch (const std::exception& error) {
    return std::string("cannot open log file ") + path + ": " + error.what();
  }
}

bool log_enabled(config::LogLevel level) noexcept {
  return static_cast<int>(level) >= g_level.load(std::memory_order_acquire) && level != config::LogLevel::off;
}

void log_message(config::LogLevel level, std::string_view message) noexcept {
  if (!log_enabled(level) || t_in_logger) {
    return;
  }
  t_in_logger = true;
  try {
    const std::lock_guard lock(log_mutex());
    if (g_logger != nullptr) {
      g_logger->log(to_spdlog(level), "{}", message);
    }
  } catch (...) {
    // A full disk or a bad descriptor must never reach the app.
  }
  t_in_logger = false;
}

std::string expand_log_path(std::string_view pattern, std::string_view program, long pid) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size();) {
    if (pattern.substr(i, 9) == "{program}") {
      out += program;
      i += 9;
    } else if (pattern.substr(i, 5) == "{pid}") {
      out += std::to_string(pid);
      i += 5;
    } else {
      out += pattern[i++];
    }
  }
  return out;
}

void log_prepare_fork() noexcept {
  log_mutex().lock();
}
void log_after_fork() noexcept {
  log_mutex().unlock();
}

}  // namespace tcptune::shim
