// Errors that name the op, the argument and what was wrong.
//
// Every error descent raises is one of these; the binding (floor 2) turns each
// kind into the Python exception of the same name.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace descent {

// Base class: RuntimeError in Python.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct TypeError : Error {  // wrong type of argument (Python TypeError)
  using Error::Error;
};
struct ValueError : Error {  // right type, bad value (Python ValueError)
  using Error::Error;
};
struct IndexError : Error {  // index or dimension out of range (Python IndexError)
  using Error::Error;
};
struct NotImplementedError : Error {  // no kernel for this op on this backend
  using Error::Error;
};

// Concatenates its arguments with operator<< into a string.
template <typename... Args>
std::string str(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

}  // namespace descent

// Raises `Kind` (a descent error type) with the concatenated message when
// `cond` is false, e.g.
//   DESCENT_CHECK(a.dim() == 2, ValueError, "matmul(): argument 'self' must be 2-D, got ", a.dim(), "-D");
#define DESCENT_CHECK(cond, Kind, ...)                    \
  do {                                                    \
    if (__builtin_expect(!(cond), 0)) {                   \
      throw ::descent::Kind(::descent::str(__VA_ARGS__)); \
    }                                                     \
  } while (0)
