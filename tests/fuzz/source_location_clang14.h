// std::source_location for Debian 12's clang 14, force-included (-include)
// into every file of the fuzz build (tests/fuzz/CMakeLists.txt).
//
// Note [std::source_location under clang 14]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// clang 14 compiles against GCC 12's libstdc++, whose <source_location>
// defines nothing unless the compiler has __builtin_source_location (GCC 11,
// clang 15). tracer.h declares functions that take a std::source_location
// (Note [Span source sites] there), so the fuzz build, which includes
// tracer.h through trace.h, gives clang 14 the class here, built on the
// builtins clang 14 does have. The code under fuzzing never opens a span, so
// no value of it is read; the normal builds (GCC) never see this file.
#pragma once

#include <source_location>

#ifndef __cpp_lib_source_location
#include <cstdint>

namespace std {
struct source_location {
  static constexpr source_location current(const char* file = __builtin_FILE(),
                                           const char* function = __builtin_FUNCTION(),
                                           uint_least32_t line = __builtin_LINE(),
                                           uint_least32_t column = __builtin_COLUMN()) noexcept {
    source_location here;
    here.file_ = file;
    here.function_ = function;
    here.line_ = line;
    here.column_ = column;
    return here;
  }
  constexpr source_location() noexcept = default;
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }
  constexpr uint_least32_t line() const noexcept { return line_; }
  constexpr uint_least32_t column() const noexcept { return column_; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  uint_least32_t line_ = 0;
  uint_least32_t column_ = 0;
};
}  // namespace std
#endif
