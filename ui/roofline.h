// Where a kernel span sits on its device's roofline, for the app: the
// tracer's model (tracer/roofline.h) with the story's times, the warm
// medians of a repeated line where there are some. See Note [A roofline for
// every kernel span] (floors/kernels/roofline.cpp).
#pragma once

#include <string>

#include "tracer/roofline.h"
#include "ui/story.h"

namespace descent::ui {

using trace::RooflinePoint;

// The roofline point of the kernel span `i` of the story's trace, at the time
// the floor leads with (Timing::lead_inclusive_ns, Note [Cold and warm times]).
RooflinePoint roofline_of(const Story& s, size_t i);

// The share of its roof the kernel reached: "44%", "0.00054%".
std::string share_text(const RooflinePoint& p);

// "48 B", "3.2 GB/s", "4.1 GFLOP/s": SI prefixes, three digits.
std::string si_text(double v, const char* unit);

}  // namespace descent::ui
