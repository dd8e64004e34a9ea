// A small JSON reader (RFC 8259) for the trace loaders: no third-party library.
//
// [SECTION] Values
// [SECTION] Documents and parsing
//
// parse() reads the whole text into a Document: a flat array of 16-byte
// Values (children of an array or object lie side by side) and a copy of the
// text in which every string is unescaped where it lies. A million-event Chrome trace is some
// twenty million values, so a Value is kept small and nothing is allocated per
// value. See Note [JSON reader limits] in json.cpp for what it refuses.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace descent::json {

// [SECTION] Values ------------------------------------------------------------

enum class Type : uint8_t { Null, Bool, Number, String, Array, Object };
const char* type_name(Type t);  // "null", "bool", "number", "string", "array", "object"

// One JSON value, owned by its Document (valid while the Document lives).
// An object holds 2 * size() values: key (a String), value, key, value ...
class Value {
 public:
  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::Null; }
  bool is_number() const { return type_ == Type::Number; }
  bool is_string() const { return type_ == Type::String; }
  bool is_array() const { return type_ == Type::Array; }
  bool is_object() const { return type_ == Type::Object; }

  bool as_bool() const { return u_.boolean; }                       // Bool only
  double as_double() const;                                         // Number only; integers converted
  bool is_integer() const { return integer_; }                      // Number written without '.' or exponent, in int64
  int64_t as_int() const { return u_.integer; }                     // when is_integer()
  std::string_view as_string() const { return {u_.chars, size_}; }  // String only

  size_t size() const { return size_; }                            // Array: elements; Object: members; String: bytes
  const Value& operator[](size_t i) const { return u_.items[i]; }  // Array element i
  std::string_view key(size_t i) const { return u_.items[2 * i].as_string(); }  // Object member i's key
  const Value& value(size_t i) const { return u_.items[2 * i + 1]; }            // Object member i's value
  const Value* find(std::string_view key) const;  // Object: the last member named `key`, or nullptr

 private:
  friend class Parser;
  Type type_ = Type::Null;
  bool integer_ = false;
  uint32_t size_ = 0;
  union {
    bool boolean;
    double number;
    int64_t integer;
    const char* chars;   // into the Document's string buffer
    const Value* items;  // into the Document's value array
    uint64_t offset;     // while parsing: index of chars or items
  } u_{};
};
static_assert(sizeof(Value) == 16, "a Value is two words: a trace holds millions");

// [SECTION] Documents and parsing ----------------------------------------------

// The parsed text. Movable, not copyable (values point into it).
class Document {
 public:
  Document() = default;
  Document(Document&&) = default;
  Document& operator=(Document&&) = default;
  Document(const Document&) = delete;
  Document& operator=(const Document&) = delete;
  const Value& root() const { return values_.empty() ? null_ : values_.back(); }

 private:
  friend class Parser;
  std::vector<Value> values_;        // the root last
  std::unique_ptr<char[]> strings_;  // the text, strings unescaped in place
  Value null_;
};

// Parses `text`; trace::TraceFormatError "<source>:<line>:<column>: <what>"
// for malformed input (see Note [JSON reader limits]).
Document parse(std::string_view text, const std::string& source_name);

}  // namespace descent::json
