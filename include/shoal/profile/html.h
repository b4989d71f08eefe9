// A self-contained HTML report (inline CSS and SVG, no scripts, no network): the step breakdown
// as a stacked bar, per-zone self time with GFLOP/s and % of peak, a log-log roofline with the
// measured peak and bandwidth roofs, thread busy %, and the full zone table.
#pragma once

#include <string>
#include <string_view>

#include "shoal/profile/report.h"

namespace shoal::profile {

std::string html_report(const Report& r, std::string_view title);
void write_html_report(const Report& r, std::string_view title, const std::string& path);

}  // namespace shoal::profile
