// The schema parser: "aten::max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)".
// See Note [Schema names and alias annotations] (schema.h).
#include "floors/dispatch/schema.h"

#include <cctype>
#include <cstdlib>

namespace descent {

namespace {

// A small cursor over the schema text; every error names the position.
struct Cursor {
  std::string_view text;
  size_t pos = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(str("bad schema '", text, "' at column ", pos, ": ", what));
  }
  void skip_space() {
    while (pos < text.size() && text[pos] == ' ') ++pos;
  }
  bool eat(std::string_view s) {
    skip_space();
    if (text.substr(pos, s.size()) == s) {
      pos += s.size();
      return true;
    }
    return false;
  }
  void expect(std::string_view s) {
    if (!eat(s)) fail(str("expected '", s, "'"));
  }
  std::string word() {
    skip_space();
    size_t start = pos;
    while (pos < text.size() &&
           (std::isalnum((unsigned char)text[pos]) || text[pos] == '_' || text[pos] == '-' || text[pos] == '.'))
      ++pos;
    if (start == pos) fail("expected a name");
    return std::string(text.substr(start, pos - start));
  }
};

struct TypeName {
  std::string_view name;
  ArgType type;
};
constexpr TypeName kTypes[] = {
    // Longer names first where one is a prefix of another (Tensor?[], Tensor[], Tensor; ScalarType, Scalar).
    {"Tensor?[]", ArgType::OptionalTensorList},
    {"Tensor[]", ArgType::TensorList},
    {"Tensor", ArgType::Tensor},
    {"ScalarType", ArgType::ScalarType},
    {"Scalar", ArgType::Scalar},
    {"int[]", ArgType::IntList},
    {"int", ArgType::Int},
    {"bool", ArgType::Bool},  // int[1]: see read_type
    {"Device", ArgType::Device},
    {"float", ArgType::Float},
};

// After "Tensor": an optional alias annotation "(a)", "(a!)" or "(a -> *)".
void parse_alias(Cursor& c, std::string* alias, bool* is_write, std::string* after) {
  if (c.pos >= c.text.size() || c.text[c.pos] != '(') return;  // no space allowed: "Tensor (" is not an alias
  ++c.pos;
  c.skip_space();
  size_t start = c.pos;
  while (c.pos < c.text.size() && std::isalpha((unsigned char)c.text[c.pos])) ++c.pos;
  if (start == c.pos) c.fail("expected an alias set name (Tensor(a))");
  *alias = std::string(c.text.substr(start, c.pos - start));
  *is_write = c.eat("!");
  if (c.eat("->")) {
    c.skip_space();
    if (!c.eat("*")) c.fail("expected '*' after '->' in an alias annotation");
    after->assign(1, '*');  // not = "*": GCC 12 warns wrongly about that (-Wrestrict, PR 105329)
  }
  c.expect(")");
}

// A type name at the cursor; int[N] (a list of N ints, N a hint) is an int[].
bool read_type(Cursor& c, ArgType* type) {
  c.skip_space();
  std::string_view rest = c.text.substr(c.pos);
  if (rest.substr(0, 4) == "int[") {
    size_t close = rest.find(']');
    bool digits = close != std::string_view::npos;
    for (size_t i = 4; digits && i < close; ++i) digits = std::isdigit((unsigned char)rest[i]);
    if (digits) {
      c.pos += close + 1;
      *type = ArgType::IntList;
      return true;
    }
  }
  for (const TypeName& t : kTypes) {
    if (rest.substr(0, t.name.size()) == t.name) {
      *type = t.type;
      c.pos += t.name.size();
      return true;
    }
  }
  return false;
}

IValue parse_default(Cursor& c, const SchemaArg& a) {
  std::string w = c.word();
  if (w == "None") {
    if (!a.optional) c.fail(str("argument '", a.name, "' defaults to None but its type is not optional"));
    return IValue();
  }
  if (w == "True" || w == "False") return IValue(w == "True");
  // The loss functions' `int reduction=Mean`: at::Reduction's values, as PyTorch's schema parser reads them.
  if (a.type == ArgType::Int && (w == "Mean" || w == "Sum")) return IValue(int64_t{w == "Mean" ? 1 : 2});
  char* end = nullptr;
  if (w.find_first_of(".e") == std::string::npos) {
    long long v = std::strtoll(w.c_str(), &end, 10);
    if (*end == 0) return IValue(int64_t(v));
  } else {
    double v = std::strtod(w.c_str(), &end);
    if (*end == 0) return IValue(v);
  }
  c.fail(str("cannot read default value '", w, "'"));
}

}  // namespace

std::string SchemaArg::type_str() const {
  for (const TypeName& t : kTypes)
    if (t.type == type) return std::string(t.name) + (optional ? "?" : "");
  return "?";
}

bool Schema::is_mutable() const {
  for (const SchemaArg& a : args)
    if (a.is_write) return true;
  return false;
}

bool Schema::is_view() const {
  for (const SchemaReturn& r : returns)
    if (!r.alias.empty() && !r.is_write) return true;
  return false;
}

int Schema::num_positional() const {
  int n = 0;
  for (const SchemaArg& a : args) n += a.kwarg_only ? 0 : 1;
  return n;
}

Schema parse_schema(std::string_view text) {
  Cursor c{text};
  Schema s;
  s.text = std::string(text);
  std::string full = c.word();
  if (c.text.substr(c.pos, 2) == "::") {  // "aten::add.Tensor"
    s.ns = full;
    c.pos += 2;
    full = c.word();
  }
  size_t dot = full.find('.');
  s.name = full.substr(0, dot);
  if (dot != std::string::npos) s.overload = full.substr(dot + 1);
  if (s.name.empty() || (dot != std::string::npos && s.overload.empty())) {
    c.pos -= full.size();  // the message points at the name
    c.fail(s.name.empty() ? "expected the op's name before its overload ('.')" : "expected an overload name after '.'");
  }
  c.expect("(");
  bool kwarg_only = false;
  while (!c.eat(")")) {
    if (!s.args.empty() || kwarg_only) c.expect(",");
    if (c.eat("*")) {
      kwarg_only = true;
      continue;
    }
    SchemaArg a;
    if (!read_type(c, &a.type))
      c.fail("expected a type (Tensor, Tensor[], Tensor?[], Scalar, int, int[], bool, float, ScalarType, Device)");
    if (a.type == ArgType::Tensor) parse_alias(c, &a.alias, &a.is_write, &a.alias_after);
    a.optional = c.eat("?");
    a.name = c.word();
    a.kwarg_only = kwarg_only;
    if (c.eat("=")) {
      a.has_default = true;
      a.default_value = parse_default(c, a);
    }
    s.args.push_back(std::move(a));
  }
  c.expect("->");
  auto one_return = [&](bool in_tuple) {
    SchemaReturn r;
    // A host value, no alias, no name: a read's one value (item's Scalar), or a
    // collective's Work handle (int: Note [Collectives are c10d ops], ops.h).
    if (!in_tuple && (c.eat("Scalar") || c.eat("int"))) {
      r.is_scalar = true;
      s.returns.push_back(std::move(r));
      return;
    }
    c.expect("Tensor");
    std::string after;
    parse_alias(c, &r.alias, &r.is_write, &after);
    c.skip_space();
    bool named = in_tuple && c.pos < text.size() && text[c.pos] != ',' && text[c.pos] != ')';
    if (named) r.name = c.word();
    s.returns.push_back(std::move(r));
  };
  if (c.eat("(")) {
    do one_return(true);
    while (c.eat(","));
    c.expect(")");
  } else {
    one_return(false);
  }
  c.skip_space();
  if (c.pos != text.size()) c.fail("unexpected text after the returns");
  return s;
}

}  // namespace descent
