// Floor 4: what the files of derivative formulas share (derivatives_*.cpp,
// Note [One derivative per op] in derivatives.cpp): the context a formula
// reads and writes, the table's ops it is written with, and each family's
// rows of the table. Internal to the floor.
#pragma once

#include <span>

#include "floors/autograd/derivatives.h"
#include "floors/dispatch/dispatcher.h"

namespace descent::autograd {

// What a formula reads (the node's saved values, the forward's arguments, its
// inputs' shapes) and where it sets each tensor input's gradient.
struct BackwardContext {
  FormulaNode& n;
  Tensor g;        // the gradient of the op's (first) result
  TensorList out;  // what the formula sets: the gradient of each tensor input

  int num_inputs() const { return int(n.tensor_inputs.size()); }
  bool needs(int k) const { return n.next_edges[k].valid(); }
  Tensor input(int k) const { return n.inputs_saved[k].unpack(&n); }  // a saved tensor input, k < kSavedInputs
  Tensor self() const { return input(0); }
  Tensor other() const { return input(1); }
  Tensor result() const { return n.result.unpack(&n); }
  Tensor result1() const { return n.result1.unpack(&n); }
  const IValue& arg(int i) const { return n.args[i]; }
  const DimVector& sizes(int k) const { return n.tensor_inputs[k].sizes; }
  ScalarType dtype(int k) const { return n.tensor_inputs[k].dtype; }
  Device device(int k) const { return n.tensor_inputs[k].device; }
};

// The ops the formulas are written with, through the dispatcher.
inline Tensor number(double v) { return scalar_tensor(Scalar(v)); }  // a wrapped number: keeps the tensor's dtype
inline Tensor mul(const Tensor& a, const Tensor& b) { return call(Op::mul, a, b); }
inline Tensor div(const Tensor& a, const Tensor& b) { return call(Op::div, a, b); }
inline Tensor sub(const Tensor& a, const Tensor& b) { return call(Op::sub, a, b); }
inline Tensor neg(const Tensor& a) { return call(Op::neg, a); }
inline Tensor as_dtype(const Tensor& a, ScalarType t) { return call(Op::_to_copy, a, t, IValue()); }
// On the device of the gradient they stand for: a sim:0 input gets sim:0 zeros.
inline Tensor zeros(const DimVector& sizes, ScalarType t, Device d) { return call(Op::zeros, sizes, t, d); }
inline Tensor expand(const Tensor& g, const DimVector& sizes) { return call(Op::expand, g, sizes); }

// A row reads { op, node, { input 0's gradient reads, input 1's, input 2's }, formula }.
constexpr uint8_t kNone = 0;

// Each family's rows, in its file; derivative_of joins them.
std::span<const Derivative> pointwise_derivatives();  // derivatives_pointwise.cpp
std::span<const Derivative> reduction_derivatives();  // derivatives_reductions.cpp
std::span<const Derivative> product_derivatives();    // derivatives_products.cpp
std::span<const Derivative> view_derivatives();       // derivatives_views.cpp
std::span<const Derivative> copy_derivatives();       // derivatives_copies.cpp
std::span<const Derivative> nn_derivatives();         // derivatives_nn.cpp

}  // namespace descent::autograd
