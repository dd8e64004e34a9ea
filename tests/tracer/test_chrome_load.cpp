// Tests of the JSON reader, the Chrome/Kineto loader, flows and load_any().
//
// [SECTION] Helpers
// [SECTION] JSON reader: values
// [SECTION] JSON reader: malformed input
// [SECTION] PyTorch profiler files (Kineto)
// [SECTION] descent's own Chrome export: round trip
// [SECTION] Flows in descent's format
// [SECTION] Malformed and hostile Chrome files
// [SECTION] load_any
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "tracer/json.h"
#include "tests/tracer/trace_test_util.h"
#include "tracer/trace.h"

namespace descent::trace {
namespace {

// [SECTION] Helpers -----------------------------------------------------------------

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f) << path;
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string fixture(const char* name) { return std::string(DESCENT_TEST_DATA_DIR) + "/" + name; }

// The message of the TraceFormatError that `f` raises, or "" when it raises none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const TraceFormatError& e) {
    return e.what();
  }
  return "";
}

using test_util::find;

const Span* by_id(const Trace& t, uint64_t id) {
  for (const Span& s : t.spans) {
    if (s.id == id) return &s;
  }
  return nullptr;
}

// Occurrences of `what` in `text`.
size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// [SECTION] JSON reader: values --------------------------------------------------------

TEST(Json, ReadsValuesInOrder) {
  const auto doc = json::parse(R"( {"b": [1, -2.5, 1e3, 9223372036854775807, 18446744073709551616],
      "a": {"x": true, "y": false, "z": null}, "s": "q\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "e": [], "o": {}} )",
                               "t");
  const json::Value& r = doc.root();
  ASSERT_TRUE(r.is_object());
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r.key(0), "b");  // key order kept
  EXPECT_EQ(r.key(1), "a");
  const json::Value& b = *r.find("b");
  ASSERT_EQ(b.size(), 5u);
  EXPECT_TRUE(b[0].is_integer());
  EXPECT_EQ(b[0].as_int(), 1);
  EXPECT_FALSE(b[1].is_integer());
  EXPECT_EQ(b[1].as_double(), -2.5);
  EXPECT_FALSE(b[2].is_integer());
  EXPECT_EQ(b[2].as_double(), 1000.0);
  EXPECT_EQ(b[3].as_int(), INT64_MAX);
  EXPECT_FALSE(b[4].is_integer());  // past int64: a double
  EXPECT_EQ(b[4].as_double(), 18446744073709551616.0);
  const json::Value& a = *r.find("a");
  EXPECT_EQ(a.find("x")->as_bool(), true);
  EXPECT_EQ(a.find("y")->as_bool(), false);
  EXPECT_TRUE(a.find("z")->is_null());
  EXPECT_EQ(a.find("w"), nullptr);
  EXPECT_EQ(r.find("s")->as_string(), "q\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(r.find("e")->size(), 0u);
  EXPECT_TRUE(r.find("o")->is_object());
  EXPECT_EQ(json::parse("\"\"", "t").root().as_string(), "");
  EXPECT_EQ(json::parse("{\"k\":1,\"k\":2}", "t").root().find("k")->as_int(), 2);  // the last wins
  EXPECT_EQ(json::parse("1e-400", "t").root().as_double(), 0.0);                   // underflow reads as 0
}

TEST(Json, DocumentsMove) {
  json::Document d = json::parse("[\"a string longer than sixteen bytes\", [1]]", "t");
  const json::Document moved = std::move(d);
  EXPECT_EQ(moved.root()[0].as_string(), "a string longer than sixteen bytes");
  EXPECT_EQ(moved.root()[1][0].as_int(), 1);
}

TEST(Json, NestingUpToTheLimit) {
  const int kLimit = 512;
  EXPECT_NO_THROW(json::parse(std::string(kLimit, '[') + std::string(kLimit, ']'), "t"));
  const std::string e =
      error_of([&] { json::parse(std::string(kLimit + 1, '[') + std::string(kLimit + 1, ']'), "t"); });
  EXPECT_NE(e.find("nested too deeply"), std::string::npos) << e;
  // A depth bomb: a clear error, not a stack overflow.
  const std::string bomb = error_of([] { json::parse(std::string(10'000'000, '['), "bomb.json"); });
  EXPECT_NE(bomb.find("bomb.json:1:513: nested too deeply"), std::string::npos) << bomb;
}

// [SECTION] JSON reader: malformed input ------------------------------------------------

TEST(Json, MalformedInputNamesLineColumnAndWhat) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"", "t:1:1: empty text"},
      {"  \n ", "only whitespace"},
      {"{\"a\": [1, 2", "t:1:7: unterminated array"},
      {"{\"a\": 1", "t:1:1: unterminated object"},
      {"\"abc", "t:1:1: unterminated string"},
      {"{\n  \"a\": tru\n}", "t:2:8: unexpected 'tru"},
      {"\"a\\qb\"", "t:1:3: bad escape '\\q'"},
      {"\"\\u12\"", "'\\u' needs four hex digits"},
      {"\"\\ud83d\"", "unpaired UTF-16 surrogate (a high surrogate"},
      {"\"\\ud83d\\u0041\"", "unpaired UTF-16 surrogate (a high surrogate"},
      {"\"\\ude00\"", "unpaired UTF-16 surrogate (a low surrogate first)"},
      {"\"a\tb\"", "raw control byte in a string"},
      {"[1,]", "t:1:4: unexpected ']'"},
      {"[1 2]", "expected ',' or ']' in an array"},
      {"{1: 2}", "expected a string key"},
      {"{\"a\" 2}", "expected ':' after an object key"},
      {"01", "leading zero"},
      {"-", "expected a digit after '-'"},
      {"1.", "expected a digit after '.'"},
      {"1e", "expected a digit in the exponent"},
      {"1e400", "number out of range"},
      {"-1e400", "number out of range"},
      {"NaN", "unexpected 'NaN'"},
      {"1 2", "t:1:3: unexpected '2' after the JSON value"},
      {"{} x", "after the JSON value"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of([&] { json::parse(c.text, "t"); });
    EXPECT_NE(e.find(c.expected), std::string::npos) << "input: " << c.text << "\nerror: " << e;
  }
}

TEST(Json, TruncatedAtEveryByteNeverCrashes) {
  const std::string text = read_file(fixture("torch_profile_cuda_add.json"));
  ASSERT_NO_THROW(json::parse(text, "t"));
  for (size_t n = 0; n + 1 < text.size(); n += 7) {  // a cut inside the last "}" and newline is still an error
    const std::string cut = text.substr(0, n);
    if (cut.find_last_not_of(" \n") == std::string::npos) continue;
    EXPECT_FALSE(error_of([&] { json::parse(cut, "t"); }).empty()) << n;
  }
}

// [SECTION] PyTorch profiler files (Kineto) -----------------------------------------------

TEST(ChromeLoad, KinetoCudaFilePlacesEventsOnFloors) {
  const std::string path = fixture("torch_profile_cuda_add.json");
  const std::string text = read_file(path);
  const Trace t = from_chrome_json(text, path);
  EXPECT_EQ(check_structure(t), "");
  EXPECT_EQ(t.metadata.at("source.format"), "kineto");
  EXPECT_EQ(t.metadata.at("device"), "cuda:0 (NVIDIA H200)");
  EXPECT_EQ(t.metadata.at("device.0.name"), "NVIDIA H200");
  EXPECT_EQ(t.metadata.count("chrome.base_us"), 1u);
  // The overhead event and the two instants are not loaded.
  EXPECT_EQ(t.metadata.at("chrome.skipped_events"), "3");

  const Span* add = find(t, "aten::add");
  const Span* ones = find(t, "aten::ones");
  const Span* empty = find(t, "aten::empty");
  const Span* fill = find(t, "aten::fill_");
  ASSERT_TRUE(add && ones && empty && fill);
  EXPECT_EQ(add->floor, Floor::Dispatch);
  EXPECT_EQ(add->parent, 0u);
  EXPECT_EQ(ones->floor, Floor::Dispatch);
  EXPECT_EQ(empty->floor, Floor::Dispatch) << "every aten op is a call the dispatcher routed, nested or not";
  EXPECT_EQ(empty->parent, ones->id);
  EXPECT_EQ(fill->floor, Floor::Dispatch);
  EXPECT_EQ(fill->parent, ones->id);
  EXPECT_LT(ones->start_ns, int64_t{1'000'000'000});  // re-based, not 5e18 ns
  EXPECT_EQ(ones->duration_ns(), 2566587);
  EXPECT_EQ(std::get<int64_t>(*add->find_arg("External id")), 516);
  EXPECT_EQ(std::get<int64_t>(*add->find_arg("Sequence number")), 43);

  size_t launches = 0, kernels = 0;
  for (const Span& s : t.spans) {
    if (s.name == "cudaLaunchKernel") {
      ++launches;
      EXPECT_EQ(s.floor, Floor::Launch);
      EXPECT_EQ(by_id(t, s.parent)->name.rfind("aten::", 0), 0u);  // under the op that launched it
    }
    if (s.name == "cudaDeviceSynchronize") {
      EXPECT_EQ(s.floor, Floor::Streams);
    }
    if (s.name.find("vectorized_elementwise_kernel") != std::string::npos) {
      ++kernels;
      EXPECT_EQ(s.floor, Floor::Device);
      EXPECT_NE(s.thread, add->thread);  // a device row of its own
      EXPECT_EQ(std::get<int64_t>(*s.find_arg("stream")), 7);
      EXPECT_EQ(std::get<double>(*s.find_arg("blocks per SM")), 0.007576);
      EXPECT_EQ(std::get<std::string>(*s.find_arg("grid")), "[1, 1, 1]");
      EXPECT_EQ(t.metadata.at("thread." + std::to_string(s.thread)), "GPU 0: stream 7");
    }
  }
  EXPECT_EQ(launches, 2u);
  EXPECT_EQ(kernels, 2u);
  EXPECT_EQ(t.metadata.at("thread." + std::to_string(add->thread)), "CPU: thread 425 (python3)");

  // Every "f" of the file finishes a flow from a launch to its kernel, with
  // the same correlation id; the two synchronisations start flows that
  // nothing finishes.
  const size_t finishes = count(text, "\"ph\": \"f\"");
  EXPECT_EQ(finishes, 2u);
  ASSERT_EQ(t.flows.size(), finishes);
  for (const Flow& f : t.flows) {
    const Span* from = by_id(t, f.from);
    const Span* to = by_id(t, f.to);
    ASSERT_TRUE(from && to);
    EXPECT_EQ(f.name, "ac2g");
    EXPECT_EQ(from->name, "cudaLaunchKernel");
    EXPECT_EQ(to->floor, Floor::Device);
    EXPECT_EQ(std::get<int64_t>(*from->find_arg("correlation")), std::get<int64_t>(*to->find_arg("correlation")));
  }
  EXPECT_EQ(t.metadata.at("chrome.unmatched_flows"), "2");
  EXPECT_NE(format_tree(t).find("aten::add"), std::string::npos);
}

TEST(ChromeLoad, KinetoCpuFile) {
  const std::string path = fixture("torch_profile_cpu_add.json");
  const Trace t = from_chrome_json(read_file(path), path);
  EXPECT_EQ(check_structure(t), "");
  EXPECT_TRUE(t.flows.empty());
  const Span* add = find(t, "aten::add");
  const Span* to = find(t, "aten::to");
  const Span* copy = find(t, "aten::copy_");
  ASSERT_TRUE(add && to && copy);
  EXPECT_EQ(add->floor, Floor::Dispatch);
  EXPECT_EQ(to->floor, Floor::Dispatch);
  EXPECT_EQ(to->parent, add->id);
  EXPECT_EQ(copy->floor, Floor::Dispatch);
  EXPECT_EQ(by_id(t, copy->parent)->name, "aten::_to_copy");
  for (const Span& s : t.spans) EXPECT_NE(s.floor, Floor::Device);
  // The profiler's own "Trace" span is on a row of its own, on no floor: it is not a layer of the call.
  const Span* window = find(t, "PyTorch Profiler (0)");
  ASSERT_TRUE(window);
  EXPECT_EQ(window->floor, Floor::None);
  EXPECT_NE(window->thread, add->thread);
}

// [SECTION] descent's own Chrome export: round trip -----------------------------------------

using test_util::make_span;

// Ids in (thread, start, longer first) order, as the loader numbers them.
Trace sample_trace() {
  Trace t;
  t.span_cost_ns = 21.75;
  t.metadata = {{"device", "cpu"}, {"thread.0", "main"}, {"note", "quotes \" and \\ and \xc3\xa9"}};
  const int64_t base = 171'234'567'890'123;  // a steady-clock time: about two days of uptime
  t.spans = {
      make_span(1, 0, Floor::Python, "x + 1", base, base + 9'000, 0, {{"n", int64_t{3}}}),
      make_span(2, 1, Floor::Binding, "add", base, base + 5'001, 0, {}),
      make_span(3, 2, Floor::Dispatch, "add", base + 10, base + 4'000, 0,
                {{"keyset", std::string("CPU")}, {"ok", true}}),
      make_span(4, 3, Floor::Kernels, "add", base + 11, base + 3'999, 0, {{"ratio", 0.125}, {"floor", int64_t{2}}}),
      make_span(5, 1, Floor::Allocator, "malloc", base + 6'000, base + 6'000, 0, {{"bytes", int64_t{4096}}}),
      make_span(6, 0, Floor::Device, "kernel", base + 3'000, base + 12'345, 2, {}),
  };
  t.flows = {{1, 2, "same start as its parent"}, {4, 6, "launch"}};
  return t;
}

TEST(ChromeLoad, DescentExportRoundTrips) {
  const Trace t = sample_trace();
  ASSERT_EQ(check_structure(t), "");
  const std::string json = to_chrome_json(t);
  EXPECT_EQ(count(json, "\"ph\":\"s\""), 2u);
  EXPECT_EQ(count(json, "\"ph\":\"f\""), 2u);
  Trace back = from_chrome_json(json, "export.json");
  EXPECT_EQ(back.metadata.at("source.format"), "descent-chrome");
  back.metadata.erase("source.format");
  EXPECT_EQ(check_structure(back), "");
  EXPECT_EQ(back, t);
}

TEST(ChromeLoad, DescentExportNumbersThreadsFromOneAndKeepsItsDataInOtherData) {
  const Trace t = sample_trace();
  const std::string json = to_chrome_json(t);
  EXPECT_EQ(count(json, "\"tid\":0"), 0u);  // thread 0 is tid 1, thread 2 is tid 3
  EXPECT_GT(count(json, "\"tid\":1,"), 0u);
  EXPECT_GT(count(json, "\"tid\":3,"), 0u);
  EXPECT_EQ(count(json, "\"otherData\":{\"span_cost_ns\":21.75"), 1u);
  EXPECT_EQ(count(json, "\"metadata\""), 0u);
  EXPECT_EQ(from_chrome_json(json).spans.back().thread, 2u);
}

// Note [Chrome export times from a base]: a steady clock past 2^42 us (51
// days of uptime) is more than a double of microseconds holds to the ns.
TEST(ChromeLoad, DescentExportRoundTripsAfterYearsOfUptime) {
  for (const int64_t uptime_ns :
       {int64_t{60} * 86'400'000'000'000, int64_t{3} * 365 * 86'400'000'000'000 + 5'000'000}) {
    Trace t = sample_trace();
    for (Span& s : t.spans) s.start_ns += uptime_ns, s.end_ns += uptime_ns;
    const std::string json = to_chrome_json(t);
    // From the base: the first start, to the whole microsecond.
    EXPECT_EQ(count(json, "\"ts\":0.123,\"dur\":9.000,"), 1u) << json;
    Trace back = from_chrome_json(json, "export.json");
    back.metadata.erase("source.format");
    EXPECT_EQ(back, t) << uptime_ns;
  }
}

TEST(ChromeLoad, DescentExportBaseMustBeAnIntegerInRange) {
  const auto with_base = [](const std::string& base) {
    return R"({"traceEvents":[{"name":"x","cat":"python","ph":"X","ts":1,"dur":2,"pid":1,"tid":1}],
               "otherData":{"span_cost_ns":1,"ts_base_ns":)" +
           base + "}}";
  };
  EXPECT_EQ(from_chrome_json(with_base("5000")).spans[0].start_ns, 6000);
  EXPECT_EQ(error_of([&] { from_chrome_json(with_base("\"5\""), "b.json"); }),
            "b.json: \"ts_base_ns\" is string, expected an integer (nanoseconds)");
  EXPECT_EQ(error_of([&] { from_chrome_json(with_base("1.5"), "b.json"); }),
            "b.json: \"ts_base_ns\" is a number with a fraction or past int64, expected an integer (nanoseconds)");
  EXPECT_EQ(error_of([&] { from_chrome_json(with_base("9223372036854775000"), "b.json"); }),
            "b.json: \"ts_base_ns\" 9223372036854775000 puts span \"x\" out of range (past 292 years)");
  EXPECT_EQ(from_chrome_json(with_base("0")).metadata.count("ts_base_ns"), 0u);
}

TEST(ChromeLoad, OlderDescentExportsWithMetadataAndTidsFromZeroStillLoad) {
  const std::string json = R"({"traceEvents":[
      {"name":"x","cat":"python","ph":"X","ts":1.000,"dur":2.000,"pid":1,"tid":0,"args":{"floor":1}},
      {"name":"y","cat":"kernels","ph":"X","ts":1.000,"dur":1.000,"pid":1,"tid":2,"args":{"floor":5}}],
      "metadata":{"span_cost_ns":20.5,"device":"cpu"}})";
  const Trace t = from_chrome_json(json);
  ASSERT_EQ(t.spans.size(), 2u);
  EXPECT_EQ(t.spans[0].thread, 0u);
  EXPECT_EQ(t.spans[1].thread, 2u);
  EXPECT_EQ(t.span_cost_ns, 20.5);
  EXPECT_EQ(t.metadata.at("source.format"), "descent-chrome");
}

// [SECTION] Flows in descent's format -------------------------------------------------------

TEST(TraceFlows, RoundTripInDescentFormat) {
  const Trace t = sample_trace();
  const std::string text = to_descent_format(t);
  EXPECT_EQ(text.rfind("descent-trace 2\n", 0), 0u);
  EXPECT_NE(text.find("\nflow 4 6 launch\n"), std::string::npos) << text;
  EXPECT_EQ(from_descent_format(text), t);
}

TEST(TraceFlows, Version1FilesStillLoad) {
  const Trace t = from_descent_format("descent-trace 1\nspan_cost 2\nspan 1 0 1 0 10 20 root 0\nend 1\n");
  ASSERT_EQ(t.spans.size(), 1u);
  EXPECT_TRUE(t.flows.empty());
  const std::string e = error_of([] {
    from_descent_format("descent-trace 1\nspan_cost 2\nspan 1 0 1 0 10 20 root 0\nflow 1 1 x\nend 1\n", "v1");
  });
  EXPECT_NE(e.find("v1:4: unknown line type 'flow'"), std::string::npos) << e;
}

TEST(TraceFlows, MalformedFlowLines) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"descent-trace 2\nspan_cost 0\nspan 1 0 1 0 10 20 a 0\nflow 1 9 x\nend 1\n", "t:4: flow names span 9"},
      {"descent-trace 2\nspan_cost 0\nspan 1 0 1 0 10 20 a 0\nflow 1 1\nend 1\n", "t:4: wrong field count for 'flow'"},
      {"descent-trace 2\nspan_cost 0\nspan 1 0 1 0 10 20 a 0\nflow 1 x y\nend 1\n", "t:4: bad number 'x'"},
      {"descent-trace 2\nspan_cost 0\nspan 1 0 1 0 10 20 a 0\nflow 1 1 y\nspan 2 0 1 0 10 20 a 0\nend 2\n",
       "t:5: 'span' after a 'flow' line"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of([&] { from_descent_format(c.text, "t"); });
    EXPECT_NE(e.find(c.expected), std::string::npos) << c.text << "\n" << e;
  }
}

// [SECTION] Malformed and hostile Chrome files ------------------------------------------------

TEST(ChromeLoad, BareArrayLoads) {
  const Trace t = from_chrome_json(
      R"([{"ph":"X","name":"a","ts":1,"dur":2,"pid":1,"tid":1},{"ph":"X","name":"b","ts":1.5,"dur":0.5,"pid":1,"tid":1}])",
      "t");
  ASSERT_EQ(t.spans.size(), 2u);
  EXPECT_EQ(t.metadata.at("source.format"), "chrome");
  EXPECT_EQ(t.spans[1].parent, t.spans[0].id);
  EXPECT_EQ(t.spans[1].start_ns - t.spans[0].start_ns, 500);
  EXPECT_EQ(check_structure(t), "");
}

TEST(ChromeLoad, WrongShapesRaiseNamingWhatAndWhere) {
  struct Case {
    const char* text;
    const char* expected;
  };
  const Case cases[] = {
      {"42", "t: the top level is number"},
      {"\"x\"", "the top level is string"},
      {"{\"foo\": 1}", "no \"traceEvents\" member"},
      {"{\"traceEvents\": {}}", "\"traceEvents\" is object, expected an array"},
      {"[1]", "traceEvents[0]: is number, expected an object"},
      {"[{\"ts\": 1}]", "traceEvents[0]: missing \"ph\""},
      {"[{\"ph\": 1}]", "\"ph\" is number"},
      {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1}, {\"ph\":\"X\",\"name\":\"b\"}]",
       "traceEvents[1] (\"b\"): missing \"ts\""},
      {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":\"1\"}]", "\"ts\" is string, expected a number"},
      {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":-1}]", "negative \"dur\""},
      {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":null}]", "\"dur\" is null"},
      {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":0},{\"ph\":\"X\",\"name\":\"b\",\"ts\":1e300}]",
       "traceEvents[1] (\"b\"): \"ts\" is out of range"},
      {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":0,\"dur\":1e17}]", "\"dur\" is out of range"},
      {"[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1e400}]", "number out of range"},
      {"[{\"ph\":\"X\",\"name\":7,\"ts\":1}]", "\"name\" is number"},
      {"[{\"ph\":\"s\",\"name\":\"a\",\"ts\":1}]", "a flow event without \"id\""},
      {"[{\"ph\":\"X\"", "unterminated"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of([&] { from_chrome_json(c.text, "t"); });
    EXPECT_NE(e.find(c.expected), std::string::npos) << c.text << "\n" << e;
  }
}

TEST(ChromeLoad, OverlappingEventsStillFormATree) {
  // b sticks out of a; c is inside both; d is inside a only.
  const Trace t = from_chrome_json(R"([
      {"ph":"X","name":"a","ts":0,"dur":10,"pid":1,"tid":1},
      {"ph":"X","name":"b","ts":5,"dur":10,"pid":1,"tid":1},
      {"ph":"X","name":"c","ts":6,"dur":1,"pid":1,"tid":1},
      {"ph":"X","name":"d","ts":9,"dur":0,"pid":1,"tid":1}])",
                                   "t");
  EXPECT_EQ(check_structure(t), "");
  EXPECT_EQ(find(t, "b")->parent, 0u);
  EXPECT_EQ(find(t, "c")->parent, find(t, "b")->id);
  EXPECT_EQ(t.metadata.at("chrome.overlapping_spans"), "1");
}

TEST(ChromeLoad, RandomEventsAlwaysFormATree) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::string text = "[";
    const int n = 1 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      if (i) text += ",";
      const char* cats[] = {"cpu_op", "kernel", "cuda_runtime", "python_function", "ac2g"};
      const char* cat = cats[rng() % 5];
      const int pid = static_cast<int>(rng() % 2), tid = static_cast<int>(rng() % 3);
      const double ts = static_cast<double>(rng() % 100) / 4, dur = static_cast<double>(rng() % 40) / 4;
      if (std::string(cat) == "ac2g") {
        text += "{\"ph\":\"" + std::string(rng() % 2 ? "s" : "f") +
                "\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":" + std::to_string(rng() % 4) +
                ",\"ts\":" + std::to_string(ts) + ",\"pid\":" + std::to_string(pid) +
                ",\"tid\":" + std::to_string(tid) + ",\"bp\":\"e\"}";
      } else {
        text += "{\"ph\":\"X\",\"cat\":\"" + std::string(cat) + "\",\"name\":\"aten::op" + std::to_string(i) +
                "\",\"ts\":" + std::to_string(ts) + ",\"dur\":" + std::to_string(dur) +
                ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + "}";
      }
    }
    text += "]";
    const Trace t = from_chrome_json(text, "random");
    EXPECT_EQ(check_structure(t), "") << text;
    for (size_t k = 1; k < t.spans.size(); ++k) {
      const Span& a = t.spans[k - 1];
      const Span& b = t.spans[k];
      EXPECT_TRUE(a.thread < b.thread ||
                  (a.thread == b.thread && (a.start_ns < b.start_ns || (a.start_ns == b.start_ns && a.id < b.id))));
    }
    for (const Flow& f : t.flows) EXPECT_TRUE(by_id(t, f.from) && by_id(t, f.to));
  }
}

TEST(ChromeLoad, DamagedKinetoFileRaisesOrLoadsATree) {
  const std::string text = read_file(fixture("torch_profile_cuda_add.json"));
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    std::string damaged = text;
    for (int k = 0; k < 3; ++k) damaged[rng() % damaged.size()] = "{}[]\",:0-9eE. x"[rng() % 15];
    try {
      const Trace t = from_chrome_json(damaged, "damaged");
      EXPECT_EQ(check_structure(t), "");
    } catch (const TraceFormatError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("damaged:", 0), 0u) << e.what();
    }
  }
}

// [SECTION] load_any ------------------------------------------------------------------------

TEST(LoadAnyTrace, SniffsTheFormat) {
  const auto dir = std::filesystem::path(testing::TempDir()) / "descent_load_any";
  std::filesystem::create_directories(dir);
  const auto put = [&](const char* name, const std::string& text) {
    const std::string p = (dir / name).string();
    write_text_file(p, text);
    return p;
  };
  const Trace t = sample_trace();
  EXPECT_EQ(load_any(put("a.trace", to_descent_format(t))), t);
  Trace chrome = load_any(put("a.json", "\n  " + to_chrome_json(t)));
  chrome.metadata.erase("source.format");
  EXPECT_EQ(chrome, t);
  EXPECT_EQ(load_any(fixture("torch_profile_cuda_add.json")).metadata.at("source.format"), "kineto");

  const std::string empty = put("empty", "");
  EXPECT_NE(error_of([&] { load_any(empty); }).find(empty + ":1: the file is empty: expected descent's format"),
            std::string::npos);
  const std::string junk = put("junk", std::string("\x7f"
                                                   "ELF\x01\x00\xff",
                                                   7));
  EXPECT_NE(
      error_of([&] { load_any(junk); }).find(junk + ":1: bad magic (not a trace file): expected descent's format"),
      std::string::npos);
  const std::string blank = put("blank", std::string(10000, ' ') + "\n");
  EXPECT_NE(error_of([&] { load_any(blank); }).find(blank + ":1: the file holds only whitespace"), std::string::npos);
  EXPECT_NE(error_of([&] { load_any(dir.string()); }).find("it is a directory"), std::string::npos);
  EXPECT_NE(error_of([&] { load_any((dir / "missing").string()); }).find("no such file"), std::string::npos);
  const std::string bad_json = put("bad.json", "{\"traceEvents\": [}");
  EXPECT_NE(error_of([&] { load_any(bad_json); }).find(bad_json + ":1:18: unexpected '}'"), std::string::npos);
}

}  // namespace
}  // namespace descent::trace
