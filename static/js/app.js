/*
 * Keyboard shortcuts and small conveniences. Every page works without this
 * file: links are real links, forms are real forms.
 *
 *   j / k    next / previous row (inbox and lists)
 *   Enter    open the selected row
 *   c        claim (the selected inbox row, or the open proposal)
 *   a / r    focus approve / reject
 *   n / N    next / previous cited span on a proposal
 *   ?        show the shortcuts
 */
(function () {
  "use strict";

  var help = document.getElementById("shortcuts-help");
  var selectedId = null;

  function isTyping(target) {
    if (!target || !target.tagName) return false;
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

  function focusById(id) {
    var el = document.getElementById(id);
    if (!el) return false;
    el.focus();
    el.scrollIntoView({ block: "nearest" });
    return true;
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
        handled = focusById("approve-btn");
        break;
      case "r":
        handled = focusById("reject-btn");
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
