// What the tests of saving and reading files share (test_file_saves.cpp,
// tests/ui/test_layout_file.cpp): a piece of the test run in a forked child,
// so that a hang (a read of a named pipe) is a failure and not a stuck test,
// and a resource limit or a SIGKILL touches the child only; and a file's bytes.
#pragma once

#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <exception>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>

namespace descent::trace::test_util {

// Runs `body` in a forked child and returns the text it returned, or nullopt
// when it did not finish within `seconds` (it is killed then) or died. Outside
// ASan the child's address space is capped at 8 GiB, so a loader that reads
// /dev/zero forever fails quickly instead of filling the machine's memory.
inline std::optional<std::string> in_child(const std::function<std::string()>& body, int seconds = 10) {
  int fds[2];
  if (::pipe(fds) != 0) return std::nullopt;
  const pid_t pid = ::fork();
  if (pid < 0) return std::nullopt;
  if (pid == 0) {
    ::close(fds[0]);
#if !defined(__SANITIZE_ADDRESS__)
    const rlimit cap{rlim_t{8} << 30, rlim_t{8} << 30};
    ::setrlimit(RLIMIT_AS, &cap);
#endif
    std::string out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = std::string("threw: ") + e.what();
    }
    for (size_t done = 0; done < out.size();) {
      const ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::_exit(0);  // never back into the test runner
  }
  ::close(fds[1]);
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  bool finished = false;
  while (!finished) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n > 0) out.append(buffer, static_cast<size_t>(n));
    finished = n == 0;  // the child's end closed: it exited
  }
  ::close(fds[0]);
  if (!finished) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!finished || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

// The limits a "full disk" is made of: files of at most `bytes`, and SIGXFSZ
// ignored, so that a write past it fails with EFBIG ("File too large") where
// a full disk fails with ENOSPC. Call it in a child only.
inline void limit_file_size(rlim_t bytes) {
  std::signal(SIGXFSZ, SIG_IGN);
  const rlimit small{bytes, bytes};
  ::setrlimit(RLIMIT_FSIZE, &small);
}

// The file's bytes ("" when it cannot be read).
inline std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace descent::trace::test_util
