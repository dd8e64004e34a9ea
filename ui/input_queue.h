// Key presses and the mouse, queued between frames and handed to ImGui a
// frame at a time (Note [Key presses between frames], input_queue.cpp).
#pragma once

struct GLFWwindow;

namespace descent::ui {

// Puts the queue's callbacks in place of the GLFW backend's (after
// ImGui_ImplGlfw_InitForOpenGL, which installed its own).
void install_input_queue(GLFWwindow* window);
// Before the backend's NewFrame: this frame's share of the queued keys and
// mouse events.
void feed_input(GLFWwindow* window);
// After the backend's NewFrame, which read the pointer as it is now: where
// the queue says it was at this frame's event.
void apply_queued_mouse();
// Whether input is still queued (the next frame is due at once).
bool input_waiting();

}  // namespace descent::ui
