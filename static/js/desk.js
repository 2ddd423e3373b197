/*
 * The adjudication card: nothing typed is lost, the claim stays alive while
 * the reviewer works, and deciding leads on to the next escalation.
 *
 * - Everything the reviewer gives (the rationale, the claim marks, the tags,
 *   "right for the wrong reason") is saved in localStorage per escalation on
 *   every change and put back (page load, a card swapped in after a claim or
 *   a refusal, a return after logging in again): the rationale when the box
 *   is empty, the rest when the card came with nothing chosen. A card that
 *   came back with something typed or chosen (a refusal echoes it) is the
 *   draft from then on. The draft is removed once the card shows that
 *   escalation decided, or the reviewer's own review in.
 * - Typing renews the claim (POST .../heartbeat, at most once per
 *   data-heartbeat-seconds); a lost claim or session is said in the card.
 * - a / r choose the outcome and focus the box (before a claim, they say to
 *   claim first).
 * - No one-click accident: Approve / Reject (a click or Ctrl+Enter) first
 *   ask for a confirmation, a focused "Confirm: sign …" button; Enter on it,
 *   Ctrl+Enter again or a click on it signs, Esc goes back to the box.
 * - On a focused cited claim, 1 / 2 / 3 mark it correct / incorrect /
 *   irrelevant and move on to the next claim, 0 clears; the arrows move.
 * The card works without this file: it is a plain form, refused posts come
 * back with the text in the box.
 */
(function () {
  "use strict";

  var DRAFT_PREFIX = "reviewapp:draft:";
  var NEXT_SETTING = "reviewapp:decide-and-next";
  var chosen = null;
  var lastBeat = 0;

  function store(fn) {
    try { return fn(window.localStorage); } catch (e) { return null; } // storage disabled
  }

  function card() { return document.getElementById("adjudication"); }
  function form() { return document.getElementById("decide-form"); }
  function box() { return document.getElementById("rationale"); }

  function draftKey(id) { return DRAFT_PREFIX + id; }

  function csrfToken() {
    try { return JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRFToken"]; } catch (e) { return ""; }
  }

  function alert(text, link) {
    if (window.reviewappAlert) window.reviewappAlert(card(), text, link);
  }

  function loginLink() {
    return {
      href: "/login/?session=expired&next=" + encodeURIComponent(location.pathname + location.search),
      text: "Log in again",
    };
  }

  // --- the draft ---------------------------------------------------------------
  // Stored as JSON {rationale, marks: {claim id: mark}, tags: [...], wrong_reason: [...]};
  // an older draft is the rationale's bare text.
  function loadDraft(id) {
    var raw = store(function (s) { return s.getItem(draftKey(id)); });
    if (!raw) return null;
    try {
      var draft = JSON.parse(raw);
      if (draft && typeof draft === "object" && "rationale" in draft) return draft;
    } catch (e) { /* the bare text of an older draft */ }
    return { rationale: raw };
  }

  function chosenIn(f) {
    var marks = {};
    f.querySelectorAll(".claim-mark input[type=radio]:checked").forEach(function (r) {
      marks[r.closest(".claim-mark").dataset.claim] = r.value;
    });
    function ticked(name) {
      return Array.prototype.map.call(
        f.querySelectorAll("input[type=checkbox][name=" + name + "]:checked"),
        function (box) { return box.value; });
    }
    return { marks: marks, tags: ticked("tags"), wrong_reason: ticked("wrong_reason") };
  }

  function anyChosen(chosen) {
    return Object.keys(chosen.marks).length > 0 || chosen.tags.length > 0 || chosen.wrong_reason.length > 0;
  }

  function putBack(f, saved) {
    Object.keys(saved.marks || {}).forEach(function (claim) {
      var row = f.querySelector('.claim-mark[data-claim="' + claim + '"]');
      var radio = row && row.querySelector('input[type=radio][value="' + saved.marks[claim] + '"]');
      if (radio) radio.checked = true;
    });
    ["tags", "wrong_reason"].forEach(function (name) {
      (saved[name] || []).forEach(function (value) {
        f.querySelectorAll("input[type=checkbox][name=" + name + "]").forEach(function (box) {
          if (box.value === value) box.checked = true;
        });
      });
    });
  }

  function saveDraft() {
    var f = form(), b = box();
    if (!f || !b) return;
    var draft = chosenIn(f);
    draft.rationale = b.value;
    store(function (s) {
      if (draft.rationale || anyChosen(draft)) s.setItem(draftKey(f.dataset.escalation), JSON.stringify(draft));
      else s.removeItem(draftKey(f.dataset.escalation));
    });
  }

  function restore() {
    var c = card();
    if (!c) return;
    ["decided", "reviewed"].forEach(function (done) {
      if (c.dataset[done]) store(function (s) { s.removeItem(draftKey(c.dataset[done])); });
    });
    var f = form(), b = box();
    if (!f || !b) return;
    var saved = loadDraft(f.dataset.escalation);
    if (saved && saved.rationale && !b.value) b.value = saved.rationale;
    if (saved && !anyChosen(chosenIn(f))) putBack(f, saved);
    // What the card shows now (an echo of a refusal, or the draft put back) is the draft.
    saveDraft();
    var next = document.getElementById("decide-and-next");
    if (next) next.checked = store(function (s) { return s.getItem(NEXT_SETTING); }) === "1";
    var queue = f.querySelector("[data-queue]");
    if (queue && !queue.value) {
      var fromUrl = new URLSearchParams(location.search).get("queue");
      queue.value = fromUrl || (function () {
        try { return sessionStorage.getItem("reviewapp:queue") || ""; } catch (e) { return ""; }
      })();
    }
    showChosen();
  }

  document.addEventListener("input", function (event) {
    var b = box();
    if (event.target !== b) return;
    saveDraft();
    heartbeat();
  });

  // A mark, tag or lens ticked with the mouse or the space bar.
  document.addEventListener("change", function (event) {
    var f = form();
    if (f && event.target.form === f && event.target.id !== "decide-and-next") saveDraft();
  });

  document.addEventListener("change", function (event) {
    if (event.target.id === "decide-and-next") {
      var on = event.target.checked;
      store(function (s) { if (on) s.setItem(NEXT_SETTING, "1"); else s.removeItem(NEXT_SETTING); });
    }
  });

  // --- the claim stays alive while the reviewer types ------------------------------
  function heartbeat() {
    var f = form();
    if (!f || !f.hasAttribute("data-held")) return;
    var every = Number(f.dataset.heartbeatSeconds || 60) * 1000;
    var now = Date.now();
    if (now - lastBeat < every) return;
    lastBeat = now;
    fetch(f.dataset.heartbeatUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "X-CSRFToken": csrfToken(), Accept: "application/json" },
    }).then(function (response) {
      if (response.status === 401) {
        alert("Your session has expired. Your draft is kept in this browser.", loginLink());
        return null;
      }
      return response.json().then(function (body) {
        if (body.held) {
          var time = document.getElementById("claim-expires");
          if (time) time.setAttribute("datetime", body.expires_at);
          tick();
        } else {
          f.removeAttribute("data-held");
          alert(body.message);
        }
        document.dispatchEvent(new CustomEvent("reviewapp:heartbeat", { detail: body }));
      });
    }).catch(function () {
      lastBeat = 0; // try again on the next keystroke
    });
  }

  function tick() {
    var time = document.getElementById("claim-expires");
    var countdown = document.getElementById("claim-countdown");
    if (!time || !countdown) return;
    var at = new Date(time.getAttribute("datetime"));
    time.textContent = at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    var minutes = Math.round((at - Date.now()) / 60000);
    if (at <= Date.now()) {
      countdown.textContent = "lapsed";
      var f = form();
      if (f && f.hasAttribute("data-held")) {
        f.removeAttribute("data-held");
        alert("Your claim has lapsed: claim the escalation again to decide. Your draft is kept.");
      }
    } else {
      countdown.textContent = minutes < 1 ? "in under a minute" : "in " + minutes + " minute" + (minutes === 1 ? "" : "s");
    }
  }
  setInterval(tick, 15000);

  // --- keyboard: a / r choose, Ctrl+Enter asks to confirm ---------------------------
  var LABELS = {
    approved: "Ctrl+Enter will ask to confirm: approve.",
    rejected: "Ctrl+Enter will ask to confirm: reject.",
  };

  function showChosen() {
    var label = document.getElementById("chosen-outcome");
    if (label) label.textContent = chosen ? LABELS[chosen] : "";
  }

  // a / r on a card that cannot decide yet: say why where a screen reader hears it.
  function cannotChoose() {
    var status = document.getElementById("desk-status");
    if (!status) return false;
    var hint = document.getElementById("decide-hint");
    status.textContent = document.getElementById("claim-btn")
      ? "Claim first (c): approve and reject need your claim."
      : (hint ? hint.textContent : "");
    return !!status.textContent;
  }

  function choose(outcome) {
    var b = box();
    if (!b) return false;
    if (!document.getElementById(outcome === "approved" ? "approve-btn" : "reject-btn")) return cannotChoose();
    chosen = outcome;
    showChosen();
    b.focus();
    b.scrollIntoView({ block: "nearest" });
    return true;
  }

  // --- confirmation: a decision is signed on the second, deliberate act ------------
  var confirmed = false; // set while the confirm button passes the click on

  function outcomeButton(outcome) {
    return document.getElementById(outcome === "approved" ? "approve-btn" : "reject-btn");
  }

  function confirmBar() { return document.getElementById("confirm-sign"); }

  function ask(outcome) {
    var bar = confirmBar();
    if (!bar) return false;
    chosen = outcome;
    showChosen();
    document.getElementById("confirm-outcome").textContent = outcome === "approved" ? "approve" : "reject";
    bar.hidden = false;
    document.getElementById("confirm-sign-btn").focus();
    return true;
  }

  function disarm() {
    var bar = confirmBar();
    if (bar) bar.hidden = true;
    if (box()) box().focus();
  }

  function sign() {
    var button = chosen && outcomeButton(chosen);
    if (!button) return;
    confirmed = true;
    try { button.click(); } finally { confirmed = false; } // htmx sends the clicked button's outcome
    confirmBar().hidden = true;
  }

  // Capture phase: the first click on Approve / Reject never reaches htmx or the form.
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("#approve-btn, #reject-btn");
    if (!button || confirmed || !confirmBar()) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    ask(button.value);
  }, true);

  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("#confirm-sign-btn")) sign();
  });

  document.addEventListener("keydown", function (event) {
    var onConfirm = event.target && event.target.id === "confirm-sign-btn";
    if (onConfirm && event.key === "Escape") { event.preventDefault(); disarm(); return; }
    // Enter on the focused button clicks it natively; Ctrl+Enter does not everywhere.
    if (onConfirm && event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      sign();
      return;
    }
    if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey) || event.target !== box()) return;
    event.preventDefault();
    var button = chosen && outcomeButton(chosen);
    if (!button) {
      alert(document.getElementById("approve-btn")
        ? "Choose first: press Esc, then a (approve) or r (reject); or click a button."
        : "Claim this escalation to decide. Your draft is kept.");
      return;
    }
    ask(chosen);
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && event.target === box()) box().blur();
  });

  // --- claim marks: one key per mark on the focused claim ---------------------------
  var MARK_KEYS = { "1": 0, "2": 1, "3": 2 };

  function markRows() { return Array.prototype.slice.call(document.querySelectorAll(".claim-mark")); }

  function showMark(row) {
    var checked = row.querySelector("input[type=radio]:checked");
    row.dataset.mark = checked ? checked.value : "";
  }

  // The same words marked alike under a lens that verified them and one that refuted
  // them: the two lenses cannot both be right, nor both wrong. Said in place; a warning,
  // since the reviewer may still sign what they mean.
  var OPPOSITE = { verified: "refuted", refuted: "verified" };

  function checkConflicts() {
    var rows = markRows();
    rows.forEach(function (row) {
      var note = row.querySelector(".mark-conflict");
      if (!note) return;
      var mark = row.dataset.mark, opposite = OPPOSITE[row.dataset.assessment];
      var other = (mark === "correct" || mark === "incorrect") && opposite && rows.find(function (r) {
        return r.dataset.span === row.dataset.span && r.dataset.assessment === opposite && r.dataset.mark === mark;
      });
      note.hidden = !other;
      note.textContent = other
        ? "⚠ Both marked " + mark + ": " + row.dataset.lens + " calls these words " + row.dataset.assessment +
          " and " + other.dataset.lens + " " + other.dataset.assessment + ", so they cannot both be " +
          (mark === "correct" ? "right" : "wrong") + "."
        : "";
    });
  }

  function step(row, by) {
    var rows = markRows();
    var next = rows[rows.indexOf(row) + by];
    if (next) next.focus();
    return next;
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var row = event.target.closest && event.target.closest(".claim-mark");
    if (!row) return;
    var radios = row.querySelectorAll("input[type=radio]");
    var status = document.getElementById("claim-marks-status");
    if (event.key in MARK_KEYS) {
      var radio = radios[MARK_KEYS[event.key]];
      radio.checked = true;
      showMark(row);
      checkConflicts();
      saveDraft();
      if (status) status.textContent = "Marked " + radio.value + ".";
      step(row, 1);
    } else if (event.key === "0") {
      radios.forEach(function (r) { r.checked = false; });
      showMark(row);
      checkConflicts();
      saveDraft();
      if (status) status.textContent = "Mark cleared.";
    } else if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      step(row, event.key === "ArrowDown" ? 1 : -1);
    } else {
      return;
    }
    event.preventDefault();
  });

  document.addEventListener("change", function (event) {
    var row = event.target.closest && event.target.closest(".claim-mark");
    if (row) { showMark(row); checkConflicts(); }
  });

  // --- after a swap: put the draft back, and the eyes where they belong ----------------
  function settle(focus) {
    restore();
    markRows().forEach(showMark);
    checkConflicts();
    var c = card();
    if (!c) return;
    var message = c.querySelector("[data-card-message]");
    if (message) message.scrollIntoView({ block: "nearest" });
    var b = box();
    var wanted = focus || c.dataset.focus;
    if (wanted === "rationale" && b && form().hasAttribute("data-held")) b.focus();
    else if (wanted === "message" && b) b.focus({ preventScroll: true });
    else if (message) c.focus({ preventScroll: true });
    tick();
  }

  // The card is swapped outerHTML: the event names the element it replaced.
  document.body.addEventListener("htmx:afterSwap", function (event) {
    if (!event.detail.target || event.detail.target.id !== "adjudication") return;
    chosen = null;
    settle();
  });

  window.reviewappDesk = { choose: choose };
  settle("");
  if (location.hash === "#adjudication") {
    // Back from a claim: the cursor belongs in the box. The browser focuses the
    // fragment's target (the card) once loaded, so take the focus after that.
    window.addEventListener("load", function () { setTimeout(function () { settle("rationale"); }, 0); });
  }
})();
