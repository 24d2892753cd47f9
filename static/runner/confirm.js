// A form with data-confirm asks before it submits: cancelling a session takes a second step. Confirmed here,
// the form carries confirm=yes and the server acts at once; without JavaScript the server asks on a page.
(function () {
  "use strict";

  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) {
        event.preventDefault();
        return;
      }
      if (!form.querySelector('input[name="confirm"]')) {
        const confirmed = document.createElement("input");
        Object.assign(confirmed, { type: "hidden", name: "confirm", value: "yes" });
        form.append(confirmed);
      }
    });
  });
})();
