// report.html's interactive part: filters, search, a lazily drawn list and the paired traces.
// Inlined in the page (allowed by the page's Content-Security-Policy through its hash).
// Every piece of data is untrusted and reaches the page through textContent only.
(function () {
  "use strict";

  var payload = JSON.parse(document.getElementById("ew-data").textContent);
  var FLAGS = payload.meta.flags;
  var EVALS = payload.meta.evals;
  var rows = payload.rows;
  var ROW_HEIGHT = 30;
  var OVERSCAN = 12;
  var STEP_PAGE = 400;
  var BUNDLE_CACHE = 16;
  var FILTERS = ["regressed", "fixed", "errored", "timed-out", "failing", "new", "removed", "flaky", "judges-disagree", "advisory"];

  function byId(id) { return document.getElementById(id); }
  var app = byId("app");
  var listBox = byId("list");
  var rowsBox = byId("rows");
  var detail = byId("detail");
  var countLine = byId("count");
  var search = byId("search");
  var evalSelect = byId("eval-filter");
  var agentSelect = byId("agent-filter");
  var sortSelect = byId("sort");
  var filterButtons = Array.prototype.slice.call(document.querySelectorAll("button.filter"));

  var byKey = new Map();
  rows.forEach(function (row, index) {
    row.i = index;
    byKey.set(keyOf(row), row);
  });

  var state = null;
  var shown = [];
  var drawn = "";
  var highlighted = "";
  var bundles = new Map();
  var expanded = false;
  var focused = "";

  // --- small helpers ---------------------------------------------------------------------

  function keyOf(row) { return EVALS[row.e].name + "/" + row.f; }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) { node.className = className; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }

  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined || child === false || child === "") { continue; }
      parent.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return parent;
  }

  function fixed(value, digits) {
    return value === null || value === undefined ? "—" : Number(value).toFixed(digits === undefined ? 2 : digits);
  }

  // A change as the comment writes it (digits.py): "+0.25", "-0.004" (never "-0.00"), "0.00".
  function signed(value) {
    if (value === null || value === undefined) { return "—"; }
    for (var digits = 2; digits <= 4; digits++) {
      var shown = Number(value).toFixed(digits);
      if (Number(shown) !== 0) { return (value > 0 ? "+" : "") + shown; }
    }
    return "0.00";
  }

  function token(text) { return String(text).toLowerCase().replace(/[^a-z0-9_-]/g, ""); }

  function link(text, changes, className) {
    var anchor = el("a", className || "", text);
    anchor.href = hashOf(Object.assign({}, state, changes));
    return anchor;
  }

  // --- the state, kept in the URL fragment -------------------------------------------------

  function defaults() {
    return { filter: "all", eval: "", agent: "", q: "", sort: "", open: "", rep: "", step: "" };
  }

  function readHash() {
    var next = defaults();
    var params = new URLSearchParams(location.hash.replace(/^#/, ""));
    Object.keys(next).forEach(function (name) {
      var value = params.get(name);
      if (value !== null) { next[name] = value; }
    });
    if (next.filter !== "all" && !(next.filter in FLAGS)) { next.filter = "all"; }
    return next;
  }

  function hashOf(next) {
    var params = new URLSearchParams();
    var base = defaults();
    Object.keys(base).forEach(function (name) {
      if (next[name] && next[name] !== base[name]) { params.set(name, next[name]); }
    });
    return "#" + params.toString();
  }

  var typing = 0;

  function update(changes) {
    if (typing) {
      // a search still waiting to apply goes with this change, not after it
      clearTimeout(typing);
      typing = 0;
      if (!("q" in changes)) { changes.q = search.value; }
    }
    var next = Object.assign({}, state, changes);
    history.replaceState(null, "", hashOf(next));
    apply(next);
  }

  function apply(next) {
    var listChanged = state === null || ["filter", "eval", "agent", "q", "sort"].some(function (name) {
      return state[name] !== next[name];
    });
    state = next;
    syncControls();
    if (listChanged) {
      computeShown();
      // the open fixture's row stays in view (a link that opens one lands next to it)
      rowsBox.style.height = Math.max(shown.length * ROW_HEIGHT, ROW_HEIGHT) + "px";
      var at = state.open ? shown.indexOf(byKey.get(state.open)) : -1;
      listBox.scrollTop = at > 2 ? (at - 2) * ROW_HEIGHT : 0;
    }
    renderList();
    renderDetail();
  }

  function syncControls() {
    filterButtons.forEach(function (button) {
      button.setAttribute("aria-pressed", String(button.dataset.filter === state.filter));
    });
    if (document.activeElement !== search && search.value !== state.q) { search.value = state.q; }
    evalSelect.value = state.eval;
    agentSelect.value = state.agent;
    sortSelect.value = state.sort;
  }

  // --- filtering, search, sorting ----------------------------------------------------------

  function haystack(row) {
    if (row.hay === undefined) {
      row.hay = [row.f, row.h && row.h.o, row.b && row.b.o].filter(Boolean).join("\n").toLowerCase();
    }
    return row.hay;
  }

  function computeShown() {
    var query = state.q.trim().toLowerCase();
    var counts = { all: 0 };
    FILTERS.forEach(function (name) { counts[name] = 0; });
    var bit = state.filter === "all" ? 0 : FLAGS[state.filter];
    shown = [];
    for (var i = 0; i < rows.length; i++) {
      var row = rows[i];
      var info = EVALS[row.e];
      if (state.eval && info.name !== state.eval) { continue; }
      if (state.agent && info.agent !== state.agent) { continue; }
      if (query && haystack(row).indexOf(query) < 0) { continue; }
      counts.all += 1;
      for (var f = 0; f < FILTERS.length; f++) {
        if (row.g & FLAGS[FILTERS[f]]) { counts[FILTERS[f]] += 1; }
      }
      if (!bit || row.g & bit) { shown.push(row); }
    }
    sortShown();
    filterButtons.forEach(function (button) {
      var number = button.querySelector(".n");
      if (number) { number.textContent = String(counts[button.dataset.filter] || 0); }
    });
    var what = state.filter === "all" ? "" : " " + state.filter;
    countLine.textContent = "Showing " + shown.length + what + " of " + rows.length + " fixtures" +
      (query ? " matching \u201c" + state.q.trim() + "\u201d" : "") +
      (state.eval ? " in " + state.eval : "") + (state.agent ? " of agent " + state.agent : "") + ".";
  }

  function lastIfMissing(value) { return value === null || value === undefined ? Infinity : value; }

  function sortShown() {
    var order = {
      delta: function (row) { return lastIfMissing(row.d); },
      score: function (row) { return lastIfMissing(row.h && row.h.sc); },
    }[state.sort];
    if (order) {
      shown.sort(function (a, b) { return (order(a) - order(b)) || (a.i - b.i); });
    } else if (state.sort === "name") {
      shown.sort(function (a, b) { return keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0; });
    }
  }

  // --- the list: only the rows in view exist ---------------------------------------------

  function label(row) {
    var names = ["regressed", "fixed", "errored", "timed-out", "failing", "new", "removed", "flaky", "judges-disagree", "advisory"];
    for (var i = 0; i < names.length; i++) {
      if (row.g & FLAGS[names[i]]) { return names[i]; }
    }
    return row.h ? row.h.s : "—";
  }

  function sideChip(side) {
    if (!side) { return el("span", "chip none", "—"); }
    var text = side.s + " " + fixed(side.sc);
    if (side.n > 1) { text += " " + side.k + "/" + side.n; }
    return el("span", "chip " + token(side.s), text);
  }

  function rowElement(row, position) {
    var anchor = el("a", "row");
    anchor.href = hashOf(Object.assign({}, state, { open: keyOf(row), rep: "", step: "" }));
    anchor.style.top = position * ROW_HEIGHT + "px";
    anchor.dataset.key = keyOf(row);
    anchor.dataset.top = String(position);
    if (keyOf(row) === state.open) { anchor.classList.add("open"); }
    var preview = row.p ? "held out: name and result only" :
      (row.h && (row.h.m || row.h.o)) || (row.b && (row.b.m || row.b.o)) || "";
    var delta = el("span", "num", row.d === undefined ? "—" : signed(row.d));
    if (row.d < 0 && signed(row.d) !== "0.00") { delta.classList.add("down"); }
    if (row.d > 0 && signed(row.d) !== "0.00") { delta.classList.add("up"); }
    var reps = row.h ? row.h.k + "/" + row.h.n : "—";
    add(anchor,
      add(el("span"), el("span", "change " + label(row), label(row))),
      el("span", "sev " + token(row.sv), row.sv),
      add(el("span", "name"), el("span", "of-eval", EVALS[row.e].name + " / "), row.f),
      add(el("span", "wide"), sideChip(row.b)),
      add(el("span"), sideChip(row.h)),
      delta,
      el("span", "reps wide", reps),
      el("span", "preview wide", preview.slice(0, 300)));
    return anchor;
  }

  function renderList() {
    rowsBox.style.height = Math.max(shown.length * ROW_HEIGHT, ROW_HEIGHT) + "px";
    if (!shown.length) {
      rowsBox.replaceChildren(el("p", "muted", "No fixture matches."));
      return;
    }
    var top = listBox.scrollTop;
    var height = listBox.clientHeight || 400;
    var first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    var last = Math.min(shown.length, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN);
    var fragment = document.createDocumentFragment();
    for (var i = first; i < last; i++) { fragment.appendChild(rowElement(shown[i], i)); }
    rowsBox.replaceChildren(fragment);
  }

  var framePending = false;
  listBox.addEventListener("scroll", function () {
    if (framePending) { return; }
    framePending = true;
    requestAnimationFrame(function () { framePending = false; renderList(); });
  });

  // --- the detail of one fixture: base and head side by side ------------------------------

  function loadBundle(row) {
    if (bundles.has(row.i)) { return bundles.get(row.i); }
    var node = byId("t" + row.i);
    if (!node) { return null; }
    var bundle = JSON.parse(node.textContent);
    bundles.set(row.i, bundle);
    if (bundles.size > BUNDLE_CACHE) { bundles.delete(bundles.keys().next().value); }
    return bundle;
  }

  function renderDetail() {
    if (!state.open) {
      var closed = focused;
      detail.hidden = true;
      detail.replaceChildren();
      drawn = "";
      highlighted = "";
      focused = "";
      if (closed) { focusRow(closed); }
      return;
    }
    var row = byKey.get(state.open);
    var key = state.open + "#" + state.rep;
    if (key !== drawn) {
      detail.hidden = false;
      expanded = false;
      highlighted = "";
      if (!row) {
        detail.replaceChildren(el("p", "muted", "This report has no fixture " + state.open + "."));
      } else {
        draw(row);
      }
      drawn = key;
      var heading = detail.querySelector("h2");
      // focus moves to the fixture opened (not to a rep picked within it)
      if (heading && state.open !== focused) { heading.focus({ preventScroll: true }); }
      focused = state.open;
      if (!state.step) { detail.scrollIntoView({ block: "start" }); }
    }
    highlightStep();
  }

  function draw(row) {
    var title = add(el("h2"),
      el("span", "change " + label(row), label(row)),
      el("span", "", EVALS[row.e].name + " / " + row.f),
      el("span", "chip none", "severity " + row.sv),
      link("close", { open: "", rep: "", step: "" }, "close"));
    title.tabIndex = -1;
    detail.replaceChildren(title);
    if (row.p) {
      add(detail, el("p", "muted", "Held out (visibility: private): only the name and result are shown."));
      add(detail, statistics(row, null));
      return;
    }
    var bundle = loadBundle(row);
    if (!bundle) {
      if (document.readyState === "loading") {
        add(detail, el("p", "muted", "Loading the traces\u2026"));
        document.addEventListener("DOMContentLoaded", function () { drawn = ""; renderDetail(); }, { once: true });
      } else {
        add(detail, statistics(row, null), el("p", "muted", "No runs were recorded for this fixture."));
      }
      return;
    }
    var rep = chosenRep(bundle);
    var head = findRep(bundle.h, rep);
    var base = findRep(bundle.b, rep);
    // evidence first: where head departs from base, what the judges cite, what failed
    add(detail, evidence(base, head), outputDiff(base, head), stateDiff(base, head),
      repPicker(bundle, rep), timeline(base, head));
    var columns = add(el("div", "columns"), runColumn("Base", "b", base), runColumn("Head", "h", head));
    add(detail, add(el("h3", "", "Assertions and model calls")), columns, statistics(row, bundle, base, head));
  }

  function statistics(row, bundle, base, head) {
    var box = add(el("details", "stats"),
      el("summary", "", "Statistics: result, score, reps, intervals, usage" + (base || head ? ", axes" : "")));
    add(box, pairedSummary(row, bundle));
    if (base || head) { add(box, axes(base, head)); }
    return box;
  }

  function evidence(base, head) {
    var box = add(el("section", "evidence"), el("h3", "", "Evidence"));
    box.setAttribute("aria-label", "Evidence");
    var note = divergenceNote(head || base, base, head);
    var any = false;
    if (note) { add(box, note); any = true; }
    [["Head", "h", head], ["Base", "b", base]].forEach(function (entry) {
      var run = entry[2];
      if (!run) { return; }
      var judges = el("div", "side " + entry[1]);
      run.a.forEach(function (assertion) {
        if (assertion.j) { add(judges, judge(assertion.j, entry[1], run, entry[0])); }
        (assertion.xc || []).forEach(function (check) { add(judges, crossCheck(check, entry[1], run, entry[0])); });
      });
      var failed = run.a.filter(function (assertion) { return assertion.s !== "pass" && !assertion.adv && !assertion.j; });
      if (entry[1] === "h" && failed.length) {
        var list = el("ul", "failed");
        failed.forEach(function (assertion) {
          add(list, add(el("li"), el("strong", "", assertion.t), ": " + (assertion.m || assertion.s)));
        });
        add(judges, list);
      }
      if (judges.childNodes.length) { add(box, judges); any = true; }
    });
    if (!any) { add(box, el("p", "muted", "Base and head take the same steps, and no judge cites a step.")); }
    return box;
  }

  // --- base and head final outputs, word by word -------------------------------------------

  var DIFF_CELLS = 4000000;

  function words(text) { return String(text || "").split(/(\s+)/).filter(function (w) { return w !== ""; }); }

  function diffWords(a, b) {
    var start = 0;
    while (start < a.length && start < b.length && a[start] === b[start]) { start++; }
    var endA = a.length, endB = b.length;
    while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) { endA--; endB--; }
    var out = [];
    if (start) { out.push(["=", a.slice(0, start).join("")]); }
    var x = a.slice(start, endA), y = b.slice(start, endB);
    if (x.length * y.length > DIFF_CELLS) {
      if (x.length) { out.push(["-", x.join("")]); }
      if (y.length) { out.push(["+", y.join("")]); }
    } else {
      var n = x.length, m = y.length, table = [];
      for (var i = 0; i <= n; i++) { table.push(new Uint32Array(m + 1)); }
      for (i = n - 1; i >= 0; i--) {
        for (var j = m - 1; j >= 0; j--) {
          table[i][j] = x[i] === y[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
        }
      }
      i = 0; j = 0;
      while (i < n || j < m) {
        if (i < n && j < m && x[i] === y[j]) { out.push(["=", x[i]]); i++; j++; }
        else if (j < m && (i === n || table[i][j + 1] >= table[i + 1][j])) { out.push(["+", y[j]]); j++; }
        else { out.push(["-", x[i]]); i++; }
      }
    }
    if (endA < a.length) { out.push(["=", a.slice(endA).join("")]); }
    return out;
  }

  // A run of changed words reads as one: what base said, then what head says instead (the
  // spaces between changed words go with them).
  function grouped(ops) {
    var out = [], del = "", ins = "";
    function flush() {
      if (del) { out.push(["-", del]); }
      if (ins) { out.push(["+", ins]); }
      del = ""; ins = "";
    }
    for (var i = 0; i < ops.length; i++) {
      var op = ops[i];
      if (op[0] === "-") { del += op[1]; }
      else if (op[0] === "+") { ins += op[1]; }
      else if ((del || ins) && /^\s+$/.test(op[1]) && i + 1 < ops.length && ops[i + 1][0] !== "=") {
        if (del) { del += op[1]; }
        if (ins) { ins += op[1]; }
      } else { flush(); out.push(op); }
    }
    flush();
    return out;
  }

  function outputDiff(base, head) {
    if (!base || !head || base.o === undefined || head.o === undefined) { return null; }
    var box = add(el("section", "output-diff"), el("h3", "", "Final output, base \u2192 head"));
    box.setAttribute("aria-label", "Final output, base to head");
    if (base.o === head.o) { return add(box, el("p", "muted", "The same on both sides."), el("pre", "diff", head.o)); }
    var pre = el("pre", "diff");
    var merged = [];
    grouped(diffWords(words(base.o), words(head.o))).forEach(function (part) {
      var last = merged[merged.length - 1];
      if (last && last[0] === part[0]) { last[1] += part[1]; } else { merged.push([part[0], part[1]]); }
    });
    merged.forEach(function (part) {
      if (part[0] === "=") { add(pre, part[1]); }
      else { add(pre, el(part[0] === "-" ? "del" : "ins", "", part[1])); }
    });
    return add(box, el("p", "muted legend", "Struck through: only on base; underlined: only on head."), pre);
  }

  // --- the playground's state, initial -> final, base beside head --------------------------
  function stateDiff(base, head) {
    if (!(base && base.pg) && !(head && head.pg)) { return null; }
    var box = add(el("section", "state-diff"), el("h3", "", "Playground state, initial \u2192 final"));
    box.setAttribute("aria-label", "Playground state, initial to final");
    var columns = add(el("div", "columns"));
    [["Base", base], ["Head", head]].forEach(function (side) {
      var cell = add(el("div", "column"), el("h4", "", side[0]));
      var pg = side[1] && side[1].pg;
      if (!pg) { add(columns, add(cell, el("p", "muted", "No playground state recorded."))); return; }
      add(cell, el("p", "muted", "playground " + pg.n));
      if (!pg.d.length) { add(cell, el("p", "muted", "The run changed nothing.")); }
      var pre = el("pre", "diff");
      pg.d.forEach(function (line) {
        var text = (line[0] === "@" ? "" : line[0]) + line[1] + "\n";
        if (line[0] === "-") { add(pre, el("del", "", text)); }
        else if (line[0] === "+") { add(pre, el("ins", "", text)); }
        else { add(pre, text); }
      });
      if (pg.more) { add(pre, "\u2026 " + pg.more + " more lines\n"); }
      add(columns, add(cell, pre));
    });
    return add(box, el("p", "muted legend", "Struck through: before the run; underlined: after it."), columns);
  }

  function findRep(runs, rep) {
    for (var i = 0; i < runs.length; i++) { if (runs[i].r === rep) { return runs[i]; } }
    return null;
  }

  function chosenRep(bundle) {
    var asked = parseInt(state.rep, 10);
    if (!isNaN(asked) && (findRep(bundle.h, asked) || findRep(bundle.b, asked))) { return asked; }
    var failing = bundle.h.filter(function (run) { return run.s !== "pass"; })[0];
    var first = failing || bundle.h[0] || bundle.b[0];
    return first ? first.r : 0;
  }

  function sum(runs, index) {
    var total = 0;
    var unpriced = false;
    runs.forEach(function (run) {
      var value = run.u[index];
      if (value === null || value === undefined) { unpriced = true; } else { total += value; }
    });
    return { total: total, unpriced: unpriced };
  }

  function percent(value) {
    var scaled = Math.round(value * 1000) / 10;
    return (scaled === Math.round(scaled) ? scaled.toFixed(0) : scaled.toFixed(1)) + " %";
  }

  // The outcome over reps as the Eval's minRepPassRate rule judges it, worded as the comment
  // words it (report/figures.py): "4/8 reps pass (rule ≥ 60 %), 95 % CI 22–78 %".
  function repsText(outcome, side, rule) {
    if (!side) { return "—"; }
    if (!outcome || outcome.n < 2) {
      return side.k + " of " + side.n + " rep" + (side.n === 1 ? "" : "s") + " passed";
    }
    var counted = outcome.n - outcome.skip;
    var text = outcome.k + "/" + counted + " reps pass";
    if (rule !== null && rule !== undefined) { text += " (rule \u2265 " + percent(rule) + ")"; }
    text += ", 95 % CI " + Math.round(outcome.ci[0] * 100) + "\u2013" + Math.round(outcome.ci[1] * 100) + " %";
    var notes = [];
    if (outcome.err) { notes.push(outcome.err + " errored"); }
    if (outcome.to) { notes.push(outcome.to + " timed out"); }
    if (outcome.skip) { notes.push(outcome.skip + " with nothing evaluated, not counted"); }
    if (notes.length) { text += " (" + notes.join(", ") + ")"; }
    if (outcome.k > 0 && outcome.k < counted) { text += " \u00b7 flaky: its reps disagree"; }
    return text;
  }

  function pairedSummary(row, bundle) {
    var table = el("table", "pairs");
    add(table, add(el("thead"), add(el("tr"), el("th", "", "measure"), el("th", "side", "Base"), el("th", "side", "Head"))));
    var body = el("tbody");
    function line(name, base, head) {
      var cells = [base, head].map(function (value) {
        var cell = el("td", "side");
        return add(cell, typeof value === "string" || typeof value === "number" ? String(value) : value);
      });
      add(body, add(el("tr"), el("td", "", name), cells[0], cells[1]));
    }
    line("result", sideChip(row.b), sideChip(row.h));
    var delta = row.d === undefined ? "" : " (\u0394 " + signed(row.d) + ")";
    line("score (mean over reps)", row.b ? fixed(row.b.sc) : "—", row.h ? fixed(row.h.sc) + delta : "—");
    var outcomes = bundle ? [bundle.bo, bundle.ho] : [null, null];
    var rule = EVALS[row.e].rule;
    line("reps", repsText(outcomes[0], row.b, rule), repsText(outcomes[1], row.h, rule));
    if (bundle) {
      var intervals = outcomes.map(function (outcome) {
        return outcome && outcome.sci ? fixed(outcome.sci[0]) + "\u2013" + fixed(outcome.sci[1]) : "—";
      });
      if (intervals[0] !== "—" || intervals[1] !== "—") { line("score 95% interval", intervals[0], intervals[1]); }
      var passK = outcomes.map(function (outcome) {
        if (!outcome || !outcome.pk) { return "—"; }
        return Object.keys(outcome.pk).map(function (k) { return "pass^" + k + " " + fixed(outcome.pk[k]); }).join(", ");
      });
      if (passK[0] !== "—" || passK[1] !== "—") { line("pass^k", passK[0], passK[1]); }
      var usage = [bundle.b, bundle.h].map(function (runs) {
        if (!runs.length) { return "—"; }
        var cost = sum(runs, 2);
        var ms = runs.reduce(function (total, run) { return total + run.ms; }, 0);
        return sum(runs, 0).total + " in / " + sum(runs, 1).total + " out tokens \u00b7 " +
          (cost.unpriced && !cost.total ? "cost not priced" : "$" + cost.total.toFixed(4)) + " \u00b7 " +
          (ms / 1000).toFixed(2) + " s";
      });
      line("usage (all reps)", usage[0], usage[1]);
    }
    line("message", row.b && row.b.m || "", row.h && row.h.m || "");
    return add(table, body);
  }

  function repPicker(bundle, rep) {
    var reps = {};
    bundle.h.concat(bundle.b).forEach(function (run) { reps[run.r] = true; });
    var numbers = Object.keys(reps).map(Number).sort(function (a, b) { return a - b; });
    if (numbers.length < 2) { return null; }
    var shown = findRep(bundle.h, rep);
    var why = shown && shown.s !== "pass" ? " (the first head rep that did not pass, unless you chose another)" : "";
    var box = add(el("div", "reps"), el("span", "muted", "Showing rep " + rep + why + ". Rep:"));
    numbers.forEach(function (number) {
      var head = findRep(bundle.h, number);
      var base = findRep(bundle.b, number);
      var anchor = link("rep " + number + ": " + (base ? base.s : "—") + " \u2192 " + (head ? head.s : "—"),
        { rep: String(number), step: "" }, "rep");
      anchor.setAttribute("aria-current", String(number === rep));
      if (number === rep) { anchor.classList.add("current"); }
      add(box, anchor);
    });
    return box;
  }

  function axes(base, head) {
    var names = {};
    [base, head].forEach(function (run) { if (run) { Object.keys(run.ax).forEach(function (n) { names[n] = true; }); } });
    var list = Object.keys(names).sort();
    if (!list.length) { return null; }
    var table = add(el("table", "axes"),
      add(el("thead"), add(el("tr"), el("th", "", "axis"), el("th", "num", "base"), el("th", "num", "head"), el("th", "num", "\u0394"))));
    var body = el("tbody");
    list.forEach(function (name) {
      var b = base && name in base.ax ? base.ax[name] : null;
      var h = head && name in head.ax ? head.ax[name] : null;
      add(body, add(el("tr"), el("td", "", name), el("td", "num", fixed(b)), el("td", "num", fixed(h)),
        el("td", "num", b === null || h === null ? "—" : signed(h - b))));
    });
    return add(el("div"), el("h3", "", "Axes"), add(table, body));
  }

  function stepWords(step) {
    if (!step) { return ["nothing (its run ended)"]; }
    var kind = step.t.replace("_", " ");
    return step.tool ? [kind + " ", el("code", "", step.tool)] : [kind];
  }

  function divergenceNote(run, base, head) {
    if (!run || !run.dv) { return null; }
    var text = run.dk === "text"
      ? "Same steps on both sides; the text first differs at "
      : "The runs first diverge (step type, tool or arguments) at ";
    var note = add(el("div", "divergence-note"), text, link("step " + run.dv, { step: "h" + run.dv }, "divergence-link"));
    if (run.dk !== "text" && base && head) {
      var before = base.steps[run.dv - 1], after = head.steps[run.dv - 1];
      add(note, ": base ");
      stepWords(before).forEach(function (part) { add(note, part); });
      add(note, " \u2192 head ");
      stepWords(after).forEach(function (part) { add(note, part); });
      if (run.da && before && after) {
        add(note, " with other arguments:", argumentDiff(run.da, before.args, after.args));
        return note;
      }
    }
    return add(note, ".");
  }

  // The arguments two calls of one tool differ in: each one's keys, base's value, head's.
  // The values are the steps' own (redacted with the page), shown cut to a readable length.
  var ARGUMENT_TEXT = 200;

  function argumentDiff(diff, before, after) {
    var list = el("ul", "argument-diff");
    diff.p.forEach(function (path) {
      add(list, add(el("li"), el("code", "argument-key", path.length ? cut(path.join(".")) : "the arguments"),
        ": base ", argumentValue(before, path), " \u2192 head ", argumentValue(after, path)));
    });
    if (diff.more) { add(list, el("li", "muted", diff.more + " more " + (diff.more === 1 ? "argument differs" : "arguments differ"))); }
    return list;
  }

  function argumentValue(args, path) {
    var value = args;
    for (var i = 0; i < path.length; i++) {
      if (!value || typeof value !== "object" || Array.isArray(value) ||
          !Object.prototype.hasOwnProperty.call(value, path[i])) {
        return el("span", "muted", "(absent)");
      }
      value = value[path[i]];
    }
    var text = JSON.stringify(value);
    if (text === undefined) { return el("span", "muted", "(absent)"); }
    return el("code", "argument-value", cut(text));
  }

  function cut(text) {
    return text.length > ARGUMENT_TEXT ? text.slice(0, ARGUMENT_TEXT - 1) + "\u2026" : text;
  }

  function runColumn(name, side, run) {
    var column = el("div", "run " + side);
    if (!run) {
      return add(column, el("h3", "", name), el("p", "muted", name === "Base" ? "No base run of this rep." : "No head run of this rep."));
    }
    var heading = add(el("h3", "", name + " \u00b7 rep " + run.r),
      el("span", "chip " + token(run.s), run.s + " " + fixed(run.sc)),
      el("span", "chip none", "verdict " + run.v));
    if (run.cached) { add(heading, " ", el("span", "badge", "from the result cache")); }
    if (run.to) { add(heading, " ", el("span", "badge err", "timed out: counts as not passing")); }
    add(column, heading);
    if (run.at) { add(column, el("p", "muted mono", run.at)); }
    if (run.m) { add(column, el("p", "", run.m)); }
    if (run.a.length) {
      var table = add(el("table", "assertions"),
        add(el("thead"), add(el("tr"), el("th", "", "assertion"), el("th", "", "result"), el("th", "num", "score"), el("th", "", "detail"))));
      var body = el("tbody");
      run.a.forEach(function (assertion) {
        var kind = assertion.t + (assertion.ax ? " (" + assertion.ax + ")" : "") + (assertion.adv ? " \u00b7 advisory" : "");
        add(body, add(el("tr"), el("td", "", kind), add(el("td"), el("span", "chip " + token(assertion.s), assertion.s)),
          el("td", "num", fixed(assertion.sc)), el("td", "", assertion.m)));
      });
      add(column, add(table, body));
    }
    (run.fb || []).forEach(function (fallback) {
      add(column, el("p", "muted", "Fell back from " + fallback.from + " to " + fallback.to + " at step " + fallback.step + ": " + fallback.why));
    });
    if (run.pc && run.pc.length) {
      var calls = add(el("table", "proxy-calls"),
        add(el("thead"), add(el("tr"), el("th", "", "model call (via the proxy)"), el("th", "num", "after step"),
          el("th", "", "status"), el("th", "num", "tokens in / out"), el("th", "num", "cost"), el("th", "num", "ms"))));
      var rows = el("tbody");
      run.pc.forEach(function (call) {
        var used = call.u ? call.u[0] + " / " + call.u[1] : "\u2013";
        var cost = call.u && call.u[2] !== null ? "$" + call.u[2].toFixed(6) : "\u2013";
        var what = call.model + (call.ep ? " \u00b7 " + call.ep : "") + (call.stream ? " \u00b7 streamed" : "") + (call.cached ? " \u00b7 cached" : "");
        add(rows, add(el("tr"), el("td", "", what), el("td", "num", String(call.after)),
          el("td", "", String(call.st) + (call.err ? " \u00b7 " + call.err : "")), el("td", "num", used), el("td", "num", cost),
          el("td", "num", String(call.ms))));
      });
      add(column, add(calls, rows));
    }
    if (run.stderr) { add(column, el("div", "label", "stderr"), el("pre", "", run.stderr)); }
    return column;
  }

  function crossCheck(check, side, run, name) {
    var box = check.j ? judge(check.j, side, run, name) : el("div", "judge");
    var line = el("p", check.dis ? "unsupported" : "muted",
      "Cross-check " + check.model + ": " + check.s + (check.sc === null ? "" : " " + fixed(check.sc)) +
      (check.d === null ? "" : " (\u0394 " + signed(check.d) + " from the primary, margin " + fixed(check.mg) + ")") +
      (check.dis ? " \u2014 the judges disagree" : "") + "; it never gates.");
    box.insertBefore(line, box.firstChild);
    if (!check.j && check.m) { add(box, el("p", "", check.m)); }
    return box;
  }

  function judge(verdict, side, run, name) {
    var box = el("div", "judge");
    var heading = (name ? name + " \u00b7 judge score " : "Judge score ") + fixed(verdict.sc) + (verdict.model ? " \u00b7 " + verdict.model : "") +
      (verdict.conf !== null && verdict.conf !== undefined ? " \u00b7 confidence " + fixed(verdict.conf) : "") +
      (verdict.kappa !== null && verdict.kappa !== undefined ? " \u00b7 \u03ba " + fixed(verdict.kappa) : "");
    add(box, el("strong", "", heading));
    if (verdict.adv) { add(box, " ", el("span", "unsupported", "advisory, does not gate: " + (verdict.advr || "the judge is not calibrated"))); }
    if (verdict.allu) { add(box, " ", el("span", "unsupported", "no violation is supported by the trace")); }
    if (verdict.sum) { add(box, el("p", "", verdict.sum)); }
    if (verdict.v.length) {
      var list = el("ul", "violations");
      verdict.v.forEach(function (violation) {
        var item = el("li");
        var exists = typeof violation.step === "number" && violation.step >= 1 && violation.step <= run.steps.length;
        if (exists) {
          var anchor = link("step " + violation.step, { step: side + violation.step }, "violation");
          anchor.dataset.step = "s-" + side + "-" + violation.step;
          add(item, anchor);
        } else {
          add(item, el("span", "", "step " + (violation.step === null ? "?" : violation.step)));
        }
        add(item, " \u00b7 " + violation.sev + " \u00b7 " + violation.rule);
        if (violation.q) { add(item, " \u2014 \u201c" + violation.q + "\u201d"); }
        if (!violation.ok) { add(item, " ", el("span", "unsupported", "unsupported: " + (violation.why || "the step or quote is not in the trace"))); }
        add(list, item);
      });
      add(box, list);
    }
    if (verdict.drop) { add(box, el("p", "muted", verdict.drop + " more violation(s) dropped (ten are kept).")); }
    if (verdict.raise) { add(box, el("p", "", "What would raise the score: " + verdict.raise)); }
    return box;
  }

  function facts(step) {
    var parts = [];
    if (step.model) { parts.push(step.model); }
    if (step.u) {
      parts.push(step.u[0] + " in / " + step.u[1] + " out tokens");
      if (step.u[2] !== null && step.u[2] !== undefined) { parts.push("$" + Number(step.u[2]).toFixed(5)); }
    }
    if (step.ms) { parts.push(Math.round(step.ms) + " ms"); }
    return parts.join(" \u00b7 ");
  }

  function stepCell(step, side) {
    var cell = el("td", "step");
    if (!step) { cell.classList.add("empty"); return cell; }
    cell.id = "s-" + side + "-" + step.n;
    var head = add(el("div", "head"), el("span", "kind " + token(step.t), step.t.replace("_", " ")));
    if (step.tool) { add(head, el("span", "tool mono", step.tool)); }
    if (step.err) { add(head, el("span", "badge err", "error")); }
    if (step.cached) { add(head, el("span", "badge", "cached")); }
    if (step.via) { add(head, el("span", "badge via", step.via === "proxy" ? "seen by the model proxy" : "from exported spans")); }
    add(head, el("span", "facts", facts(step)));
    add(cell, head);
    if (step.c) { add(cell, el("pre", "content", step.c)); }
    if (step.args !== undefined) {
      add(cell, el("div", "label", "arguments"), el("pre", "args", JSON.stringify(step.args, null, 2)));
    }
    if (step.out !== undefined) {
      var source = add(el("div", "label"), "output");
      if (step.src) { add(source, " ", el("span", "badge src-" + token(step.src), step.src)); }
      add(cell, source, el("pre", "output", step.out));
    }
    return cell;
  }

  function conversationWords(run, side) {
    if (!run || !run.conv) { return ""; }
    var turns = run.conv.turns;
    return side + ": " + turns + (turns === 1 ? " turn" : " turns") + ", ended: " + run.conv.end;
  }

  // A conversation's timeline: turn by turn, base and head side by side, each turn's steps
  // in a band of their own, the first turn where they part marked.
  function turnTimeline(wrap, base, head) {
    var baseSteps = base ? base.steps : [];
    var headSteps = head ? head.steps : [];
    var said = [conversationWords(base, "base"), conversationWords(head, "head")].filter(Boolean);
    if (said.length) { add(wrap, el("p", "conversation-note", "Conversation \u2014 " + said.join(" \u00b7 "))); }
    var last = 0;
    baseSteps.concat(headSteps).forEach(function (step) { last = Math.max(last, step.tn || 0); });
    var diverge = (head && head.dt) || (base && base.dt) || 0;
    var table = el("table", "timeline turns");
    add(table, add(el("thead"), add(el("tr"), el("th", "num-col", "#"),
      el("th", "", base ? "Base \u00b7 rep " + base.r : "Base"), el("th", "", head ? "Head \u00b7 rep " + head.r : "Head"))));
    var body = el("tbody");
    for (var turn = 1; turn <= last; turn++) {
      var band = el("th", "", "Turn " + turn + (turn === diverge ? " \u25c6 first turn where base and head differ" : ""));
      band.colSpan = 3;
      var bandRow = add(el("tr", "turn-band" + (turn === diverge ? " diverge" : "")), band);
      if (turn === diverge) { bandRow.title = "first turn where base and head differ"; }
      add(body, bandRow);
      var b = baseSteps.filter(function (step) { return step.tn === turn; });
      var h = headSteps.filter(function (step) { return step.tn === turn; });
      for (var i = 0; i < Math.max(b.length, h.length); i++) {
        var number = b[i] && h[i] && b[i].n !== h[i].n ? b[i].n + " / " + h[i].n : (h[i] || b[i]).n;
        var mark = (h[i] && h[i].n === (head && head.dv)) || (b[i] && b[i].n === (base && base.dv));
        add(body, add(el("tr", mark ? "diverge" : ""), el("td", "num-col", mark ? number + " \u25c6" : String(number)),
          stepCell(b[i], "b"), stepCell(h[i], "h")));
      }
    }
    var loose = baseSteps.concat(headSteps).some(function (step) { return !step.tn; });
    if (loose) { add(wrap, el("p", "muted", "Steps outside any turn are not shown in this view.")); }
    return add(wrap, add(table, body));
  }

  function timeline(base, head) {
    var baseSteps = base ? base.steps : [];
    var headSteps = head ? head.steps : [];
    var count = Math.max(baseSteps.length, headSteps.length);
    var wrap = add(el("div"), el("h3", "", "Timeline"));
    if (!count) { return add(wrap, el("p", "muted", "No steps were recorded.")); }
    if ((base && base.conv) || (head && head.conv)) { return turnTimeline(wrap, base, head); }
    var table = el("table", "timeline");
    add(table, add(el("thead"), add(el("tr"), el("th", "num-col", "#"),
      el("th", "", base ? "Base \u00b7 rep " + base.r : "Base"), el("th", "", head ? "Head \u00b7 rep " + head.r : "Head"))));
    var body = el("tbody");
    var diverge = (head && head.dv) || (base && base.dv) || 0;
    var wanted = stepWanted();
    var limit = expanded || wanted > STEP_PAGE ? count : Math.min(count, STEP_PAGE);
    for (var n = 1; n <= limit; n++) {
      var line = add(el("tr", n === diverge ? "diverge" : ""), el("td", "num-col", n === diverge ? n + " \u25c6" : n),
        stepCell(baseSteps[n - 1], "b"), stepCell(headSteps[n - 1], "h"));
      if (n === diverge) { line.title = "first divergence between base and head"; }
      add(body, line);
    }
    add(wrap, add(table, body));
    if (limit < count) {
      var more = el("button", "more", "Show the other " + (count - limit) + " steps");
      more.type = "button";
      more.addEventListener("click", function () {
        expanded = true;
        draw(byKey.get(state.open));
        highlighted = "";
        highlightStep();
      });
      add(wrap, more);
    }
    return wrap;
  }

  function stepWanted() {
    var match = /^[hb](\d+)$/.exec(state.step);
    return match ? parseInt(match[1], 10) : 0;
  }

  function highlightStep() {
    if (state.step === highlighted) { return; }
    highlighted = state.step;
    Array.prototype.forEach.call(detail.querySelectorAll(".step.highlight"), function (node) {
      node.classList.remove("highlight");
    });
    var match = /^([hb])(\d+)$/.exec(state.step);
    if (!match) { return; }
    var target = byId("s-" + match[1] + "-" + match[2]);
    if (!target) { return; }
    target.classList.add("highlight");
    target.scrollIntoView({ block: "center" });
  }

  // --- the keyboard: j / k through the whole list, Escape closes ----------------------------

  function scrollToRow(at) {
    var top = at * ROW_HEIGHT;
    var height = listBox.clientHeight || 400;
    if (top < listBox.scrollTop) { listBox.scrollTop = top; }
    else if (top + ROW_HEIGHT > listBox.scrollTop + height) { listBox.scrollTop = top + ROW_HEIGHT - height; }
    renderList();
  }

  function focusRow(key) {
    var at = shown.indexOf(byKey.get(key));
    if (at < 0) { return; }
    scrollToRow(at);
    var anchor = rowsBox.querySelector('a.row[data-top="' + at + '"]');
    if (anchor) { anchor.focus({ preventScroll: true }); }
  }

  function move(step) {
    if (!shown.length) { return; }
    var at = state.open ? shown.indexOf(byKey.get(state.open)) : -1;
    var next = at < 0 ? (step > 0 ? 0 : shown.length - 1) : Math.min(shown.length - 1, Math.max(0, at + step));
    scrollToRow(next);
    go({ open: keyOf(shown[next]), rep: "", step: "" });
  }

  // A step in the browser's history (Back returns), applied at once: a key held down moves
  // one row per press, never from a state a hashchange has not reached yet.
  function go(changes) {
    var next = Object.assign({}, state, changes);
    history.pushState(null, "", hashOf(next));
    apply(next);
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) { return; }
    var target = event.target;
    var typing = target && /^(INPUT|SELECT|TEXTAREA)$/.test(target.tagName);
    if (event.key === "Escape" && state.open && !typing) {
      event.preventDefault();
      go({ open: "", rep: "", step: "" });
    } else if (!typing && (event.key === "j" || event.key === "k")) {
      event.preventDefault();
      move(event.key === "j" ? 1 : -1);
    }
  });

  // --- export of the fixtures shown -------------------------------------------------------

  function exported(row) {
    var side = function (value) { return value || {}; };
    return {
      eval: EVALS[row.e].name,
      fixture: row.f,
      change: label(row),
      severity: row.sv,
      base_result: side(row.b).s || "",
      base_score: row.b ? row.b.sc : null,
      head_result: side(row.h).s || "",
      head_score: row.h ? row.h.sc : null,
      delta: row.d === undefined ? null : row.d,
      head_reps_passed: row.h ? row.h.k : null,
      head_reps: row.h ? row.h.n : null,
      message: row.p ? "" : side(row.h).m || side(row.b).m || "",
    };
  }

  // A cell a spreadsheet would read as a formula (=, +, -, @, tab, CR first) is quoted with '.
  function csvCell(value) {
    if (value === null || value === undefined) { return ""; }
    var text = String(value);
    if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) { text = "'" + text; }
    return /[",\r\n]/.test(text) ? '"' + text.replace(/"/g, '""') + '"' : text;
  }

  function download(name, type, text) {
    var url = URL.createObjectURL(new Blob([text], { type: type }));
    var anchor = el("a");
    anchor.href = url;
    anchor.download = name;
    document.body.appendChild(anchor);
    anchor.click();
    anchor.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }

  function exportShown(kind) {
    var records = shown.map(exported);
    if (kind === "json") {
      download("evalward-fixtures.json", "application/json", JSON.stringify(records, null, 2) + "\n");
      return;
    }
    var columns = ["eval", "fixture", "change", "severity", "base_result", "base_score", "head_result",
      "head_score", "delta", "head_reps_passed", "head_reps", "message"];
    var lines = [columns.join(",")].concat(records.map(function (record) {
      return columns.map(function (name) { return csvCell(record[name]); }).join(",");
    }));
    download("evalward-fixtures.csv", "text/csv", lines.join("\r\n") + "\r\n");
  }

  // --- wiring ----------------------------------------------------------------------------

  byId("export-csv").addEventListener("click", function () { exportShown("csv"); });
  byId("export-json").addEventListener("click", function () { exportShown("json"); });

  filterButtons.forEach(function (button) {
    button.addEventListener("click", function () { update({ filter: button.dataset.filter }); });
  });
  evalSelect.addEventListener("change", function () { update({ eval: evalSelect.value }); });
  agentSelect.addEventListener("change", function () { update({ agent: agentSelect.value }); });
  sortSelect.addEventListener("change", function () { update({ sort: sortSelect.value }); });
  search.addEventListener("input", function () {
    clearTimeout(typing);
    typing = setTimeout(function () { typing = 0; update({ q: search.value }); }, 120);
  });
  window.addEventListener("hashchange", function () { apply(readHash()); });
  window.addEventListener("popstate", function () { apply(readHash()); });
  Array.prototype.forEach.call(document.querySelectorAll("a.eval-link"), function (anchor) {
    anchor.addEventListener("click", function () { setTimeout(function () { app.scrollIntoView({ block: "start" }); }, 0); });
  });

  byId("static").hidden = true;
  app.hidden = false;
  apply(readHash());
}());
