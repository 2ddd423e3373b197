/*
 * Refresh the parts of a page marked `data-poll="<seconds>"`, only while the
 * page is visible, and at once when it becomes visible again. Each such
 * element listens with `hx-trigger="poll"`; this file sends that event.
 *
 * It replaces htmx trigger filters (`every 5s [document.visibilityState …]`),
 * which htmx evaluates as script text: the Content-Security-Policy allows no
 * eval, and htmx runs with allowEval off.
 */
(function () {
  "use strict";

  var TICK_MS = 500;

  function due(el, now) {
    var seconds = parseFloat(el.getAttribute("data-poll"));
    if (!(seconds > 0)) return false;
    // An element just swapped in starts its own interval from now.
    if (!el._pollSince) { el._pollSince = now; return false; }
    return now - el._pollSince >= seconds * 1000;
  }

  function poll(el, now) {
    el._pollSince = now;
    if (window.htmx) window.htmx.trigger(el, "poll");
  }

  window.setInterval(function () {
    if (document.visibilityState !== "visible") return;
    var now = Date.now();
    document.querySelectorAll("[data-poll]").forEach(function (el) {
      if (due(el, now)) poll(el, now);
    });
  }, TICK_MS);

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState !== "visible") return;
    var now = Date.now();
    document.querySelectorAll("[data-poll]").forEach(function (el) { poll(el, now); });
  });
})();
