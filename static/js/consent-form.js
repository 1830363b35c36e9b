// The consent page: the preview in words follows the ticked rights and tools, as the token form's does
// (the page works without this script too: the server says what was wrong when Allow has nothing to allow).
(function () {
  "use strict";
  var form = document.getElementById("consent-form");
  if (!form) return;
  var preview = form.querySelector("[data-preview]");
  var path = form.dataset.serverPath;

  function ticked(selector) {
    return Array.prototype.filter.call(form.querySelectorAll(selector), function (box) { return box.checked; });
  }

  function words() {
    // What the application may do with the choices as they are now; `name` marks code.
    var administration = form.querySelector("[data-administration]");
    if (administration && administration.checked) return "can do everything you can, administering the registry included";
    var all = form.querySelector("[data-all-rights]");
    var rights = ticked("[data-right]");
    if (!(all && all.checked) && !rights.length) return "can do nothing yet: tick at least one of your rights, or choose Deny";
    var tools = ticked("[data-consent-tool]").map(function (box) { return box.value; });
    if (form.querySelector("[data-consent-tool]") && !tools.length) return "can call no tool yet: tick at least one, or choose Deny";
    if (!tools.length) return "can use the rights ticked above and cannot administer";
    return "can call " + tools.map(function (name) { return "`" + name + "`"; }).join(", ") + " on `" + path + "` and cannot administer";
  }

  function render() {
    window.previewWords(preview, "With the choices as shown, it " + words() + ".");
  }

  form.addEventListener("change", function (event) {
    if (event.target.matches("input[type=checkbox]")) render();
  });
  render();
})();
