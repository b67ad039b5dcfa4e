// The book opened from the disk (a file:// address: the offline copy of `make dist`, or
// _build/html/index.html). Search still works there (its index is loaded as a script), but the browser
// refuses the fetch() with which Sphinx's search reads each result's page for a summary, and every
// refusal is a console error. From the disk, results are listed without their summaries.
if (window.location.protocol === "file:" && typeof DOCUMENTATION_OPTIONS !== "undefined") {
  DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false;
}
