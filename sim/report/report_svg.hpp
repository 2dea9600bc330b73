// SVG chart primitives for report.html: line, stacked-area and horizontal bar charts with scales
// fixed by the caller (so the columns of a comparison share their axes), plus the number formats.
#pragma once

#include <string>
#include <vector>

namespace kvcheck::sim::svg {

enum class Unit { count, ratio, bytes, ms, us };

// "12,336", "87.5%", "1.4 GiB", "398.2 ms"/"6.01 s"; the same value always gives the same text.
std::string format_value(double value, Unit unit);

// Escapes text for HTML/SVG/XML content and attribute values (report.html, JUnit XML): markup
// escaped, and bytes that are not UTF-8, control characters and U+FFFE/U+FFFF, which XML 1.0
// cannot hold, replaced by U+FFFD.
std::string escape(const std::string& text);

// A round axis top at or above `value`: 1, 2, 4, 6 or 8 times a power of ten (of the unit shown:
// GiB for bytes, ms for microseconds), so the quarter ticks are round too; 1 for value <= 0.
double nice_ceiling(double value, Unit unit);

struct Line {
    std::string name;
    std::string color;
    std::vector<double> y;  // one value per time point; NaN where undefined (not drawn)
};

struct Bar {
    std::string label;
    double value = 0;
    std::string color;
};

// Lines over time: x from 0 to t_max seconds, y from 0 to y_max. Fewer than two points give a
// short "no time series" note instead of a chart. With `steps` each value holds until the next
// point (a cumulative count rises in steps; drawn as a ramp it would seem to grow between samples).
std::string line_chart(const std::string& label, const std::vector<double>& t_s, double t_max,
                       const std::vector<Line>& lines, double y_max, Unit unit, bool steps = false);

// The same axes, the lines' values stacked bottom-up as filled layers.
std::string stacked_chart(const std::string& label, const std::vector<double>& t_s, double t_max,
                          const std::vector<Line>& layers, double y_max, Unit unit);

// One horizontal bar per row scaled to x_max; when `share_of` > 0 each value also shows its share.
std::string bar_chart(const std::string& label, const std::vector<Bar>& bars, double x_max, Unit unit,
                      double share_of = 0);

// A colour key (HTML) for lines or layers.
std::string legend(const std::vector<Line>& lines);

}  // namespace kvcheck::sim::svg
