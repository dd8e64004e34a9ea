// The values view (panel_values.cpp), drawn at the top of the Memory tab:
// the tensors the statement on screen left, each storage as its cells with
// their values and each tensor as a window onto them (Note [A view as a window
// onto cells], values_model.h).
#pragma once

#include "ui/app.h"
#include "ui/values_model.h"

namespace descent::ui {

// Draws the values at the playback's moment into the current window.
void draw_values(App& app);
// The model of the trace on screen (built once per trace and kept).
const ValuesModel& values_model(const App& app);

}  // namespace descent::ui
