/*
 * Keyboard shortcuts and small conveniences. Every page works without this
 * file: links are real links, forms are real forms.
 *
 *   j / k    next / previous row (inbox and lists)
 *   Enter    open the selected row
 *   c        claim (the selected inbox row, or the open proposal)
 *   a / r    choose approve / reject and focus the rationale (desk.js)
 *   Ctrl+Enter  confirm, then sign, the chosen outcome, from the rationale (desk.js)
 *   n / N    next / previous cited span on a proposal
 *   ?        show the shortcuts
 *
 * Also: the collapsible header on small screens, the inbox filters remembered
 * for "next escalation", and htmx errors shown where they happened instead of
 * a silent nothing (or a login page pasted into a card).
 */
(function () {
  "use strict";

  var help = document.getElementById("shortcuts-help");
  var selectedId = null;

  // A box or a choice one ticks takes no letters: the shortcuts work there too.
  var TICKED = /^(checkbox|radio|button|submit|reset)$/;

  function isTyping(target) {
    if (!target || !target.tagName) return false;
    if (target.tagName === "INPUT" && TICKED.test(target.type)) return false;
    return target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName);
  }

  function openHelp() {
    if (help && !help.open) help.showModal();
  }

  function rows() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-inbox] [data-row]"));
  }

  function selectedRow() {
    return rows().find(function (r) { return r.dataset.id === selectedId; }) || null;
  }

  function markSelected(row) {
    rows().forEach(function (r) {
      var on = r === row;
      r.classList.toggle("is-selected", on);
      if (on) r.setAttribute("aria-current", "true"); else r.removeAttribute("aria-current");
    });
  }

  function select(row) {
    selectedId = row.dataset.id;
    markSelected(row);
    var link = row.querySelector(".row-link");
    if (link) link.focus();
    row.scrollIntoView({ block: "nearest" });
  }

  function move(delta) {
    var list = rows();
    if (!list.length) return false;
    var i = list.findIndex(function (r) { return r.dataset.id === selectedId; });
    if (i < 0) {
      // Start from a focused row if there is one, else from the top or bottom.
      var focused = document.activeElement && document.activeElement.closest && document.activeElement.closest("[data-row]");
      i = focused ? list.indexOf(focused) : -1;
      i = i < 0 ? (delta > 0 ? 0 : list.length - 1) : Math.min(list.length - 1, Math.max(0, i + delta));
    } else {
      i = Math.min(list.length - 1, Math.max(0, i + delta));
    }
    select(list[i]);
    return true;
  }

  // A row gets selected when its link is focused by Tab or clicked, too.
  document.addEventListener("focusin", function (event) {
    var row = event.target.closest && event.target.closest("[data-inbox] [data-row]");
    if (row) {
      selectedId = row.dataset.id;
      markSelected(row);
    }
  });

  // The inbox refreshes itself: keep the selection (and focus) across swaps.
  var hadFocus = false;
  document.body.addEventListener("htmx:beforeSwap", function () {
    var active = document.activeElement;
    hadFocus = !!(active && active.closest && active.closest("[data-row]"));
  });
  document.body.addEventListener("htmx:afterSwap", function () {
    var row = selectedRow();
    if (!row) return;
    markSelected(row);
    if (hadFocus && (!document.activeElement || document.activeElement === document.body)) {
      var link = row.querySelector(".row-link");
      if (link) link.focus({ preventScroll: true });
    }
  });

  document.addEventListener("click", function (event) {
    if (event.target.closest("[data-shortcuts-open]")) openHelp();
    var toggle = event.target.closest("[data-nav-toggle]");
    if (toggle) {
      var open = toggle.getAttribute("aria-expanded") !== "true";
      toggle.setAttribute("aria-expanded", open ? "true" : "false");
      var menu = document.getElementById(toggle.getAttribute("aria-controls"));
      if (menu) menu.classList.toggle("is-open", open);
    }
  });

  // --- a session that ended without logging out ------------------------------------
  // Every signed-in page marks this browser; logging out clears the mark. The
  // login page finding it says the session expired, and, when desk.js holds a
  // draft (localStorage, "reviewapp:draft:<escalation>"), that it is kept.
  var SIGNED_IN = "reviewapp:signed-in";
  function local(fn) {
    try { return fn(window.localStorage); } catch (e) { return null; } // storage disabled
  }
  if (document.body.hasAttribute("data-signed-in")) {
    local(function (s) { s.setItem(SIGNED_IN, "1"); });
  }
  document.addEventListener("submit", function (event) {
    if (event.target.closest("form[data-logout]")) local(function (s) { s.removeItem(SIGNED_IN); });
  });
  var expired = document.getElementById("session-expired");
  if (expired) {
    if (local(function (s) { return s.getItem(SIGNED_IN); })) expired.hidden = false;
    var drafts = local(function (s) {
      return Object.keys(s).some(function (key) { return key.indexOf("reviewapp:draft:") === 0; });
    });
    var kept = document.getElementById("drafts-kept");
    if (kept && drafts) kept.hidden = false;
  }

  // The inbox's filters are the queue "next escalation" walks (see web/queue.py).
  if (document.body.dataset.page === "inbox") {
    try { sessionStorage.setItem("reviewapp:queue", location.search.replace(/^\?/, "")); } catch (e) { /* storage off */ }
  }

  // --- htmx answers that are not a fragment to swap ----------------------------
  function alertBox(target) {
    var card = target && target.closest && target.closest("#adjudication");
    var box = card && card.querySelector("#adjudication-alert");
    return box || document.getElementById("page-alert");
  }

  window.reviewappAlert = function (target, text, link) {
    var box = alertBox(target);
    if (!box) return;
    box.replaceChildren(document.createTextNode(text));
    if (link) {
      var a = document.createElement("a");
      a.href = link.href;
      a.textContent = link.text;
      box.appendChild(document.createTextNode(" "));
      box.appendChild(a);
    }
    box.hidden = false;
    box.scrollIntoView({ block: "nearest" });
  };

  // A refusal of the adjudication card (400/409/422) is the card itself, rationale kept: swap it.
  document.body.addEventListener("htmx:beforeSwap", function (event) {
    var status = event.detail.xhr.status;
    if ((status === 400 || status === 409 || status === 422) && event.detail.target && event.detail.target.id === "adjudication") {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  document.body.addEventListener("htmx:responseError", function (event) {
    var xhr = event.detail.xhr;
    if (xhr.status === 401) return; // HX-Redirect takes the page to the login, which comes back here
    var text = xhr.status === 403
      ? "Refused (403): you may not do that, or this page is stale."
      : "The server answered " + xhr.status + ": nothing changed.";
    window.reviewappAlert(event.detail.elt, text + " Reload the page to see the current state; your draft is kept.");
  });
  document.body.addEventListener("htmx:sendError", function (event) {
    window.reviewappAlert(event.detail.elt, "Could not reach the server: nothing changed. Try again; your draft is kept.");
  });

  document.addEventListener("change", function (event) {
    var select = event.target.closest && event.target.closest("select[data-autosubmit]");
    if (select && select.form) select.form.requestSubmit();
  });

  function claim() {
    var button = document.getElementById("claim-btn");
    if (button) {
      button.click();
      return true;
    }
    var row = selectedRow();
    var form = row && row.querySelector("form[data-claim-form]");
    if (form) {
      form.requestSubmit();
      return true;
    }
    return false;
  }

  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (isTyping(event.target)) return;
    if (help && help.open) return;
    var handled = false;
    switch (event.key) {
      case "?":
        openHelp();
        handled = true;
        break;
      case "j":
        handled = move(1);
        break;
      case "k":
        handled = move(-1);
        break;
      case "Enter": {
        // A focused link or button does its own thing.
        if (event.target.closest && event.target.closest("a, button, summary")) break;
        var row = selectedRow();
        var link = row && row.querySelector(".row-link");
        if (link) {
          window.location.assign(link.href);
          handled = true;
        }
        break;
      }
      case "c":
        handled = claim();
        break;
      case "a":
        handled = !!(window.reviewappDesk && window.reviewappDesk.choose("approved"));
        break;
      case "r":
        handled = !!(window.reviewappDesk && window.reviewappDesk.choose("rejected"));
        break;
      case "n":
        if (window.reviewappNextSpan) {
          window.reviewappNextSpan();
          handled = true;
        }
        break;
      case "N":
        if (window.reviewappPreviousSpan) {
          window.reviewappPreviousSpan();
          handled = true;
        }
        break;
    }
    if (handled) event.preventDefault();
  });
})();
