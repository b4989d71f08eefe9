// A self-contained HTML report (inline CSS and SVG, no scripts, no network): the step breakdown
// as a stacked bar, per-zone self time with GFLOP/s and % of peak, a log-log roofline with the
// measured peak and bandwidth roofs, thread busy %, the advice, the memory view (a bar per layer,
// stacked by region) and the full zone table.
#pragma once

#include <string>
#include <string_view>

#include "shoal/profile/report.h"

namespace shoal::profile {

std::string html_report(const Report& r, std::string_view title);
void write_html_report(const Report& r, std::string_view title, const std::string& path);
// Pieces shared with the diff report (diff.h).
std::string html_head(std::string_view title);  // doctype, style, <h1>
std::string html_breakdown_svg(const Report& r);
std::string html_escape(std::string_view s);

}  // namespace shoal::profile
