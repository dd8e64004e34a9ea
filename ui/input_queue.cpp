// The input between frames: key presses and the mouse queued as GLFW
// delivers them, and handed to ImGui 1.86's backend a frame at a time.
#include "ui/input_queue.h"

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>

#include <algorithm>
#include <cfloat>
#include <deque>
#include <vector>

namespace descent::ui {

namespace {

// Note [Key presses between frames]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// ImGui 1.86 keeps only whether a key is down now, read once per frame, so a
// key pressed and released between two frames (a quick tap while the app
// idles in glfwWaitEventsTimeout, or xdotool in the tests) was never seen
// down, and the step it asked for was lost. Key events are queued here
// instead and handed to ImGui's backend a frame at a time: within one frame
// each key changes state at most once, so every press is seen by the frame
// that follows it (what ImGui 1.87's own input queue does). A modifier (Ctrl,
// Shift, Alt, Super) never changes in the same frame as another key: under
// load X can deliver "c down, Ctrl up" together, and ImGui, which reads Ctrl
// once a frame, would see a plain C where Ctrl+C was pressed (the Stop key
// lost, as the tests saw in the sanitizer build).
struct KeyEvent {
  int key, scancode, action, mods;
};
std::deque<KeyEvent> g_key_queue;

void queue_key(GLFWwindow*, int key, int scancode, int action, int mods) {
  g_key_queue.push_back({key, scancode, action, mods});
}

bool is_modifier(int key) {
  return key >= GLFW_KEY_LEFT_SHIFT && key <= GLFW_KEY_RIGHT_SUPER;  // GLFW numbers the eight together
}

// Hands ImGui the queued events up to the first that would change a key
// already changed in this frame; the rest wait for the next frame.
void feed_keys(GLFWwindow* window) {
  std::vector<int> changed;
  bool modifier_changed = false, other_changed = false;
  while (!g_key_queue.empty()) {
    const KeyEvent e = g_key_queue.front();
    if (e.action != GLFW_REPEAT) {
      if (std::find(changed.begin(), changed.end(), e.key) != changed.end()) break;
      if (is_modifier(e.key) ? other_changed : modifier_changed) break;
      changed.push_back(e.key);
      (is_modifier(e.key) ? modifier_changed : other_changed) = true;
    }
    g_key_queue.pop_front();
    ImGui_ImplGlfw_KeyCallback(window, e.key, e.scancode, e.action, e.mods);
  }
}

// The mouse, the same way. Under load X can deliver "move onto the border,
// press, move on" between two frames; ImGui 1.86 reads the pointer once a
// frame, where it is now, so the press landed where the pointer had gone
// and a border's drag never began (the layout test under CI's load). Moves
// and button changes are queued; a frame takes the moves up to and
// including one button change, and sees the pointer where that press or
// release happened. The moves after it wait for the next frame.
struct MouseEvent {
  bool move;
  double x, y;               // a move: where the pointer went
  int button, action, mods;  // a button change
};
std::deque<MouseEvent> g_mouse_queue;
struct {
  bool known = false;
  double x = 0, y = 0;
  bool down[3] = {false, false, false};
} g_mouse;

void queue_move(GLFWwindow*, double x, double y) { g_mouse_queue.push_back({true, x, y, 0, 0, 0}); }
void queue_button(GLFWwindow*, int button, int action, int mods) {
  g_mouse_queue.push_back({false, 0, 0, button, action, mods});
}

void feed_mouse(GLFWwindow* window) {
  while (!g_mouse_queue.empty()) {
    const MouseEvent e = g_mouse_queue.front();
    g_mouse_queue.pop_front();
    if (e.move) {
      g_mouse = {true, e.x, e.y, {g_mouse.down[0], g_mouse.down[1], g_mouse.down[2]}};
      continue;
    }
    if (e.button >= 0 && e.button < 3) g_mouse.down[e.button] = e.action == GLFW_PRESS;
    ImGui_ImplGlfw_MouseButtonCallback(window, e.button, e.action, e.mods);
    break;
  }
}

}  // namespace

void install_input_queue(GLFWwindow* window) {
  glfwSetKeyCallback(window, queue_key);             // replaces the backend's: Note [Key presses between frames]
  glfwSetMouseButtonCallback(window, queue_button);  // and the mouse's, the same way
  glfwSetCursorPosCallback(window, queue_move);
}

void feed_input(GLFWwindow* window) {
  feed_keys(window);
  feed_mouse(window);
}

void apply_queued_mouse() {
  ImGuiIO& io = ImGui::GetIO();
  if (!g_mouse.known || io.MousePos.x == -FLT_MAX) return;  // not over a focused window
  io.MousePos = ImVec2(static_cast<float>(g_mouse.x), static_cast<float>(g_mouse.y));
  for (int b = 0; b < 3; ++b) io.MouseDown[b] = g_mouse.down[b];
}

bool input_waiting() { return !g_key_queue.empty() || !g_mouse_queue.empty(); }

}  // namespace descent::ui
