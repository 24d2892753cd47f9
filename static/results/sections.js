// A run of many series (results/run_page.py) shows a page of them, each series' section a placeholder
// (<section data-section-url>) filled from that address when it is scrolled to, when a table's link
// leads to it (#metric-ID) or when its link is clicked: the section's HTML, and its figures in a
// <script type="application/json">, drawn by charts.js as they scroll into view.
(function () {
  "use strict";
  var placeholders = Array.prototype.slice.call(document.querySelectorAll("section[data-section-url]"));
  if (!placeholders.length || !window.fetch) { return; }
  var loading = new Map();

  function fill(placeholder, html) {
    // In place: the element stays (its anchor, and the browser's scroll anchoring, which keeps the section at
    // the top of the window where it is while those around it grow).
    var template = document.createElement("template");
    template.innerHTML = html;
    var section = template.content.querySelector("section.metric-detail");
    var data = template.content.querySelector("script[type='application/json']");
    if (!section) { throw new Error("no section"); }
    placeholder.className = section.className;
    placeholder.removeAttribute("data-section-url");
    placeholder.removeAttribute("aria-busy");
    placeholder.replaceChildren.apply(placeholder, Array.prototype.slice.call(section.childNodes));
    if (data && window.PilotwebCharts) { window.PilotwebCharts.add(JSON.parse(data.textContent), placeholder); }
    return placeholder;
  }

  function load(placeholder) {
    if (!loading.has(placeholder)) {
      placeholder.setAttribute("aria-busy", "true");
      loading.set(placeholder, fetch(placeholder.dataset.sectionUrl, {credentials: "same-origin"})
        .then(function (response) {
          if (!response.ok) { throw new Error("HTTP " + response.status); }
          return response.text();
        })
        .then(function (html) { return fill(placeholder, html); })
        .catch(function () {
          loading.delete(placeholder);
          placeholder.removeAttribute("aria-busy");
          var note = placeholder.querySelector(".section-loading");
          if (note) { note.textContent = "This section could not be loaded: reload the page to try again."; }
          return null;
        }));
    }
    return loading.get(placeholder);
  }

  function arrive() {
    // A link to a section (#metric-ID) leads to its placeholder: load it, and keep it in view once filled.
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id ? document.getElementById(id) : null;
    if (!target || !target.hasAttribute("data-section-url")) { return; }
    load(target).then(function (section) {
      if (section && window.location.hash === "#" + id) { section.scrollIntoView(); }
    });
  }

  if ("IntersectionObserver" in window) {
    var observer = new IntersectionObserver(function (entries) {
      entries.forEach(function (entry) {
        if (entry.isIntersecting) {
          observer.unobserve(entry.target);
          load(entry.target);
        }
      });
    }, {rootMargin: "200px 0px"});
    placeholders.forEach(function (placeholder) { observer.observe(placeholder); });
  }
  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest(".section-loading a") : null;
    var placeholder = link ? link.closest("section[data-section-url]") : null;
    if (placeholder) {
      event.preventDefault();
      load(placeholder);
    }
  });
  window.addEventListener("hashchange", arrive);
  arrive();
})();
