// The token form: the preview in words follows the choice and the ticked tools, and choosing another
// server reloads the page with that server's tools (the form works without this script too).
(function () {
  "use strict";
  var form = document.getElementById("token-form");
  if (!form) return;
  var preview = form.querySelector("[data-preview]");

  function words() {
    var mode = form.querySelector("input[name=scope_mode]:checked");
    if (!mode) return "";
    if (mode.value !== "server") return mode.dataset.words;
    var select = form.querySelector("[data-server-select]");
    var hidden = form.querySelector("input[type=hidden][name=server]");
    var path = select ? select.value : hidden ? hidden.value : "";
    var tools = Array.prototype.map.call(form.querySelectorAll("[data-tool]:checked"), function (box) {
      return box.value;
    });
    if (!form.querySelector("[data-tool]")) return "can call every tool you may call on " + path + "; cannot administer";
    if (!tools.length) return "can call no tool yet: tick at least one";
    return "can call " + tools.map(function (name) { return "`" + name + "`"; }).join(", ") + " on " + path + "; cannot administer";
  }

  function render() {
    window.previewWords(preview, "This token " + words() + ".");
  }

  form.addEventListener("change", function (event) {
    if (event.target.matches("[data-server-select]")) {
      if (event.target.value !== event.target.dataset.current) {  // a real choice, not a restored state
        window.location.search = "?server=" + encodeURIComponent(event.target.value);
      }
      return;
    }
    if (event.target.matches("[data-tool]")) {
      var server = form.querySelector("input[name=scope_mode][value=server]");
      if (server) server.checked = true;
    }
    if (event.target.matches("[data-tool], input[name=scope_mode]")) render();
  });
})();
