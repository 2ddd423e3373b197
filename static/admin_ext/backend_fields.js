/* Show only the fieldsets that apply to the chosen backend (lenses) or kind (checkers).
 *
 * A fieldset marked with the class `show-if-<field>-<value>` is shown only while the
 * select named <field> has that value; a fieldset may carry several such classes.
 * Without JavaScript every fieldset stays visible and the server still validates
 * only the fields the chosen backend reads.
 */
(function () {
  "use strict";
  var PREFIX = "show-if-";

  function conditions(fieldset) {
    var out = [];
    fieldset.classList.forEach(function (cls) {
      if (cls.indexOf(PREFIX) !== 0) return;
      var rest = cls.slice(PREFIX.length);
      var dash = rest.indexOf("-");
      if (dash > 0) out.push({ field: rest.slice(0, dash), value: rest.slice(dash + 1) });
    });
    return out;
  }

  function update(form) {
    form.querySelectorAll("fieldset[class*='" + PREFIX + "']").forEach(function (fieldset) {
      var conds = conditions(fieldset);
      if (!conds.length) return;
      var show = conds.some(function (c) {
        var select = form.querySelector("[name='" + c.field + "']");
        return !select || select.value === c.value;
      });
      fieldset.hidden = !show;
    });
  }

  function init() {
    document.querySelectorAll("form").forEach(function (form) {
      if (!form.querySelector("fieldset[class*='" + PREFIX + "']")) return;
      form.addEventListener("change", function (event) {
        if (event.target && event.target.tagName === "SELECT") update(form);
      });
      update(form);
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
})();
