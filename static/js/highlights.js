/*
 * Cited-span highlights on the proposal page.
 *
 * Anchors are UTF-16 offsets into the answer body, computed on the server.
 * DOM offsets in a Text node are UTF-16 code units too, so a Range built on a
 * text node holding exactly the stored content lands on exactly the cited
 * characters: emoji, ZWJ sequences, combining marks and CRLF included.
 *
 * The HTML parser normalises CRLF to LF (and drops a <pre>'s leading
 * newline, and splits long text into several nodes), so the text node is
 * rebuilt from the JSON copy of the content, never trusted from the markup.
 *
 * Painting uses the CSS Custom Highlight API (one Highlight per lens colour);
 * where it is missing the text is split into <mark> elements instead.
 * Characters cited by one lens carry that lens's colour and underline style;
 * characters several lenses cite carry one "multi" mark instead of a blend
 * of colours nobody can read back (the tooltip and the list name them all).
 * Characters one lens calls verified and another refuted carry the
 * "conflict" mark instead (hatched, wavy underline), apart from agreement.
 * Cites into the thought process are painted in the thought text the same way.
 * A span that starts or ends inside a grapheme cluster (a cite "cafe" of
 * "cafe\u0301") is flagged as a partial character in the tooltip and list.
 */
(function () {
  "use strict";

  function mark(name) { if (window.performance && performance.mark) performance.mark(name); }
  mark("reviewapp-highlights-start");
  var root = document.querySelector("[data-highlight-root]");
  var contentScript = document.getElementById("answer-content");
  var dataScript = document.getElementById("highlight-data");
  if (!root || !contentScript || !dataScript) return;

  var content, data;
  try {
    content = JSON.parse(contentScript.textContent);
    data = JSON.parse(dataScript.textContent);
  } catch (error) {
    // Show the server-rendered text rather than nothing.
    root.dataset.textReady = "true";
    throw error;
  }
  var spans = data.spans || [];
  var tooltip = document.getElementById("hl-tooltip");
  var cursorLabel = document.getElementById("claim-cursor");

  var useHighlightApi =
    typeof CSS !== "undefined" && !!CSS.highlights && typeof window.Highlight === "function";

  // --- the stored content, exactly, as text nodes ---------------------------
  // Up to CHUNK_THRESHOLD UTF-16 units it is a single text node. A longer
  // answer is split after line feeds into blocks that lay out only when
  // scrolled into view (content-visibility: auto): a megabyte of pre-wrapped
  // text in one block costs a quarter of a second of layout before anything
  // shows. Offsets map through the segments either way.
  var CHUNK_THRESHOLD = 65536;
  var CHUNK_SIZE = 16384;

  var valid = [];
  for (var i = 0; i < spans.length; i++) {
    var s = spans[i];
    if (!(s.start >= 0 && s.end <= content.length && s.start < s.end)) {
      console.warn("reviewapp: span outside the answer body, not painted", s);
      continue;
    }
    if (content.slice(s.start, s.end) !== s.text) {
      // A server/browser offset disagreement: never paint the wrong characters silently.
      console.warn("reviewapp: span text differs from the content at its offsets", s);
      s.misaligned = true;
    }
    valid.push(s);
  }
  var spanById = new Map(spans.map(function (sp) { return [sp.id, sp]; }));

  var segments; // [{start, end, node}] in order; their texts concatenate to `content`
  var markEls = []; // mark mode: [{el, start, end}]
  try {
    segments = useHighlightApi ? buildText() : buildMarks();
  } finally {
    // Whatever happened, the answer must not stay hidden (see app.css).
    root.dataset.textReady = "true";
  }
  mark("reviewapp-text-ready");

  var startOfNode = new Map(segments.map(function (seg) { return [seg.node, seg.start]; }));

  // The segment holding `offset`, as [node, offsetInNode].
  function locate(offset) {
    var lo = 0, hi = segments.length - 1;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (segments[mid].start <= offset) lo = mid; else hi = mid - 1;
    }
    return [segments[lo].node, offset - segments[lo].start];
  }

  function offsetOf(node, off) {
    var start = startOfNode.get(node);
    return start === undefined ? -1 : start + off;
  }

  function rangeFor(start, end) {
    var range = document.createRange();
    var a = locate(start);
    var b = locate(end);
    if (end > start && b[1] === 0 && b[0] !== a[0]) {
      // End exactly at a segment boundary: end inside the previous segment instead.
      b = locate(end - 1);
      b[1] += 1;
    }
    range.setStart(a[0], a[1]);
    range.setEnd(b[0], b[1]);
    return range;
  }

  function buildText() {
    if (content.length <= CHUNK_THRESHOLD) {
      var node = root.firstChild;
      if (root.childNodes.length !== 1 || node.nodeType !== Node.TEXT_NODE || node.data !== content) {
        node = document.createTextNode(content);
        root.replaceChildren(node);
      }
      return [{ start: 0, end: content.length, node: node }];
    }
    var style = getComputedStyle(root);
    var fontSize = parseFloat(style.fontSize) || 16;
    var lineHeight = parseFloat(style.lineHeight) || fontSize * 1.5;
    var width = root.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    var perLine = Math.max(20, Math.floor(width / (fontSize * 0.5)));
    var fragment = document.createDocumentFragment();
    var out = [];
    var at = 0;
    while (at < content.length) {
      var cut = content.indexOf("\n", at + CHUNK_SIZE);
      cut = cut < 0 ? content.length : cut + 1;
      var text = content.slice(at, cut);
      var lines = 0;
      var lineStart = 0;
      while (lineStart <= text.length) {
        var lf = text.indexOf("\n", lineStart);
        var end = lf < 0 ? text.length : lf;
        lines += Math.max(1, Math.ceil((end - lineStart) / perLine));
        if (lf < 0 || lf === text.length - 1) break;
        lineStart = lf + 1;
      }
      var block = document.createElement("span");
      block.className = "answer-chunk";
      // A first guess at the block's height until it has been laid out once.
      block.style.containIntrinsicSize = "auto " + Math.round(lines * lineHeight) + "px";
      var piece = document.createTextNode(text);
      block.appendChild(piece);
      fragment.appendChild(block);
      out.push({ start: at, end: cut, node: piece });
      at = cut;
    }
    root.replaceChildren(fragment);
    root.dataset.chunks = String(out.length);
    return out;
  }

  function buildMarks() {
    var bounds = new Set([0, content.length]);
    valid.forEach(function (sp) { bounds.add(sp.start); bounds.add(sp.end); });
    var cuts = Array.from(bounds).sort(function (x, y) { return x - y; });
    var bySortedStart = valid.slice().sort(function (x, y) { return x.start - y.start; });
    var active = [];
    var next = 0;
    var fragment = document.createDocumentFragment();
    var out = [];
    for (var c = 0; c < cuts.length - 1; c++) {
      var from = cuts[c], to = cuts[c + 1];
      if (from === to) continue;
      while (next < bySortedStart.length && bySortedStart[next].start <= from) active.push(bySortedStart[next++]);
      active = active.filter(function (sp) { return sp.end > from; });
      var node = document.createTextNode(content.slice(from, to));
      var lenses = lensesOf(active);
      if (!lenses.length) {
        fragment.appendChild(node);
      } else {
        // One mark per piece: a lens's own, the multi-lens mark, or the conflict mark.
        var el = document.createElement("mark");
        el.className = markClass(lenses, disagree(active));
        el.dataset.lenses = String(lenses.length);
        markEls.push({ el: el, start: from, end: to });
        el.appendChild(node);
        fragment.appendChild(el);
      }
      out.push({ start: from, end: to, node: node });
    }
    if (!out.length) {
      var empty = document.createTextNode("");
      fragment.appendChild(empty);
      out.push({ start: 0, end: 0, node: empty });
    }
    root.replaceChildren(fragment);
    return out;
  }

  // --- paint -------------------------------------------------------------------
  // The distinct lenses citing any of `items` (each with a `claims` list), by slot.
  function lensesOf(items) {
    var byName = new Map();
    items.forEach(function (it) {
      it.claims.forEach(function (cl) { if (!byName.has(cl.lens)) byName.set(cl.lens, cl); });
    });
    return Array.from(byName.values()).sort(function (x, y) { return x.slot - y.slot; });
  }

  // Whether one lens calls these items verified and another refuted (presenters.lenses_disagree).
  function disagree(items) {
    var verified = new Set(), refuted = new Set();
    items.forEach(function (it) {
      it.claims.forEach(function (cl) {
        if (cl.assessment === "verified") verified.add(cl.lens);
        else if (cl.assessment === "refuted") refuted.add(cl.lens);
      });
    });
    if (!verified.size || !refuted.size) return false;
    var all = new Set(Array.from(verified).concat(Array.from(refuted)));
    return all.size > 1;
  }

  function markClass(lenses, conflict) {
    if (conflict) return "hl hl-conflict";
    return lenses.length > 1 ? "hl hl-multi" : "hl lens-" + lenses[0].slot;
  }

  // Cut [start, end) items into pieces covered by the same lenses: [{start, end, lenses, conflict}].
  function pieces(items) {
    var bounds = new Set();
    items.forEach(function (it) { bounds.add(it.start); bounds.add(it.end); });
    var cuts = Array.from(bounds).sort(function (x, y) { return x - y; });
    var sorted = items.slice().sort(function (x, y) { return x.start - y.start; });
    var out = [], active = [], next = 0;
    for (var c = 0; c < cuts.length - 1; c++) {
      var from = cuts[c], to = cuts[c + 1];
      while (next < sorted.length && sorted[next].start <= from) active.push(sorted[next++]);
      active = active.filter(function (it) { return it.end > from; });
      var lenses = lensesOf(active);
      if (!lenses.length) continue;
      var conflict = disagree(active);
      var last = out[out.length - 1];
      var key = lenses.map(function (l) { return l.lens; }).join("\u0000") + (conflict ? "\u0001" : "");
      if (last && last.end === from && last.key === key) last.end = to;
      else out.push({ start: from, end: to, lenses: lenses, key: key, conflict: conflict });
    }
    return out;
  }

  var highlights = new Map();
  function highlightNamed(name, priority) {
    var h = highlights.get(name);
    if (!h) {
      h = new Highlight();
      h.priority = priority;
      highlights.set(name, h);
    }
    return h;
  }

  // Register one root's pieces: single-lens pieces in their lens's highlight, the rest in "multi".
  function paintPieces(list, makeRange) {
    if (!useHighlightApi) return;
    list.forEach(function (piece) {
      var name = piece.conflict ? "rv-conflict" : piece.lenses.length > 1 ? "rv-multi" : "rv-lens-" + piece.lenses[0].slot;
      var priority = piece.conflict ? 101 : piece.lenses.length > 1 ? 100 : piece.lenses[0].slot;
      highlightNamed(name, priority).add(makeRange(piece.start, piece.end));
    });
  }

  var painted = [];
  var spanRanges = new Map();
  valid.forEach(function (sp) {
    var range = rangeFor(sp.start, sp.end);
    spanRanges.set(sp.id, range);
    var seen = new Set();
    sp.claims.forEach(function (cl) {
      if (seen.has(cl.lens)) return;
      seen.add(cl.lens);
      painted.push({ lens: cl.lens, slot: cl.slot, spanId: sp.id, start: sp.start, end: sp.end, text: sp.text, range: range.cloneRange() });
    });
  });
  var answerPieces = pieces(valid);
  paintPieces(answerPieces, rangeFor);
  window.reviewappPieces = answerPieces.map(function (p) {
    return { start: p.start, end: p.end, conflict: p.conflict, lenses: p.lenses.map(function (l) { return l.lens; }) };
  });

  // --- the thought process: anchors carry no offsets, the resolved text is found in it ---
  var thoughtPainted = [];
  (function paintThought() {
    var thoughtRoot = document.querySelector("[data-thought-root]");
    var thoughtScript = document.getElementById("thought-content");
    var cites = data.thought || [];
    if (!thoughtRoot || !thoughtScript || !cites.length) return;
    var thought = JSON.parse(thoughtScript.textContent);
    var node = document.createTextNode(thought);
    thoughtRoot.replaceChildren(node);
    var items = [];
    cites.forEach(function (cl) {
      var at = cl.text ? thought.indexOf(cl.text) : -1;
      if (at < 0) return;
      items.push({ start: at, end: at + cl.text.length, claims: [cl] });
    });
    function thoughtRange(start, end) {
      var r = document.createRange();
      r.setStart(node, start);
      r.setEnd(node, end);
      return r;
    }
    var list = pieces(items);
    if (useHighlightApi) {
      paintPieces(list, thoughtRange);
    } else {
      // Mark mode: wrap the pieces, last first so earlier offsets stay valid.
      list.slice().reverse().forEach(function (piece) {
        var el = document.createElement("mark");
        el.className = markClass(piece.lenses, piece.conflict);
        thoughtRange(piece.start, piece.end).surroundContents(el);
      });
    }
    items.forEach(function (it) {
      thoughtPainted.push({ lens: it.claims[0].lens, start: it.start, end: it.end, text: thought.slice(it.start, it.end) });
    });
  })();
  window.reviewappThoughtHighlights = thoughtPainted;

  if (useHighlightApi) {
    highlights.forEach(function (h, name) { CSS.highlights.set(name, h); });
  }

  // --- partial graphemes: a span edge that is not a grapheme boundary --------------
  var segmenter = typeof Intl !== "undefined" && Intl.Segmenter ? new Intl.Segmenter(undefined, { granularity: "grapheme" }) : null;

  // The whole grapheme `offset` cuts into, or null if `offset` is a boundary.
  function clusterCut(offset) {
    if (!segmenter || offset <= 0 || offset >= content.length) return null;
    // A window wide enough for any real cluster (a ZWJ family is 11 units);
    // boundaries after the window's first are exact.
    var from = Math.max(0, offset - 40);
    var windowText = content.slice(from, Math.min(content.length, offset + 40));
    var found = null;
    for (var seg of segmenter.segment(windowText)) {
      var start = from + seg.index, end = start + seg.segment.length;
      if (start === offset) return null;
      if (start < offset && offset < end) found = seg.segment;
      if (start > offset) break;
    }
    return found;
  }
  var partial = valid.filter(function (sp) {
    var atStart = clusterCut(sp.start), atEnd = clusterCut(sp.end);
    if (atStart === null && atEnd === null) return false;
    var parts = [];
    if (atStart !== null) parts.push("starts inside “" + atStart + "”");
    if (atEnd !== null) parts.push("ends inside “" + atEnd + "”");
    sp.partial = "Partial character: the cite " + parts.join(" and ") + ", covering only part of it.";
    return true;
  });
  // The span list comes after this script in the page: flag its items once parsed.
  function flagList() {
    partial.forEach(function (sp) {
      var item = document.getElementById("span-item-" + sp.id);
      if (!item) return;
      var flag = document.createElement("span");
      flag.className = "partial-grapheme";
      flag.title = sp.partial;
      flag.textContent = "partial character";
      var link = item.querySelector(".span-link");
      if (link) link.after(flag); else item.prepend(flag);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", flagList);
  else flagList();

  mark("reviewapp-highlights-registered");
  window.reviewappHighlights = painted;
  window.reviewappHighlightMode = useHighlightApi ? "highlight-api" : "mark";
  root.dataset.highlightMode = window.reviewappHighlightMode;

  requestAnimationFrame(function () {
    setTimeout(function () {
      window.reviewappHighlightsPaintedAt = performance.now();
      mark("reviewapp-highlights-painted");
      root.dataset.highlights = "painted";
      document.dispatchEvent(new CustomEvent("reviewapp:highlights-painted", { detail: { count: painted.length } }));
    }, 0);
  });

  // --- focus a span: scroll to it, flash it, say where we are -------------------
  var order = valid.map(function (sp) { return sp.id; }); // already sorted by (start, end)
  var current = -1;
  var flashTimer = null;

  var scrollToken = 0;
  function scrollRangeIntoView(range) {
    // Blocks of a long answer get their real height only once laid out, so
    // the first jump can land a little off: check again for a few frames.
    var token = ++scrollToken;
    var passes = 0;
    function pass() {
      if (token !== scrollToken) return;
      var box = root.getBoundingClientRect();
      if (box.top < 0 || box.bottom > window.innerHeight) {
        root.scrollIntoView({ block: "nearest" });
        box = root.getBoundingClientRect();
      }
      var rect = range.getBoundingClientRect();
      if (rect.top < box.top || rect.bottom > box.bottom) {
        root.scrollTop += rect.top - box.top - root.clientHeight / 3;
        if (++passes < 5) requestAnimationFrame(pass);
      }
    }
    pass();
  }

  function flash(id) {
    clearTimeout(flashTimer);
    var sp = spanById.get(id);
    var range = spanRanges.get(id);
    if (!sp || !range) return;
    var on = true, ticks = 0;
    function step() {
      if (useHighlightApi) {
        if (on) {
          var h = new Highlight(range.cloneRange());
          h.priority = 1000;
          CSS.highlights.set("rv-flash", h);
        } else {
          CSS.highlights.delete("rv-flash");
        }
      } else {
        markEls.forEach(function (m) {
          m.el.classList.toggle("hl-flash", on && m.start < sp.end && m.end > sp.start);
        });
      }
      on = !on;
      if (++ticks < 6) flashTimer = setTimeout(step, 220);
    }
    step();
  }

  function describe(sp) {
    return sp.claims.map(function (cl) { return cl.lens + " (" + cl.assessment + ")"; }).join(", ");
  }

  function focusSpan(id) {
    var range = spanRanges.get(id);
    if (!range) return false;
    current = order.indexOf(id);
    scrollRangeIntoView(range);
    flash(id);
    var sp = spanById.get(id);
    if (cursorLabel) {
      var excerpt = sp.text.length > 80 ? sp.text.slice(0, 80) + "…" : sp.text;
      cursorLabel.textContent = "Span " + (current + 1) + " of " + order.length + ": “" + excerpt + "” — " + describe(sp);
    }
    document.querySelectorAll(".span-item[aria-current]").forEach(function (el) { el.removeAttribute("aria-current"); });
    var item = document.getElementById("span-item-" + id);
    if (item) {
      item.setAttribute("aria-current", "true");
      item.scrollIntoView({ block: "nearest" });
    }
    window.reviewappCurrentSpan = id;
    return true;
  }

  function step(delta) {
    if (!order.length) return;
    var i = current < 0 ? (delta > 0 ? 0 : order.length - 1) : (current + delta + order.length) % order.length;
    focusSpan(order[i]);
  }

  window.reviewappFocusSpan = focusSpan;
  window.reviewappNextSpan = function () { step(1); };
  window.reviewappPreviousSpan = function () { step(-1); };

  document.addEventListener("click", function (event) {
    var link = event.target.closest("a[data-span]");
    if (!link) return;
    var id = Number(link.dataset.span);
    if (spanRanges.has(id)) {
      event.preventDefault();
      focusSpan(id);
    }
  });

  // --- hover: which lenses cite this character, and how ------------------------
  function caretAt(x, y) {
    if (document.caretPositionFromPoint) {
      var p = document.caretPositionFromPoint(x, y);
      return p ? [p.offsetNode, p.offset] : null;
    }
    if (document.caretRangeFromPoint) {
      var r = document.caretRangeFromPoint(x, y);
      return r ? [r.startContainer, r.startOffset] : null;
    }
    return null;
  }

  function charUnder(x, y) {
    var caret = caretAt(x, y);
    if (!caret) return -1;
    var offset = offsetOf(caret[0], caret[1]);
    if (offset < 0) return -1;
    // The caret is between characters: take whichever neighbour is under the pointer.
    for (var d = 0; d < 2; d++) {
      var at = offset - d;
      if (at < 0 || at >= content.length) continue;
      var r = rangeFor(at, Math.min(content.length, at + 1));
      var rects = r.getClientRects();
      for (var k = 0; k < rects.length; k++) {
        var b = rects[k];
        if (x >= b.left && x <= b.right && y >= b.top && y <= b.bottom) return at;
      }
    }
    return -1;
  }

  function spansAt(offset) {
    var hits = [];
    for (var j = 0; j < valid.length && valid[j].start <= offset; j++) {
      if (valid[j].end > offset) hits.push(valid[j]);
    }
    return hits;
  }

  function showTooltip(hits, x, y) {
    if (!tooltip) return;
    tooltip.replaceChildren();
    var here = lensesOf(hits);
    if (here.length > 1) {
      var head = document.createElement("p");
      head.className = "hl-tooltip__count";
      head.textContent = "Cited by " + here.length + " lenses: " + here.map(function (l) { return l.lens; }).join(", ");
      tooltip.appendChild(head);
    }
    hits.forEach(function (sp) {
      var block = document.createElement("div");
      block.className = "hl-tooltip__span";
      var quote = document.createElement("q");
      quote.textContent = sp.text.length > 90 ? sp.text.slice(0, 90) + "…" : sp.text;
      block.appendChild(quote);
      var list = document.createElement("ul");
      sp.claims.forEach(function (cl) {
        var li = document.createElement("li");
        var sw = document.createElement("span");
        sw.className = "swatch lens-" + cl.slot;
        li.appendChild(sw);
        li.appendChild(document.createTextNode(cl.lens + ": "));
        var a = document.createElement("span");
        a.className = "assessment assessment--" + cl.assessment;
        a.textContent = cl.assessment;
        li.appendChild(a);
        if (cl.note) {
          var note = document.createElement("span");
          note.className = "claim__note";
          note.textContent = " " + cl.note;
          li.appendChild(note);
        }
        list.appendChild(li);
      });
      block.appendChild(list);
      if (sp.partial) {
        var warn = document.createElement("p");
        warn.className = "hl-tooltip__partial";
        warn.textContent = sp.partial;
        block.appendChild(warn);
      }
      tooltip.appendChild(block);
    });
    tooltip.hidden = false;
    var w = tooltip.offsetWidth, h = tooltip.offsetHeight;
    var left = Math.min(x + 14, window.innerWidth - w - 8);
    var top = y + 18 + h > window.innerHeight ? y - h - 12 : y + 18;
    tooltip.style.left = Math.max(8, left) + "px";
    tooltip.style.top = Math.max(8, top) + "px";
  }

  function hideTooltip() { if (tooltip) tooltip.hidden = true; }

  var pending = null;
  root.addEventListener("mousemove", function (event) {
    var x = event.clientX, y = event.clientY;
    if (pending) cancelAnimationFrame(pending);
    pending = requestAnimationFrame(function () {
      pending = null;
      var at = charUnder(x, y);
      var hits = at < 0 ? [] : spansAt(at);
      if (hits.length) {
        showTooltip(hits, x, y);
        root.style.cursor = "help";
      } else {
        hideTooltip();
        root.style.cursor = "";
      }
    });
  });
  root.addEventListener("mouseleave", function () {
    if (pending) cancelAnimationFrame(pending);
    pending = null;
    hideTooltip();
  });
  root.addEventListener("scroll", hideTooltip, { passive: true });

  // A click, or a tap on a phone (which has no hover), shows what hovering shows,
  // where it happened. The list of cited spans follows only when it sits beside
  // the answer: on one column it is far below, and the reader would be carried off.
  root.addEventListener("click", function (event) {
    var at = charUnder(event.clientX, event.clientY);
    var hits = at < 0 ? [] : spansAt(at);
    if (!hits.length) {
      hideTooltip();
      return;
    }
    showTooltip(hits, event.clientX, event.clientY);
    current = order.indexOf(hits[0].id);
    var item = document.getElementById("span-item-" + hits[0].id);
    document.querySelectorAll(".span-item[aria-current]").forEach(function (el) { el.removeAttribute("aria-current"); });
    if (item) {
      item.setAttribute("aria-current", "true");
      if (item.getBoundingClientRect().left >= root.getBoundingClientRect().right) {
        item.scrollIntoView({ block: "nearest" });
      }
    }
  });
  document.addEventListener("click", function (event) {
    if (!root.contains(event.target)) hideTooltip();
  });
  // Fixed where it was opened, it would float over other text once the page moves.
  window.addEventListener("scroll", hideTooltip, { passive: true });
})();
