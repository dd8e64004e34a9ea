// The embedded interpreter: the same `descent` package a user imports, with
// descent._C built into the app rather than loaded from its .so, so the app
// and the runtime it shows are one program over one libdescent.
#pragma once

#include <string>

#include "ui/app.h"

namespace descent::ui {

// Starts Python, registers the built-in descent._C and imports descent and
// descent._app. False with `error` set when that fails (e.g. the package's
// Python files are not found). Call once, from the main thread, which then
// holds the GIL for the app's whole life.
bool python_start(std::string& error);
// Ends the interpreter; every Loaded whose trace came from Python must be gone.
void python_stop();

// Runs `code` traced (descent._app.run). Never throws and never lets a Python
// exception out: a syntax error or a raising statement comes back in
// Loaded::error, with the trace of what ran before it.
Loaded python_run(const std::string& code, int repeat = 1);

}  // namespace descent::ui
