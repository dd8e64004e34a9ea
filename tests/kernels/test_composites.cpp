// Tests for the composite kernels (floors/kernels/composites.cpp, Note
// [Composite ops decompose]) and for the op table's declared kernels
// (Note [One op table], check_declared_kernels in library.h).
//
// [SECTION] Reading a trace
// [SECTION] matmul: it decomposes as at::native::matmul
// [SECTION] contiguous, to and reshape
// [SECTION] Declared kernels
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "floors/dispatch/library.h"
#include "floors/kernels/kernels.h"
#include "kernel_test_util.h"
#include "tracer/trace.h"
#include "tracer/tracer.h"

namespace descent {
namespace {

using testing_util::make;
using testing_util::values;

// [SECTION] Reading a trace ---------------------------------------------------------

// The dispatch spans of one call, each with the dispatch spans directly below it.
struct Calls {
  trace::Trace t;
  const trace::Span* find(const std::string& name) const {
    for (const trace::Span& s : t.spans)
      if (s.floor == trace::Floor::Dispatch && s.name == name) return &s;
    return nullptr;
  }
  // The nearest dispatch span above `s` (0 for none).
  uint64_t dispatch_parent(const trace::Span& s) const {
    uint64_t p = s.parent;
    while (p != 0) {
      const trace::Span* up = nullptr;
      for (const trace::Span& c : t.spans)
        if (c.id == p) up = &c;
      if (up == nullptr) return 0;
      if (up->floor == trace::Floor::Dispatch) return up->id;
      p = up->parent;
    }
    return 0;
  }
  // The ops `name` called through the dispatcher, in order ("aten::mm", ...).
  std::vector<std::string> children(const std::string& name) const {
    const trace::Span* top = find(name);
    std::vector<std::string> out;
    if (top == nullptr) return {"<no " + name + " span>"};
    for (const trace::Span& s : t.spans)
      if (s.floor == trace::Floor::Dispatch && s.id != top->id && dispatch_parent(s) == top->id) out.push_back(s.name);
    return out;
  }
  std::string arg(const std::string& name, const std::string& key) const {
    const trace::Span* s = find(name);
    if (s == nullptr) return "";
    for (const trace::SpanArg& a : s->args)
      if (a.key == key && std::holds_alternative<std::string>(a.value)) return std::get<std::string>(a.value);
    return "";
  }
};

template <typename F>
Calls traced(F&& f) {
  trace::start();
  f();
  return Calls{trace::stop()};
}

using Names = std::vector<std::string>;

Tensor iota(const DimVector& sizes, ScalarType dt = ScalarType::Float32) {
  std::vector<double> v(size_t(numel_of(sizes)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = double(i % 7) - 3;
  return make(sizes, dt, v);
}

// [SECTION] matmul ----------------------------------------------------------------

TEST(Composites, MatmulDecomposesAsAtNativeMatmul) {
  struct Case {
    DimVector a, b;
    Names calls;  // what aten::matmul calls, in order
  };
  const Case cases[] = {
      {{7}, {7}, {"aten::dot"}},
      {{3, 7}, {7}, {"aten::mv"}},
      {{7}, {7, 4}, {"aten::unsqueeze", "aten::mm", "aten::_unsafe_view"}},
      {{3, 7}, {7, 4}, {"aten::mm"}},
      // >= 3-D @ 1-D or 2-D folds the batch into the rows: one mv or mm
      {{2, 3, 4}, {4, 5}, {"aten::reshape", "aten::mm", "aten::_unsafe_view"}},
      {{2, 3, 4}, {4}, {"aten::reshape", "aten::mv", "aten::_unsafe_view"}},
      // batched: expand to the broadcast batch, reshape to 3-D, bmm
      {{2, 1, 3, 4},
       {5, 4, 2},
       {"aten::expand", "aten::reshape", "aten::expand", "aten::reshape", "aten::bmm", "aten::_unsafe_view"}},
      {{4},
       {2, 4, 5},
       {"aten::expand", "aten::reshape", "aten::expand", "aten::reshape", "aten::bmm", "aten::_unsafe_view"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.a.str() + " @ " + c.b.str());
    Tensor out;
    Calls calls = traced([&] { out = call(Op::matmul, iota(c.a), iota(c.b)); });
    EXPECT_EQ(calls.children("aten::matmul"), c.calls);
    EXPECT_FALSE(out.is_view()) << "matmul's result is a fresh tensor, not a view";
  }
  // The composite runs at AutogradCPU, its slot above autograd; mm, an op
  // with a derivative, runs its own Autograd kernel, which redispatches to CPU.
  Calls calls = traced([&] { call(Op::matmul, iota({3, 7}), iota({7, 4})); });
  EXPECT_EQ(calls.arg("aten::matmul", "kernel"), "AutogradCPU");
  EXPECT_EQ(calls.arg("aten::mm", "kernel"), "AutogradCPU");
  EXPECT_EQ(calls.children("aten::mm"), Names{"aten::mm"}) << "the redispatch below autograd";
  // An expanded operand is not viewable as 3-D: reshape copies it.
  calls = traced([&] { call(Op::matmul, iota({2, 1, 3, 4}), iota({5, 4, 2})); });
  EXPECT_EQ(calls.children("aten::reshape"), (Names{"aten::clone", "aten::_unsafe_view"}));
}

TEST(Composites, MatmulGivesThePartsResults) {
  Tensor a = iota({2, 3, 4}), b = iota({4, 5});
  Tensor folded = call(Op::matmul, a, b);
  Tensor by_bmm = call(Op::bmm, a, call(Op::expand, b, DimVector{2, 4, 5}));
  EXPECT_EQ(folded.sizes(), (DimVector{2, 3, 5}));
  EXPECT_EQ(values(folded), values(by_bmm));
  Tensor v = iota({7}), m = iota({7, 4});
  EXPECT_EQ(values(call(Op::matmul, v, m)), values(call(Op::mv, call(Op::transpose, m, 0, 1), v)));
  EXPECT_EQ(call(Op::matmul, v, v).dim(), 0);
  EXPECT_EQ(values(call(Op::matmul, v, v)), values(call(Op::dot, v, v)));
}

TEST(Composites, ProductErrorsArePyTorchs) {
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  Tensor m23 = iota({2, 3});
  EXPECT_EQ(message([&] { call(Op::matmul, m23, m23); }), "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)");
  EXPECT_EQ(message([&] { call(Op::matmul, make({}, ScalarType::Float32, {1}), iota({1})); }),
            "both arguments to matmul need to be at least 1D, but they are 0D and 1D");
  EXPECT_EQ(message([&] { call(Op::dot, m23, m23); }), "1D tensors expected, but got 2D and 2D tensors");
  EXPECT_EQ(message([&] { call(Op::matmul, iota({3}), iota({4})); }),
            "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements, but got "
            "3 and 4 elements respectively");
  EXPECT_EQ(message([&] { call(Op::mv, m23, iota({4})); }), "size mismatch, got input (2), mat (2x3), vec (4)");
  // Note [matmul names the shapes it was given]: one 1-D operand, the shapes as given.
  EXPECT_EQ(message([&] { call(Op::matmul, m23, iota({4})); }),
            "matmul(): shapes [2, 3] and [4] cannot be multiplied (3 != 4)");
  EXPECT_EQ(message([&] {
              call(Op::matmul, iota({4}), iota({2, 3, 5}));
            }),
            "matmul(): shapes [4] and [2, 3, 5] cannot be multiplied (4 != 3)");
  // Two dtypes are refused, in each product's words.
  Tensor i23 = make({2, 3}, ScalarType::Int64, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(message([&] {
              call(Op::matmul, i23, iota({3, 2}));
            }),
            "expected m1 and m2 to have the same dtype, but got: long int != float");
  EXPECT_EQ(message([&] {
              call(Op::dot, iota({2}), make({2}, ScalarType::Float64, {1, 2}));
            }),
            "dot : expected both vectors to have same dtype, but found Float and Double");
  EXPECT_EQ(message([&] { call(Op::mv, i23, iota({3})); }), "expected scalar type Long but found Float");
  EXPECT_EQ(message([&] {
              call(Op::bmm, iota({1, 2, 3}), make({1, 3, 1}, ScalarType::Float64, {1, 2, 3}));
            }),
            "expected scalar type Float but found Double");
  EXPECT_EQ(message([&] {
              call(Op::bmm, iota({2, 2, 3}), iota({3, 3, 2}));
            }),
            "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [3, 3].");
  EXPECT_EQ(message([&] {
              call(Op::matmul, iota({2, 2, 3}), iota({2, 2, 3}));
            }),
            "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 2].");
  EXPECT_EQ(message([&] { call(Op::mm, iota({3}), m23); }), "self must be a matrix");
}

// [SECTION] contiguous, to and reshape -------------------------------------------------

TEST(Composites, ContiguousClonesOnlyWhenItMust) {
  Tensor x = iota({4, 6});
  Tensor same;
  Calls calls = traced([&] { same = call(Op::contiguous, x); });
  EXPECT_TRUE(same.is_same(x));
  EXPECT_EQ(calls.children("aten::contiguous"), Names{});
  Tensor t = call(Op::transpose, x, 0, 1), c;
  calls = traced([&] { c = call(Op::contiguous, t); });
  EXPECT_EQ(calls.children("aten::contiguous"), Names{"aten::clone"});
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(values(c), values(t));
}

TEST(Composites, ToCopiesOnlyWhenItMust) {
  Tensor x = iota({2, 3});
  Tensor r;
  Calls calls = traced([&] { r = call(Op::to, x, ScalarType::Float32); });
  EXPECT_TRUE(r.is_same(x)) << "same dtype, copy=False: self";
  EXPECT_EQ(calls.children("aten::to"), Names{});
  calls = traced([&] { r = call(Op::to, x, ScalarType::Float64); });
  EXPECT_EQ(calls.children("aten::to"), Names{"aten::_to_copy"});
  EXPECT_EQ(r.dtype(), ScalarType::Float64);
  calls = traced([&] { r = call(Op::to, x, IValue(), IValue(), true); });
  EXPECT_EQ(calls.children("aten::to"), Names{"aten::_to_copy"}) << "copy=True always copies";
  EXPECT_FALSE(r.is_same(x));
  EXPECT_EQ(values(r), values(x));
}

TEST(Composites, ReshapeViewsWhenStridesAllowElseClones) {
  Tensor x = iota({4, 6});
  Tensor r;
  Calls calls = traced([&] { r = call(Op::reshape, x, DimVector{3, -1}); });
  EXPECT_EQ(calls.children("aten::reshape"), Names{"aten::view"});
  EXPECT_TRUE(r.is_view() && r.sizes() == (DimVector{3, 8}));
  Tensor t = call(Op::transpose, x, 0, 1);
  calls = traced([&] { r = call(Op::reshape, t, DimVector{-1}); });
  EXPECT_EQ(calls.children("aten::reshape"), (Names{"aten::clone", "aten::_unsafe_view"}));
  EXPECT_FALSE(r.is_view()) << "a reshape that copies is no view (PyTorch's _unsafe_view)";
  EXPECT_EQ(values(r), values(t));
}

// [SECTION] Declared kernels ---------------------------------------------------------------

std::string declared_error(const OpEntry& e, const char* dispatch) {
  try {
    check_declared_kernels(e, dispatch);
  } catch (const Error& err) {
    return err.what();
  }
  return "";
}

TEST(DeclaredKernels, TheRealTableKeepsItsPromises) {
  EXPECT_NO_THROW(check_declared_kernels());
  EXPECT_STREQ(op_entry(Op::matmul).dispatch, "CompositeImplicitAutograd");
  EXPECT_STREQ(op_entry(Op::mm).dispatch, "CPU, Sim, CUDA");
  EXPECT_STREQ(op_entry(Op::ones).dispatch, "BackendSelect, CPU, Sim, CUDA");
  EXPECT_EQ(declared_keys("BackendSelect, CPU"),
            (std::vector<DispatchKey>{DispatchKey::BackendSelect, DispatchKey::CPU}));
  EXPECT_THROW(declared_keys("CPU, Cpu"), ValueError);
}

TEST(DeclaredKernels, AMissingDeclaredKernelIsAnErrorNamingOpAndKey) {
  // A copy of mm's entry without its CPU kernel: what a forgotten m.impl() would leave.
  OpEntry mm = op_entry(Op::mm);
  EXPECT_EQ(declared_error(mm, "CPU"), "");
  mm.own_kernels[runtime_slot(DispatchKey::CPU)] = nullptr;
  std::string err = declared_error(mm, "CPU");
  EXPECT_NE(err.find("'aten::mm'"), std::string::npos) << err;
  EXPECT_NE(err.find("kernel for CPU"), std::string::npos) << err;
  // A key declared and never registered: mm has no BackendSelect kernel.
  err = declared_error(op_entry(Op::mm), "BackendSelect, CPU");
  EXPECT_NE(err.find("BackendSelect"), std::string::npos) << err;
  // A composite is checked at its CPU-backend slots: CPU and AutogradCPU.
  OpEntry matmul = op_entry(Op::matmul);
  EXPECT_EQ(declared_error(matmul, "CompositeImplicitAutograd"), "");
  matmul.own_kernels[runtime_slot(DispatchKey::AutogradCPU)] = nullptr;
  err = declared_error(matmul, "CompositeImplicitAutograd");
  EXPECT_NE(err.find("'aten::matmul' declares a kernel for CompositeImplicitAutograd"), std::string::npos) << err;
  EXPECT_NE(err.find("at AutogradCPU"), std::string::npos) << err;
  // The old CPU kernel of matmul is gone: declaring CPU alone is not what the table says,
  // but the composite's kernel fills the CPU slot, so the check holds for it too.
  EXPECT_EQ(op_entry(Op::matmul).own_kernels[runtime_slot(DispatchKey::CPU)],
            op_entry(Op::matmul).own_kernels[runtime_slot(DispatchKey::AutogradCPU)]);
}

}  // namespace
}  // namespace descent
