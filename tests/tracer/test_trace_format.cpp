// Tests of the exporters: Chrome JSON and descent's own text format.
//
// [SECTION] A minimal JSON validator
// [SECTION] Chrome JSON
// [SECTION] Random traces
// [SECTION] descent format: round trips
// [SECTION] descent format: malformed input
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>

#include "tracer/trace.h"

namespace descent::trace {
namespace {

// [SECTION] A minimal JSON validator ------------------------------------------------

// Recursive-descent check of RFC 8259 syntax (no semantics). Strings must be
// valid: no raw control bytes, only known escapes.
class JsonChecker {
 public:
  explicit JsonChecker(const std::string& s) : s_(s) {}
  bool valid() {
    ws();
    if (!value(0)) return false;
    ws();
    return i_ == s_.size();
  }

 private:
  static constexpr int kMaxDepth = 64;
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  bool literal(const char* w) {
    const size_t n = std::strlen(w);
    if (s_.compare(i_, n, w) != 0) return false;
    i_ += n;
    return true;
  }
  bool string() {
    if (!eat('"')) return false;
    while (i_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[i_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c != '\\') continue;
      if (i_ >= s_.size()) return false;
      const char e = s_[i_++];
      if (e == 'u') {
        for (int k = 0; k < 4; ++k, ++i_) {
          if (i_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_]))) return false;
        }
      } else if (!std::strchr("\"\\/bfnrt", e)) {
        return false;
      }
    }
    return false;
  }
  bool number() {
    const size_t start = i_;
    eat('-');
    if (!eat('0')) {
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) return false;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (eat('.')) {
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) return false;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    if (eat('e') || eat('E')) {
      if (!eat('+')) eat('-');
      if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) return false;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    return i_ > start;
  }
  bool value(int depth) {
    if (depth > kMaxDepth || i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{' || c == '[') {
      const char close = c == '{' ? '}' : ']';
      ++i_;
      ws();
      if (eat(close)) return true;
      do {
        ws();
        if (c == '{') {
          if (!string()) return false;
          ws();
          if (!eat(':')) return false;
          ws();
        }
        if (!value(depth + 1)) return false;
        ws();
      } while (eat(','));
      return eat(close);
    }
    if (c == '"') return string();
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    return number();
  }
  const std::string& s_;
  size_t i_ = 0;
};

bool valid_json(const std::string& s) { return JsonChecker(s).valid(); }

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

// [SECTION] Chrome JSON ---------------------------------------------------------------

TEST(ChromeJson, ValidatorSanity) {
  EXPECT_TRUE(valid_json(R"({"a":[1,-2.5e3,true,null,"x\u00e9\n"],"b":{}})"));
  EXPECT_FALSE(valid_json(R"({"a":[1,2})"));
  EXPECT_FALSE(valid_json("{\"a\":\"raw\ttab\"}"));
  EXPECT_FALSE(valid_json(R"({"a":01})"));
  EXPECT_FALSE(valid_json(R"({"a":"\q"})"));
}

TEST(ChromeJson, IsWellFormedAndHoldsTheEvents) {
  Trace t;
  t.span_cost_ns = 18.5;
  t.metadata["device"] = "sim:0 (simulated)";
  t.spans.push_back({1,
                     0,
                     Floor::Python,
                     "say \"hi\"\\ \n\t\x01 caf\xc3\xa9 \xff",
                     1'234'567,
                     1'240'000,
                     0,
                     {{"keyset", std::string("CPU")}, {"nan", std::nan("")}, {"big", int64_t{-9}}, {"ok", false}}});
  t.spans.push_back({2, 1, Floor::Kernels, "add", 1'235'000, 1'236'001, 0, {{"inf", -INFINITY}}});
  t.spans.push_back({3, 0, Floor::Device, "kernel", 5, 7, 1, {}});
  const std::string json = to_chrome_json(t);
  EXPECT_TRUE(valid_json(json)) << json;
  EXPECT_EQ(count(json, "\"ph\":\"X\""), 3u);
  EXPECT_EQ(count(json, "\"ph\":\"M\""), 3u);  // process + two threads
  EXPECT_NE(json.find("\"traceEvents\":["), std::string::npos);
  EXPECT_NE(json.find("\"displayTimeUnit\":\"ns\""), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"descent\""), std::string::npos);
  EXPECT_NE(json.find("\"ts\":1234.567,\"dur\":5.433"), std::string::npos) << json;
  EXPECT_NE(json.find("\"ts\":1235.000,\"dur\":1.001"), std::string::npos) << json;
  EXPECT_NE(json.find("\"cat\":\"kernels\""), std::string::npos);
  EXPECT_NE(json.find("\"floor\":5"), std::string::npos);
  EXPECT_NE(json.find("\"tid\":1"), std::string::npos);
  EXPECT_NE(json.find("say \\\"hi\\\"\\\\ \\n\\t\\u0001 caf\xc3\xa9 \\ufffd"), std::string::npos) << json;
  EXPECT_NE(json.find("\"device\":\"sim:0 (simulated)\""), std::string::npos);
}

TEST(ChromeJson, EmptyTraceAndFileSave) {
  EXPECT_TRUE(valid_json(to_chrome_json(Trace{})));
  const std::string path = ::testing::TempDir() + "descent_trace_test.json";
  Trace t;
  t.spans.push_back({1, 0, Floor::Python, "x", 0, 10, 0, {}});
  save_chrome_json(t, path);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string text(4096, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  std::fclose(f);
  std::remove(path.c_str());
  EXPECT_EQ(text, to_chrome_json(t));
}

// [SECTION] Random traces --------------------------------------------------------------

std::string random_bytes(std::mt19937_64& rng, size_t max_len) {
  std::string s(rng() % (max_len + 1), '\0');
  for (char& c : s) {
    switch (rng() % 4) {
      case 0:
        c = static_cast<char>(rng() % 256);
        break;  // any byte
      case 1:
        c = " \t\n\r\\\"x"[rng() % 7];
        break;  // the ones that need escaping
      default:
        c = static_cast<char>('a' + rng() % 26);
        break;
    }
  }
  return s;
}

double random_double(std::mt19937_64& rng) {
  static const double kSpecial[] = {0.0,
                                    -0.0,
                                    1.0,
                                    -1.5,
                                    0.1,
                                    std::numeric_limits<double>::max(),
                                    -std::numeric_limits<double>::max(),
                                    std::numeric_limits<double>::min(),
                                    std::numeric_limits<double>::denorm_min(),
                                    INFINITY,
                                    -INFINITY,
                                    1e300,
                                    -1e-300};
  if (rng() % 2) return kSpecial[rng() % std::size(kSpecial)];
  double d;
  do {
    const uint64_t bits = rng();
    std::memcpy(&d, &bits, sizeof d);
  } while (std::isnan(d));
  return d;
}

Trace random_trace(std::mt19937_64& rng) {
  Trace t;
  t.span_cost_ns = random_double(rng);
  for (size_t m = rng() % 4; m > 0; --m) t.metadata[random_bytes(rng, 12)] = random_bytes(rng, 20);
  const size_t n = rng() % 30;
  for (size_t i = 0; i < n; ++i) {
    Span s;
    s.id = i + 1 + (rng() % 2 ? 0 : (uint64_t{1} << 62));
    s.parent = rng() % 3 ? rng() % (i + 1) : rng();
    s.floor = static_cast<Floor>(rng() % kNumFloors);
    s.name = random_bytes(rng, 24);
    s.start_ns = static_cast<int64_t>(rng());
    s.end_ns = static_cast<int64_t>(rng());
    s.thread = static_cast<uint32_t>(rng());
    for (size_t a = rng() % 6; a > 0; --a) {
      ArgValue v;
      switch (rng() % 4) {
        case 0:
          v = static_cast<int64_t>(rng());
          break;
        case 1:
          v = random_double(rng);
          break;
        case 2:
          v = static_cast<bool>(rng() % 2);
          break;
        default:
          v = random_bytes(rng, 16);
          break;
      }
      s.args.push_back({random_bytes(rng, 8), v});
    }
    t.spans.push_back(std::move(s));
  }
  return t;
}

// Bitwise equality of the doubles (== calls -0 and 0 equal).
void expect_same_double_bits(const Trace& a, const Trace& b) {
  EXPECT_EQ(std::signbit(a.span_cost_ns), std::signbit(b.span_cost_ns));
  for (size_t i = 0; i < a.spans.size() && i < b.spans.size(); ++i) {
    for (size_t k = 0; k < a.spans[i].args.size() && k < b.spans[i].args.size(); ++k) {
      const auto* x = std::get_if<double>(&a.spans[i].args[k].value);
      const auto* y = std::get_if<double>(&b.spans[i].args[k].value);
      if (x && y) {
        EXPECT_EQ(std::memcmp(x, y, sizeof(double)), 0);
      }
    }
  }
}

// [SECTION] descent format: round trips -------------------------------------------------

TEST(DescentFormat, RandomTracesRoundTripExactly) {
  std::mt19937_64 rng(20240611);
  for (int round = 0; round < 300; ++round) {
    const Trace t = random_trace(rng);
    const std::string text = to_descent_format(t);
    const Trace back = from_descent_format(text);
    ASSERT_EQ(back, t) << "round " << round << "\n" << text;
    expect_same_double_bits(t, back);
    EXPECT_EQ(to_descent_format(back), text);
  }
}

TEST(DescentFormat, NanAndHeaderAndFiles) {
  Trace t;
  t.span_cost_ns = std::nan("");
  t.spans.push_back({7, 0, Floor::Device, "", -5, 5, 3, {{"", std::string()}, {"nan", -std::nan("")}}});
  const std::string text = to_descent_format(t);
  EXPECT_EQ(text.rfind("descent-trace 2\n", 0), 0u) << text;
  const Trace back = from_descent_format(text);
  EXPECT_TRUE(std::isnan(back.span_cost_ns));
  ASSERT_EQ(back.spans.size(), 1u);
  EXPECT_EQ(back.spans[0].name, "");
  EXPECT_TRUE(std::signbit(std::get<double>(back.spans[0].args[1].value)));

  const std::string path = ::testing::TempDir() + "descent_trace_test.dtrace";
  std::mt19937_64 rng(7);
  const Trace r = random_trace(rng);
  save(r, path);
  EXPECT_EQ(load(path), r);
  std::remove(path.c_str());
  try {
    (void)load(path);
    FAIL() << "loading a missing file must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

// [SECTION] descent format: malformed input -------------------------------------------------

const char* const kGood = "descent-trace 1\nmeta device cpu\nspan_cost 20.5\nspan 1 0 1 0 10 20 root 1 k i 3\nend 1\n";

struct Malformed {
  const char* text;
  int line;
  const char* what;
};

TEST(DescentFormat, MalformedInputNamesSourceLineAndProblem) {
  ASSERT_NO_THROW((void)from_descent_format(kGood));
  const Malformed cases[] = {
      {"", 1, "truncated"},
      {"chrome-trace 1\n", 1, "bad magic"},
      {"descent-trace 3\nspan_cost 0\nend 0\n", 1, "unknown version"},
      {"descent-trace 1\nspan_cost 1 2\nend 0\n", 2, "wrong field count"},
      {"descent-trace 1\nspan_cost zero\nend 0\n", 2, "bad number"},
      {"descent-trace 1\nspan_cost 0\nspan 1 0 1 0 10 20 root 1 k q 3\nend 1\n", 3, "unknown arg type"},
      {"descent-trace 1\nspan_cost 0\nspan 1 0 1 0 10 20 ro\\qt 0\nend 1\n", 3, "bad escape"},
      {"descent-trace 1\nspan_cost 0\nspan 1 0 1 0 10 20 a 0\nspan 1 0 1 0 10 20 b 0\nend 2\n", 4, "duplicate span id"},
      {"descent-trace 1\nspan_cost 0\nspan 1 0 42 0 10 20 a 0\nend 1\n", 3, "unknown floor"},
      {"descent-trace 1\nspan_cost 0\nspan 1 0 1 0 10 20 a 0\n", 4, "truncated"},
      {"descent-trace 1\nspan_cost 0\nspan 1 0 1 0 10 20 a 2 k i 1\nend 1\n", 3, "wrong field count"},
      {"descent-trace 1\nspan_cost 0\nspan 1 0 1 0 1x 20 a 0\nend 1\n", 3, "bad number"},
      {"descent-trace 1\nspan_cost 0\nspan 1 0 1 0 10 20 a\\x4 0\nend 1\n", 3, "bad escape"},
      {"descent-trace 1\nspan_cost 0\nend 1\n", 3, "'end' says 1"},
      {"descent-trace 1\nspan_cost 0\nend 0\nspan 1 0 1 0 10 20 a 0\n", 4, "after the 'end'"},
      {"descent-trace 1\nspan_cost 0\nwhat 1\nend 0\n", 3, "unknown line type"},
      {"descent-trace 1\nspan_cost  0\nend 0\n", 2, "empty field"},
      {"descent-trace 1\nspan 1 0 1 0 10 20 a 0\nend 1\n", 2, "before the 'span_cost'"},
      {"descent-trace 1\nspan_cost 0\nspan 0 0 1 0 10 20 a 0\nend 1\n", 3, "must be > 0"},
      {"descent-trace 1\nspan_cost 0\nspan 1 0 1 0 10 20 a 1 k b maybe\nend 1\n", 3, "bad bool"},
      {"descent-trace 1\nspan_cost 0\nspan 1 0 1 99999999999999999999 10 20 a 0\nend 1\n", 3, "bad number"},
  };
  for (const Malformed& c : cases) {
    try {
      (void)from_descent_format(c.text, "case.dtrace");
      ADD_FAILURE() << "accepted: " << c.text;
    } catch (const TraceFormatError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("case.dtrace:" + std::to_string(c.line) + ":"), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.what), std::string::npos) << msg;
    }
  }
}

TEST(DescentFormat, MutatedInputNeverCrashes) {
  std::mt19937_64 rng(99);
  const std::string base = to_descent_format(random_trace(rng)) + kGood;
  for (int round = 0; round < 3000; ++round) {
    std::string text = rng() % 2 ? base : std::string(kGood);
    for (int edits = 1 + rng() % 4; edits > 0 && !text.empty(); --edits) {
      const size_t at = rng() % text.size();
      switch (rng() % 4) {
        case 0:
          text[at] = static_cast<char>(rng() % 256);
          break;
        case 1:
          text.erase(at, 1 + rng() % 8);
          break;
        case 2:
          text.insert(at, 1, " \n\\\"0-x"[rng() % 7]);
          break;
        default:
          text.resize(at);
          break;
      }
    }
    try {
      (void)from_descent_format(text, "fuzz");
    } catch (const TraceFormatError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("fuzz:", 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace descent::trace
