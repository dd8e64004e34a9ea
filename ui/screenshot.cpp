// The screenshot and the state file.
#include "ui/screenshot.h"

#include <GL/gl.h>  // OpenGL 1.1's read pixels; the backend loads the rest
#include <stb_image_write.h>

#include <stdexcept>
#include <vector>

#include "floors/core/log.h"
#include "tracer/trace.h"
#include "ui/app.h"

namespace descent::ui {

bool write_png(const std::string& path, int w, int h, std::string& error) {
  std::vector<unsigned char> pixels(static_cast<size_t>(w) * h * 3);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, w, h, GL_RGB, GL_UNSIGNED_BYTE, pixels.data());
  stbi_flip_vertically_on_write(1);  // OpenGL's rows start at the bottom
  if (!stbi_write_png(path.c_str(), w, h, 3, pixels.data(), w * 3)) {
    error = "cannot write the screenshot to '" + path + "'";
    return false;
  }
  return true;
}

// Note [Saving a file whole] in tracer/trace.cpp: readers never see half a
// file, a full disk keeps the last good one.
bool write_text(const std::string& path, const std::string& text, std::string& error) {
  try {
    trace::write_text_file(path, text);
    return true;
  } catch (const std::runtime_error& e) {
    error = e.what();
    return false;
  }
}

void StateWriter::update(const App& app) {
  if (path.empty()) return;
  std::string stable;
  std::string full = state_json(app, &stable);
  const auto now = std::chrono::steady_clock::now();
  if (stable == last_stable && (full == last_full || now - last_write < kThrottle)) return;
  std::string error;
  const bool ok = write_text(path, full, error);
  if (!ok && !failing && !quiet) log::warn("cannot write the state: ", error);
  failing = !ok;
  last_stable = std::move(stable);
  last_full = std::move(full);
  last_write = now;
}

}  // namespace descent::ui
