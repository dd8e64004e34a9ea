// descent's own trace file format: plain text that round-trips exactly.
//
// [SECTION] Grammar
// [SECTION] Writing
// [SECTION] Reading: lines, fields, errors
// [SECTION] Reading: the document
// [SECTION] Files
//
// [SECTION] Grammar ---------------------------------------------------------------
//
//   descent-trace 2                              magic and version, always line 1
//   meta <key> <value>                           zero or more, keys unique
//   span_cost <double>                           exactly once
//   span <id> <parent> <floor> <thread> <start_ns> <end_ns> <name> <nargs> {<key> <kind> <value>}
//   src <span id> <file> <line>                  at most one per span, after the spans (version 2)
//   flow <from id> <to id> <name>                zero or more, after the spans (version 2)
//   end <number of spans>                        always last: a missing one means truncation
//
// Fields are separated by exactly one space. Kinds: i (int64), d (double), b
// (true/false), s (string). Doubles are written shortest-exact (std::to_chars),
// so they read back to the same bits, -0, inf and nan included. Strings are
// escaped so they hold no space and no control byte: \\ \s (space) \t \n \r \"
// and \xHH for other control bytes; other bytes (UTF-8 too) are written raw.
// The empty string is written "".
//
// A src line gives the source site that opened a span (Note [Span source
// sites] in tracer.h); a span without one has file "" and line 0. Version 1
// files (no src and no flow lines) still load. A flow's ends must name spans
// of the file.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

#include "tracer/trace.h"

namespace descent::trace {

namespace {

constexpr std::string_view kMagic = "descent-trace";
constexpr int kVersion = 2;
constexpr int kOldestVersion = 1;       // still read
constexpr size_t kSpanFixedFields = 9;  // "span" .. <nargs>
constexpr size_t kFieldsPerArg = 3;
constexpr size_t kMaxQuotedBytes = 40;  // of a bad field, in error messages

// [SECTION] Writing -------------------------------------------------------------

void write_string(std::string& out, std::string_view s) {
  if (s.empty()) {
    out += "\"\"";
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case ' ':
        out += "\\s";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '"':
        out += "\\\"";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
}

template <typename T>
void write_number(std::string& out, T v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void write_value(std::string& out, const ArgValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) {
    out += "i ";
    write_number(out, *i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    out += "d ";
    write_number(out, *d);
  } else if (const auto* b = std::get_if<bool>(&v)) {
    out += *b ? "b true" : "b false";
  } else {
    out += "s ";
    write_string(out, std::get<std::string>(v));
  }
}

}  // namespace

std::string to_descent_format(const Trace& t) {
  std::string out;
  out += kMagic;
  out += ' ' + std::to_string(kVersion) + '\n';
  for (const auto& [key, value] : t.metadata) {
    out += "meta ";
    write_string(out, key);
    out += ' ';
    write_string(out, value);
    out += '\n';
  }
  out += "span_cost ";
  write_number(out, t.span_cost_ns);
  out += '\n';
  for (const Span& s : t.spans) {
    out += "span ";
    for (const uint64_t v : {s.id, s.parent, uint64_t{static_cast<uint8_t>(s.floor)}, uint64_t{s.thread}}) {
      write_number(out, v);
      out += ' ';
    }
    write_number(out, s.start_ns);
    out += ' ';
    write_number(out, s.end_ns);
    out += ' ';
    write_string(out, s.name);
    out += ' ';
    write_number(out, s.args.size());
    for (const SpanArg& a : s.args) {
      out += ' ';
      write_string(out, a.key);
      out += ' ';
      write_value(out, a.value);
    }
    out += '\n';
  }
  for (const Span& s : t.spans) {
    if (s.file.empty() && s.line == 0) continue;
    out += "src ";
    write_number(out, s.id);
    out += ' ';
    write_string(out, s.file);
    out += ' ';
    write_number(out, s.line);
    out += '\n';
  }
  for (const Flow& fl : t.flows) {
    out += "flow ";
    write_number(out, fl.from);
    out += ' ';
    write_number(out, fl.to);
    out += ' ';
    write_string(out, fl.name);
    out += '\n';
  }
  out += "end " + std::to_string(t.spans.size()) + '\n';
  return out;
}

// [SECTION] Reading: lines, fields, errors -----------------------------------------

namespace {

// Walks the text line by line and raises errors that name the source and line.
class Reader {
 public:
  Reader(const std::string& text, const std::string& source) : text_(text), source_(source) {}

  // The next line without its '\n' (and without a '\r' before it); false at the end.
  bool next_line(std::string_view& line) {
    if (pos_ >= text_.size()) return false;
    const size_t nl = text_.find('\n', pos_);
    const size_t end = nl == std::string::npos ? text_.size() : nl;
    line = std::string_view(text_).substr(pos_, end - pos_);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos_ = nl == std::string::npos ? text_.size() : nl + 1;
    ++line_no_;
    return true;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw TraceFormatError(source_ + ":" + std::to_string(line_no_) + ": " + what);
  }
  void next_line_number() { ++line_no_; }  // for "missing line" errors past the end

  // A bad field, quoted safely for a message.
  static std::string quote(std::string_view field) {
    std::string q = "'";
    for (size_t i = 0; i < field.size() && i < kMaxQuotedBytes; ++i) {
      const auto c = static_cast<unsigned char>(field[i]);
      q += (c < 0x20 || c >= 0x7f) ? '?' : static_cast<char>(c);
    }
    return q + (field.size() > kMaxQuotedBytes ? "...'" : "'");
  }

  // The line's fields. The vector is the reader's own, reused line after
  // line (a million spans are a million lines): valid until the next split.
  const std::vector<std::string_view>& split(std::string_view line) const {
    fields_.clear();
    size_t start = 0;
    while (true) {
      const size_t sp = line.find(' ', start);
      const std::string_view f = line.substr(start, sp == std::string_view::npos ? std::string_view::npos : sp - start);
      if (f.empty()) fail("empty field (two spaces in a row, or a space at the end of the line)");
      fields_.push_back(f);
      if (sp == std::string_view::npos) return fields_;
      start = sp + 1;
    }
  }

  template <typename T>
  T number(std::string_view field, const char* what) const {
    T v{};
    const auto r = std::from_chars(field.data(), field.data() + field.size(), v);
    if (r.ec != std::errc() || r.ptr != field.data() + field.size()) {
      fail(std::string("bad number ") + quote(field) + " for " + what);
    }
    return v;
  }

  std::string string(std::string_view field, const char* what) const {
    if (field == "\"\"") return "";
    // Most fields need no unescaping: copied whole.
    bool plain = true;
    for (const char ch : field) {
      const auto c = static_cast<unsigned char>(ch);
      plain = plain && c != '\\' && c != '"' && c >= 0x20 && c != 0x7f;
    }
    if (plain) return std::string(field);
    std::string out;
    for (size_t i = 0; i < field.size(); ++i) {
      const auto c = static_cast<unsigned char>(field[i]);
      if (c == '"') fail(std::string("unescaped '\"' in ") + what);
      if (c < 0x20 || c == 0x7f) fail(std::string("raw control byte in ") + what + " (must be escaped)");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (++i == field.size()) fail(std::string("bad escape: '\\' at the end of ") + what);
      switch (field[i]) {
        case '\\':
          out += '\\';
          break;
        case 's':
          out += ' ';
          break;
        case 't':
          out += '\t';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case '"':
          out += '"';
          break;
        case 'x': {
          const int hi = i + 1 < field.size() ? hex_digit(field[i + 1]) : -1;
          const int lo = i + 2 < field.size() ? hex_digit(field[i + 2]) : -1;
          if (hi < 0 || lo < 0) fail(std::string("bad escape: '\\x' needs two hex digits in ") + what);
          out += static_cast<char>(hi * 16 + lo);
          i += 2;
          break;
        }
        default:
          fail(std::string("bad escape ") + quote(field.substr(i - 1, 2)) + " in " + what);
      }
    }
    return out;
  }

 private:
  static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  const std::string& text_;
  const std::string& source_;
  size_t pos_ = 0;
  size_t line_no_ = 0;
  mutable std::vector<std::string_view> fields_;  // split()'s result, reused
};

// [SECTION] Reading: the document ------------------------------------------------

void expect_fields(const Reader& r, const std::vector<std::string_view>& f, size_t n, const char* kind) {
  if (f.size() != n) {
    r.fail(std::string("wrong field count for '") + kind + "': expected " + std::to_string(n) + ", got " +
           std::to_string(f.size()));
  }
}

// Returns the version.
int read_header(Reader& r) {
  std::string_view line;
  if (!r.next_line(line)) {
    r.next_line_number();
    r.fail("truncated file: empty, expected the header '" + std::string(kMagic) + " " + std::to_string(kVersion) + "'");
  }
  if (line.empty()) r.fail("bad magic: empty first line, expected '" + std::string(kMagic) + "'");
  const auto& f = r.split(line);
  if (f[0] != kMagic) r.fail("bad magic " + Reader::quote(f[0]) + ", expected '" + std::string(kMagic) + "'");
  expect_fields(r, f, 2, "descent-trace");
  const int version = r.number<int>(f[1], "the version");
  if (version < kOldestVersion || version > kVersion) {
    r.fail("unknown version " + std::to_string(version) + " (this build reads versions " +
           std::to_string(kOldestVersion) + " to " + std::to_string(kVersion) + ")");
  }
  return version;
}

ArgValue read_value(const Reader& r, std::string_view kind, std::string_view value) {
  if (kind == "i") return r.number<int64_t>(value, "an int argument");
  if (kind == "d") return r.number<double>(value, "a double argument");
  if (kind == "s") return r.string(value, "a string argument");
  if (kind == "b") {
    if (value == "true") return true;
    if (value == "false") return false;
    r.fail("bad bool " + Reader::quote(value) + ", expected true or false");
  }
  r.fail("unknown arg type " + Reader::quote(kind) + " (expected i, d, b or s)");
}

Span read_span(const Reader& r, const std::vector<std::string_view>& f) {
  if (f.size() < kSpanFixedFields) expect_fields(r, f, kSpanFixedFields, "span");
  const auto nargs = r.number<uint64_t>(f[8], "nargs");
  const size_t extra = f.size() - kSpanFixedFields;
  if (extra % kFieldsPerArg != 0 || extra / kFieldsPerArg != nargs) {
    r.fail("wrong field count for 'span' with " + std::to_string(nargs) + " args: expected " +
           (nargs <= extra ? std::to_string(kSpanFixedFields + nargs * kFieldsPerArg) : "more") + ", got " +
           std::to_string(f.size()));
  }
  Span s;
  s.id = r.number<uint64_t>(f[1], "the span id");
  if (s.id == 0) r.fail("span id must be > 0");
  s.parent = r.number<uint64_t>(f[2], "the parent id");
  const auto floor = r.number<uint32_t>(f[3], "the floor");
  if (floor >= static_cast<uint32_t>(kNumFloors)) r.fail("unknown floor number " + std::to_string(floor));
  s.floor = static_cast<Floor>(floor);
  s.thread = r.number<uint32_t>(f[4], "the thread");
  s.start_ns = r.number<int64_t>(f[5], "start_ns");
  s.end_ns = r.number<int64_t>(f[6], "end_ns");
  s.name = r.string(f[7], "the span name");
  for (size_t k = kSpanFixedFields; k < f.size(); k += kFieldsPerArg) {
    s.args.push_back({r.string(f[k], "an arg key"), read_value(r, f[k + 1], f[k + 2])});
  }
  return s;
}

}  // namespace

Trace from_descent_format(const std::string& text, const std::string& source_name) {
  Reader r(text, source_name);
  const int version = read_header(r);
  Trace t;
  bool have_cost = false;
  bool ended = false;
  SpanIndex ids;               // span id -> index
  std::vector<bool> have_src;  // per span: given a src line so far (empty before the first)
  std::string_view line;
  while (r.next_line(line)) {
    if (ended) r.fail("content after the 'end' line");
    if (line.empty()) r.fail("empty line");
    const auto& f = r.split(line);
    if (f[0] == "meta") {
      if (have_cost) r.fail("'meta' after 'span_cost' (metadata comes first)");
      expect_fields(r, f, 3, "meta");
      std::string key = r.string(f[1], "a metadata key");
      if (t.metadata.count(key)) r.fail("duplicate metadata key " + Reader::quote(key));
      t.metadata.emplace(std::move(key), r.string(f[2], "a metadata value"));
    } else if (f[0] == "span_cost") {
      if (have_cost) r.fail("duplicate 'span_cost' line");
      expect_fields(r, f, 2, "span_cost");
      t.span_cost_ns = r.number<double>(f[1], "span_cost");
      have_cost = true;
    } else if (f[0] == "span") {
      if (!have_cost) r.fail("'span' before the 'span_cost' line");
      if (!t.flows.empty()) r.fail("'span' after a 'flow' line (flows come after the spans)");
      if (!have_src.empty()) r.fail("'span' after a 'src' line (src lines come after the spans)");
      Span s = read_span(r, f);
      if (!ids.add(s.id, t.spans.size())) r.fail("duplicate span id " + std::to_string(s.id));
      t.spans.push_back(std::move(s));
    } else if (f[0] == "src" && version >= 2) {
      expect_fields(r, f, 4, "src");
      if (have_src.empty()) have_src.assign(t.spans.size() + 1, false);  // +1: never empty once src lines start
      const auto id = r.number<uint64_t>(f[1], "the src line's span id");
      const size_t at = ids.find(id);
      if (at == SIZE_MAX) r.fail("src names span " + std::to_string(id) + ", which is not in the file");
      if (have_src[at]) r.fail("duplicate src line for span " + std::to_string(id));
      have_src[at] = true;
      Span& s = t.spans[at];
      s.file = r.string(f[2], "the source file");
      s.line = r.number<uint32_t>(f[3], "the source line");
    } else if (f[0] == "flow" && version >= 2) {
      expect_fields(r, f, 4, "flow");
      Flow fl{r.number<uint64_t>(f[1], "the flow's first span id"),
              r.number<uint64_t>(f[2], "the flow's second span id"), r.string(f[3], "the flow name")};
      for (const uint64_t end : {fl.from, fl.to}) {
        if (ids.find(end) == SIZE_MAX) r.fail("flow names span " + std::to_string(end) + ", which is not in the file");
      }
      t.flows.push_back(std::move(fl));
    } else if (f[0] == "end") {
      expect_fields(r, f, 2, "end");
      if (!have_cost) r.fail("'end' before the 'span_cost' line");
      const auto n = r.number<uint64_t>(f[1], "the span count");
      if (n != t.spans.size()) {
        r.fail("'end' says " + std::to_string(n) + " spans but the file has " + std::to_string(t.spans.size()));
      }
      ended = true;
    } else {
      r.fail("unknown line type " + Reader::quote(f[0]) + " (expected meta, span_cost, span, src, flow or end)");
    }
  }
  if (!ended) {
    r.next_line_number();
    r.fail("truncated file: missing the 'end' line");
  }
  return t;
}

// [SECTION] Files --------------------------------------------------------------------

void save(const Trace& t, const std::string& path) { write_text_file(path, to_descent_format(t)); }

Trace load(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec) throw TraceFormatError(path + ": cannot open the file: " + ec.message());
  if (!std::filesystem::exists(status)) throw TraceFormatError(path + ": cannot open the file: no such file");
  if (std::filesystem::is_directory(status)) throw TraceFormatError(path + ": cannot open the file: it is a directory");
  if (!std::filesystem::is_regular_file(status))  // /dev/zero would be read forever
    throw TraceFormatError(path + ": cannot open the file: not a regular file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw TraceFormatError(path + ": cannot open the file");
  // The first line decides whether this is a trace at all, before a large
  // file that is not one is read into memory.
  std::string head(kMagic.size() + 1, '\0');
  f.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(f.gcount()));
  if (head.size() == kMagic.size() + 1 && head != std::string(kMagic) + " ") from_descent_format(head, path);
  const uintmax_t bytes = std::filesystem::file_size(path, ec);
  if (ec) throw TraceFormatError(path + ": cannot open the file: " + ec.message());
  check_memory_to_load(path, bytes);
  // Read into one string of the file's size: an ostringstream's str() would
  // hold the text twice (Note [Memory a loaded trace needs]).
  std::string text(static_cast<size_t>(bytes), '\0');
  f.clear();
  f.seekg(0);
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (f.bad()) throw TraceFormatError(path + ": error reading the file");
  text.resize(static_cast<size_t>(f.gcount()));  // a file that shrank meanwhile: what was read
  return from_descent_format(text, path);
}

namespace {

std::string gigabytes(double bytes) {  // "1.06 GB", or "19.3 MB" under a gigabyte
  char out[32];
  if (bytes >= 1e9)
    std::snprintf(out, sizeof out, "%.2f GB", bytes / 1e9);
  else
    std::snprintf(out, sizeof out, "%.1f MB", bytes / 1e6);
  return out;
}

// What this process may still take: MemAvailable, and RLIMIT_AS's room
// (the limit less what the process maps now) where a limit is set.
double memory_available() {
  double available = 0;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    double kb = 0;
    meminfo >> kb;
    if (key == "MemAvailable:") available = kb * 1024;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  if (available <= 0) return std::numeric_limits<double>::infinity();  // not Linux, or no such line: not known
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    std::ifstream statm("/proc/self/statm");
    double pages = 0;
    statm >> pages;
    const double mapped = pages * static_cast<double>(sysconf(_SC_PAGESIZE));
    available = std::min(available, std::max(0.0, static_cast<double>(limit.rlim_cur) - mapped));
  }
  return available;
}

}  // namespace

void check_memory_to_load(const std::string& path, uintmax_t file_bytes) {
  const double need = static_cast<double>(file_bytes) * kLoadBytesPerFileByte;
  const double available = memory_available();
  if (need <= available) return;
  throw TraceFormatError(path + ": too large to open here: the file is " + gigabytes(double(file_bytes)) +
                         ", a loaded trace takes about " + gigabytes(need) + " of memory, and " + gigabytes(available) +
                         " is free (Note [Memory a loaded trace needs])");
}

}  // namespace descent::trace
