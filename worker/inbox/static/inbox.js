// Live updates: a page that shows calls asks the inbox now and then whether what it shows has
// changed, and reloads (or, while you are typing in one of its forms, says so). Everything works
// without this script; it only saves pressing reload.
(function () {
  "use strict";
  var main = document.querySelector("main[data-watch]");
  if (!main) {
    return;
  }
  var url = main.getAttribute("data-watch");
  var version = main.getAttribute("data-version");
  var every = Math.max(Number(main.getAttribute("data-every")) || 3, 0.5) * 1000;
  var typing = false;
  document.addEventListener("input", function () {
    typing = true;
  });
  function changed() {
    if (!typing) {
      window.location.reload();
      return true;
    }
    var banner = document.querySelector(".banner.changed");
    if (banner) {
      banner.hidden = false;
    }
    return false;
  }
  function poll() {
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        return response.ok ? response.json() : null;
      })
      .then(function (answer) {
        if (answer && answer.version !== version && changed()) {
          return;
        }
        window.setTimeout(poll, every);
      })
      .catch(function () {
        window.setTimeout(poll, every);
      });
  }
  window.setTimeout(poll, every);
})();
