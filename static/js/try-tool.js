// "Try it" on a server's page: call one tool through the gateway as the viewer (the page's session is the
// credential, as for any MCP client of this origin), in a session of its own: initialize, initialized,
// tools/call, then the session is ended. The answer is shown as JSON; a refusal or an error by its message
// (with when to try again), and a link to this registry (a connection to make) as a link.
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
    if (!opened.ok) throw new Error(refusal(opened, await opened.text()));
    var session = opened.headers.get("Mcp-Session-Id");
    await opened.text();
    await post(url, { jsonrpc: "2.0", method: "notifications/initialized" }, session);
    var answered = await post(url, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: tool, arguments: args } }, session);
    var body = await answered.text();
    if (session) fetch(url, { method: "DELETE", headers: { "Mcp-Session-Id": session, "MCP-Protocol-Version": VERSION }, credentials: "same-origin" });
    if (!answered.ok) throw new Error(refusal(answered, body));
    return message(body);
  }

  function refusal(response, body) {
    // What the gateway said when it refused: the registry's error ({detail}) or a JSON-RPC error's message.
    var said = null;
    try {
      var parsed = JSON.parse(body);
      if (parsed && typeof parsed.detail === "string") said = parsed.detail;
      else if (parsed && parsed.error && typeof parsed.error.message === "string") said = parsed.error.message;
    } catch (error) { /* not JSON: the status alone */ }
    var retry = response.headers.get("Retry-After");
    var text = said || "The gateway refused the call (HTTP " + response.status + ").";
    return retry ? text + " Try again in " + retry + " s." : text;
  }

  function show(out, text) {
    // The text as it is, each address of this registry in it made a link (a page to connect a credential).
    out.textContent = "";
    var pattern = /https?:\/\/[^\s"'<>]+/g, last = 0, found;
    while ((found = pattern.exec(text)) !== null) {
      var url = found[0].replace(/[.,;:)]+$/, "");
      out.appendChild(document.createTextNode(text.slice(last, found.index)));
      if (url.indexOf(window.location.origin + "/") === 0) {
        var link = document.createElement("a");
        link.href = url;
        link.textContent = url;
        out.appendChild(link);
      } else {
        out.appendChild(document.createTextNode(url));
      }
      last = found.index + url.length;
      pattern.lastIndex = last;
    }
    out.appendChild(document.createTextNode(text.slice(last)));
  }

  function toolError(result) {
    // A tool error's text (isError): what the tool or the gateway said, not its JSON.
    var texts = (result.content || []).filter(function (item) { return item && item.type === "text"; });
    return texts.map(function (item) { return item.text; }).join("\n") || JSON.stringify(result, null, 2);
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
        var result = answer && answer.result;
        if (answer && answer.error) show(out, answer.error.message);
        else if (result && result.isError) show(out, toolError(result));
        else out.textContent = JSON.stringify(result, null, 2);
        out.dataset.outcome = answer && (answer.error || (result && result.isError)) ? "error" : "result";
      },
      function (error) { show(out, error.message); out.dataset.outcome = "refused"; }
    );
  });
})();
