// Redrawing only what changed. See Note [Redrawing only what changed] (damage.h).
#include "ui/damage.h"

#include <GL/gl.h>
#include <imgui_impl_opengl3.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace descent::ui {

namespace {

constexpr float kFullRedrawFraction = 0.5f;  // of the display: past it, one full redraw is cheaper
constexpr float kMarginPx = 2.0f;            // around a box: anti-aliased edges reach a pixel out

struct Box {
  float x0 = 1e30f, y0 = 1e30f, x1 = -1e30f, y1 = -1e30f;
  bool empty() const { return x1 < x0 || y1 < y0; }
  void add(const ImVec2& p) {
    x0 = std::min(x0, p.x);
    y0 = std::min(y0, p.y);
    x1 = std::max(x1, p.x);
    y1 = std::max(y1, p.y);
  }
  void add(const Box& b) {
    if (b.empty()) return;
    x0 = std::min(x0, b.x0);
    y0 = std::min(y0, b.y0);
    x1 = std::max(x1, b.x1);
    y1 = std::max(y1, b.y1);
  }
  float area() const { return empty() ? 0 : (x1 - x0) * (y1 - y0); }
};

bool same_vertex(const ImDrawVert& a, const ImDrawVert& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same_cmd(const ImDrawCmd& a, const ImDrawCmd& b) {
  return a.ClipRect.x == b.ClipRect.x && a.ClipRect.y == b.ClipRect.y && a.ClipRect.z == b.ClipRect.z &&
         a.ClipRect.w == b.ClipRect.w && a.TextureId == b.TextureId && a.VtxOffset == b.VtxOffset &&
         a.IdxOffset == b.IdxOffset && a.ElemCount == b.ElemCount && a.UserCallback == b.UserCallback;
}

// Everything a list draws: the union of its commands' clip rectangles.
Box extent(const std::vector<ImDrawCmd>& cmds) {
  Box b;
  for (const ImDrawCmd& c : cmds) b.add(Box{c.ClipRect.x, c.ClipRect.y, c.ClipRect.z, c.ClipRect.w});
  return b;
}

}  // namespace

std::vector<DamageRect> DamageTracker::damage(const ImDrawData* dd) {
  const ImVec2 origin = dd->DisplayPos, size = dd->DisplaySize;
  const DamageRect whole{origin.x, origin.y, origin.x + size.x, origin.y + size.y};
  bool full = full_ || static_cast<size_t>(dd->CmdListsCount) != last_.size();
  std::vector<Box> boxes;
  std::vector<List> now(static_cast<size_t>(dd->CmdListsCount));
  for (int n = 0; n < dd->CmdListsCount; ++n) {
    const ImDrawList* l = dd->CmdLists[n];
    List& cur = now[static_cast<size_t>(n)];
    cur.vtx.assign(l->VtxBuffer.Data, l->VtxBuffer.Data + l->VtxBuffer.Size);
    cur.idx.assign(l->IdxBuffer.Data, l->IdxBuffer.Data + l->IdxBuffer.Size);
    cur.cmds.assign(l->CmdBuffer.Data, l->CmdBuffer.Data + l->CmdBuffer.Size);
    if (full) continue;
    const List& old = last_[static_cast<size_t>(n)];
    Box changed;
    bool same_shape = old.vtx.size() == cur.vtx.size() && old.idx == cur.idx && old.cmds.size() == cur.cmds.size();
    for (size_t c = 0; same_shape && c < cur.cmds.size(); ++c) same_shape = same_cmd(old.cmds[c], cur.cmds[c]);
    if (!same_shape) {
      changed.add(extent(old.cmds));  // the list was redrawn differently: all it covers, then and now
      changed.add(extent(cur.cmds));
    } else {
      // Same triangles: only those with a changed vertex, where they were and where they are.
      for (const ImDrawCmd& c : cur.cmds) {
        Box in_cmd;
        for (unsigned e = 0; e + 2 < c.ElemCount; e += 3) {
          const size_t i0 = c.VtxOffset + cur.idx[c.IdxOffset + e], i1 = c.VtxOffset + cur.idx[c.IdxOffset + e + 1],
                       i2 = c.VtxOffset + cur.idx[c.IdxOffset + e + 2];
          if (same_vertex(old.vtx[i0], cur.vtx[i0]) && same_vertex(old.vtx[i1], cur.vtx[i1]) &&
              same_vertex(old.vtx[i2], cur.vtx[i2])) {
            continue;
          }
          for (size_t i : {i0, i1, i2}) {
            in_cmd.add(old.vtx[i].pos);
            in_cmd.add(cur.vtx[i].pos);
          }
        }
        if (in_cmd.empty()) continue;
        // Nothing is drawn outside the command's clip rectangle.
        in_cmd.x0 = std::max(in_cmd.x0, c.ClipRect.x);
        in_cmd.y0 = std::max(in_cmd.y0, c.ClipRect.y);
        in_cmd.x1 = std::min(in_cmd.x1, c.ClipRect.z);
        in_cmd.y1 = std::min(in_cmd.y1, c.ClipRect.w);
        changed.add(in_cmd);
      }
    }
    if (!changed.empty()) boxes.push_back(changed);
  }
  last_ = std::move(now);
  full_ = false;
  if (full) return {whole};
  // Merge boxes that overlap, so no pixel is drawn twice.
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t a = 0; a < boxes.size() && !merged; ++a) {
      for (size_t b = a + 1; b < boxes.size(); ++b) {
        if (boxes[a].x0 <= boxes[b].x1 && boxes[b].x0 <= boxes[a].x1 && boxes[a].y0 <= boxes[b].y1 &&
            boxes[b].y0 <= boxes[a].y1) {
          boxes[a].add(boxes[b]);
          boxes.erase(boxes.begin() + static_cast<std::ptrdiff_t>(b));
          merged = true;
          break;
        }
      }
    }
  }
  float area = 0;
  std::vector<DamageRect> out;
  for (const Box& b : boxes) {
    area += b.area();
    // Whole pixels, so the clear and the backend's scissor cover the same rows.
    out.push_back({std::floor(std::max(whole.x0, b.x0 - kMarginPx)), std::floor(std::max(whole.y0, b.y0 - kMarginPx)),
                   std::ceil(std::min(whole.x1, b.x1 + kMarginPx)), std::ceil(std::min(whole.y1, b.y1 + kMarginPx))});
  }
  if (area > kFullRedrawFraction * size.x * size.y) return {whole};
  return out;
}

void render_damaged(ImDrawData* dd, const std::vector<DamageRect>& rects, int fb_height, const float clear[4]) {
  const ImVec2 origin = dd->DisplayPos, scale = dd->FramebufferScale;
  // Each command is clipped to the damaged rectangle as well as its own.
  std::vector<ImVec4> saved;
  for (int n = 0; n < dd->CmdListsCount; ++n) {
    for (const ImDrawCmd& c : dd->CmdLists[n]->CmdBuffer) saved.push_back(c.ClipRect);
  }
  for (const DamageRect& r : rects) {
    const int x = static_cast<int>((r.x0 - origin.x) * scale.x), y = static_cast<int>((r.y0 - origin.y) * scale.y);
    const int w = static_cast<int>((r.x1 - r.x0) * scale.x), h = static_cast<int>((r.y1 - r.y0) * scale.y);
    glEnable(GL_SCISSOR_TEST);
    glScissor(x, fb_height - (y + h), w, h);  // OpenGL's rows start at the bottom
    glClearColor(clear[0], clear[1], clear[2], clear[3]);
    glClear(GL_COLOR_BUFFER_BIT);
    glDisable(GL_SCISSOR_TEST);
    size_t k = 0;
    for (int n = 0; n < dd->CmdListsCount; ++n) {
      for (ImDrawCmd& c : dd->CmdLists[n]->CmdBuffer) {
        const ImVec4& o = saved[k++];
        c.ClipRect = ImVec4(std::max(o.x, r.x0), std::max(o.y, r.y0), std::min(o.z, r.x1), std::min(o.w, r.y1));
        if (c.ClipRect.z < c.ClipRect.x) c.ClipRect.z = c.ClipRect.x;  // empty: the backend skips it
        if (c.ClipRect.w < c.ClipRect.y) c.ClipRect.w = c.ClipRect.y;
      }
    }
    ImGui_ImplOpenGL3_RenderDrawData(dd);
  }
  size_t k = 0;
  for (int n = 0; n < dd->CmdListsCount; ++n) {
    for (ImDrawCmd& c : dd->CmdLists[n]->CmdBuffer) c.ClipRect = saved[k++];
  }
}

bool probe_retained_back_buffer(void (*swap)(void*), void* window) {
  // Frame 1 red, frame 2 green; then the back buffer should hold green.
  const float colors[2][3] = {{1, 0, 0}, {0, 1, 0}};
  for (const auto& c : colors) {
    glClearColor(c[0], c[1], c[2], 1);
    glClear(GL_COLOR_BUFFER_BIT);
    swap(window);
  }
  unsigned char px[4] = {0, 0, 0, 0};
  glReadBuffer(GL_BACK);
  glReadPixels(0, 0, 1, 1, GL_RGBA, GL_UNSIGNED_BYTE, px);
  return px[0] < 8 && px[1] > 247 && px[2] < 8;
}

}  // namespace descent::ui
