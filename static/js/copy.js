// Copy buttons: `<button data-copy="text">` puts the text on the clipboard and says so for a moment.
(function () {
  "use strict";
  function fallback(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "absolute";
    area.style.left = "-9999px";
    document.body.appendChild(area);
    area.select();
    var ok = document.execCommand("copy");
    area.remove();
    return ok ? Promise.resolve() : Promise.reject(new Error("copy refused"));
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var text = button.dataset.copy;
    var copying = navigator.clipboard && window.isSecureContext ? navigator.clipboard.writeText(text) : fallback(text);
    var label = button.dataset.label || button.textContent;
    button.dataset.label = label;
    copying.then(
      function () { button.textContent = "Copied"; },
      function () { button.textContent = "Select and copy"; }
    ).then(function () { setTimeout(function () { button.textContent = label; }, 1500); });
  });
})();
