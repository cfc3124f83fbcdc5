// A call's output, live: the lines its tool publishes while it runs appear as they come. On load
// it asks from offset 0, so a reload shows again everything the call keeps, then from where the
// last answer ended, until the stream has ended. Text goes in as text, never as markup.
(function () {
  "use strict";
  var section = document.querySelector("section.progress[data-progress]");
  if (!section) {
    return;
  }
  var url = section.getAttribute("data-progress");
  var output = section.querySelector("pre.output");
  var gap = section.querySelector(".gap");
  var counts = section.querySelector(".counts");
  var empty = section.querySelector(".empty");
  var offset = 0;
  var every = 1000;
  function show(item) {
    if (item.kind === "stdout" || item.kind === "stderr" || item.kind === "note") {
      var line = document.createElement("span");
      line.className = "line " + item.kind;
      line.setAttribute("data-offset", String(item.offset));
      line.textContent = (item.kind === "note" ? "[" + item.text + "]" : item.text) + "\n";
      output.appendChild(line);
    } else {
      counts.hidden = false;
      counts.textContent =
        item.kind + ": " + item.done + (item.total !== undefined ? " of " + item.total : "");
    }
    empty.hidden = true;
  }
  function poll() {
    fetch(url + "?from=" + offset, {
      credentials: "same-origin",
      headers: { Accept: "application/json" },
    })
      .then(function (response) {
        return response.ok ? response.json() : null;
      })
      .then(function (page) {
        if (page) {
          if (page.missed) {
            gap.hidden = false;
            gap.textContent =
              page.missed + " earlier lines were dropped: the call keeps only its latest.";
          }
          page.items.forEach(show);
          offset = page.next_offset;
          if (page.ended) {
            section.setAttribute("data-ended", "true");
            return;
          }
          if (page.items.length) {
            window.setTimeout(poll, 0);
            return;
          }
        }
        window.setTimeout(poll, every);
      })
      .catch(function () {
        window.setTimeout(poll, every);
      });
  }
  poll();
})();
