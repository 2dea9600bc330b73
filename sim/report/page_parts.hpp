// What every kvcheck HTML page shares (report.html, the suite's index.html): the style sheet, and
// the two inline scripts the headless-browser tests read: one records page errors as the page
// loads, one at its end marks every chart the browser laid out, publishes the error list, and
// says whether the page, or its grid of columns, is wider than the window.
#pragma once

namespace kvcheck::sim::page {

inline constexpr const char* kStyle = R"(<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#222;margin:24px;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:18px 0 6px;border-bottom:1px solid #ddd;padding-bottom:3px}
h3{font-size:16px;margin:0}.meta,.note{color:#555;font-size:12.5px;margin:4px 0}
.grid{display:grid;grid-template-columns:repeat(var(--columns),minmax(380px,640px));gap:6px 24px;overflow-x:auto}
.grid>h2{grid-column:1/-1}figure{margin:0 0 10px}figcaption{font-weight:600;margin:6px 0 2px}
svg.chart{width:100%;height:auto;display:block}svg.chart text{font-size:12.5px;fill:#333}
.verdict{font-size:15px;font-weight:700;margin:6px 0}.verdict span{font-weight:400;font-size:12.5px;color:#555}
.pass{color:#235a1c}.fail{color:#8a1c1c}.allowed{background:#ececec;color:#444}ul.failures{margin:2px 0 6px;padding-left:20px;color:#8a1c1c}
code{font:12px ui-monospace,monospace;background:#f5f5f5;padding:1px 4px;word-break:break-all}
.axes line{stroke:#e6e6e6}.legend span{margin-right:14px;font-size:12.5px;white-space:nowrap}
.legend i{display:inline-block;width:11px;height:11px;margin-right:5px;vertical-align:-1px}
table{border-collapse:collapse;font-size:12.5px;margin:4px 0}.cell table{width:100%}td,th{border-bottom:1px solid #eee;padding:3px 8px;text-align:left;vertical-align:top}
table.comparison td:not(:first-child),table.counters td{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:2px 9px;border-radius:10px;font-size:12.5px;margin:6px 0}
.ok{background:#e3f1e0;color:#235a1c}.bad{background:#fbe3e3;color:#8a1c1c}.warn{background:#fdf3d8;color:#6b5200}
.empty{color:#666;font-style:italic}.description{max-width:900px;margin:6px 0}
table.index td{vertical-align:top}table.index .badge{margin:0}table.index td.num{text-align:right;font-variant-numeric:tabular-nums}#page-errors:empty{display:none}#page-errors{color:#8a1c1c}
</style>)";

// Runs before anything else: errors raised while the page loads are kept for the check below.
inline constexpr const char* kErrorTrap = R"(<script>
var kvErrors = [];
window.addEventListener('error', function (e) { kvErrors.push(String(e.message)); });
var kvConsoleError = console.error;
console.error = function () { kvErrors.push(Array.prototype.join.call(arguments, ' ')); kvConsoleError.apply(console, arguments); };
</script>)";

// Marks every chart the browser laid out with a non-empty box and publishes the error list.
inline constexpr const char* kDrawCheck = R"(<script>
(function () {
  var drawn = 0;
  document.querySelectorAll('svg.chart').forEach(function (chart) {
    var box = chart.getBBox(), shown = chart.getBoundingClientRect();
    if (box.width > 0 && box.height > 0 && shown.width > 0) { chart.setAttribute('data-drawn', '1'); drawn++; }
  });
  document.body.setAttribute('data-charts-drawn', String(drawn));
  document.getElementById('page-errors').textContent = kvErrors.join('\n');
  document.body.setAttribute('data-page-errors', String(kvErrors.length));
  var wide = document.documentElement.scrollWidth > window.innerWidth;
  document.querySelectorAll('.grid').forEach(function (grid) { if (grid.scrollWidth > grid.clientWidth + 1) wide = true; });
  document.body.setAttribute('data-overflow-x', String(wide));
})();
</script>)";

}  // namespace kvcheck::sim::page
