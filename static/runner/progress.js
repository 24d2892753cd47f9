// Live progress of benchmark sessions: every [data-session-progress] block that is queued or running
// polls its JSON (GET /api/v1/sessions/{id}) every 2 s and redraws its bar, figures and per-metric
// CI widths. The server renders the same block, so the page is complete without JavaScript; when a
// session finishes the page reloads once to show its outcome, rounds and runs.
// Formatting mirrors runner.views.progress_view and runner.views.duration.
(function () {
  "use strict";

  const INTERVAL_MS = 2000;
  const ACTIVE = new Set(["queued", "running"]);
  const STATUS_LABELS = {
    queued: "Queued", running: "Running", converged: "converged (CI within target)",
    budget_exhausted: "budget exhausted", resolved: "difference resolved",
    unresolved: "no difference resolved within budget", cancelled: "Cancelled", failed: "Failed",
  };

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "—";
    const s = Math.max(0, Math.round(seconds));
    const pad = (n) => String(n).padStart(2, "0");
    if (s < 60) return s + " s";
    if (s < 3600) return Math.floor(s / 60) + " min " + pad(s % 60) + " s";
    return Math.floor(s / 3600) + " h " + pad(Math.floor(s / 60) % 60) + " min";
  }

  function view(session) {
    const progress = session.progress || {};
    const rounds = progress.rounds_done || 0;
    const elapsed = progress.elapsed;
    const remaining = progress.estimated_remaining;
    const active = ACTIVE.has(session.status);
    let fraction = null;
    if (!active) fraction = 1;
    else if (session.status === "running" && elapsed != null && remaining != null) {
      fraction = elapsed + remaining > 0 ? elapsed / (elapsed + remaining) : 0;
    }
    const figures = [rounds + " round" + (rounds === 1 ? "" : "s")];
    if (session.status === "queued") figures.push("waiting for a worker");
    else {
      figures.push(duration(elapsed || 0) + " elapsed");
      if (active) figures.push(remaining != null ? "~" + duration(remaining) + " left" : "time left unknown");
    }
    const metrics = (progress.metrics || []).map((item) => {
      const width = item.relative_width;
      const target = item.target_width;
      let percent = 0;
      if (item.converged) percent = 100;
      else if (width && target) percent = Math.min(100, Math.round((100 * target) / width));
      return {
        cells: [item.workload || "", item.metric || "",
          width == null ? "—" : (100 * width).toFixed(1) + "%",
          target == null ? "—" : (100 * target).toFixed(1) + "%"],
        percent: percent,
        state: item.converged ? "✓ within target" : "… narrowing",
      };
    });
    return { fraction: fraction, figures: figures.join(" · "), metrics: metrics };
  }

  function cell(text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    return td;
  }

  function render(block, session) {
    const v = view(session);
    const field = (name) => block.querySelector('[data-field="' + name + '"]');
    const status = field("status");
    status.textContent = STATUS_LABELS[session.status] || session.status;
    status.className = "badge status-" + session.status;
    const bar = field("bar");
    const fill = bar.querySelector(".fill");
    if (v.fraction === null) {
      bar.classList.add("indeterminate");
      bar.removeAttribute("aria-valuenow");
      fill.style.width = "100%";
    } else {
      const percent = Math.round(100 * v.fraction);
      bar.classList.remove("indeterminate");
      bar.setAttribute("aria-valuenow", String(percent));
      fill.style.width = percent + "%";
    }
    field("figures").textContent = v.figures;
    const body = field("metrics");
    const rows = v.metrics.map((item) => {
      const tr = document.createElement("tr");
      tr.append(cell(item.cells[0]), cell(item.cells[1]), cell(item.cells[2], "num"), cell(item.cells[3], "num"));
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
      } catch (error) {
        block.dataset.pollError = String(error);  // keep the last rendered state; try again
        window.setTimeout(tick, INTERVAL_MS * 2);
        return;
      }
      delete block.dataset.pollError;
      render(block, session);
      if (ACTIVE.has(session.status)) window.setTimeout(tick, INTERVAL_MS);
      else if (ACTIVE.has(started)) window.location.reload();
    };
    window.setTimeout(tick, INTERVAL_MS);
  }

  document.querySelectorAll("[data-session-progress]").forEach((block) => {
    if (ACTIVE.has(block.dataset.status)) poll(block);
  });
})();
