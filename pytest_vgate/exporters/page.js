(function () {
  var table = document.getElementById("verdicts");
  var rows = function () { return Array.prototype.slice.call(table.tBodies[0].rows); };
  var show = function (state) {
    rows().forEach(function (row) {
      row.hidden = state !== "all" && row.getAttribute("data-state") !== state;
    });
    document.querySelectorAll("article.gate").forEach(function (gate) {
      gate.hidden = state !== "all" && gate.getAttribute("data-state") !== state;
    });
    document.querySelectorAll("[data-filter]").forEach(function (button) {
      button.setAttribute("aria-pressed", String(button.getAttribute("data-filter") === state));
    });
  };
  document.querySelectorAll("[data-filter]").forEach(function (button) {
    button.addEventListener("click", function () { show(button.getAttribute("data-filter")); });
  });
  var key = function (row, column) {
    var cell = row.cells[column];
    var value = cell.getAttribute("data-value");
    return value !== null ? value : cell.textContent;
  };
  table.tHead.querySelectorAll("th").forEach(function (th, column) {
    th.addEventListener("click", function () {
      var down = th.getAttribute("aria-sort") !== "ascending";
      var numeric = th.getAttribute("data-numeric") === "1";
      var sorted = rows().sort(function (a, b) {
        var x = key(a, column), y = key(b, column);
        var c = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
        return down ? c : -c;
      });
      table.tHead.querySelectorAll("th").forEach(function (other) {
        other.removeAttribute("aria-sort");
      });
      th.setAttribute("aria-sort", down ? "ascending" : "descending");
      sorted.forEach(function (row) { table.tBodies[0].appendChild(row); });
    });
  });
})();
