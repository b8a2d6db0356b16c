// The console's pages fetch themselves again when the store says that a
// session they show changed (server-sent events from /console/events).
(function () {
  "use strict";
  var body = document.body;
  var page = body.getAttribute("data-page");
  if (!page || !window.EventSource) {
    return;
  }
  var mine = body.getAttribute("data-session");
  var pending = null;
  function refresh() {
    pending = null;
    fetch(location.href, { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) {
          return;
        }
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.getElementById("content");
        if (fresh) {
          document.getElementById("content").replaceWith(fresh);
        }
      });
  }
  var events = new EventSource(body.getAttribute("data-events") || "/console/events");
  events.onmessage = function (e) {
    if (page === "session" && e.data !== mine && e.data !== "questions") {
      return;
    }
    if (pending === null) {
      pending = setTimeout(refresh, 250);
    }
  };
  // A change's diff is fetched when its row is opened.
  document.addEventListener("toggle", function (e) {
    var d = e.target;
    if (!d.classList || !d.classList.contains("changes") || !d.open || d.getAttribute("data-loaded")) {
      return;
    }
    d.setAttribute("data-loaded", "1");
    fetch(d.getAttribute("data-src"), { credentials: "same-origin" })
      .then(function (r) { return r.text(); })
      .then(function (html) {
        var part = new DOMParser().parseFromString(html, "text/html").querySelector(".diff");
        var slot = d.querySelector(".loading");
        if (part && slot) {
          slot.replaceWith(part);
        }
      });
  }, true);
  var end = document.querySelector("form.end");
  if (end) {
    end.addEventListener("submit", function (e) {
      if (!confirm("End this session? Its plan, files and log are deleted.")) {
        e.preventDefault();
      }
    });
  }
})();
