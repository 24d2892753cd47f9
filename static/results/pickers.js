// Project and machine filters are text fields that suggest as you type: <input data-suggest="projects|machines"
// list="ID"> fills its <datalist id="ID"> from the API's search (the projects and machines you may read), so a
// page never lists thousands of options.
(function () {
  "use strict";
  var SOURCES = {
    projects: {url: "/api/v1/projects", value: function (item) { return item.slug; },
               label: function (item) { return item.name; }},
    machines: {url: "/api/v1/machines", value: function (item) { return item.name; },
               label: function (item) { return item.cpu_model || ""; }}
  };
  function suggest(input) {
    var source = SOURCES[input.dataset.suggest];
    var list = document.getElementById(input.getAttribute("list"));
    if (!source || !list) { return; }
    var query = new URLSearchParams({search: input.value.trim(), limit: "20"});
    fetch(source.url + "?" + query, {credentials: "same-origin", headers: {Accept: "application/json"}})
      .then(function (response) { return response.ok ? response.json() : []; })
      .then(function (items) {
        list.replaceChildren.apply(list, items.map(function (item) {
          var option = document.createElement("option");
          option.value = source.value(item);
          option.label = source.label(item);
          return option;
        }));
      })
      .catch(function () { /* suggestions are a convenience: typing the name still filters */ });
  }
  var timers = new WeakMap();
  function later(input) {
    clearTimeout(timers.get(input));
    timers.set(input, setTimeout(function () { suggest(input); }, 200));
  }
  document.addEventListener("input", function (event) {
    if (event.target.matches && event.target.matches("input[data-suggest]")) { later(event.target); }
  });
  document.addEventListener("focusin", function (event) {
    if (event.target.matches && event.target.matches("input[data-suggest]")) { suggest(event.target); }
  });
})();
