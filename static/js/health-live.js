// Live health on server tables: rows `tr[data-path]` inside an element with `data-health-socket`
// (the websocket path) are updated from the health websocket without reloading the page. The socket
// sends a snapshot `{path: entry}` on connect, then one `{path: entry | null}` per change.
(function () {
  "use strict";
  var root = document.querySelector("[data-health-socket]");
  if (!root || !window.WebSocket) return;
  var labels = JSON.parse(document.getElementById("health-status-labels").textContent);
  var indicator = document.querySelector("[data-live-indicator]");
  // Which entries this table shows: servers' by default, agents' with `data-health-kind="agent"` (rows keyed
  // by `data-health-key`, the agent's gateway path).
  var kind = root.dataset.healthKind || "server";
  var retry = 1000;
  var pinger = null;

  function show(state, text) {
    if (!indicator) return;
    indicator.dataset.state = state;
    indicator.textContent = text;
  }

  function rowOf(path) {
    var rows = root.querySelectorAll("tr[data-path]");
    for (var i = 0; i < rows.length; i++) {
      if ((rows[i].dataset.healthKey || rows[i].dataset.path) === path) return rows[i];
    }
    return null;
  }

  // A row for a server the page did not list, where the table asks for it (`data-health-append`).
  function added(path) {
    var body = root.querySelector("tbody");
    var empty = body.querySelector("td.empty");
    if (empty) empty.parentNode.remove();
    var row = document.createElement("tr");
    row.dataset.path = path;
    row.innerHTML = '<td><code class="path"></code></td>' +
      '<td><span class="badge" data-health-status=""></span><div class="muted small" data-last-checked></div></td>' +
      '<td class="num" data-num-tools></td>';
    row.querySelector("code").textContent = path;
    body.appendChild(row);
    return row;
  }

  // Servers the dashboard did not list (registered or shared elsewhere): the page itself is fetched
  // again, once for any number of news, and the new rows and the state counts are taken from it, so
  // they carry the same buttons, filters and permissions as a reload would give (`data-health-fetch`).
  var fetching = false;
  var again = false; // news arrived while a fetch was under way: fetch once more after it
  var stale = {}; // rows whose tools changed: their server cell (tools and schemas) is taken again
  // Removals so far, and the removal that took each path's row: a page fetched before a server was
  // removed still lists it, and must not bring its row back.
  var removals = 0;
  var removedAt = {};
  function fetchRows() {
    if (fetching) {
      again = true;
      return;
    }
    fetching = true;
    setTimeout(function () {
      var wanted = stale;
      var asked = removals;
      stale = {};
      fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } })
        .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
        .then(function (html) { merge(new DOMParser().parseFromString(html, "text/html"), wanted, asked); })
        .catch(function () {})
        .then(function () {
          fetching = false;
          if (again) {
            again = false;
            fetchRows();
          }
        });
    }, 300);
  }

  function merge(fresh, wanted, asked) {
    var body = root.querySelector("tbody");
    fresh.querySelectorAll("[data-health-socket] tr[data-path]").forEach(function (row) {
      var current = rowOf(row.dataset.path);
      var next = row.querySelector("[data-next-check]");
      var shownNext = current && current.querySelector("[data-next-check]");
      if (next && shownNext) shownNext.dataset.fromNow = next.dataset.fromNow; // after each check
      if (current && wanted[row.dataset.path]) {
        var details = current.querySelector("[data-tools]");
        var open = details && details.open;
        current.cells[0].replaceWith(document.importNode(row.cells[0], true));
        details = current.querySelector("[data-tools]");
        if (open && details) details.open = true;
      }
      if (current || removedAt[row.dataset.path] > asked) return;
      var empty = body.querySelector("td.empty");
      if (empty) empty.parentNode.remove();
      body.appendChild(document.importNode(row, true));
    });
    var counts = fresh.querySelector("[data-state-counts]");
    var current = document.querySelector("[data-state-counts]");
    if (counts && current) current.replaceWith(document.importNode(counts, true));
  }

  function gone(path, row) {
    removedAt[path] = ++removals;
    var body = row.parentNode;
    row.remove();
    if (!body.querySelector("tr[data-path]") && body.dataset.emptyText) {
      var empty = document.createElement("tr");
      empty.innerHTML = '<td colspan="9" class="empty"></td>';
      empty.firstChild.textContent = body.dataset.emptyText;
      body.appendChild(empty);
    }
  }

  function apply(path, entry) {
    if (entry !== null && (entry.kind || "server") !== kind) return;
    var row = rowOf(path);
    if (!row && entry !== null) {
      if (root.hasAttribute("data-health-append")) row = added(path);
      else if (root.hasAttribute("data-health-fetch")) fetchRows();
    }
    if (!row) return;
    if (entry === null) {
      gone(path, row);
      if (root.hasAttribute("data-health-fetch")) fetchRows(); // the counts by state
      return;
    }
    var badge = row.querySelector("[data-health-status]");
    if (badge && badge.dataset.healthStatus !== entry.status) {
      badge.dataset.healthStatus = entry.status;
      badge.className = "badge status-" + entry.status;
      badge.textContent = labels[entry.status] || entry.status;
      badge.hidden = entry.status === "disabled"; // the state cell says so already
      row.classList.add("changed");
      setTimeout(function () { row.classList.remove("changed"); }, 2000);
      if (root.hasAttribute("data-health-fetch")) fetchRows(); // the counts by state
    }
    var detail = row.querySelector("[data-health-detail]");
    if (detail) {
      var shown = entry.status === "unhealthy" || entry.status === "auth-refused" || entry.status === "needs-connection" ? entry.detail || "" : "";
      detail.textContent = shown;
      detail.hidden = !shown;
    }
    var tools = row.querySelector("[data-num-tools]");
    if (tools && tools.textContent !== String(entry.num_tools)) {
      tools.textContent = String(entry.num_tools);
      if (root.hasAttribute("data-health-fetch")) {
        stale[path] = true;
        fetchRows();
      }
    }
    var checked = row.querySelector("[data-last-checked]");
    if (checked && entry.last_checked_iso && checked.dataset.ago !== entry.last_checked_iso) {
      checked.dataset.ago = entry.last_checked_iso;
      checked.dataset.prefix = "checked ";
      checked.title = new Date(entry.last_checked_iso).toLocaleString();
      if (row.querySelector("[data-next-check]") && root.hasAttribute("data-health-fetch")) fetchRows();
    }
    if (window.registryTimes) window.registryTimes.refresh();
    if (typeof entry.enabled === "boolean") enabledState(row, entry.enabled);
  }

  // The row's state cell, its class and its enable/disable button follow the server's state.
  function enabledState(row, enabled) {
    row.classList.toggle("is-off", !enabled);
    var state = row.querySelector("[data-state]");
    if (state) {
      state.className = "state " + (enabled ? "on" : "off");
      state.textContent = enabled ? "Enabled" : "Disabled";
    }
    var toggle = row.querySelector("[data-toggle]");
    if (toggle) {
      var name = toggle.dataset.name || "";
      toggle.querySelector("input[name=enabled]").value = enabled ? "off" : "on";
      var button = toggle.querySelector("button");
      button.textContent = enabled ? "Disable" : "Enable";
      button.setAttribute("aria-label", (enabled ? "Disable " : "Enable ") + name);
      button.classList.toggle("secondary", enabled);
    }
    var refresh = row.querySelector("[data-refresh]");
    if (refresh) refresh.hidden = !enabled;
  }

  function connect() {
    var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    var socket = new WebSocket(scheme + window.location.host + root.dataset.healthSocket);
    socket.onopen = function () {
      retry = 1000;
      show("on", "Live");
      pinger = setInterval(function () { socket.send(JSON.stringify({ type: "ping" })); }, 25000);
    };
    socket.onmessage = function (event) {
      var message = JSON.parse(event.data);
      if (message.type) return; // pong, keepalive, error
      Object.keys(message).forEach(function (path) { apply(path, message[path]); });
    };
    socket.onclose = function (event) {
      clearInterval(pinger);
      if (event.code === 4401) {
        show("off", "Signed out: reload to sign in");
        return;
      }
      show("off", "Reconnecting…");
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 30000);
    };
  }

  connect();
})();
