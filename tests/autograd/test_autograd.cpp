// Floor 4 from C++: the Autograd kernels record PyTorch's nodes through both
// calling conventions, the engine walks them, and the errors are PyTorch's.
// (The Python suite, tests/python/test_autograd.py, checks every op's
// gradient against finite differences.)
#include <gtest/gtest.h>

#include "floors/autograd/engine.h"
#include "floors/dispatch/unboxed.h"
#include "tests/kernels/kernel_test_util.h"
#include "tracer/trace.h"

namespace descent {
namespace {

using autograd::TensorList;
using testing_util::make;
using testing_util::values;

Tensor leaf(const std::vector<double>& v) {
  Tensor t = make({int64_t(v.size())}, ScalarType::Float32, v);
  autograd::set_requires_grad(t, true);
  return t;
}

TEST(Autograd, RecordsPyTorchsNodeOnlyWhenAnInputRequiresGrad) {
  const Tensor x = leaf({1, 2, 3}), c = make({3}, ScalarType::Float32, {1, 1, 1});
  EXPECT_FALSE(autograd::grad_fn(call(Op::add, c, c))) << "nothing requires grad: no node";
  const Tensor y = call(Op::mul, x, c);
  ASSERT_TRUE(autograd::grad_fn(y));
  const autograd::Node& n = *autograd::grad_fn(y);
  EXPECT_STREQ(n.name, "MulBackward0");
  ASSERT_EQ(n.next_edges.size(), 2u);
  EXPECT_STREQ(n.next_edges[0].fn->name, "AccumulateGrad");
  EXPECT_FALSE(n.next_edges[1].valid()) << "c does not require grad: None";
  EXPECT_EQ(n.saved_names(), "other") << "only what x's gradient needs is saved";
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(call(Op::mul, x, c).requires_grad());
  }
  {
    InferenceMode inference;
    EXPECT_FALSE(call(Op::mul, x, c).requires_grad());
  }
}

TEST(Autograd, TheTypedCallRecordsTheSameNodeAndStaysUnboxedWithoutOne) {
  using Sig = Tensor(const Tensor&, const Tensor&, const Scalar&);
  const Tensor x = leaf({1, 2}), c = make({2}, ScalarType::Float32, {5, 5});
  const Tensor y = TypedOp<Sig>(Op::add).call(x, c, Scalar(int64_t{2}));
  ASSERT_TRUE(autograd::grad_fn(y));
  EXPECT_STREQ(autograd::grad_fn(y)->name, "AddBackward0");
  autograd::backward({call(Op::sum, y, IValue())}, {Tensor()}, {});
  EXPECT_EQ(values(autograd::meta(x)->grad), (std::vector<double>{1, 1}));
  trace::start();
  TypedOp<Sig>(Op::add).call(c, c, Scalar(int64_t{1}));
  const trace::Trace t = trace::stop();
  int unboxed = 0;
  for (const trace::Span& s : t.spans)
    if (const trace::ArgValue* v = s.find_arg("convention"); v && std::get<std::string>(*v) == "unboxed") ++unboxed;
  EXPECT_EQ(unboxed, 2) << "the Autograd kernel's check and its redispatch, both typed";
}

TEST(Autograd, BackwardSumsGradientsAndReducesBroadcasts) {
  const Tensor x = leaf({1, 2, 3});
  const Tensor w = make({2, 3}, ScalarType::Float32, {1, 2, 3, 4, 5, 6});
  autograd::set_requires_grad(w, true);
  // loss = sum((w * x) + x): dloss/dx = sum over rows of w, + 2 (x broadcast twice)
  const Tensor loss = call(Op::sum, call(Op::add, call(Op::mul, w, x), x), IValue());
  autograd::backward({loss}, {Tensor()}, {});
  EXPECT_EQ(values(autograd::meta(x)->grad), (std::vector<double>{7, 9, 11}));
  EXPECT_EQ(values(autograd::meta(w)->grad), (std::vector<double>{1, 2, 3, 1, 2, 3}));
}

TEST(Autograd, ErrorsArePyTorchs) {
  const Tensor x = leaf({1, 2});
  EXPECT_THROW(call(Op::add_, x, x), Error) << "in place on a leaf that requires grad";
  const Tensor y = call(Op::exp, x);
  const Tensor z = call(Op::sum, call(Op::mul, y, y), IValue());
  call(Op::add_, y, make({2}, ScalarType::Float32, {1, 1}));
  try {
    autograd::backward({z}, {Tensor()}, {});
    FAIL() << "a saved tensor was written in place";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("which is output 0 of ExpBackward0, is at version 1; expected version 0"),
              std::string::npos)
        << e.what();
  }
  const Tensor a = call(Op::sum, call(Op::mul, x, x), IValue());
  autograd::backward({a}, {Tensor()}, {});
  EXPECT_THROW(autograd::backward({a}, {Tensor()}, {}), Error) << "the graph was freed";
  EXPECT_THROW(autograd::backward({call(Op::mul, x, x)}, {Tensor()}, {}), Error) << "not a scalar";
}

TEST(Autograd, GradWithCreateGraphGivesSecondDerivatives) {
  Tensor x = make({2}, ScalarType::Float64, {2, -1});
  autograd::set_requires_grad(x, true);
  const Tensor cube = call(Op::sum, call(Op::pow_scalar, x, Scalar(int64_t{3})), IValue());
  autograd::BackwardOptions opts;
  opts.create_graph = true;
  const TensorList g = autograd::grad({cube}, {Tensor()}, {x}, opts);
  EXPECT_EQ(values(g[0]), (std::vector<double>{12, 3}));
  const TensorList gg = autograd::grad({call(Op::sum, g[0], IValue())}, {Tensor()}, {x}, {});
  EXPECT_EQ(values(gg[0]), (std::vector<double>{12, -6}));
}

// Note [Freeing a graph without recursion] (node.cpp): a graph a million
// nodes long, or tens of thousands wide, is freed with the stack one
// destructor deep. Before the work list, dropping the chain below recursed
// once per node and overflowed the stack (SIGSEGV).
TEST(Autograd, FreesAMillionNodeChainWithoutRecursion) {
  const Tensor x = leaf({1}), one = make({1}, ScalarType::Float32, {1});
  Tensor total = x;
  for (int i = 0; i < 1000000; ++i) total = call(Op::add, total, one);  // `total = total + loss`
  EXPECT_STREQ(autograd::grad_fn(total)->name, "AddBackward0");
  EXPECT_EQ(autograd::grad_fn(total)->use_count(), 1) << "only `total` holds the chain";
  total = Tensor();  // `total = 0`: the whole chain goes here
  SUCCEED();
}

TEST(Autograd, FreesAChainHeldThroughSavedTensorsWithoutRecursion) {
  // mul saves its inputs: each node keeps the previous result, and with it
  // the previous node, through a saved tensor as well as through its edge.
  const Tensor x = leaf({1}), w = leaf({1});
  Tensor y = x;
  for (int i = 0; i < 300000; ++i) y = call(Op::mul, y, w);
  EXPECT_STREQ(autograd::grad_fn(y)->name, "MulBackward0");
  y = Tensor();
  SUCCEED();
}

TEST(Autograd, FreesAWideGraphAndRunsBackwardThroughALongOne) {
  OptionalTensorList parts;
  const Tensor x = leaf({2}), two = make({1}, ScalarType::Float32, {2});
  for (int i = 0; i < 20000; ++i) parts.push_back(call(Op::mul, call(Op::add, x, two), two));
  Tensor wide = call(Op::cat, parts, int64_t{0});
  parts = OptionalTensorList();
  EXPECT_EQ(autograd::grad_fn(wide)->next_edges.size(), 20000u);
  wide = Tensor();
  // The engine walks a long chain with a work queue too: d(x + 1 + ... + 1)/dx = 1.
  Tensor t = x;
  for (int i = 0; i < 200000; ++i) t = call(Op::add, t, two);
  autograd::backward({t}, {Tensor()}, {});
  EXPECT_EQ(values(autograd::meta(x)->grad), (std::vector<double>{1}));
}

}  // namespace
}  // namespace descent
