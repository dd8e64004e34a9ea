// Redrawing only what changed between two frames. See Note [Redrawing only
// what changed].
//
// Note [Redrawing only what changed]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Without a GPU (Mesa's llvmpipe, as on CI, in a VM, or on a classroom
// laptop) every pixel is drawn by the CPU: one full-window blended fill at
// 1600x1000 costs about 7.5 ms on two cores, and a frame of the app is
// several, about 30 ms in all. Yet while the token rides the shaft between
// two steps, only the token moves. So the app compares each frame's ImGui
// draw data with the last one's: where a draw list's vertices, indices and
// commands are the same, nothing there changed; where a triangle's vertices
// differ, the pixels under its old and new positions may have. The union of
// those boxes is redrawn (scissored, after clearing it) over the last frame,
// which the back buffer still holds; everything else is left as it was.
//
// That last condition is not promised by OpenGL: after a swap, the back
// buffer may hold the last frame (a copying swap, as Mesa's software path
// under X does), an older one (flipping), or nothing defined. The app probes
// it once at start (probe_retained_back_buffer) and redraws every frame in
// full where the last frame is not kept, after a resize or an expose, and
// whenever more than half the window changed.
#pragma once

#include <imgui.h>

#include <vector>

namespace descent::ui {

struct DamageRect {
  float x0, y0, x1, y1;  // in ImGui's display coordinates
};

class DamageTracker {
 public:
  // The rectangles where this frame's draw data differs from the last one's
  // (the whole display on the first frame, after invalidate(), or when the
  // lists no longer match). Remembers `dd` for the next call.
  std::vector<DamageRect> damage(const ImDrawData* dd);
  void invalidate() { full_ = true; }  // the next frame is drawn in full

 private:
  struct List {
    std::vector<ImDrawVert> vtx;
    std::vector<ImDrawIdx> idx;
    std::vector<ImDrawCmd> cmds;
  };
  std::vector<List> last_;
  bool full_ = true;
};

// Draws `dd` only inside `rects` (each cleared to `clear` first), over what
// the back buffer already holds; `fb_height` converts to OpenGL's rows.
void render_damaged(ImDrawData* dd, const std::vector<DamageRect>& rects, int fb_height, const float clear[4]);

// Whether the back buffer keeps the last frame across a swap here (see the
// note). Draws two frames of its own; call before the first real frame.
bool probe_retained_back_buffer(void (*swap)(void*), void* window);

}  // namespace descent::ui
