// The job form's command fields show the argument list their text splits into as one types: the server
// splits it (GET runner:command_preview, the form's own parser) and renders the preview, so this only
// places what it wrote.
(function () {
  "use strict";

  const DELAY_MS = 250;

  document.querySelectorAll("[data-command-preview]").forEach((box) => {
    const input = box.closest(".field").querySelector("textarea");
    let timer = null;
    let latest = 0;
    const refresh = async () => {
      const asked = ++latest;
      const url = box.dataset.url + "?" + new URLSearchParams({ command: input.value });
      try {
        const response = await fetch(url, { credentials: "same-origin", cache: "no-store" });
        if (!response.ok) throw new Error(String(response.status));
        const html = await response.text();
        if (asked === latest) box.innerHTML = html;  // an older answer arriving late is dropped
      } catch (error) {
        box.dataset.previewError = String(error);  // keep the last preview
      }
    };
    input.addEventListener("input", () => {
      window.clearTimeout(timer);
      timer = window.setTimeout(refresh, DELAY_MS);
    });
  });
})();
