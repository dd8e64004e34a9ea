// The roofline of a kernel span as the app shows it (ui/roofline.h).
#include "ui/roofline.h"

#include <cmath>
#include <cstdio>

namespace descent::ui {

RooflinePoint roofline_of(const Story& s, size_t i) {
  return trace::roofline_of(*s.trace, i, [&](size_t k) {
    const Timing t = timing_of(s, k);  // the time the floor leads with (Note [Cold and warm times])
    return trace::SpanTime{t.lead_inclusive_ns(), t.leads_with_median()};
  });
}

std::string share_text(const RooflinePoint& p) {
  char pct[32];
  std::snprintf(pct, sizeof pct, p.fraction() >= 0.01 ? "%.0f%%" : "%.2g%%", 100 * p.fraction());
  return pct;
}

std::string si_text(double v, const char* unit) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int k = 0;
  while (std::fabs(v) >= 999.5 && k < 5) v /= 1000, ++k;
  char buf[64];
  std::snprintf(buf, sizeof buf,
                v >= 99.95 || v == std::floor(v) ? "%.0f %s%s"
                : v >= 9.995                     ? "%.1f %s%s"
                                                 : "%.2f %s%s",
                v, prefixes[k], unit);
  return buf;
}

}  // namespace descent::ui
