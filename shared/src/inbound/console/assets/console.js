// The operator's console: the pages read without this; it only keeps them current and asks
// before actions that cannot be taken back.
(function () {
  "use strict";

  // Forms marked data-confirm ask first.
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute && e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) {
      e.preventDefault();
    }
  });

  // Live pages fetch themselves again every few seconds and swap in the new <main>, unless
  // the operator is typing in one of its fields or the "live" box is unticked.
  var every = parseInt(document.body.getAttribute("data-live") || "", 10);
  if (!every) {
    return;
  }
  var box = document.getElementById("live");
  // The operator's choice holds for the tab's other pages.
  if (box) {
    try {
      if (window.sessionStorage.getItem("console-live") === "off") {
        box.checked = false;
      }
      box.addEventListener("change", function () {
        window.sessionStorage.setItem("console-live", box.checked ? "on" : "off");
      });
    } catch (e) {}
  }
  var busy = false;
  function typing() {
    var a = document.activeElement;
    return a && (a.tagName === "INPUT" || a.tagName === "TEXTAREA" || a.tagName === "SELECT") && a.value !== "";
  }
  function refresh() {
    if (busy || (box && !box.checked) || document.hidden || typing()) {
      return;
    }
    busy = true;
    fetch(window.location.href, { credentials: "same-origin", headers: { "X-Console-Refresh": "1" } })
      .then(function (r) {
        return r.ok ? r.text() : null;
      })
      .then(function (text) {
        if (text === null || typing()) {
          return;
        }
        var doc = new DOMParser().parseFromString(text, "text/html");
        var fresh = doc.querySelector("main");
        var main = document.querySelector("main");
        if (fresh && main) {
          main.replaceWith(document.importNode(fresh, true));
          document.body.setAttribute("data-refreshed", String(Date.now()));
        }
      })
      .catch(function () {})
      .then(function () {
        busy = false;
      });
  }
  window.setInterval(refresh, every);
})();
