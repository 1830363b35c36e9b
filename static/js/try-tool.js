// "Try it" on a server's page: call one tool through the gateway as the viewer (the page's session is the
// credential, as for any MCP client of this origin), in a session of its own: initialize, initialized,
// tools/call, then the session is ended. The answer (or the error) is shown as the gateway returned it.
(function () {
  "use strict";
  var VERSION = "2025-06-18";

  function message(body) {
    // A streamable-HTTP answer is JSON or an SSE stream whose data lines carry the JSON-RPC message.
    var text = body.trim();
    if (text.charAt(0) === "{") return JSON.parse(text);
    var found = null;
    text.split("\n").forEach(function (line) {
      if (line.indexOf("data:") === 0) {
        var parsed = JSON.parse(line.slice(5));
        if (parsed.id !== undefined) found = parsed;
      }
    });
    return found;
  }

  function post(url, payload, session) {
    var headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
    if (session) {
      headers["Mcp-Session-Id"] = session;
      headers["MCP-Protocol-Version"] = VERSION;
    }
    return fetch(url, { method: "POST", headers: headers, body: JSON.stringify(payload), credentials: "same-origin" });
  }

  async function call(url, tool, args) {
    var opened = await post(url, {
      jsonrpc: "2.0", id: 1, method: "initialize",
      params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "registry-try-it", version: "1" } },
    });
    if (!opened.ok) throw new Error("HTTP " + opened.status + ": " + (await opened.text()));
    var session = opened.headers.get("Mcp-Session-Id");
    await opened.text();
    await post(url, { jsonrpc: "2.0", method: "notifications/initialized" }, session);
    var answered = await post(url, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: tool, arguments: args } }, session);
    var body = await answered.text();
    if (session) fetch(url, { method: "DELETE", headers: { "Mcp-Session-Id": session, "MCP-Protocol-Version": VERSION }, credentials: "same-origin" });
    if (!answered.ok) throw new Error("HTTP " + answered.status + ": " + body);
    return message(body);
  }

  document.addEventListener("submit", function (event) {
    var form = event.target.closest("form[data-try-tool]");
    if (!form) return;
    event.preventDefault();
    var out = form.querySelector("[data-try-result]");
    var args;
    try {
      args = JSON.parse(form.querySelector("textarea").value || "{}");
    } catch (error) {
      out.textContent = "The arguments are not JSON: " + error.message;
      out.hidden = false;
      return;
    }
    out.textContent = "Calling…";
    out.hidden = false;
    call(form.dataset.url, form.dataset.tryTool, args).then(
      function (answer) {
        if (answer && answer.error) out.textContent = "Error " + answer.error.code + ": " + answer.error.message;
        else out.textContent = JSON.stringify(answer && answer.result, null, 2);
      },
      function (error) { out.textContent = error.message; }
    );
  });
})();
