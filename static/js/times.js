// Relative times on the console's pages ("3 minutes ago", "next check in 2 minutes"), kept current:
// every element with data-ago or data-from-now holds an ISO time; its text is rewritten every 15 s in the
// words the server used (core/templatetags/console.py: ago, from_now).
(function () {
  var UNITS = [["day", 86400], ["hour", 3600], ["minute", 60], ["second", 1]];

  function largest(seconds) {
    seconds = Math.floor(seconds);
    for (var i = 0; i < UNITS.length; i++) {
      if (seconds >= UNITS[i][1]) {
        var count = Math.floor(seconds / UNITS[i][1]);
        return count + " " + UNITS[i][0] + (count === 1 ? "" : "s");
      }
    }
    return "0 seconds";
  }

  function ago(iso) {
    var seconds = (Date.now() - Date.parse(iso)) / 1000;
    return seconds < 10 ? "just now" : largest(seconds) + " ago";
  }

  function fromNow(iso) {
    var seconds = (Date.parse(iso) - Date.now()) / 1000;
    return seconds < 10 ? "due now" : "in " + largest(seconds);
  }

  function refresh() {
    document.querySelectorAll("[data-ago]").forEach(function (element) {
      if (element.dataset.ago) element.textContent = (element.dataset.prefix || "") + ago(element.dataset.ago);
    });
    document.querySelectorAll("[data-from-now]").forEach(function (element) {
      if (element.dataset.fromNow) element.textContent = (element.dataset.prefix || "") + fromNow(element.dataset.fromNow);
    });
  }

  window.registryTimes = { refresh: refresh };
  refresh();
  setInterval(refresh, 15000);
})();
