// Hand-written SVG charts for report.html. Geometry is fixed (a 600-unit wide viewBox that CSS
// scales) and every number is printed with a fixed format, so the same data gives the same bytes.
#include "sim/report/report_svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "sim/io/input_error.hpp"

namespace kvcheck::sim::svg {

namespace {

constexpr double kWidth = 600;
constexpr double kPlotLeft = 70;
constexpr double kPlotRight = 590;
constexpr double kPlotTop = 10;
constexpr double kPlotBottom = 190;
constexpr double kHeight = 216;
constexpr double kRowHeight = 22;
constexpr double kBarLeft = 250;
constexpr double kBarWidth = 230;

std::string fixed(double value, int decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

std::string open_svg(const std::string& label, double height) {
    return "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " + fixed(kWidth, 0) + " " +
           fixed(height, 0) + "\" role=\"img\" aria-label=\"" + escape(label) + "\">";
}

std::string text(double x, double y, const std::string& anchor, const std::string& content) {
    return "<text x=\"" + fixed(x, 1) + "\" y=\"" + fixed(y, 1) + "\" text-anchor=\"" + anchor + "\">" +
           escape(content) + "</text>";
}

// A step of 1, 2 or 5 times a power of ten giving at most about `ticks` intervals over `span`.
double nice_step(double span, int ticks) {
    const double raw = span / ticks;
    const double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (m * power >= raw) return m * power;
    return 10 * power;
}

// Appends "x,y" to an SVG points list.
void add_point(std::string& points, double x, double y) {
    if (!points.empty()) points += ' ';
    points += fixed(x, 1);
    points += ',';
    points += fixed(y, 1);
}

double x_of(double t, double t_max) { return kPlotLeft + t / t_max * (kPlotRight - kPlotLeft); }
double y_of(double v, double y_max) { return kPlotBottom - std::clamp(v / y_max, 0.0, 1.0) * (kPlotBottom - kPlotTop); }

// How many intervals the y axis gets: quarters, but for a count only as many as keep every tick
// a whole number (a top of 1 has ticks 0 and 1, not "0, 0, 1, 1, 1" rounded from quarters).
int y_intervals(double y_max, Unit unit) {
    if (unit != Unit::count) return 4;
    for (int n = 4; n > 1; --n) {
        const double step = y_max / n;
        if (step >= 1 && std::abs(step - std::round(step)) < 1e-9) return n;
    }
    return 1;
}

// Grid, y labels at even steps up to y_max, x labels in seconds of simulated time.
std::string axes(double t_max, double y_max, Unit unit) {
    std::string out = "<g class=\"axes\">";
    const int intervals = y_intervals(y_max, unit);
    for (int i = 0; i <= intervals; ++i) {
        const double v = y_max * i / intervals;
        const double y = y_of(v, y_max);
        out += "<line x1=\"" + fixed(kPlotLeft, 1) + "\" y1=\"" + fixed(y, 1) + "\" x2=\"" + fixed(kPlotRight, 1) +
               "\" y2=\"" + fixed(y, 1) + "\"/>";
        out += text(kPlotLeft - 6, y + 4, "end", format_value(v, unit));
    }
    const double step = nice_step(t_max, 6);
    for (int i = 0; i * step <= t_max * (1 + 1e-9); ++i) {
        const double t = i * step;
        out += text(x_of(t, t_max), kPlotBottom + 16, "middle", (step < 1 ? fixed(t, 1) : fixed(t, 0)) + " s");
    }
    return out + "</g>";
}

std::string no_series() { return "<p class=\"empty\">No time series in this report (a steps-mode run has none).</p>"; }

}  // namespace

std::string format_value(double value, Unit unit) {
    switch (unit) {
        case Unit::count: {
            const std::string digits = fixed(std::round(std::max(0.0, value)), 0);
            std::string out;
            for (std::size_t i = 0; i < digits.size(); ++i) {
                if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
                out += digits[i];
            }
            return out;
        }
        // Halves round up: a share such as 115/400 is 28.749999999999996 % as a double, which
        // would print as 28.7 %; a nudge of 1e-9 % is far below the digit printed.
        case Unit::ratio: return fixed(value * 100 + 1e-9, 1) + "%";
        case Unit::bytes: {
            static constexpr const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
            std::size_t i = 0;
            while (std::abs(value) >= 1024 && i + 1 < std::size(kNames)) {
                value /= 1024;
                ++i;
            }
            return fixed(value, i == 0 ? 0 : 1) + " " + kNames[i];
        }
        case Unit::ms: return value >= 1000 ? fixed(value / 1000, 2) + " s" : fixed(value, 1) + " ms";
        case Unit::us: return format_value(value / 1000, Unit::ms);
    }
    return fixed(value, 3);
}

std::string escape(const std::string& raw) {
    static constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD
    const std::string text = valid_utf8(raw);
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        // U+FFFE and U+FFFF, characters XML 1.0 cannot hold and HTML calls parse errors.
        if (text.compare(i, 3, "\xEF\xBF\xBE") == 0 || text.compare(i, 3, "\xEF\xBF\xBF") == 0) {
            out += kReplacement;
            i += 2;
            continue;
        }
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&#39;"; break;
            default:
                if ((static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == '\x7F')
                    out += kReplacement;
                else
                    out += c;
        }
    }
    return out;
}

double nice_ceiling(double value, Unit unit) {
    if (!(value > 0)) return 1;
    double scale = 1;
    if (unit == Unit::us) scale = 1000;
    while (unit == Unit::bytes && value / scale >= 1024) scale *= 1024;
    const double v = value / scale;
    const double power = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 4.0, 6.0, 8.0})
        if (m * power >= v * (1 - 1e-12)) return m * power * scale;
    return 10 * power * scale;
}

std::string line_chart(const std::string& label, const std::vector<double>& t_s, double t_max,
                       const std::vector<Line>& lines, double y_max, Unit unit, bool steps) {
    if (t_s.size() < 2 || !(t_max > 0)) return no_series();
    std::string out = open_svg(label, kHeight) + "<title>" + escape(label) + "</title>" + axes(t_max, y_max, unit);
    for (const Line& line : lines) {
        std::string points;
        double previous = std::numeric_limits<double>::quiet_NaN();
        for (std::size_t i = 0; i < t_s.size() && i < line.y.size(); ++i) {
            if (std::isnan(line.y[i])) continue;
            if (steps && !std::isnan(previous)) add_point(points, x_of(t_s[i], t_max), y_of(previous, y_max));
            add_point(points, x_of(t_s[i], t_max), y_of(line.y[i], y_max));
            previous = line.y[i];
        }
        out += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + line.color + "\" points=\"" + points +
               "\"><title>" + escape(line.name) + "</title></polyline>";
    }
    return out + "</svg>";
}

std::string stacked_chart(const std::string& label, const std::vector<double>& t_s, double t_max,
                          const std::vector<Line>& layers, double y_max, Unit unit) {
    if (t_s.size() < 2 || !(t_max > 0)) return no_series();
    std::string out = open_svg(label, kHeight) + "<title>" + escape(label) + "</title>" + axes(t_max, y_max, unit);
    std::vector<double> below(t_s.size(), 0.0);
    for (const Line& layer : layers) {
        std::vector<double> top = below;
        for (std::size_t i = 0; i < t_s.size() && i < layer.y.size(); ++i) top[i] += layer.y[i];
        std::string points;
        for (std::size_t i = 0; i < t_s.size(); ++i) add_point(points, x_of(t_s[i], t_max), y_of(top[i], y_max));
        for (std::size_t i = t_s.size(); i-- > 0;) add_point(points, x_of(t_s[i], t_max), y_of(below[i], y_max));
        out += "<polygon fill=\"" + layer.color + "\" fill-opacity=\"0.85\" points=\"" + points + "\"><title>" +
               escape(layer.name) + "</title></polygon>";
        below = std::move(top);
    }
    return out + "</svg>";
}

std::string bar_chart(const std::string& label, const std::vector<Bar>& bars, double x_max, Unit unit,
                      double share_of) {
    if (bars.empty()) return "<p class=\"empty\">Nothing to show.</p>";
    const double height = static_cast<double>(bars.size()) * kRowHeight + 6;
    std::string out = open_svg(label, height) + "<title>" + escape(label) + "</title><g class=\"bars\">";
    for (std::size_t i = 0; i < bars.size(); ++i) {
        const Bar& bar = bars[i];
        const double y = 4 + static_cast<double>(i) * kRowHeight;
        double width = x_max > 0 ? std::clamp(bar.value / x_max, 0.0, 1.0) * kBarWidth : 0;
        if (bar.value > 0) width = std::max(width, 1.5);  // a non-zero value never vanishes
        std::string value = format_value(bar.value, unit);
        if (share_of > 0) value += " (" + format_value(bar.value / share_of, Unit::ratio) + ")";
        out += text(kBarLeft - 6, y + 14, "end", bar.label);
        out += "<rect x=\"" + fixed(kBarLeft, 1) + "\" y=\"" + fixed(y + 2, 1) + "\" width=\"" + fixed(width, 1) +
               "\" height=\"" + fixed(kRowHeight - 6, 1) + "\" fill=\"" + bar.color + "\"><title>" +
               escape(bar.label + ": " + value) + "</title></rect>";
        out += text(kBarLeft + width + 6, y + 14, "start", value);
    }
    return out + "</g></svg>";
}

std::string legend(const std::vector<Line>& lines) {
    std::string out = "<div class=\"legend\">";
    for (const Line& line : lines)
        out += "<span><i style=\"background:" + line.color + "\"></i>" + escape(line.name) + "</span>";
    return out + "</div>";
}

}  // namespace kvcheck::sim::svg
