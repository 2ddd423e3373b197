/*
 * "Copy" buttons: <button data-copy="#id"> copies that element's text to the
 * clipboard and says so next to the button (a static file: the
 * Content-Security-Policy allows no inline script).
 */
document.addEventListener("click", function (event) {
  var button = event.target.closest && event.target.closest("[data-copy]");
  if (!button) return;
  var source = document.querySelector(button.getAttribute("data-copy"));
  var status = button.parentNode.querySelector("[data-copy-status]");
  if (!source) return;
  var text = source.textContent.trim();
  function say(message) { if (status) status.textContent = message; }
  function fallback() {
    // Select the text so Ctrl+C works where the clipboard API is refused.
    var range = document.createRange();
    range.selectNodeContents(source);
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    say("Selected: press Ctrl+C (⌘C) to copy.");
  }
  if (navigator.clipboard && navigator.clipboard.writeText) {
    navigator.clipboard.writeText(text).then(function () {
      say(button.getAttribute("data-copied") || "Copied");
    }, fallback);
  } else {
    fallback();
  }
});
