// Tests for floors/core/ref.h: Ref<T>'s reference counting. A counting
// subclass of RefCounted records how many objects were deleted, so each test
// can check that copies, moves, assignment, adopt and leak keep the count
// right and delete the object exactly once.
#include <gtest/gtest.h>

#include <thread>
#include <utility>
#include <vector>

#include "floors/core/ref.h"

namespace descent {
namespace {

int g_deleted = 0;  // objects of Counted destroyed so far

struct Counted : RefCounted {
  explicit Counted(int v = 0) : value(v) {}
  ~Counted() override { ++g_deleted; }
  int value;
};

class RefTest : public ::testing::Test {
 protected:
  void SetUp() override { g_deleted = 0; }
};

TEST_F(RefTest, NewObjectStartsAtZeroAndMakeTakesIt) {
  auto* raw = new Counted(5);
  EXPECT_EQ(raw->use_count(), 0);
  {
    Ref<Counted> r(raw);
    EXPECT_EQ(raw->use_count(), 1);
    EXPECT_EQ(r->value, 5);
    EXPECT_EQ((*r).value, 5);
    EXPECT_EQ(r.get(), raw);
    EXPECT_TRUE(bool(r));
  }
  EXPECT_EQ(g_deleted, 1);
  {
    auto m = Ref<Counted>::make(7);
    EXPECT_EQ(m->use_count(), 1);
    EXPECT_EQ(m->value, 7);
  }
  EXPECT_EQ(g_deleted, 2);
}

TEST_F(RefTest, EmptyRefIsHarmless) {
  Ref<Counted> r;
  EXPECT_FALSE(bool(r));
  EXPECT_EQ(r.get(), nullptr);
  Ref<Counted> copy = r;
  Ref<Counted> moved = std::move(copy);
  r = moved;
  EXPECT_EQ(r.leak(), nullptr);
  EXPECT_EQ(g_deleted, 0);
}

TEST_F(RefTest, CopiesShareAndCount) {
  auto a = Ref<Counted>::make(1);
  {
    Ref<Counted> b = a;
    Ref<Counted> c(b);
    EXPECT_EQ(a->use_count(), 3);
    EXPECT_TRUE(a == b);
    EXPECT_EQ(c.get(), a.get());
  }
  EXPECT_EQ(a->use_count(), 1);
  EXPECT_EQ(g_deleted, 0);
  a = Ref<Counted>();
  EXPECT_EQ(g_deleted, 1);
}

TEST_F(RefTest, MovesTransferWithoutCounting) {
  auto a = Ref<Counted>::make(1);
  Counted* raw = a.get();
  Ref<Counted> b = std::move(a);
  EXPECT_FALSE(bool(a));  // NOLINT(bugprone-use-after-move): moved-from is documented empty
  EXPECT_EQ(raw->use_count(), 1);
  Ref<Counted> c;
  c = std::move(b);
  EXPECT_EQ(raw->use_count(), 1);
  EXPECT_EQ(c.get(), raw);
  EXPECT_EQ(g_deleted, 0);
  c = Ref<Counted>();
  EXPECT_EQ(g_deleted, 1);
}

TEST_F(RefTest, AssignmentReleasesTheOldObject) {
  auto a = Ref<Counted>::make(1);
  auto b = Ref<Counted>::make(2);
  Counted* raw_b = b.get();
  a = b;  // the first object loses its only reference
  EXPECT_EQ(g_deleted, 1);
  EXPECT_EQ(raw_b->use_count(), 2);
  EXPECT_EQ(a->value, 2);
  a = a;  // self-assignment keeps it alive
  EXPECT_EQ(raw_b->use_count(), 2);
  EXPECT_EQ(a->value, 2);
  a = std::move(a);  // NOLINT: self-move is also safe with copy-and-swap
  b = Ref<Counted>();
  EXPECT_EQ(g_deleted, 1);
  ASSERT_TRUE(bool(a));
  EXPECT_EQ(raw_b->use_count(), 1);
  a = Ref<Counted>();
  EXPECT_EQ(g_deleted, 2);
}

TEST_F(RefTest, LeakAndAdoptRoundTrip) {
  auto a = Ref<Counted>::make(3);
  Counted* raw = a.leak();  // as handed to a Python object
  EXPECT_FALSE(bool(a));
  EXPECT_EQ(raw->use_count(), 1);
  EXPECT_EQ(g_deleted, 0);
  {
    Ref<Counted> back = Ref<Counted>::adopt(raw);  // the count already includes this reference
    EXPECT_EQ(raw->use_count(), 1);
    Ref<Counted> more = back;
    EXPECT_EQ(raw->use_count(), 2);
  }
  EXPECT_EQ(g_deleted, 1);
  EXPECT_EQ(Ref<Counted>::adopt(nullptr).get(), nullptr);
}

TEST_F(RefTest, ContainersOfRefsDeleteEachObjectOnce) {
  {
    std::vector<Ref<Counted>> v;
    auto shared = Ref<Counted>::make(0);
    for (int i = 0; i < 100; ++i) v.push_back(i % 2 ? shared : Ref<Counted>::make(i));  // growth moves them
    EXPECT_EQ(shared->use_count(), 51);
    v.erase(v.begin(), v.begin() + 10);
    EXPECT_EQ(g_deleted, 5);
  }
  EXPECT_EQ(g_deleted, 51);  // 50 distinct objects plus the shared one
}

TEST_F(RefTest, ConcurrentCopiesKeepTheCountExact) {
  auto a = Ref<Counted>::make(0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([a] {  // each thread holds one copy and churns others
      for (int i = 0; i < 10000; ++i) {
        Ref<Counted> c = a;
        Ref<Counted> d = std::move(c);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(a->use_count(), 1);
  EXPECT_EQ(g_deleted, 0);
  a = Ref<Counted>();
  EXPECT_EQ(g_deleted, 1);
}

}  // namespace
}  // namespace descent
