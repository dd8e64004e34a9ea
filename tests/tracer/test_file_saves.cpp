// Saving a trace whole or not at all (Note [Saving a file whole],
// tracer/trace.cpp), and loaders that refuse what is not a regular file.
//
// [SECTION] Helpers
// [SECTION] A failed save keeps the old file
// [SECTION] A save killed at any moment
// [SECTION] Links, permissions, folders
// [SECTION] Loading what is not a file
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/tracer/child_test_util.h"
#include "tests/tracer/trace_test_util.h"
#include "tracer/trace.h"

namespace descent::trace {
namespace {

using test_util::file_bytes;
using test_util::in_child;
using test_util::make_span;

// [SECTION] Helpers -----------------------------------------------------------------

// A fresh, empty folder of this test's own.
std::filesystem::path fresh_dir(const char* name) {
  const auto dir = std::filesystem::path(testing::TempDir()) / (std::string(name) + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The names in `dir`, sorted.
std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// A trace of `n` spans whose names carry `tag`, so two of them differ.
Trace numbered_trace(size_t n, const std::string& tag) {
  Trace t;
  t.span_cost_ns = 20;
  for (size_t i = 0; i < n; ++i) {
    t.spans.push_back(make_span(i + 1, 0, Floor::Kernels, "", static_cast<int64_t>(10 * i),
                                static_cast<int64_t>(10 * i + 5), 0, {{"bytes", int64_t(i)}}));
    t.spans.back().name = tag + std::to_string(i);
  }
  return t;
}

// [SECTION] A failed save keeps the old file ------------------------------------------

// A full disk, simulated by RLIMIT_FSIZE in a child (a write past it fails
// with EFBIG, "File too large", where a full disk says ENOSPC, "No space left
// on device"; both come through the same checks). Writing in place would
// have truncated the old file before the first byte failed.
TEST(SaveWhole, AFailedSaveKeepsTheOldFileByteForByte) {
  const auto dir = fresh_dir("descent_save_full");
  const std::string path = (dir / "good.trace").string();
  const Trace old_trace = numbered_trace(3, "old");
  save(old_trace, path);
  const std::string old_bytes = file_bytes(path);
  ASSERT_LT(old_bytes.size(), 4096u);
  const std::string chrome = (dir / "good.json").string();
  save_chrome_json(old_trace, chrome);
  const std::string old_json = file_bytes(chrome);

  const Trace big = numbered_trace(5000, "new");  // far more than 4 KiB in either format
  const auto error = in_child([&] {
    test_util::limit_file_size(4096);
    std::string out;
    try {
      save(big, path);
      out += "saved|";
    } catch (const std::runtime_error& e) {
      out += std::string(e.what()) + "|";
    }
    try {
      save_chrome_json(big, chrome);
      out += "saved";
    } catch (const std::runtime_error& e) {
      out += e.what();
    }
    return out;
  });
  ASSERT_TRUE(error.has_value());
  const std::string reason = std::strerror(EFBIG);  // "File too large"
  EXPECT_EQ(*error, "cannot write '" + path + "': " + reason + "|cannot write '" + chrome + "': " + reason);
  EXPECT_EQ(file_bytes(path), old_bytes);
  EXPECT_EQ(load(path), old_trace);
  EXPECT_EQ(file_bytes(chrome), old_json);
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"good.json", "good.trace"}));  // no temporary file left
  std::filesystem::remove_all(dir);
}

// [SECTION] A save killed at any moment -------------------------------------------------

// A child saves two large traces in turn, over and over, and is killed by
// SIGKILL at a random moment of its first three saves, ten times: the file
// is always the old one or one of the new ones, whole, never a part; what a
// kill leaves beside it is a hidden temporary file only.
TEST(SaveWhole, ASaveKilledAtAnyMomentLeavesAWholeFile) {
  const auto dir = fresh_dir("descent_save_kill");
  const std::string path = (dir / "run.trace").string();
  const Trace old_trace = numbered_trace(10, "old");
  save(old_trace, path);
  const Trace news[2] = {numbered_trace(100000, "first"), numbered_trace(100000, "second")};
  const std::string old_text = to_descent_format(old_trace);
  const std::string texts[2] = {to_descent_format(news[0]), to_descent_format(news[1])};
  ASSERT_GT(texts[0].size(), size_t{2} << 20);  // megabytes: a kill lands inside a write

  const auto t0 = std::chrono::steady_clock::now();
  save(news[0], path);
  const auto one_save = std::chrono::steady_clock::now() - t0;

  std::mt19937_64 rng(41);
  int saw_old = 0, saw_new = 0;
  for (int round = 0; round < 10; ++round) {
    save(old_trace, path);  // each round from the old file: a kill in the first save must keep it
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (uint64_t i = 0;; ++i) save(news[i % 2], path);
    }
    std::uniform_int_distribution<int64_t> when(
        0, 3 * std::chrono::duration_cast<std::chrono::microseconds>(one_save).count());
    std::this_thread::sleep_for(std::chrono::microseconds(when(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the saving child died by itself";
    const std::string now = file_bytes(path);
    ASSERT_TRUE(now == old_text || now == texts[0] || now == texts[1])
        << "round " << round << ": the file is " << now.size() << " bytes, not a whole save (old " << old_text.size()
        << ", new " << texts[0].size() << " or " << texts[1].size() << ")";
    (now == old_text ? saw_old : saw_new) += 1;
    for (const std::string& name : names_in(dir)) {  // the file, and maybe the killed save's temporary file
      EXPECT_TRUE(name == "run.trace" || name.rfind(".run.trace.tmp-", 0) == 0) << name;
    }
  }
  std::printf("10 kills: the old file kept %d times, a whole new one %d times\n", saw_old, saw_new);
  std::filesystem::remove_all(dir);
}

// What a killed save leaves (its hidden temporary file) goes with the next save of the same file
// once it is an hour old; a younger one (another process may be saving) and other files stay.
TEST(SaveWhole, TheNextSaveRemovesAKilledSavesOldTemporaryFile) {
  const auto dir = fresh_dir("descent_save_stale");
  const auto make = [&](const std::string& name, int age_seconds) {
    const std::string p = (dir / name).string();
    std::FILE* f = std::fopen(p.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("half a trace", f);
    std::fclose(f);
    const auto when = std::filesystem::file_time_type::clock::now() - std::chrono::seconds(age_seconds);
    std::filesystem::last_write_time(p, when);
  };
  make(".run.trace.tmp-0123456789abcdef", 2 * 3600);    // a killed save's, two hours old: removed
  make(".run.trace.tmp-fedcba9876543210", 60);          // a minute old: maybe a save in progress
  make(".other.trace.tmp-0123456789abcdef", 2 * 3600);  // another file's: not this save's to remove
  make(".run.trace.tmp-notahexnumber00", 2 * 3600);     // not a name a save makes
  save(numbered_trace(3, "new"), (dir / "run.trace").string());
  EXPECT_EQ(names_in(dir),
            (std::vector<std::string>{".other.trace.tmp-0123456789abcdef", ".run.trace.tmp-fedcba9876543210",
                                      ".run.trace.tmp-notahexnumber00", "run.trace"}));
  std::filesystem::remove_all(dir);
}

// [SECTION] Links, permissions, folders ---------------------------------------------------

TEST(SaveWhole, KeepsPermissionsFollowsLinksAndNamesTheReason) {
  const auto dir = fresh_dir("descent_save_cases");
  const std::string real = (dir / "real.trace").string();
  write_text_file(real, "old");
  ASSERT_EQ(::chmod(real.c_str(), 0640), 0);
  const std::string link = (dir / "link.trace").string();
  std::filesystem::create_symlink(real, link);
  write_text_file(link, "new");
  EXPECT_TRUE(std::filesystem::is_symlink(link));  // the link kept, the file it names replaced
  EXPECT_EQ(file_bytes(real), "new");
  struct stat st;
  ASSERT_EQ(::stat(real.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);  // the old file's permissions, not the temporary file's

  const auto error_of = [](const std::string& p) {
    try {
      write_text_file(p, "x");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string missing = (dir / "no" / "such.trace").string();
  EXPECT_EQ(error_of(missing), "cannot write '" + missing + "': " + std::strerror(ENOENT));
  EXPECT_EQ(error_of(dir.string()), "cannot write '" + dir.string() + "': " + std::strerror(EISDIR));
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{"link.trace", "real.trace"}));
  // /dev/null is not a regular file: written in place, never renamed over.
  EXPECT_EQ(error_of("/dev/null"), "");
  std::filesystem::remove_all(dir);
}

// [SECTION] Loading what is not a file -----------------------------------------------------

// A named pipe would block open() and /dev/zero would be read forever: both
// loaders refuse them at once (in a child, so a hang fails the test).
TEST(LoadRefuses, WhatIsNotARegularFile) {
  const auto dir = fresh_dir("descent_load_odd");
  const std::string fifo = (dir / "pipe.trace").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string zero = (dir / "zero.trace").string();
  std::filesystem::create_symlink("/dev/zero", zero);
  struct Case {
    std::string path, words;
  };
  for (const Case& c :
       {Case{fifo, "not a regular file"}, Case{zero, "not a regular file"}, Case{dir.string(), "it is a directory"}}) {
    for (bool any : {false, true}) {
      const auto error = in_child(
          [&] {
            try {
              any ? (void)load_any(c.path) : (void)load(c.path);
            } catch (const TraceFormatError& e) {
              return std::string(e.what());
            }
            return std::string("loaded");
          },
          5);
      ASSERT_TRUE(error.has_value()) << (any ? "load_any(" : "load(") << c.path << ") hung or died";
      EXPECT_EQ(*error, c.path + ": cannot open the file: " + c.words);
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace descent::trace
