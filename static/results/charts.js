// Charts: every <div data-figure="KEY"> is drawn from the figures in <script id="pilotweb-figures">
// (Django's json_script), built server-side by results/charts/. Charts are drawn as they scroll
// into view, so a run with many metrics stays quick. A chart with data-run-url opens the run of a
// clicked point; the history's permalink follows the range zoomed to. Parts of a page loaded later
// (a run's series sections, sections.js) bring their own figures: PilotwebCharts.add(figures, element).
(function () {
  "use strict";
  if (typeof Plotly === "undefined") { return; }
  var source = document.getElementById("pilotweb-figures");
  var figures = source ? JSON.parse(source.textContent) : {};

  function runUrl(element, runId) {
    // data-run-url is the URL of run 0 ("/runs/0/"): put the clicked run's id in its place; data-run-query
    // ("?metric=12") names the series, so a run of many series opens at the page that shows it.
    return element.dataset.runUrl.replace(/\/0\/$/, "/" + encodeURIComponent(runId) + "/") +
      (element.dataset.runQuery || "");
  }

  function day(value) {
    // Plotly gives axis ranges as "YYYY-MM-DD HH:MM:SS.sss" strings (or numbers for autorange).
    return typeof value === "string" ? value.slice(0, 10) : null;
  }

  function followRange(element) {
    var link = document.querySelector(".js-range-permalink");
    if (!link) { return; }
    element.on("plotly_relayout", function (change) {
      var url = new URL(window.location.href);
      var from = day(change["xaxis.range[0]"] || (change["xaxis.range"] || [])[0]);
      var to = day(change["xaxis.range[1]"] || (change["xaxis.range"] || [])[1]);
      if (change["xaxis.autorange"]) {
        url.searchParams.delete("from");
        url.searchParams.delete("to");
      } else if (from && to) {
        url.searchParams.set("from", from);
        url.searchParams.set("to", to);
      } else {
        return;
      }
      link.href = url.pathname + url.search;
    });
  }

  function draw(element) {
    var figure = figures[element.dataset.figure];
    if (!figure || element.dataset.drawn) { return; }
    element.dataset.drawn = "true";
    Plotly.newPlot(element, figure.data, figure.layout, figure.config || {}).then(function () {
      element.classList.add("drawn");
      if (element.dataset.runUrl) {
        element.on("plotly_click", function (event) {
          var point = event.points && event.points[0];
          if (point && point.customdata !== undefined && point.customdata !== null) {
            window.location.href = runUrl(element, point.customdata);
          }
        });
        followRange(element);
      }
    });
  }

  var observer = "IntersectionObserver" in window ? new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (entry.isIntersecting) {
        observer.unobserve(entry.target);
        draw(entry.target);
      }
    });
  }, {rootMargin: "400px 0px"}) : null;

  function watch(root) {
    Array.prototype.slice.call(root.querySelectorAll("[data-figure]")).forEach(function (element) {
      if (observer) { observer.observe(element); } else { draw(element); }
    });
  }

  window.PilotwebCharts = {
    add: function (more, root) {
      Object.keys(more).forEach(function (key) { figures[key] = more[key]; });
      watch(root);
    }
  };
  watch(document);
})();
