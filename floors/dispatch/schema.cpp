// The schema parser: "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)".
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
    while (pos < text.size() && (std::isalnum((unsigned char)text[pos]) || text[pos] == '_' || text[pos] == '-' ||
                                 text[pos] == '.'))
      ++pos;
    if (start == pos) fail("expected a name");
    return std::string(text.substr(start, pos - start));
  }
};

struct TypeName { std::string_view name; ArgType type; };
constexpr TypeName kTypes[] = {
    // Longer names first where one is a prefix of another (ScalarType, Scalar).
    {"Tensor", ArgType::Tensor}, {"ScalarType", ArgType::ScalarType}, {"Scalar", ArgType::Scalar},
    {"int[]", ArgType::IntList}, {"int", ArgType::Int},               {"bool", ArgType::Bool},
    {"Device", ArgType::Device}, {"float", ArgType::Float},
};

IValue parse_default(Cursor& c, const SchemaArg& a) {
  std::string w = c.word();
  if (w == "None") {
    if (!a.optional) c.fail(str("argument '", a.name, "' defaults to None but its type is not optional"));
    return IValue();
  }
  if (w == "True" || w == "False") return IValue(w == "True");
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
  size_t dot = full.find('.');
  s.name = full.substr(0, dot);
  if (dot != std::string::npos) s.overload = full.substr(dot + 1);
  c.expect("(");
  bool kwarg_only = false;
  while (!c.eat(")")) {
    if (!s.args.empty() || kwarg_only) c.expect(",");
    if (c.eat("*")) {
      kwarg_only = true;
      continue;
    }
    SchemaArg a;
    c.skip_space();
    bool found = false;
    for (const TypeName& t : kTypes) {
      if (c.text.substr(c.pos, t.name.size()) == t.name) {
        a.type = t.type;
        c.pos += t.name.size();
        found = true;
        break;
      }
    }
    if (!found) c.fail("expected a type (Tensor, Scalar, int, int[], bool, float, ScalarType, Device)");
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
  if (c.eat("(")) {
    do {
      c.expect("Tensor");
      c.skip_space();
      bool named = c.pos < text.size() && text[c.pos] != ',' && text[c.pos] != ')';
      s.returns.push_back(named ? c.word() : "");
    } while (c.eat(","));
    c.expect(")");
  } else {
    c.expect("Tensor");
    s.returns.push_back("");
  }
  c.skip_space();
  if (c.pos != text.size()) c.fail("unexpected text after the returns");
  return s;
}

}  // namespace descent
