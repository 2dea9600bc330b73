#include "sim/report/suite_index.hpp"

#include <cstdio>

#include "sim/report/page_parts.hpp"
#include "sim/report/report_svg.hpp"

namespace kvcheck::sim {

// Seconds as a suite prints them: "1.25 s".
std::string seconds_text(double seconds) {
    char text[32];
    std::snprintf(text, sizeof text, "%.2f s", seconds);
    return text;
}

namespace {

std::string row(const IndexEntry& e) {
    const char* badge = e.status == "passed" ? "ok" : e.status == "failed" ? "bad" : "warn";
    std::string name = svg::escape(e.name);
    if (!e.folder.empty())
        name = "<a href=\"" + svg::escape(e.folder + (e.has_html ? "/report.html" : "/report.json")) + "\">" + name +
               "</a>";
    std::string what = svg::escape(e.first_failure);
    if (!e.reproduce.empty() && e.status == "failed") what += "<br><code>" + svg::escape(e.reproduce) + "</code>";
    return "<tr><td><span class=\"badge " + std::string(badge) + "\">" + e.status + "</span></td><td>" + name +
           "</td><td class=\"num\">" + seconds_text(e.seconds) + "</td><td>" + what + "</td></tr>\n";
}

}  // namespace

std::string suite_index_html(const std::vector<IndexEntry>& entries, const IndexSummary& s) {
    const bool passed = s.failed == 0 && s.errors == 0;
    std::string page = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kvcheck suite: " +
                       std::to_string(entries.size()) + " cases</title>\n" + page::kErrorTrap + "\n" + page::kStyle +
                       "\n</head><body>\n<h1>kvcheck suite</h1>\n<p class=\"meta\">" + svg::escape(s.made_by) +
                       " · wall-clock times of this run</p>\n";
    page += std::string("<p class=\"verdict ") + (passed ? "pass\">PASS" : "fail\">FAIL") + "<span> " +
            std::to_string(s.passed) + " passed, " + std::to_string(s.failed) + " failed, " + std::to_string(s.errors) +
            (s.errors == 1 ? " error" : " errors") + " in " + seconds_text(s.seconds) +
            "</span></p>\n<pre id=\"page-errors\"></pre>\n";
    page += "<table class=\"index\"><tr><th>verdict</th><th>scenario</th><th>time</th><th>failure or error</th></tr>\n";
    for (const char* status : {"failed", "error", "passed"})
        for (const IndexEntry& e : entries)
            if (e.status == status) page += row(e);
    return page + "</table>\n" + page::kDrawCheck + "\n</body></html>\n";
}

}  // namespace kvcheck::sim
