// The scope form's rules: "Add a rule" adds a blank row without saving first, and choosing a server offers
// its known tools as ticks (the form works without this script: two blank rows, tools typed).
(function () {
  "use strict";
  document.addEventListener("DOMContentLoaded", function () {
    var table = document.querySelector("[data-scope-rules]");
    var add = document.querySelector("[data-add-rule]");
    var rows = document.querySelector("[data-rule-rows]");
    if (!table || !add || !rows) return;
    var known = JSON.parse(table.dataset.serverTools || "{}");

    function offerTools(row) {
      var select = row.querySelector("[data-rule-server]");
      var place = row.querySelector("[data-rule-tools]");
      var name = select.name.replace(/-server$/, "-tool_choices");
      var ticked = {};
      place.querySelectorAll("input:checked").forEach(function (box) { ticked[box.value] = true; });
      place.textContent = "";
      (known[select.value] || []).forEach(function (tool) {
        var label = document.createElement("label");
        label.className = "method";
        var box = document.createElement("input");
        box.type = "checkbox";
        box.name = name;
        box.value = tool;
        box.checked = !!ticked[tool];
        label.appendChild(box);
        label.appendChild(document.createTextNode(" " + tool));
        place.appendChild(label);
      });
    }

    table.addEventListener("change", function (event) {
      if (event.target.matches("[data-rule-server]")) offerTools(event.target.closest("[data-rule-row]"));
    });

    add.hidden = false;
    add.addEventListener("click", function () {
      var body = table.querySelector("tbody");
      var last = body.querySelector("[data-rule-row]:last-child");
      var index = Number(rows.value);
      var row = last.cloneNode(true);
      row.querySelectorAll("[name]").forEach(function (field) {
        field.name = field.name.replace(/-\d+-/, "-" + index + "-");
        if (field.type === "checkbox") field.checked = false;
        else if (field.tagName === "SELECT") field.selectedIndex = 0;
        else field.value = "";
      });
      row.querySelectorAll("[aria-label]").forEach(function (field) {
        field.setAttribute("aria-label", field.getAttribute("aria-label").replace(/\d+$/, String(index + 1)));
      });
      row.querySelector("[data-rule-tools]").textContent = "";
      body.appendChild(row);
      rows.value = String(index + 1);
      row.querySelector("[data-rule-server]").focus();
    });
  });
})();
