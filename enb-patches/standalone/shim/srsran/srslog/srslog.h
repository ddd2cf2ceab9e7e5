/// Shim of srsRAN's srslog for the standalone build of the telemetry library (enb-patches/standalone): only what
/// the series uses. A basic_logger's channels (error, warning, info, debug) take printf-style arguments, as srslog's
/// do, and write one line to stderr; the compiler checks the format against the arguments.

#ifndef RNF_SHIM_SRSLOG_H
#define RNF_SHIM_SRSLOG_H

#include <cstdarg>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace srslog {

enum class basic_levels { none, error, warning, info, debug };

class log_channel
{
public:
  log_channel(std::string name_, char tag_) : name(std::move(name_)), tag(tag_) {}
  log_channel(const log_channel&)            = delete;
  log_channel& operator=(const log_channel&) = delete;

  __attribute__((format(printf, 2, 3))) void operator()(const char* fmt, ...) const
  {
    char    text[1024];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(text, sizeof(text), fmt, args);
    va_end(args);
    std::fprintf(stderr, "[%-4.4s] [%c] %s\n", name.c_str(), tag, text);
  }

private:
  std::string name;
  char        tag;
};

class basic_logger
{
public:
  explicit basic_logger(const std::string& id) :
    error(id, 'E'), warning(id, 'W'), info(id, 'I'), debug(id, 'D')
  {}
  void set_level(basic_levels) {}

  log_channel error;
  log_channel warning;
  log_channel info;
  log_channel debug;
};

/// The logger named `id`, created on first use; `should_propagate` (srslog's sink propagation) has no meaning here.
inline basic_logger& fetch_basic_logger(const std::string& id, bool should_propagate = true)
{
  (void)should_propagate;
  static std::mutex                                           mutex;
  static std::map<std::string, std::unique_ptr<basic_logger>> loggers;
  std::lock_guard<std::mutex>                                 lock(mutex);
  std::unique_ptr<basic_logger>&                              logger = loggers[id];
  if (logger == nullptr) {
    logger.reset(new basic_logger(id));
  }
  return *logger;
}

inline void init() {}

inline void flush()
{
  std::fflush(stderr);
}

} // namespace srslog

#endif // RNF_SHIM_SRSLOG_H
