// Tables with the class "sortable": a click on a column's heading sorts the rows by that column, a second
// click the other way. A cell's data-sort holds its key where the text is not one (a ratio under a
// "+5.2% [+3.1%, +7.4%]", a verdict's severity); keys that are numbers sort as numbers, empty ones last.
(function () {
  "use strict";

  function key(cell) {
    if (!cell) { return { empty: true }; }
    var text = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent.trim();
    if (text === "" || text === "—") { return { empty: true }; }
    var cleaned = text.replace(/[,%\s]/g, "").replace(/^</, "").replace(/^\+/, "");
    var number = Number(cleaned);
    return isFinite(number) && cleaned !== "" ? { number: number } : { text: text.toLowerCase() };
  }

  function compare(a, b) {
    if (a.empty || b.empty) { return (a.empty ? 1 : 0) - (b.empty ? 1 : 0); }
    if (a.number !== undefined && b.number !== undefined) { return a.number - b.number; }
    var left = a.text !== undefined ? a.text : String(a.number);
    var right = b.text !== undefined ? b.text : String(b.number);
    return left.localeCompare(right);
  }

  function sortBy(table, heading, column) {
    var body = table.tBodies[0];
    var ascending = heading.getAttribute("aria-sort") !== "ascending";
    var rows = Array.prototype.slice.call(body.rows);
    var keyed = rows.map(function (row, index) { return { row: row, key: key(row.cells[column]), index: index }; });
    keyed.sort(function (a, b) {
      var order = compare(a.key, b.key);
      if (a.key.empty || b.key.empty) { return order || a.index - b.index; }
      return (ascending ? order : -order) || a.index - b.index;
    });
    keyed.forEach(function (item) { body.appendChild(item.row); });
    Array.prototype.forEach.call(table.tHead.querySelectorAll("th"), function (other) {
      other.removeAttribute("aria-sort");
    });
    heading.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  function prepare(table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    var headings = table.tHead.rows[table.tHead.rows.length - 1].cells;
    Array.prototype.forEach.call(headings, function (heading, column) {
      if (heading.classList.contains("nosort")) { return; }
      var button = document.createElement("button");
      button.type = "button";
      button.className = "sort";
      button.title = "Sort by this column";
      while (heading.firstChild) { button.appendChild(heading.firstChild); }
      heading.appendChild(button);
      button.addEventListener("click", function () { sortBy(table, heading, column); });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), prepare);
  });
}());
