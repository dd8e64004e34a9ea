// libFuzzer target: the op schema parser (floors/dispatch/schema.cpp),
// parse_schema("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor").
//
// The op table's schemas are written by descent's authors, not by users; but
// the parser takes any text (a typo in a new op's row must be an error that
// names the column, not a crash when the library loads), so for any bytes it
// either raises descent::Error naming the schema and the column, or returns a
// Schema whose names and argument types print. Any other exception, a crash,
// a hang, or an ASan or UBSan report is a bug.
//
// Corpus: tests/fuzz/corpus/schema (every schema of floors/dispatch/ops.h);
// dictionary: schema.dict.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "floors/core/error.h"
#include "floors/dispatch/schema.h"
#include "tests/fuzz/fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace descent;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Schema s;
  try {
    s = parse_schema(text);
  } catch (const Error& e) {
    FUZZ_CHECK(std::string_view(e.what()).starts_with("bad schema '"), "a schema error that does not quote the schema");
    return 0;
  }
  FUZZ_CHECK(s.text == text, "a Schema that does not keep its text");
  FUZZ_CHECK(!s.name.empty(), "a Schema without a name");
  FUZZ_CHECK(!s.returns.empty(), "a Schema without a return");
  std::string printed = s.full_name() + s.qualified_name();
  for (const SchemaArg& a : s.args) {
    FUZZ_CHECK(!a.name.empty(), "a schema argument without a name");
    FUZZ_CHECK(!a.has_default || !a.default_value.is_none() || a.optional,
               "a None default on a type that is not optional");
    printed += a.type_str();
  }
  FUZZ_CHECK(s.num_positional() <= static_cast<int>(s.args.size()), "more positional arguments than arguments");
  (void)s.is_mutable();
  (void)s.is_view();
  return 0;
}
