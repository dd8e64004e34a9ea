// Tests of span source sites (Note [Span source sites] in tracer.h) and of
// descent's embedded sources (Note [Embedded sources] in sources.h).
//
// [SECTION] Helpers
// [SECTION] The site table
// [SECTION] Recorded spans
// [SECTION] File formats
// [SECTION] Embedded sources
// [SECTION] Source fingerprints
// [SECTION] Cost
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>

#include "floors/dispatch/dispatcher.h"
#include "tracer/sources.h"
#include "tests/tracer/trace_test_util.h"
#include "tracer/trace.h"
#include "tracer/tracer.h"

namespace descent::trace {
namespace {

// [SECTION] Helpers -------------------------------------------------------------

using test_util::find;

// Line `line` (1-based) of `text`, without its '\n'; "" past the end.
std::string_view line_of(std::string_view text, uint32_t line) {
  for (uint32_t n = 1; n < line; ++n) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return {};
    text.remove_prefix(nl + 1);
  }
  return text.substr(0, text.find('\n'));
}

// [SECTION] The site table --------------------------------------------------------

static_assert(sizeof(SpanRecord) == 32, "the site fills SpanRecord's spare bytes");

TEST(SpanSites, RegisterIsIdempotentAndZeroIsUnknown) {
  const uint16_t a = register_site("floors/x.cpp", 10, "f");
  EXPECT_GT(a, 0);
  EXPECT_EQ(register_site("floors/x.cpp", 10, "f"), a);
  EXPECT_NE(register_site("floors/x.cpp", 11, "f"), a);
  EXPECT_STREQ(site_info(a).file, "floors/x.cpp");
  EXPECT_EQ(site_info(a).line, 10u);
  EXPECT_STREQ(site_info(a).function, "f");
  EXPECT_STREQ(site_info(0).file, "");
  EXPECT_EQ(site_info(0).line, 0u);
  EXPECT_STREQ(site_info(UINT16_MAX).file, "");  // never registered (far fewer sites in a test)
  EXPECT_LE(site_count(), kMaxSites);
}

TEST(SpanSites, AbsolutePathsUnderTheSourceDirAreMadeRelative) {
  const uint16_t s = register_site(std::string(DESCENT_TEST_SOURCE_DIR) + "/floors/y.cpp", 3, "g");
  EXPECT_STREQ(site_info(s).file, "floors/y.cpp");
}

// [SECTION] Recorded spans ----------------------------------------------------------

TEST(SpanSites, ASpanNamesThisFileAndLine) {
  start();
  const uint32_t line = __LINE__ + 1;
  { DESCENT_SPAN(Kernels, "x"); }
  const Trace t = stop();
  const Span* s = find(t, "x");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->file, "tests/tracer/test_span_sites.cpp");
  EXPECT_EQ(s->line, line);
}

TEST(SpanSites, RawSpansWithoutASiteAreUnknown) {
  start();
  end_span(begin_span(Floor::Python, "raw"));
  record_complete_span(Floor::Device, "measured", now_ns(), now_ns() + 1);
  const Trace t = stop();
  for (const char* name : {"raw", "measured"}) {
    const Span* s = find(t, name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_EQ(s->file, "") << name;
    EXPECT_EQ(s->line, 0u) << name;
  }
}

TEST(SpanSites, SitesAreKeptPerThread) {
  start();
  std::thread([] { DESCENT_SPAN(Kernels, "on_worker"); }).join();
  { DESCENT_SPAN(Kernels, "on_main"); }
  const Trace t = stop();
  ASSERT_NE(find(t, "on_worker"), nullptr);
  ASSERT_NE(find(t, "on_main"), nullptr);
  EXPECT_EQ(find(t, "on_worker")->line + 1, find(t, "on_main")->line);
}

TEST(SpanSites, DispatcherSpansNameTheDispatchFloor) {
  Tensor a = call(Op::ones, DimVector{2});
  start();
  Tensor c = call(Op::add, a, a);
  const Trace t = stop();
  bool saw_dispatch = false;
  for (const Span& s : t.spans) {
    EXPECT_FALSE(s.file.empty()) << s.name << " on floor " << floor_name(s.floor);
    EXPECT_GT(s.line, 0u) << s.name;
    EXPECT_NE(s.file.front(), '/') << s.file;  // relative to the repository root
    if (s.floor == Floor::Dispatch) {
      saw_dispatch = true;
      EXPECT_EQ(s.file.rfind("floors/dispatch/", 0), 0u) << s.file;
    }
  }
  EXPECT_TRUE(saw_dispatch);
}

// [SECTION] File formats --------------------------------------------------------------

Trace sample_trace() {
  Trace t;
  t.span_cost_ns = 25.5;
  Span a;
  a.id = 1;
  a.name = "add";
  a.floor = Floor::Dispatch;
  a.start_ns = 10;
  a.end_ns = 20;
  a.file = "floors/dispatch/dispatcher.cpp";
  a.line = 148;
  Span b = a;
  b.id = 2;
  b.parent = 1;
  b.file = "dir with space/\"odd\"\tname.py";
  b.line = 4294967295u;
  Span c = a;
  c.id = 3;
  c.parent = 1;
  c.file = "";
  c.line = 0;  // unknown: no src line
  t.spans = {a, b, c};
  return t;
}

TEST(SpanSites, DescentFormatRoundTripsSites) {
  const Trace t = sample_trace();
  const std::string text = to_descent_format(t);
  EXPECT_EQ(text.rfind("descent-trace 2\n", 0), 0u);
  EXPECT_NE(text.find("\nsrc 1 floors/dispatch/dispatcher.cpp 148\n"), std::string::npos);
  EXPECT_EQ(text.find("\nsrc 3 "), std::string::npos);
  const Trace back = from_descent_format(text);
  EXPECT_EQ(back, t);
  EXPECT_EQ(to_descent_format(back), text);
}

TEST(SpanSites, VersionOneFilesLoadWithoutSites) {
  const std::string v1 =
      "descent-trace 1\nspan_cost 1\nspan 1 0 3 0 10 20 add 0\nspan 2 1 5 0 11 19 add 1 bytes i 8\nend 2\n";
  const Trace t = from_descent_format(v1);
  ASSERT_EQ(t.spans.size(), 2u);
  for (const Span& s : t.spans) {
    EXPECT_EQ(s.file, "");
    EXPECT_EQ(s.line, 0u);
  }
  EXPECT_THROW(from_descent_format("descent-trace 1\nspan_cost 1\nspan 1 0 3 0 10 20 add 0\nsrc 1 a.cpp 3\nend 1\n"),
               TraceFormatError);  // src lines are version 2
}

TEST(SpanSites, MalformedSrcLinesAreRefused) {
  const std::string head = "descent-trace 2\nspan_cost 1\nspan 1 0 3 0 10 20 add 0\n";
  for (const char* bad : {"src 2 a.cpp 3\n", "src 1 a.cpp\n", "src 1 a.cpp x\n", "src 1 a.cpp -1\n",
                          "src 1 a.cpp 3\nsrc 1 b.cpp 4\n", "src 1 a.cpp 3\nspan 2 0 3 0 10 20 b 0\n"}) {
    EXPECT_THROW(from_descent_format(head + bad + "end 1\n"), TraceFormatError) << bad;
  }
}

TEST(SpanSites, ChromeEventsCarryTheSite) {
  const std::string json = to_chrome_json(sample_trace());
  EXPECT_NE(json.find("\"src\":\"floors/dispatch/dispatcher.cpp:148\""), std::string::npos) << json;
}

// [SECTION] Embedded sources ------------------------------------------------------------

TEST(EmbeddedSources, HoldTheFloorsAndTheTracer) {
  const auto paths = embedded_source_paths();
  EXPECT_GT(paths.size(), 40u);
  EXPECT_TRUE(std::is_sorted(paths.begin(), paths.end()));
  for (const char* p :
       {"tracer/tracer.h", "tracer/sources.h", "floors/dispatch/dispatcher.cpp", "floors/python/descent/_tensor.py"}) {
    EXPECT_FALSE(embedded_source(p).empty()) << p;
  }
  EXPECT_TRUE(embedded_source("no/such/file.cpp").empty());
  EXPECT_TRUE(embedded_source("tests/tracer/test_span_sites.cpp").empty());  // tests are not embedded
  EXPECT_NE(embedded_source("tracer/tracer.h").find("Note [Span source sites]"), std::string_view::npos);
}

TEST(EmbeddedSources, ARecordedSiteNamesTheLineThatOpenedTheSpan) {
  Tensor a = call(Op::ones, DimVector{2});
  start();
  Tensor c = call(Op::add, a, a);
  const Trace t = stop();
  int checked = 0;
  for (const Span& s : t.spans) {
    const std::string_view text = embedded_source(s.file);
    ASSERT_FALSE(text.empty()) << s.file << " is not embedded";
    const std::string_view line = line_of(text, s.line);
    EXPECT_TRUE(line.find("DESCENT_SPAN") != line.npos || line.find("ScopedSpan") != line.npos)
        << s.file << ":" << s.line << ": " << line;
    ++checked;
  }
  EXPECT_GE(checked, 2);
}

// [SECTION] Source fingerprints (Note [Source fingerprints] in trace.h) -------------------

TEST(SourceFingerprints, ARecordingNamesTheVersionOfEveryFileItsSpansPointAt) {
  Tensor a = call(Op::ones, DimVector{2});
  start();
  Tensor c = call(Op::add, a, a);
  const Trace t = stop();
  int files = 0;
  for (const Span& s : t.spans) {
    if (s.file.empty()) continue;
    const auto it = t.metadata.find(std::string(kSourceMetaPrefix) + s.file);
    ASSERT_NE(it, t.metadata.end()) << s.file;
    EXPECT_EQ(it->second.size(), 16u);
    EXPECT_EQ(it->second, source_fingerprint(s.file));
    EXPECT_EQ(source_match(t, s.file), SourceMatch::Same);
    ++files;
  }
  EXPECT_GE(files, 2);
  // A decided_at's file is fingerprinted too (the dispatcher decides in dispatcher.cpp).
  EXPECT_EQ(t.metadata.count(std::string(kSourceMetaPrefix) + "floors/dispatch/dispatcher.cpp"), 1u);
  // The fingerprints survive a save and a load, in both formats.
  EXPECT_EQ(from_descent_format(to_descent_format(t)).metadata, t.metadata);
  const Trace chrome = from_chrome_json(to_chrome_json(t));
  EXPECT_EQ(source_match(chrome, t.spans.front().file), SourceMatch::Same);
}

TEST(SourceFingerprints, AChangedFileOrAnOldTraceIsNeverTakenForThisBuilds) {
  Trace t;
  const std::string file = "floors/allocator/caching_allocator.cpp";
  ASSERT_FALSE(source_fingerprint(file).empty());
  EXPECT_EQ(source_match(t, file), SourceMatch::Unknown);  // recorded before fingerprints
  t.metadata[std::string(kSourceMetaPrefix) + file] = "0123456789abcdef";
  EXPECT_EQ(source_match(t, file), SourceMatch::Changed);
  t.metadata[std::string(kSourceMetaPrefix) + file] = std::string(source_fingerprint(file));
  EXPECT_EQ(source_match(t, file), SourceMatch::Same);
  EXPECT_EQ(source_match(t, "no/such/file.cpp"), SourceMatch::NotOurs);
  EXPECT_TRUE(source_fingerprint("ui/main.cpp").empty());  // the app opens no spans
}

// [SECTION] Cost ------------------------------------------------------------------------

// Printed, not asserted: ns per DESCENT_SPAN with tracing off and on (the
// benchmark tests/bench/bench_descent measures the same more carefully).
TEST(SpanSites, CostPerSpan) {
  constexpr int kSpans = 16000;
  const auto time_ns = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kSpans; ++i) {
      DESCENT_SPAN(Kernels, "cost");
    }
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kSpans;
  };
  const double off = time_ns();
  start();
  time_ns();  // warms the buffer and the site cache
  const double on = time_ns();
  const Trace t = stop();
  std::printf("DESCENT_SPAN: %.2f ns off, %.2f ns on (calibrated %.2f ns)\n", off, on, t.span_cost_ns);
}

}  // namespace
}  // namespace descent::trace
