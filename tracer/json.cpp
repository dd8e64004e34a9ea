// A small JSON reader for the trace loaders (see json.h).
//
// [SECTION] Values
// [SECTION] The parser: errors and scanning
// [SECTION] The parser: strings
// [SECTION] The parser: numbers
// [SECTION] The parser: values, arrays, objects
// [SECTION] Entry point
//
// Note [JSON reader limits]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// The reader takes strict RFC 8259 JSON: no comments, no trailing commas, no
// NaN or Infinity, no single quotes, nothing but whitespace after the value.
// It is meant for files a user hands us, possibly hostile, so:
//   - nesting deeper than kMaxDepth (512) arrays or objects is an error, not a
//     stack overflow (the parser recurses once per level);
//   - a truncated text, a raw control byte in a string, an unknown escape, a
//     \u escape without four hex digits, or an unpaired UTF-16 surrogate is an
//     error; a surrogate pair becomes one 4-byte UTF-8 sequence;
//   - a number too large for a double (1e400) is an error; one too small
//     (1e-400) reads as 0. Integers that fit int64 are also kept exactly
//     (is_integer()), so 2^53 + 1 survives;
//   - other bytes of strings are copied as they are: invalid UTF-8 is not an
//     error here (the Chrome exporter replaces it when it writes JSON);
//   - duplicate keys are kept; find() returns the last, like Python's json.
// Every error is a trace::TraceFormatError "<source>:<line>:<column>: <what>";
// line and column (in bytes, from 1) are only computed when there is an error.
#include "tracer/json.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "tracer/trace.h"

namespace descent::json {

// [SECTION] Values --------------------------------------------------------------

const char* type_name(Type t) {
  switch (t) {
    case Type::Null:
      return "null";
    case Type::Bool:
      return "bool";
    case Type::Number:
      return "number";
    case Type::String:
      return "string";
    case Type::Array:
      return "array";
    case Type::Object:
      return "object";
  }
  return "?";
}

double Value::as_double() const { return integer_ ? static_cast<double>(u_.integer) : u_.number; }

const Value* Value::find(std::string_view k) const {
  for (size_t i = size_; i-- > 0;) {
    if (key(i) == k) return &value(i);
  }
  return nullptr;
}

// [SECTION] The parser: errors and scanning ----------------------------------------

namespace {
constexpr int kMaxDepth = 512;          // arrays and objects inside each other
constexpr size_t kMaxQuotedBytes = 20;  // of the text around an error
}  // namespace

class Parser {
 public:
  Parser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  Document run() {
    // The document keeps a copy of the text and unescapes each string where
    // it lies (unescaping never makes a string longer): most strings have no
    // escape and are not moved at all.
    doc_.strings_ = std::make_unique_for_overwrite<char[]>(text_.size() + 1);
    std::memcpy(doc_.strings_.get(), text_.data(), text_.size());
    begin_ = p_ = doc_.strings_.get();
    end_ = begin_ + text_.size();
    doc_.values_.reserve(text_.size() / 16);
    skip_ws();
    if (p_ == end())
      fail(text_.empty() ? "empty text: expected a JSON value" : "only whitespace: expected a JSON value");
    value(0);
    skip_ws();
    if (p_ != end()) fail("unexpected " + describe_here() + " after the JSON value");
    doc_.values_.push_back(scratch_.back());
    // Containers were recorded as indices into values_, which has grown since.
    Value* base = doc_.values_.data();
    for (Value& v : doc_.values_) {
      if (v.type_ == Type::Array || v.type_ == Type::Object) v.u_.items = base + v.u_.offset;
    }
    return std::move(doc_);
  }

 private:
  const char* end() const { return end_; }

  [[noreturn]] void fail(const std::string& what) const { fail_at(p_, what); }
  [[noreturn]] void fail_at(const char* at_copy, const std::string& what) const {
    // Counted in the caller's text: strings in the copy may have been unescaped.
    const char* at = text_.data() + (at_copy - begin_);
    size_t line = 1;
    const char* line_start = text_.data();
    for (const char* q = text_.data(); q < at; ++q) {
      if (*q == '\n') ++line, line_start = q + 1;
    }
    throw trace::TraceFormatError(source_ + ":" + std::to_string(line) + ":" + std::to_string(at - line_start + 1) +
                                  ": " + what);
  }

  // "end of the text" or "'abc...'" (printable bytes only), for messages.
  std::string describe_here() const {
    if (p_ == end()) return "end of the text";
    std::string q = "'";
    for (const char* c = p_; c < end() && c < p_ + kMaxQuotedBytes; ++c) {
      const auto b = static_cast<unsigned char>(*c);
      q += (b < 0x20 || b >= 0x7f) ? '?' : static_cast<char>(b);
    }
    return q + (end() - p_ > static_cast<std::ptrdiff_t>(kMaxQuotedBytes) ? "...'" : "'");
  }

  void skip_ws() {
    while (p_ < end() && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  void expect(char c, const char* where) {
    if (p_ == end() || *p_ != c) fail(std::string("expected '") + c + "' " + where + ", found " + describe_here());
    ++p_;
  }

  // [SECTION] The parser: strings ------------------------------------------------

  static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // The four hex digits after "\u" (p_ is on the 'u').
  uint32_t hex4() {
    const char* at = p_ - 1;
    ++p_;
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k, ++p_) {
      const int d = p_ < end() ? hex_digit(*p_) : -1;
      if (d < 0) fail_at(at, "bad escape: '\\u' needs four hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
    }
    return v;
  }

  void put_utf8(uint32_t code) {
    if (code < 0x80) {
      *out_++ = static_cast<char>(code);
    } else if (code < 0x800) {
      *out_++ = static_cast<char>(0xc0 | (code >> 6));
      *out_++ = static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      *out_++ = static_cast<char>(0xe0 | (code >> 12));
      *out_++ = static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      *out_++ = static_cast<char>(0x80 | (code & 0x3f));
    } else {
      *out_++ = static_cast<char>(0xf0 | (code >> 18));
      *out_++ = static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      *out_++ = static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      *out_++ = static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  // A string literal (p_ on the opening quote), unescaped where it lies.
  Value string() {
    const char* open = p_++;
    char* const start = p_;
    out_ = start;
    while (true) {
      // The common case: a run of plain bytes, moved only after an escape.
      const char* run = p_;
      while (p_ < end() && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) ++p_;
      if (out_ != run) std::memmove(out_, run, static_cast<size_t>(p_ - run));
      out_ += p_ - run;
      if (p_ == end()) fail_at(open, "unterminated string (the text ends inside it)");
      if (*p_ == '"') break;
      if (*p_ != '\\') fail("raw control byte in a string (must be escaped as \\u00XX)");
      const char* esc = p_++;
      if (p_ == end()) fail_at(open, "unterminated string (the text ends inside it)");
      switch (*p_) {
        case '"':
          *out_++ = '"';
          ++p_;
          break;
        case '\\':
          *out_++ = '\\';
          ++p_;
          break;
        case '/':
          *out_++ = '/';
          ++p_;
          break;
        case 'b':
          *out_++ = '\b';
          ++p_;
          break;
        case 'f':
          *out_++ = '\f';
          ++p_;
          break;
        case 'n':
          *out_++ = '\n';
          ++p_;
          break;
        case 'r':
          *out_++ = '\r';
          ++p_;
          break;
        case 't':
          *out_++ = '\t';
          ++p_;
          break;
        case 'u': {
          uint32_t code = hex4();
          if (code >= 0xdc00 && code <= 0xdfff) fail_at(esc, "unpaired UTF-16 surrogate (a low surrogate first)");
          if (code >= 0xd800 && code <= 0xdbff) {
            if (end() - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') {
              fail_at(esc, "unpaired UTF-16 surrogate (a high surrogate without \\uDC00-\\uDFFF after it)");
            }
            ++p_;
            const uint32_t low = hex4();
            if (low < 0xdc00 || low > 0xdfff) {
              fail_at(esc, "unpaired UTF-16 surrogate (a high surrogate without \\uDC00-\\uDFFF after it)");
            }
            code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
          }
          put_utf8(code);
          break;
        }
        default: {
          const auto b = static_cast<unsigned char>(*p_);
          fail_at(esc, b >= 0x20 && b < 0x7f ? std::string("bad escape '\\") + *p_ + "'" : "bad escape");
        }
      }
    }
    ++p_;  // the closing quote
    const auto length = static_cast<size_t>(out_ - start);
    if (length > std::numeric_limits<uint32_t>::max()) fail_at(open, "string longer than 4 GiB");
    Value v;
    v.type_ = Type::String;
    v.size_ = static_cast<uint32_t>(length);
    v.u_.chars = start;
    return v;
  }

  // [SECTION] The parser: numbers -------------------------------------------------

  static bool is_digit(char c) { return c >= '0' && c <= '9'; }

  Value number() {
    const char* start = p_;
    if (*p_ == '-') ++p_;
    if (p_ == end() || !is_digit(*p_)) fail_at(start, "bad number: expected a digit after '-'");
    if (*p_ == '0') {
      ++p_;
      if (p_ < end() && is_digit(*p_)) fail_at(start, "bad number: a leading zero");
    } else {
      while (p_ < end() && is_digit(*p_)) ++p_;
    }
    bool integral = true;
    if (p_ < end() && *p_ == '.') {
      integral = false;
      ++p_;
      if (p_ == end() || !is_digit(*p_)) fail_at(start, "bad number: expected a digit after '.'");
      while (p_ < end() && is_digit(*p_)) ++p_;
    }
    if (p_ < end() && (*p_ == 'e' || *p_ == 'E')) {
      integral = false;
      ++p_;
      if (p_ < end() && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end() || !is_digit(*p_)) fail_at(start, "bad number: expected a digit in the exponent");
      while (p_ < end() && is_digit(*p_)) ++p_;
    }
    Value v;
    v.type_ = Type::Number;
    if (integral) {
      int64_t i = 0;
      const auto r = std::from_chars(start, p_, i);
      if (r.ec == std::errc() && r.ptr == p_) {
        v.integer_ = true;
        v.u_.integer = i;
        return v;
      }
    }
    double d = 0;
    const auto r = std::from_chars(start, p_, d);
    if (r.ec == std::errc::result_out_of_range) {
      // Too large, or too small: strtod tells which (HUGE_VAL against 0).
      const std::string copy(start, static_cast<const char*>(p_));
      d = std::strtod(copy.c_str(), nullptr);
      if (d == HUGE_VAL || d == -HUGE_VAL) fail_at(start, "number out of range for a double: " + copy.substr(0, 40));
    } else if (r.ec != std::errc() || r.ptr != p_) {
      fail_at(start, "bad number");  // not reached: the grammar was checked above
    }
    v.u_.number = d;
    return v;
  }

  // [SECTION] The parser: values, arrays, objects -----------------------------------

  void literal(const char* word, Value v) {
    const size_t n = std::strlen(word);
    if (static_cast<size_t>(end() - p_) < n || std::memcmp(p_, word, n) != 0) {
      fail("unexpected " + describe_here() + " (expected a JSON value)");
    }
    p_ += n;
    scratch_.push_back(v);
  }

  // Parses one value and pushes it on scratch_.
  void value(int depth) {
    if (p_ == end()) fail("unexpected end of the text (expected a JSON value)");
    switch (*p_) {
      case '{':
        container(depth, true);
        return;
      case '[':
        container(depth, false);
        return;
      case '"':
        scratch_.push_back(string());
        return;
      case 't': {
        Value v;
        v.type_ = Type::Bool;
        v.u_.boolean = true;
        literal("true", v);
        return;
      }
      case 'f': {
        Value v;
        v.type_ = Type::Bool;
        literal("false", v);
        return;
      }
      case 'n':
        literal("null", Value{});
        return;
      default:
        if (*p_ == '-' || is_digit(*p_)) {
          scratch_.push_back(number());
          return;
        }
        fail("unexpected " + describe_here() + " (expected a JSON value)");
    }
  }

  // An array or an object: its members go to scratch_ while it is read, then
  // move together to values_; the container itself is pushed on scratch_.
  void container(int depth, bool object) {
    if (depth >= kMaxDepth) {
      fail("nested too deeply: more than " + std::to_string(kMaxDepth) + " arrays or objects inside each other");
    }
    const char* open = p_++;
    const size_t mark = scratch_.size();
    const char close = object ? '}' : ']';
    const char* where = object ? "in an object" : "in an array";
    skip_ws();
    if (p_ < end() && *p_ == close) {
      ++p_;
    } else {
      while (true) {
        skip_ws();
        if (p_ == end())
          fail_at(open, std::string("unterminated ") + (object ? "object" : "array") + " (the text ends inside it)");
        if (object) {
          if (*p_ != '"') fail("expected a string key in an object, found " + describe_here());
          scratch_.push_back(string());
          skip_ws();
          expect(':', "after an object key");
          skip_ws();
        }
        value(depth + 1);
        skip_ws();
        if (p_ == end())
          fail_at(open, std::string("unterminated ") + (object ? "object" : "array") + " (the text ends inside it)");
        if (*p_ == close) {
          ++p_;
          break;
        }
        if (*p_ != ',') fail(std::string("expected ',' or '") + close + "' " + where + ", found " + describe_here());
        ++p_;
      }
    }
    const size_t count = (scratch_.size() - mark) / (object ? 2 : 1);
    if (count > std::numeric_limits<uint32_t>::max()) fail_at(open, "more than 2^32 elements in one array or object");
    Value v;
    v.type_ = object ? Type::Object : Type::Array;
    v.size_ = static_cast<uint32_t>(count);
    v.u_.offset = doc_.values_.size();
    doc_.values_.insert(doc_.values_.end(), scratch_.begin() + static_cast<std::ptrdiff_t>(mark), scratch_.end());
    scratch_.resize(mark);
    scratch_.push_back(v);
  }

  std::string_view text_;  // the caller's text, for error positions
  const std::string& source_;
  char* begin_ = nullptr;  // the document's copy of the text
  char* end_ = nullptr;
  char* p_ = nullptr;    // the next byte to read, in the copy
  char* out_ = nullptr;  // the next byte of the string being unescaped
  Document doc_;
  std::vector<Value> scratch_;  // members of the containers being read
};

// [SECTION] Entry point -----------------------------------------------------------

Document parse(std::string_view text, const std::string& source_name) { return Parser(text, source_name).run(); }

}  // namespace descent::json
