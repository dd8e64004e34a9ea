// descent's own sources, embedded at build time: the app shows the lines a
// span's source site names (Note [Span source sites] in tracer.h).
//
// Note [Embedded sources]
// ~~~~~~~~~~~~~~~~~~~~~~~
// The static library descent_sources holds the text of every
// floors/**/*.{h,cpp,cu,py}, tracer/*.{h,cpp} and ui/*.{h,cpp} file (the
// app's own Notes too: ui/notes.h), about 1.3 MB, keyed by
// its path relative to the repository root: the same form a span's file takes.
// tools/embed_sources.cmake writes it as raw string literals into a generated
// .cpp of the build tree, again whenever one of those files changes (a new
// file is found when CMake re-globs). Only the app and the tests link it:
// libdescent and the Python extension do not carry their own text.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace descent::trace {

// The text of the file at `path` ("floors/dispatch/dispatcher.cpp"), exactly
// as it was when built; an empty view when the path is not embedded.
std::string_view embedded_source(std::string_view path);
// Every embedded path, sorted.
std::vector<std::string_view> embedded_source_paths();

namespace embedded {  // written by tools/embed_sources.cmake; no promises
struct File {
  std::string_view path;
  std::string_view text;
};
extern const File kFiles[];
extern const size_t kFileCount;
}  // namespace embedded

}  // namespace descent::trace
