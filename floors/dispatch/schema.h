// Schemas: "add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
// parsed into argument names, types, defaults and returns.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "floors/dispatch/ivalue.h"

namespace descent {

enum class ArgType : uint8_t { Tensor, Scalar, Int, Bool, IntList, ScalarType, Device, Float };

struct SchemaArg {
  std::string name;
  ArgType type = ArgType::Tensor;
  bool optional = false;      // "T?": None is accepted
  bool kwarg_only = false;    // declared after "*"
  bool has_default = false;
  IValue default_value;       // None for "=None"
  std::string type_str() const;  // "Tensor", "int[]?", ...
};

struct Schema {
  std::string name;           // "max" for "max.dim"
  std::string overload;       // "dim" for "max.dim", "" otherwise
  std::vector<SchemaArg> args;
  std::vector<std::string> returns;  // names ("values") or "" when unnamed
  std::string text;           // the schema as written in the op table

  int num_positional() const;  // arguments that may be given positionally
  std::string full_name() const { return overload.empty() ? name : name + "." + overload; }
};

// Parses a schema string; raises Error with the position and what was expected.
Schema parse_schema(std::string_view text);

}  // namespace descent
