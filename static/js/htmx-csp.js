/*
 * Loaded right after htmx, before the page has finished parsing: htmx must
 * neither inject its indicator <style> nor evaluate attribute text as script,
 * both of which the Content-Security-Policy blocks (no 'unsafe-inline', no
 * 'unsafe-eval'). Pages refresh on a timer with poll.js instead of trigger filters.
 */
if (window.htmx) {
  window.htmx.config.includeIndicatorStyles = false;
  window.htmx.config.allowEval = false;
}
