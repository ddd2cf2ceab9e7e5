/// Shim of srsRAN's test support (srsran/common/test_common.h, srsran/support/srsran_test.h and srsran_assert.h)
/// for the standalone build of the telemetry tests (enb-patches/standalone): the same macros with the same
/// behaviour. A failed assertion prints "FILE:LINE: Assertion Failure: ..." to stderr and aborts, so a failing
/// test ends with SIGABRT, as under srsRAN's ctest.

#ifndef RNF_SHIM_TEST_COMMON_H
#define RNF_SHIM_TEST_COMMON_H

#include "srsran/srslog/srslog.h"
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector> // srsRAN's test_common.h brings <vector> in through its own includes; the series' tests rely on it

#define SRSRAN_SUCCESS 0
#define SRSRAN_ERROR -1

[[gnu::noinline, noreturn]] inline bool srsran_terminate(const char* fmt, ...)
{
  va_list args;
  va_start(args, fmt);
  srslog::flush();
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::abort();
}

#define srsran_assertion_failure(fmt, ...)                                                                             \
  srsran_terminate("%s:%d: Assertion Failure: " fmt "\n", __FILE__, __LINE__, ##__VA_ARGS__)

#define srsran_always_assert(condition, fmt, ...) (void)((condition) || srsran_assertion_failure(fmt, ##__VA_ARGS__))

// srsRAN compiles srsran_assert away unless ASSERTS_ENABLED; the series' tests redefine TESTASSERT with
// srsran_always_assert for that reason. Here assertions are always on.
#define srsran_assert(condition, fmt, ...) srsran_always_assert(condition, fmt, ##__VA_ARGS__)

namespace rnf_shim {

template <typename T>
void show(std::ostream& out, const T& value)
{
  out << value;
}
inline void show(std::ostream& out, uint8_t value)
{
  out << static_cast<unsigned>(value);
}
inline void show(std::ostream& out, int8_t value)
{
  out << static_cast<int>(value);
}

/// srsRAN formats this message with fmt::format; the text is the same.
template <typename A, typename E>
std::string differs(const A& actual, const E& expected)
{
  std::ostringstream out;
  out << "Actual value '";
  show(out, actual);
  out << "' differs from expected '";
  show(out, expected);
  out << "'";
  return out.str();
}

} // namespace rnf_shim

#define TESTASSERT_EQ(EXPECTED, ACTUAL)                                                                                \
  (void)((EXPECTED == ACTUAL) ||                                                                                       \
         (srsran_assertion_failure("%s", rnf_shim::differs(ACTUAL, EXPECTED).c_str()), 0))

#define TESTASSERT(cond) srsran_assert((cond), "Fail at \"%s\"", (#cond))

#endif // RNF_SHIM_TEST_COMMON_H
