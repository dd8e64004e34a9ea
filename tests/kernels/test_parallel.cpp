// Tests for intra-op parallelism (floors/kernels/parallel.{h,cpp}, Note
// [Intra-op parallelism]): parallel_for visits every index exactly once in
// contiguous pieces, for odd ranges, grains and thread counts, given a lambda
// or a std::function; small ranges, nested calls and one thread run inline on
// the caller; exceptions come back to the caller; loops back to back, and
// several callers at once, each visit every index once; the thread count is
// checked; a "parallel_for" span appears only when a loop goes parallel; and
// the kernels that use it (matmul, elementwise, copies) give the same bits on
// one thread and on several.
//
// [SECTION] parallel_for
// [SECTION] The thread count
// [SECTION] Kernels: one thread against several
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "floors/kernels/kernels.h"
#include "floors/kernels/cpu/matmul_rungs.h"
#include "floors/kernels/cpu/parallel.h"
#include "kernel_test_util.h"
#include "tracer/trace.h"

namespace descent {
namespace {

using namespace testing_util;
using kernels::get_num_threads;
using kernels::parallel_for;
using kernels::set_num_threads;

// Every test starts from, and leaves behind, the thread count it found.
class Parallel : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = get_num_threads(); }
  void TearDown() override { set_num_threads(saved_); }
  int saved_ = 1;
};

// The pieces one parallel_for handed out: [lo, hi) and the thread that ran it.
struct Piece {
  int64_t lo, hi;
  std::thread::id thread;
};

std::vector<Piece> run_pieces(int64_t begin, int64_t end, int64_t grain) {
  std::mutex m;
  std::vector<Piece> pieces;
  parallel_for(begin, end, grain, [&](int64_t lo, int64_t hi) {
    std::lock_guard lock(m);
    pieces.push_back({lo, hi, std::this_thread::get_id()});
  });
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.lo < b.lo; });
  return pieces;
}

int count_spans(const trace::Trace& t, const char* name) {
  return int(std::count_if(t.spans.begin(), t.spans.end(), [&](const trace::Span& s) { return s.name == name; }));
}

// [SECTION] parallel_for ---------------------------------------------------------------

TEST_F(Parallel, EveryIndexExactlyOnceForOddRangesAndGrains) {
  const std::pair<int64_t, int64_t> ranges[] = {{0, 1}, {0, 2}, {0, 3}, {5, 1000}, {-17, 1001}, {0, 100003}, {7, 7}};
  for (int threads : {2, 3, 4, 7}) {
    set_num_threads(threads);
    for (auto [begin, end] : ranges) {
      for (int64_t grain : {-1, 0, 1, 3, 7, 64, 1000, 99999}) {
        const int64_t n = end - begin;
        std::vector<std::atomic<int>> seen(size_t(std::max<int64_t>(n, 0)));
        parallel_for(begin, end, grain, [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) seen[size_t(i - begin)].fetch_add(1, std::memory_order_relaxed);
        });
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(seen[size_t(i)].load(), 1) << "index " << begin + i << " of [" << begin << ", " << end << ") grain "
                                               << grain << ", " << threads << " threads";
        // The pieces are contiguous, in order, and tile the range; no more
        // than one per grain, on no more threads than asked for.
        std::vector<Piece> pieces = run_pieces(begin, end, grain);
        int64_t at = begin;
        std::set<std::thread::id> ran_on;
        for (const Piece& p : pieces) {
          EXPECT_EQ(p.lo, at);
          EXPECT_LT(p.lo, p.hi);
          at = p.hi;
          ran_on.insert(p.thread);
        }
        EXPECT_EQ(at, std::max(begin, end));
        const int64_t g = std::max<int64_t>(grain, 1);
        EXPECT_LE(int64_t(pieces.size()), (std::max<int64_t>(n, 0) + g - 1) / g) << "more pieces than grains";
        EXPECT_LE(int64_t(ran_on.size()), threads) << "more threads than set_num_threads() allows";
      }
    }
  }
}

TEST_F(Parallel, SmallRangesRunInlineOnTheCaller) {
  set_num_threads(4);
  for (auto [begin, end, grain] : {std::tuple<int64_t, int64_t, int64_t>{0, 1, 1},
                                   {0, 1, kernels::kGrainSize},
                                   {3, 100, 97},
                                   {3, 100, 1000},
                                   {0, kernels::kGrainSize, kernels::kGrainSize}}) {
    std::vector<Piece> pieces = run_pieces(begin, end, grain);
    ASSERT_EQ(pieces.size(), 1u) << "[" << begin << ", " << end << ") grain " << grain;
    EXPECT_EQ(pieces[0].lo, begin);
    EXPECT_EQ(pieces[0].hi, end);
    EXPECT_EQ(pieces[0].thread, std::this_thread::get_id());
  }
  EXPECT_TRUE(run_pieces(5, 5, 1).empty()) << "an empty range calls nothing";
  EXPECT_TRUE(run_pieces(5, 2, 1).empty()) << "a reversed range calls nothing";
  EXPECT_TRUE(run_pieces(5, 2, -3).empty());
}

TEST_F(Parallel, TakesAStdFunctionToo) {
  set_num_threads(3);
  std::atomic<int64_t> total{0};
  const std::function<void(int64_t, int64_t)> fn = [&](int64_t lo, int64_t hi) { total += hi - lo; };
  parallel_for(0, 100000, 10, fn);
  EXPECT_EQ(total.load(), 100000);
}

TEST_F(Parallel, NestedCallRunsInlineOnTheChunksThread) {
  set_num_threads(4);
  EXPECT_FALSE(kernels::in_parallel_region());
  std::atomic<int> outer{0}, bad{0};
  parallel_for(0, 8, 1, [&](int64_t lo, int64_t hi) {
    ++outer;
    if (!kernels::in_parallel_region()) ++bad;
    for (int64_t i = lo; i < hi; ++i) {
      const std::thread::id me = std::this_thread::get_id();
      int inner = 0;
      parallel_for(0, 1 << 20, 1, [&](int64_t b, int64_t e) {
        ++inner;  // not atomic: must only ever run here, on this thread
        if (b != 0 || e != 1 << 20 || std::this_thread::get_id() != me) ++bad;
      });
      if (inner != 1) ++bad;
    }
  });
  EXPECT_GT(outer.load(), 1) << "the outer loop went parallel";
  EXPECT_EQ(bad.load(), 0) << "a nested parallel_for did not run inline as one piece";
  EXPECT_FALSE(kernels::in_parallel_region()) << "the caller's flag is restored";
}

TEST_F(Parallel, ExceptionsComeBackToTheCaller) {
  set_num_threads(4);
  const int64_t n = 1000;
  // Thrown by the last piece (likely a worker's), by the first (likely the caller's), by all.
  for (int64_t bad_index : {n - 1, int64_t(0)}) {
    try {
      parallel_for(0, n, 1, [&](int64_t lo, int64_t hi) {
        if (lo <= bad_index && bad_index < hi) throw ValueError("chunk failed at " + std::to_string(bad_index));
      });
      ADD_FAILURE() << "no exception";
    } catch (const ValueError& e) {
      EXPECT_EQ(std::string(e.what()), "chunk failed at " + std::to_string(bad_index));
    }
  }
  EXPECT_THROW(parallel_for(0, n, 1, [](int64_t, int64_t) { throw std::runtime_error("every chunk"); }),
               std::runtime_error);
  EXPECT_THROW(parallel_for(0, n, 1,
                            [](int64_t lo, int64_t) {
                              if (lo > 0) throw 42;
                            }),
               int);
  // The pool still works afterwards.
  std::vector<Piece> pieces = run_pieces(0, n, 1);
  ASSERT_FALSE(pieces.empty());
  EXPECT_EQ(pieces.front().lo, 0);
  EXPECT_EQ(pieces.back().hi, n);
}

TEST_F(Parallel, OneThreadIsSerial) {
  set_num_threads(1);
  std::vector<Piece> pieces = run_pieces(0, 1 << 20, 1);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].lo, 0);
  EXPECT_EQ(pieces[0].hi, 1 << 20);
  EXPECT_EQ(pieces[0].thread, std::this_thread::get_id());
}

TEST_F(Parallel, GoesParallelAndShowsOneSpan) {
  set_num_threads(4);
  trace::start();
  std::mutex m;
  std::set<std::thread::id> threads;
  parallel_for(0, 4, 1, [&](int64_t, int64_t) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // long enough for the workers to wake
    std::lock_guard lock(m);
    threads.insert(std::this_thread::get_id());
  });
  parallel_for(0, 10, 100, [](int64_t, int64_t) {});  // inline: no span
  trace::Trace t = trace::stop();
  EXPECT_GT(threads.size(), 1u) << "four 50 ms pieces all ran on one thread";
  ASSERT_EQ(count_spans(t, "parallel_for"), 1) << trace::format_tree(t);
  auto it = std::find_if(t.spans.begin(), t.spans.end(), [](const trace::Span& s) { return s.name == "parallel_for"; });
  EXPECT_EQ(it->floor, trace::Floor::Kernels);
  ASSERT_NE(it->find_arg("threads"), nullptr);
  EXPECT_EQ(*it->find_arg("threads"), trace::ArgValue{int64_t{4}});
}

// Note [Seats at the open job]: thousands of short loops back to back, so
// that workers take seats of one job while the caller closes it and opens the
// next; a worker late by a generation must never run a chunk of the wrong job,
// and no chunk may be lost or run twice.
TEST_F(Parallel, BackToBackLoopsNeverLoseOrRepeatAChunk) {
  set_num_threads(4);
  int failures = 0;
  for (int rep = 0; rep < 3000; ++rep) {
    const int64_t n = 4 + rep % 13;
    std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
    parallel_for(0, n, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) seen[size_t(i)].fetch_add(1, std::memory_order_relaxed);
    });
    for (auto& s : seen) failures += s.load() != 1;
  }
  EXPECT_EQ(failures, 0);
}

// Note [Seats at the open job]: a caller that finds another's job open runs
// its own loop alone; every index is still visited once.
TEST_F(Parallel, SeveralCallersAtOnceEachVisitEveryIndexOnce) {
  set_num_threads(3);
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      for (int rep = 0; rep < 50; ++rep) {
        const int64_t n = 1000 + 37 * c + rep;
        std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
        parallel_for(0, n, 50, [&](int64_t lo, int64_t hi) {
          for (int64_t i = lo; i < hi; ++i) seen[size_t(i)].fetch_add(1, std::memory_order_relaxed);
        });
        for (auto& s : seen)
          if (s.load() != 1) ++failures;
      }
    });
  for (auto& t : callers) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// [SECTION] The thread count -------------------------------------------------------------

TEST_F(Parallel, ThreadCountRoundTripsAndRejectsBadValues) {
  EXPECT_GE(get_num_threads(), 1);
  set_num_threads(3);
  EXPECT_EQ(get_num_threads(), 3);
  for (int bad : {0, -1, kernels::kMaxThreads + 1}) {
    try {
      set_num_threads(bad);
      ADD_FAILURE() << "set_num_threads(" << bad << ") accepted";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("set_num_threads(): expected a number of threads from 1 to"),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(get_num_threads(), 3) << "a refused value changes nothing";
  }
}

// [SECTION] Kernels: one thread against several ------------------------------------------

// Runs `make_result` with one thread and with four, demands the same bytes,
// and that the four-thread run did open a parallel region.
template <typename F>
void expect_same_bits(const char* what, F make_result) {
  set_num_threads(1);
  Tensor serial = make_result();
  set_num_threads(4);
  trace::start();
  Tensor parallel = make_result();
  trace::Trace t = trace::stop();
  EXPECT_GE(count_spans(t, "parallel_for"), 1) << what << " did not go parallel";
  ASSERT_EQ(serial.sizes(), parallel.sizes()) << what;
  ASSERT_EQ(serial.dtype(), parallel.dtype()) << what;
  ASSERT_TRUE(serial.is_contiguous() && parallel.is_contiguous()) << what;
  EXPECT_EQ(std::memcmp(serial.data_ptr(), parallel.data_ptr(), size_t(serial.numel()) * element_size(serial.dtype())),
            0)
      << what << ": one thread and four threads differ";
}

TEST_F(Parallel, MatmulSameBitsOnOneThreadAndMany) {
  std::mt19937_64 rng(5);
  for (ScalarType dt : {ScalarType::Float32, ScalarType::Float64, ScalarType::Int64}) {
    Tensor a = random_tensor({257, 129}, dt, rng), b = random_tensor({129, 65}, dt, rng);
    expect_same_bits("matmul 257x129 @ 129x65", [&] { return call(Op::matmul, a, b); });
    Tensor ba = random_tensor({4, 64, 96}, dt, rng), bb = random_tensor({4, 96, 80}, dt, rng);
    expect_same_bits("batched matmul 4x64x96 @ 4x96x80", [&] { return call(Op::matmul, ba, bb); });
  }
  // And the register rung's parallel result is the reference loop's, bit for
  // bit (the packed one's is within a bound: Note [Packed matmul]).
  Tensor a = random_tensor({257, 129}, ScalarType::Float32, rng),
         b = random_tensor({129, 65}, ScalarType::Float32, rng);
  kernels::MatmulRungGuard rung(DeviceType::CPU, "register");
  set_num_threads(4);
  Tensor fast = call(Op::matmul, a, b);
  kernels::VariantGuard ref(kernels::Variant::Reference);
  Tensor slow = call(Op::matmul, a, b);
  EXPECT_EQ(std::memcmp(fast.data_ptr(), slow.data_ptr(), size_t(fast.numel()) * sizeof(float)), 0);
}

TEST_F(Parallel, ElementwiseSameBitsOnOneThreadAndMany) {
  std::mt19937_64 rng(6);
  const int64_t n = int64_t(1) << 20;
  Tensor a = random_tensor({n}, ScalarType::Float32, rng), b = random_tensor({n}, ScalarType::Float32, rng);
  Tensor one = make({1}, ScalarType::Float32, {0.3});
  expect_same_bits("add of 1<<20", [&] { return call(Op::add, a, b, 0.7); });
  expect_same_bits("mul by a broadcast scalar", [&] { return call(Op::mul, a, one); });
  expect_same_bits("exp", [&] { return call(Op::exp, a); });
  expect_same_bits("tanh", [&] { return call(Op::tanh, a); });
  expect_same_bits("to float64", [&] { return call(Op::to, a, ScalarType::Float64); });
  expect_same_bits("clone", [&] { return call(Op::clone, a); });
  Tensor ia = random_tensor({n}, ScalarType::Int64, rng, -10, 10);
  expect_same_bits("int64 pow", [&] { return call(Op::pow, ia, make({1}, ScalarType::Int64, {3})); });
}

// A negative integer exponent in the last piece: no error (as PyTorch's
// powi, 3 ** -1 is 0), and each worker computes its piece as one thread would.
// (Errors raised inside a worker reach the caller: ExceptionsComeBackToTheCaller.)
TEST_F(Parallel, NegativeIntegerPowersInWorkersGivePowi) {
  set_num_threads(4);
  const int64_t n = int64_t(1) << 18;
  std::vector<double> vals(size_t(n), 2);
  vals.back() = -1;
  Tensor base = make({n}, ScalarType::Int64, std::vector<double>(size_t(n), 3));
  Tensor exps = make({n}, ScalarType::Int64, vals);
  std::vector<double> got = values(call(Op::pow, base, exps));
  EXPECT_EQ(got.front(), 9);
  EXPECT_EQ(got.back(), 0);
}

}  // namespace
}  // namespace descent
