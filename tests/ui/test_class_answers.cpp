// A class's answers as the presenter's Lesson tab counts them (ui/class_answers.h),
// from a folder laid out as `descent lesson NAME --answers-to DIR` writes it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ui/class_answers.h"

namespace descent::ui {
namespace {

namespace fs = std::filesystem;

struct ClassFolder : ::testing::Test {
  fs::path root = fs::temp_directory_path() /
                  ("descent-class-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  void SetUp() override { fs::remove_all(root); }
  void TearDown() override { fs::remove_all(root); }
  void answer(const std::string& q, const std::string& file, const std::string& text) {
    const fs::path d = root / "03-dispatch" / q;
    fs::create_directories(d);
    std::ofstream(d / file) << text;
  }
};

TEST_F(ClassFolder, CountsEachStudentsChoiceOnce) {
  answer("step-02-q-1", "ana@lab.txt", "0\n");
  answer("step-02-q-1", "bo@lab.txt", "2\n");
  answer("step-02-q-1", "cy@lab.txt", "2\n");
  answer("step-02-q-1", "dee@lab.txt", "maybe\n");  // typed text that named no choice
  answer("step-02-q-1", "eve@lab.txt", "\n");       // empty: not an answer
  answer("step-02-q-1", "notes.md", "2\n");         // not a .txt: not a student's
  answer("step-02-q-2", "ana@lab.txt", "1\n");      // another question
  const ClassTally t = tally_answers(root.string(), "03-dispatch", 1, 0, 3);
  EXPECT_TRUE(t.found);
  EXPECT_EQ(t.answers, 4);
  EXPECT_EQ(t.per_choice, (std::vector<int>{1, 0, 2}));
  EXPECT_EQ(t.other, 1);
  EXPECT_EQ(t.unreadable, 1);
}

TEST_F(ClassFolder, TypedAnswersMostGivenFirst) {
  answer("step-01-q-1", "a.txt", "4 bytes\n");
  answer("step-01-q-1", "b.txt", "8\n");
  answer("step-01-q-1", "c.txt", "8\n");
  const ClassTally t = tally_answers(root.string(), "03-dispatch", 0, 0, 0);
  ASSERT_EQ(t.typed.size(), 2u);
  EXPECT_EQ(t.typed[0], (std::pair<std::string, int>{"8", 2}));
  EXPECT_EQ(t.answers, 3);
}

TEST_F(ClassFolder, NoFolderYetIsNoAnswersNotAnError) {
  const ClassTally t = tally_answers(root.string(), "03-dispatch", 4, 0, 2);
  EXPECT_FALSE(t.found);
  EXPECT_EQ(t.answers, 0);
  EXPECT_EQ(t.per_choice, (std::vector<int>{0, 0}));
  EXPECT_FALSE(tally_answers("/nonexistent/dir", "x", 0, 0, 2).found);
}

TEST(ClassFileName, AsTheTerminalWritesIt) {
  EXPECT_EQ(class_file_name("03-dispatch"), "03-dispatch");
  EXPECT_EQ(class_file_name("ana lee@host"), "ana_lee@host");
  EXPECT_EQ(class_file_name("../etc"), "etc");  // "../etc" -> ".._etc", its leading . and _ stripped
  EXPECT_EQ(class_file_name("_a.b_"), "a.b");
}

}  // namespace
}  // namespace descent::ui
