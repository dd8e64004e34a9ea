// The "descent" log (floors/core/log.h): levels gate what is written, and a
// line is written to stderr with the logger's prefix.
#include <gtest/gtest.h>

#include "floors/core/log.h"

namespace descent::log {
namespace {

TEST(Log, LevelsGateWhatIsWritten) {
  const Level saved = level();
  set_level(Level::Warn);
  EXPECT_TRUE(enabled(Level::Warn));
  EXPECT_TRUE(enabled(Level::Error));
  EXPECT_FALSE(enabled(Level::Info));
  testing::internal::CaptureStderr();
  info("not shown ", 1);
  warn("shown ", 2, " of ", 3);
  const std::string out = testing::internal::GetCapturedStderr();
  set_level(saved);
  EXPECT_EQ(out, "[descent warning] shown 2 of 3\n");

  set_level(Level::Off);
  EXPECT_FALSE(enabled(Level::Error));
  set_level(saved);
}

}  // namespace
}  // namespace descent::log
