// mcp-tasks inbox: keeps the page current while it is open, by fetching
// the same page again (only its main part) every 1.5 s. A form that a
// person has started to fill in, or is in, is never replaced.
"use strict";
(function () {
  var main = document.getElementById("live");
  if (!main || !main.dataset.live) { return; }
  var url = main.dataset.live;
  var dirty = false;
  var last = null;
  main.addEventListener("input", function () { dirty = true; });
  main.addEventListener("change", function () { dirty = true; });
  function busy() {
    var a = document.activeElement;
    return dirty || (a && a !== document.body && main.contains(a) && a.form);
  }
  function later() { window.setTimeout(tick, 1500); }
  function tick() {
    if (document.hidden || busy()) { later(); return; }
    fetch(url, { headers: { "X-Inbox-Live": "1" }, credentials: "same-origin", cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html !== null && html !== last && !busy()) {
          last = html;
          main.innerHTML = html;
        }
      })
      .catch(function () {})
      .then(later, later);
  }
  later();
})();
