// Copy buttons: <button class="copy" data-copy-target="ID"> copies the value of the field #ID.
// The Clipboard API needs a secure context; elsewhere the text is selected and copied the old way.
(function () {
  "use strict";
  function report(button, text) {
    var status = button.parentElement.querySelector(".copy-status");
    if (status) { status.textContent = text; }
  }
  function fallback(field) {
    field.focus();
    field.select();
    try { return document.execCommand("copy"); } catch (error) { return false; }
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest("button.copy[data-copy-target]");
    if (!button) { return; }
    var field = document.getElementById(button.dataset.copyTarget);
    if (!field) { return; }
    var done = function () { button.classList.add("copied"); report(button, "Copied to the clipboard."); };
    var failed = function () { report(button, "Could not copy: select the text and copy it by hand."); };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(done, function () { (fallback(field) ? done : failed)(); });
    } else {
      (fallback(field) ? done : failed)();
    }
  });
})();
