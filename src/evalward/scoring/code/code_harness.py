"""The programs that call a code scorer: one per language, given on the command line.

Each reads one JSON request on stdin (the scorer's text, its function, its arguments), runs
the scorer and writes one JSON line on the stdout it started with: `{"ok": true, "value":
...}` with what the function returned, or `{"ok": false, "error": ...}`. Whatever the scorer
prints itself goes to stderr. They are fixed text, passed to `python3 -I -c` and `node -e`:
nothing of the working directory is imported (`-I`; node's scorer starts from a folder of its
own), so no file a pull request adds can stand in for them.

A scorer with an environment runs under its interpreter (`python3` is the environment's, first
on PATH; `-I` keeps the checkout and PYTHONPATH out, not the environment's site-packages) or
with NODE_PATH naming its `node_modules`, the one place besides Node's own that `CONFINE`
lets a package resolve from.

The Python harness sets the process's limits before the scorer runs; a JavaScript scorer is
started by `LIMITS`, which sets them and then runs node. A `script` scorer (a program, in
either language) is run by the Python harness as its child, under the limits it set: the
request's `stdin` is its input, and its stdout, stderr and exit code are the answer.
"""

from __future__ import annotations

LIMITS = r"""
import os, resource, sys
memory, cpu, fsize = (int(x) for x in sys.argv[1:4])
resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
os.execvp(sys.argv[4], sys.argv[4:])
"""
"""Set the limits (bytes of data, CPU seconds, bytes a file may grow to), then run argv[4:]."""

PYTHON = r"""
import ast, json, math, os, resource, sys, traceback
request = json.loads(sys.stdin.buffer.read())
memory, cpu, fsize = request["limits"]
resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
answer = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)

def reply(message):
    answer.write(json.dumps(message, allow_nan=False) + "\n")
    answer.flush()

def compiled(source, mode, shift):
    # the code, its lines numbered as in the file it was written in (`shift` lines down)
    name = request["filename"]
    try:
        tree = ast.parse(source, name, mode)
    except SyntaxError as exc:
        if exc.lineno is not None:
            exc.lineno += shift
            exc.end_lineno = exc.end_lineno and exc.end_lineno + shift
        raise
    return compile(ast.increment_lineno(tree, shift), name, mode)

def scorer():
    source, name = request["source"], request["filename"]
    shift = request["line"] - 1 if request.get("line") else 0
    if request["inline"]:
        lead = source[: len(source) - len(source.lstrip())].count("\n")
        try:
            expression = compiled(source.strip(), "eval", shift + lead)
        except SyntaxError:
            body = "".join("    " + line + "\n" for line in source.splitlines())
            source = "def __scorer__(output, context):\n" + body
            shift -= 1
        else:
            return lambda output, context: eval(expression, {"output": output, "context": context})
    namespace = {"__name__": "__scorer__", "__file__": name}
    exec(compiled(source, "exec", shift), namespace)
    function = namespace.get(request["function"] or "__scorer__")
    if not callable(function):
        raise LookupError(f"{name} defines no function {request['function']!r}")
    return function

def program():
    import subprocess, tempfile
    with tempfile.TemporaryDirectory(prefix="grader-") as folder:  # gone when it answers
        path = os.path.join(folder, os.path.basename(request["filename"]))
        with open(path, "w", encoding="utf-8") as script:
            script.write(request["source"])
        if request["language"] == "python":
            run = [sys.executable, "-I"]
        else:
            confine = os.path.join(folder, "confine.cjs")
            with open(confine, "w", encoding="utf-8") as preload:
                preload.write(request["confine"])
            run = ["node", "--require", confine]
        done = subprocess.run(
            [*run, path, *request["args"]],
            input=json.dumps(request["stdin"]).encode(),
            capture_output=True,
            cwd=folder,
        )
        out = done.stdout.decode("utf-8", "replace")
        return {
            "stdout": out[:262144],
            "truncated": len(out) > 262144,
            "stderr": done.stderr.decode("utf-8", "replace")[-4000:],
            "exit": done.returncode,
        }

try:
    if request.get("stdin") is not None:
        value = program()
    else:
        value = scorer()(request["output"], request["context"])
    if isinstance(value, float) and not math.isfinite(value):
        reply({"ok": False, "error": f"returned {value!r}, which is not a score"})
    else:
        reply({"ok": True, "value": value})
except MemoryError:
    reply({"ok": False, "error": "ran out of memory (its limit is memoryMb)"})
except BaseException as exc:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    line, frame = None, exc.__traceback__
    while frame is not None:  # the scorer's own last line (no file is read for it)
        if frame.tb_frame.f_code.co_filename == request["filename"]:
            line = frame.tb_lineno
        frame = frame.tb_next
    if line is not None and not isinstance(exc, SyntaxError):
        text += f" (at {request['filename']}:{line})"
    try:
        reply({"ok": False, "error": text})
    except Exception:
        reply({"ok": False, "error": "returned a value that is not JSON"})
"""

CONFINE = r"""
// Packages resolve from the machine's own folders and the scorer's environment (NODE_PATH, its
// node_modules, when it names one) only: not from a node_modules in a folder above the scorer
// (a world-writable /tmp holds one anybody may have put there).
const Module = require('module');
const modules = ((folder) => {
  try { return folder ? require('fs').realpathSync(folder) : ''; } catch { return ''; }
})(process.env.NODE_PATH);
const walk = Module._nodeModulePaths;
Module._nodeModulePaths = (from) =>
  modules ? walk(from).filter((p) => p === modules || p.startsWith(modules + '/')) : [];
Module.register('data:text/javascript,' + encodeURIComponent(`
import { isBuiltin } from "node:module";
import { pathToFileURL } from "node:url";
const modules = ${JSON.stringify(modules)};
const inside = modules ? pathToFileURL(modules).href + "/" : "";
const beside = modules ? pathToFileURL(modules + "/../package.json").href : "";
const own = ["node:", "file:", "data:", "./", "../", "/"];
export async function resolve(specifier, context, next) {
  if (isBuiltin(specifier) || own.some((p) => specifier.startsWith(p))) {
    return next(specifier, context);
  }
  if (!modules) {
    throw new Error("a scorer may import Node's own modules only, not " + specifier +
      " (name its packages in the assertion's environment)");
  }
  const from = (context.parentURL || "").startsWith(inside) ? context.parentURL : beside;
  const found = await next(specifier, { ...context, parentURL: from });
  if (!found.url.startsWith(inside)) {
    throw new Error(specifier + " is not a package of the scorer's environment");
  }
  return found;
}`));
"""
"""Preloaded into every JavaScript scorer (`--require`)."""

JAVASCRIPT = (
    CONFINE
    + r"""
const fs = require('fs'), os = require('os'), path = require('path'), url = require('url');
const answer = (message) => fs.writeSync(1, JSON.stringify(message) + '\n');
process.stdout.write = process.stderr.write.bind(process.stderr);
console.log = console.info = console.debug = console.error;
let request, file = '';
(async () => {
  request = JSON.parse(fs.readFileSync(0, 'utf8'));
  let scorer;
  if (request.inline) {
    const source = request.source.trim();
    const multiline = /\breturn\b/.test(source) || source.includes('\n');
    const body = multiline ? source : `return (${source});`;
    // its lines numbered as in the file it was written in, from the line its code starts on
    const lead = request.source.slice(0, request.source.indexOf(source)).split('\n').length - 1;
    const at = request.line ? request.line - 1 + lead : 0;
    scorer = require('vm').compileFunction(
      `return (async () => {${body}\n})();`, ['output', 'context'],
      { filename: request.filename, lineOffset: at });
  } else {
    const esm = /\.mjs$/.test(request.filename) || /^\s*export\s/m.test(request.source);
    const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'scorer-'));
    file = path.join(folder, 'scorer' + (esm ? '.mjs' : '.cjs'));
    let loaded;
    try {
      fs.writeFileSync(file, request.source);
      loaded = esm ? await import(url.pathToFileURL(file).href) : require(file);
    } finally {  // loaded (or not): its folder is not left behind
      fs.rmSync(folder, { recursive: true, force: true });
    }
    const name = request.function;
    scorer = name ? loaded[name] : (typeof loaded === 'function' ? loaded : loaded.default);
    if (scorer && typeof scorer === 'object' && typeof scorer.score === 'function') {
      const named = scorer;  // the eval-framework's Scorer: { name, score({ input, output, … }) }
      scorer = (output, context) =>
        named.score({ ...context, output, reference: context.expected });
    }
    if (typeof scorer !== 'function') {
      const wanted = name ? JSON.stringify(name) : '(module.exports or default)';
      throw new Error(`${request.filename} exports no function ${wanted}`);
    }
  }
  const value = await scorer(request.output, request.context);
  if (typeof value === 'number' && !Number.isFinite(value)) {
    answer({ ok: false, error: `returned ${value}, which is not a score` });
  } else {
    answer({ ok: true, value: value === undefined ? null : value });
  }
})().catch((error) => {
  const lines = error && error.stack ? error.stack.split('\n') : [];
  let stack = lines.slice(0, 3).join('\n');
  if (error instanceof SyntaxError && lines[0] && !lines[0].startsWith('SyntaxError')) {
    const where = file && request ? lines[0].replace(file, request.filename) : lines[0];
    stack = `${error.name}: ${error.message} (at ${where})`;  // V8 puts the place first
  }
  answer({ ok: false, error: stack || String(error) });
});
"""
)
