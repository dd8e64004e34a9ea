// Schemas: "aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
// parsed into namespace, name, overload, argument names, types, alias
// annotations, defaults and returns. See Note [Schema names and alias annotations].
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "floors/dispatch/ivalue.h"

namespace descent {

// Note [Schema names and alias annotations]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A schema is written as in PyTorch's native_functions.yaml, with its
// namespace: "aten::max.dim(...)". Three names come out of it:
//   - the operator name, "aten::max.dim" (full_name()): what the dispatcher's
//     errors quote ("Could not run 'aten::add.Tensor' with arguments from ...");
//   - the profiler name, "aten::max" (qualified_name()): namespace and base
//     name, no overload, which is what PyTorch's profiler calls the span;
//   - the base name, "max" (name): the Python function, shared by all
//     overloads (descent.max takes both max and max.dim).
// An alias annotation says what a Tensor may share memory with:
//   Tensor(a) self   -> Tensor(a)    the result may be a view of self (view ops);
//   Tensor(a!) self  -> Tensor(a!)   self is written to and returned (in-place ops);
//   Tensor(a -> *)                   the value goes into a container (parsed, unused).
// The parser records the set ("a"), whether it is written ("!"), and the set
// after "->" ("*"); the kernels do not read them, the binding and autograd may.

// TensorList is aten's Tensor[] (cat's tensors), OptionalTensorList its
// Tensor?[]: a list of tensors each of which may be None (index's indices).
// Both arrive as one IValue holding an OptionalTensorList (ivalue.h).
enum class ArgType : uint8_t {
  Tensor,
  Scalar,
  Int,
  Bool,
  IntList,
  ScalarType,
  Device,
  Float,
  TensorList,
  OptionalTensorList
};

struct SchemaArg {
  std::string name;
  ArgType type = ArgType::Tensor;
  bool optional = false;    // "T?": None is accepted
  bool kwarg_only = false;  // declared after "*"
  bool has_default = false;
  IValue default_value;          // None for "=None"
  std::string alias;             // "a" for Tensor(a) and Tensor(a!), "" when not annotated
  bool is_write = false;         // Tensor(a!): the op writes into this argument
  std::string alias_after;       // "*" for Tensor(a -> *), "" otherwise
  std::string type_str() const;  // "Tensor", "int[]?", ...
};

struct SchemaReturn {
  bool is_scalar = false;  // "-> Scalar" (item, _local_scalar_dense); otherwise a Tensor
  std::string name;        // "values", or "" when unnamed
  std::string alias;       // "a" for -> Tensor(a) / Tensor(a!), "" otherwise
  bool is_write = false;
};

struct Schema {
  std::string ns;        // "aten" for "aten::max.dim", "" when none is written
  std::string name;      // "max" for "aten::max.dim": the Python name
  std::string overload;  // "dim" for "aten::max.dim", "" otherwise
  std::vector<SchemaArg> args;
  std::vector<SchemaReturn> returns;
  std::string text;  // the schema as written in the op table

  int num_positional() const;  // arguments that may be given positionally
  // "aten::max" (namespace and base name): the name PyTorch's profiler shows.
  std::string qualified_name() const { return ns.empty() ? name : ns + "::" + name; }
  // "aten::max.dim": the operator name, as PyTorch's OperatorName prints.
  std::string full_name() const { return overload.empty() ? qualified_name() : qualified_name() + "." + overload; }
  // Whether some argument is annotated as written to (Tensor(a!)): an in-place op.
  bool is_mutable() const;
  // Whether a result may alias an argument without writing it (Tensor(a)): a view op.
  bool is_view() const;
};

// Parses a schema string; raises Error with the position and what was expected.
Schema parse_schema(std::string_view text);

}  // namespace descent
