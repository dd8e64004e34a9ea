// The app's remembered layout file, app.conf (ui/layout.h): read safely
// whatever sits at its path (Note [Reading app.conf safely], ui/layout.cpp)
// and saved whole or not at all (Note [Saving a file whole], tracer/trace.cpp).
// Each case runs in a forked child with its own XDG_CONFIG_HOME, so a read
// that blocks is a failure, not a stuck test.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tests/tracer/child_test_util.h"
#include "ui/layout.h"

namespace descent::ui {
namespace {

using trace::test_util::file_bytes;
using trace::test_util::in_child;

// A fresh config home of this test's own; app.conf goes in its descent/.
std::filesystem::path fresh_home(const char* name) {
  const auto home = std::filesystem::path(testing::TempDir()) / (std::string(name) + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(home);
  std::filesystem::create_directories(home / "descent");
  return home;
}

// The layout loaded in a child under `home`: "zoom split_x split_y timeline
// console|problem", or nullopt when the load hung (5 s) or died.
std::optional<std::string> load_in_child(const std::filesystem::path& home) {
  return in_child(
      [&] {
        ::setenv("XDG_CONFIG_HOME", home.c_str(), 1);
        std::string problem;
        const AppLayout l = load_layout(problem);
        return std::to_string(l.zoom) + " " + std::to_string(l.split_x) + " " + std::to_string(l.split_y) + " " +
               (l.timeline ? "T" : "F") + (l.console ? "T" : "F") + "|" + problem;
      },
      5);
}

// The defaults as load_in_child writes them.
std::string defaults() {
  const AppLayout d;
  return std::to_string(d.zoom) + " " + std::to_string(d.split_x) + " " + std::to_string(d.split_y) + " TT|";
}

TEST(LayoutFile, MissingIsTheDefaultsWithoutAProblem) {
  EXPECT_EQ(load_in_child("/nonexistent/descent-config").value_or("hung"), defaults());
}

// A named pipe would block open() until someone writes; a link to /dev/zero
// would be one endless line; a directory, a huge file: all read as absent,
// at once, with one problem that names the file and what it is.
TEST(LayoutFile, WhatIsNotASmallRegularFileLoadsAsTheDefaults) {
  const auto home = fresh_home("descent_layout_odd");
  const std::string conf = (home / "descent" / "app.conf").string();
  struct Case {
    const char* what;
    std::string problem;
  };
  const Case cases[] = {
      {"fifo", conf + ": not a regular file (a named pipe); using the defaults"},
      {"zero", conf + ": not a regular file (a device or socket); using the defaults"},
      {"dir", conf + ": not a regular file (a directory); using the defaults"},
      {"huge", conf + ": larger than 64 KiB, not a layout file; using the defaults"},
  };
  for (const Case& c : cases) {
    std::filesystem::remove_all(conf);
    const std::string what = c.what;
    if (what == "fifo") {
      ASSERT_EQ(::mkfifo(conf.c_str(), 0600), 0);
    }
    if (what == "zero") std::filesystem::create_symlink("/dev/zero", conf);
    if (what == "dir") std::filesystem::create_directory(conf);
    if (what == "huge") {
      const int fd = ::open(conf.c_str(), O_WRONLY | O_CREAT, 0600);
      ASSERT_GE(fd, 0);
      const std::string line = "zoom = 2\n";
      ASSERT_EQ(::write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
      ASSERT_EQ(::ftruncate(fd, off_t{1} << 30), 0);  // a gigabyte, sparse: costs no disk
      ::close(fd);
    }
    const auto got = load_in_child(home);
    ASSERT_TRUE(got.has_value()) << what << ": the load hung or died";
    EXPECT_EQ(*got, defaults() + c.problem) << what;
  }
  std::filesystem::remove_all(home);
}

TEST(LayoutFile, SavedAndReadBack) {
  const auto home = fresh_home("descent_layout_round");
  const auto saved = in_child([&] {
    ::setenv("XDG_CONFIG_HOME", home.c_str(), 1);
    AppLayout l;
    l.zoom = 1.5f;
    l.split_x = 0.7f;
    l.console = false;
    std::string problem;
    return save_layout(l, problem) ? std::string("ok") : problem;
  });
  ASSERT_EQ(saved.value_or("died"), "ok");
  EXPECT_EQ(load_in_child(home).value_or("?"),
            std::to_string(1.5f) + " " + std::to_string(0.7f) + " " + std::to_string(AppLayout{}.split_y) + " TF|");
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(home / "descent")) names.push_back(e.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"app.conf"});  // no temporary file left
  std::filesystem::remove_all(home);
}

// A full disk, simulated by RLIMIT_FSIZE (EFBIG, "File too large", where a
// full disk gives ENOSPC, "No space left on device"): the good app.conf is
// kept byte for byte, and the problem names the file and the reason. (The
// old save wrote app.conf.tmp without checking and renamed it over anyway.)
TEST(LayoutFile, AFailedSaveKeepsTheOldFile) {
  const auto home = fresh_home("descent_layout_full");
  const std::string conf = (home / "descent" / "app.conf").string();
  const std::string good = "zoom = 2\nsplit_x = 0.3\n";
  {
    std::FILE* f = std::fopen(conf.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(good.data(), 1, good.size(), f);
    std::fclose(f);
  }
  const auto problem = in_child([&] {
    ::setenv("XDG_CONFIG_HOME", home.c_str(), 1);
    trace::test_util::limit_file_size(16);  // smaller than any layout
    std::string p;
    return save_layout(AppLayout{}, p) ? std::string("saved") : p;
  });
  ASSERT_TRUE(problem.has_value());
  EXPECT_EQ(*problem, "cannot save the layout: cannot write '" + conf + "': " + std::strerror(EFBIG));
  EXPECT_EQ(file_bytes(conf), good);
  EXPECT_EQ(load_in_child(home).value_or("?").substr(0, 8), std::to_string(2.0f));
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(home / "descent")) names.push_back(e.path().filename());
  EXPECT_EQ(names, std::vector<std::string>{"app.conf"});
  std::filesystem::remove_all(home);
}

}  // namespace
}  // namespace descent::ui
