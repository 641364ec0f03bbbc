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

  function signed(value) {
    if (value === null || value === undefined) { return "—"; }
    return (value > 0 ? "+" : "") + Number(value).toFixed(2);
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
    if (keyOf(row) === state.open) { anchor.classList.add("open"); }
    var preview = row.p ? "held out: name and result only" :
      (row.h && (row.h.m || row.h.o)) || (row.b && (row.b.m || row.b.o)) || "";
    var delta = el("span", "num", row.d === undefined ? "—" : signed(row.d));
    if (row.d < -0.00005) { delta.classList.add("down"); } else if (row.d > 0.00005) { delta.classList.add("up"); }
    var reps = row.h ? row.h.k + "/" + row.h.n : "—";
    add(anchor,
      add(el("span"), el("span", "change " + label(row), label(row))),
      el("span", "name", EVALS[row.e].name + " / " + row.f),
      add(el("span"), sideChip(row.b)),
      add(el("span"), sideChip(row.h)),
      delta,
      el("span", "reps", reps),
      el("span", "preview", preview.slice(0, 300)));
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
      detail.hidden = true;
      detail.replaceChildren();
      drawn = "";
      highlighted = "";
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
    detail.replaceChildren(title);
    if (row.p) {
      add(detail, el("p", "muted", "Held out (visibility: private): only the name and result are shown."));
      add(detail, pairedSummary(row, null));
      return;
    }
    var bundle = loadBundle(row);
    if (!bundle) {
      if (document.readyState === "loading") {
        add(detail, el("p", "muted", "Loading the traces\u2026"));
        document.addEventListener("DOMContentLoaded", function () { drawn = ""; renderDetail(); }, { once: true });
      } else {
        add(detail, pairedSummary(row, null), el("p", "muted", "No runs were recorded for this fixture."));
      }
      return;
    }
    add(detail, pairedSummary(row, bundle));
    var rep = chosenRep(bundle);
    var head = findRep(bundle.h, rep);
    var base = findRep(bundle.b, rep);
    add(detail, repPicker(bundle, rep), axes(base, head), divergenceNote(head || base));
    var columns = add(el("div", "columns"), runColumn("Base", "b", base), runColumn("Head", "h", head));
    add(detail, columns, timeline(base, head));
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
    add(table, add(el("thead"), add(el("tr"), el("th", "", ""), el("th", "side", "Base"), el("th", "side", "Head"))));
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

  function divergenceNote(run) {
    if (!run || !run.dv) { return null; }
    var text = run.dk === "text"
      ? "Same steps on both sides; the text first differs at "
      : "The runs first diverge (step type, tool or arguments) at ";
    return add(el("p", "divergence-note"), text, link("step " + run.dv, { step: "h" + run.dv }, "divergence-link"), ".");
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
    run.a.forEach(function (assertion) {
      if (assertion.j) { add(column, judge(assertion.j, side, run)); }
      (assertion.xc || []).forEach(function (check) { add(column, crossCheck(check, side, run)); });
    });
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

  function crossCheck(check, side, run) {
    var box = check.j ? judge(check.j, side, run) : el("div", "judge");
    var line = el("p", check.dis ? "unsupported" : "muted",
      "Cross-check " + check.model + ": " + check.s + (check.sc === null ? "" : " " + fixed(check.sc)) +
      (check.d === null ? "" : " (\u0394 " + signed(check.d) + " from the primary, margin " + fixed(check.mg) + ")") +
      (check.dis ? " \u2014 the judges disagree" : "") + "; it never gates.");
    box.insertBefore(line, box.firstChild);
    if (!check.j && check.m) { add(box, el("p", "", check.m)); }
    return box;
  }

  function judge(verdict, side, run) {
    var box = el("div", "judge");
    var heading = "Judge score " + fixed(verdict.sc) + (verdict.model ? " \u00b7 " + verdict.model : "") +
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

  function timeline(base, head) {
    var baseSteps = base ? base.steps : [];
    var headSteps = head ? head.steps : [];
    var count = Math.max(baseSteps.length, headSteps.length);
    var wrap = add(el("div"), el("h3", "", "Timeline"));
    if (!count) { return add(wrap, el("p", "muted", "No steps were recorded.")); }
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

  // --- wiring ----------------------------------------------------------------------------

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
  Array.prototype.forEach.call(document.querySelectorAll("a.eval-link"), function (anchor) {
    anchor.addEventListener("click", function () { setTimeout(function () { app.scrollIntoView({ block: "start" }); }, 0); });
  });

  byId("static").hidden = true;
  app.hidden = false;
  apply(readHash());
}());
