// Live progress of benchmark sessions: every [data-session-progress] block that is queued or running
// polls its JSON (GET /api/v1/sessions/{id}) every 2 s and redraws its bar, figures and per-metric
// CI widths from the `display` the server worded (the runner's progress module renders the same block, so the
// page is complete without JavaScript and nothing is formatted twice). A session page's rounds table
// ([data-rounds]) gets the rows of new rounds as the server renders them (runner:session_rounds). When a
// session finishes the page reloads once to show its outcome and runs.
(function () {
  "use strict";

  const INTERVAL_MS = 2000;
  const ACTIVE = new Set(["queued", "running"]);

  function cell(text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    return td;
  }

  function render(block, session) {
    const v = session.display;
    const field = (name) => block.querySelector('[data-field="' + name + '"]');
    const status = field("status");
    status.textContent = v.status_label;
    status.className = "badge status-" + session.status;
    const bar = field("bar");
    const fill = bar.querySelector(".fill");
    if (v.fraction === null) {
      bar.classList.add("indeterminate");
      bar.removeAttribute("aria-valuenow");
      fill.style.width = "100%";
    } else {
      const percent = v.percent;
      bar.classList.remove("indeterminate");
      bar.setAttribute("aria-valuenow", String(percent));
      fill.style.width = percent + "%";
    }
    field("figures").textContent = v.figures;
    const body = field("metrics");
    const rows = v.metrics.map((item) => {
      const tr = document.createElement("tr");
      tr.append(cell(item.workload), cell(item.metric), cell(item.width, "num"), cell(item.target, "num"));
      const meterCell = document.createElement("td");
      const meter = document.createElement("meter");
      Object.assign(meter, { min: 0, max: 100, low: 99.9, optimum: 100, value: item.percent });
      meter.textContent = item.percent + "%";
      meterCell.append(meter);
      tr.append(meterCell, cell(item.state));
      return tr;
    });
    body.replaceChildren(...rows);
    body.closest("table").hidden = rows.length === 0;
    block.dataset.status = session.status;
  }

  // Append the rows of rounds the table does not show yet; the rows are the page's own template.
  async function addRounds(session) {
    const body = document.querySelector('[data-rounds][data-session="' + session.id + '"]');
    if (!body || body.rows.length >= session.rounds_done) return;
    const last = body.rows.length ? body.rows[body.rows.length - 1].dataset.index : "-1";
    const response = await fetch(body.dataset.url + "?after=" + encodeURIComponent(last), {
      credentials: "same-origin", cache: "no-store",
    });
    if (!response.ok) throw new Error(String(response.status));
    const html = await response.text();
    body.insertAdjacentHTML("beforeend", html);
    body.closest("table").hidden = body.rows.length === 0;
    const empty = document.querySelector("[data-rounds-empty]");
    if (empty) empty.hidden = body.rows.length > 0;
  }

  function poll(block) {
    const started = block.dataset.status;
    const tick = async () => {
      let session;
      try {
        const response = await fetch(block.dataset.url, {
          headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store",
        });
        if (!response.ok) throw new Error(String(response.status));
        session = await response.json();
        render(block, session);
        await addRounds(session);
      } catch (error) {
        block.dataset.pollError = String(error);  // keep the last rendered state; try again
        window.setTimeout(tick, INTERVAL_MS * 2);
        return;
      }
      delete block.dataset.pollError;
      if (ACTIVE.has(session.status)) window.setTimeout(tick, INTERVAL_MS);
      else if (ACTIVE.has(started)) window.location.reload();
    };
    window.setTimeout(tick, INTERVAL_MS);
  }

  document.querySelectorAll("[data-session-progress]").forEach((block) => {
    if (ACTIVE.has(block.dataset.status)) poll(block);
  });
})();
