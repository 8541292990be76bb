"""docs/rmm-compatibility.md is true: every name it lists as *same* or *differs*
imports under its RMM path (rmmgo.install_as_rmm() active), and a *same* row's
arguments are rmmgo's parameters (names, order, which have defaults, which
are keyword-only)."""

import json
import os
import re

import pytest

from conftest import REPO

DOC = os.path.join(REPO, "docs", "rmm-compatibility.md")
ROW = re.compile(r"^\|\s*`(rmm[^`]*)`\s*\|\s*(same|differs|absent)\s*\|")
# Modules that need an optional framework; their rows are checked only where it is installed.
FRAMEWORKS = {"rmm.allocators.numba": "numba"}


def doc_rows():
    if not os.path.exists(DOC):
        pytest.skip("needs docs/rmm-compatibility.md (set RMMGO_SOURCE_DIR)")
    rows = []
    with open(DOC) as f:
        for line in f:
            if line.startswith("# ") and "C++" in line:
                break  # the C++ API's tables: header paths, not Python names
            m = ROW.match(line)
            if m:
                rows.append((m.group(1), m.group(2)))
    return rows


def split_entry(entry):
    """("rmm.x.y", [params] or None) of a row's first column."""
    if "(" not in entry:
        return entry, None
    name, _, args = entry.partition("(")
    args = args.rsplit(")", 1)[0]
    params, depth, quote, cur = [], 0, None, ""
    for ch in args:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "," and depth == 0:
            params.append(cur.strip())
            cur = ""
            continue
        else:
            depth += ch in "([{"
            depth -= ch in ")]}"
        cur += ch
    if cur.strip():
        params.append(cur.strip())
    return name, params


CHECK = r"""
import importlib, inspect, json, sys
import rmmgo
rmmgo.install_as_rmm()
rows = json.loads(sys.stdin.read())
failures, skipped = [], []

def resolve(name):
    # (parent, attribute name, object) of a dotted rmm path: attributes where
    # they exist, else submodules imported (as `import rmm.x.y` would).
    parts = name.split(".")
    obj = importlib.import_module(parts[0])
    parent = None
    for i, attr in enumerate(parts[1:], 1):
        parent = obj
        if hasattr(obj, attr):
            obj = getattr(obj, attr)
        elif inspect.ismodule(obj):
            obj = importlib.import_module(".".join(parts[: i + 1]))
        else:
            raise AttributeError("%s has no attribute %r" % (".".join(parts[:i]), attr))
    return parent, parts[-1], obj

def kinds_of(parent, attr, obj):
    if inspect.isclass(parent):
        static = inspect.getattr_static(parent, attr)
        bound = inspect.isfunction(static)  # a plain method: drop self
    else:
        bound = False
    sig = inspect.signature(obj)
    ps = list(sig.parameters.values())
    if bound:
        ps = ps[1:]
    out = []
    for p in ps:
        if p.kind is p.VAR_POSITIONAL:
            out.append("*" + p.name)
        elif p.kind is p.VAR_KEYWORD:
            out.append("**" + p.name)
        else:
            out.append((p.name, p.default is not p.empty, p.kind is p.KEYWORD_ONLY))
    return out

def expected(params):
    out, kwonly = [], False
    for p in params:
        if p == "*":
            kwonly = True
        elif p.startswith("*"):
            out.append(p)
        else:
            out.append((p.split("=")[0].strip(), "=" in p, kwonly))
    return out

for name, status, params, framework in rows:
    if framework:
        try:
            importlib.import_module(framework)
        except ImportError:
            skipped.append(name)
            continue
    try:
        parent, attr, obj = resolve(name)
    except Exception as exc:
        failures.append("%s (%s): does not import: %s: %s" % (name, status, type(exc).__name__, exc))
        continue
    if status == "same" and params is not None:
        try:
            got = kinds_of(parent, attr, obj)
        except (TypeError, ValueError) as exc:
            failures.append("%s: no signature: %s" % (name, exc))
            continue
        want = expected(params)
        got = [list(g) if isinstance(g, tuple) else g for g in got]
        want = [list(w) if isinstance(w, tuple) else w for w in want]
        if got != want:
            failures.append("%s: rmmgo's parameters are %s, the doc says %s" % (name, got, want))
print(json.dumps({"failures": failures, "skipped": skipped, "checked": len(rows) - len(skipped)}))
"""


def test_the_doc_lists_rmms_api():
    rows = doc_rows()
    statuses = [s for _, s in rows]
    assert len(rows) > 150, "the doc's tables were not found"
    assert statuses.count("same") > 100 and "differs" in statuses and "absent" in statuses


def test_every_listed_name_imports_under_its_rmm_path():
    rows = []
    for entry, status in doc_rows():
        if status == "absent":
            continue
        name, params = split_entry(entry)
        framework = next((fw for mod, fw in FRAMEWORKS.items() if name.startswith(mod)), None)
        rows.append((name, status, params, framework))
    r = subprocess_check(rows)
    assert not r["failures"], "\n".join(r["failures"])
    assert r["checked"] > 150


def subprocess_check(rows):
    import subprocess
    import sys

    from conftest import PYTHON_DIR

    env = dict(os.environ)
    if PYTHON_DIR:
        env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    p = subprocess.run(
        [sys.executable, "-c", CHECK], input=json.dumps(rows), capture_output=True, text=True, env=env, timeout=300
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_split_entry():
    assert split_entry("rmm.x.f(a, b=1, *, c=DEFAULT_STREAM)") == ("rmm.x.f", ["a", "b=1", "*", "c=DEFAULT_STREAM"])
    assert split_entry("rmm.x.g()") == ("rmm.x.g", [])
    assert split_entry("rmm.x.h") == ("rmm.x.h", None)
    assert split_entry('rmm.x.k(o="a,b", p=(1, 2))') == ("rmm.x.k", ['o="a,b"', "p=(1, 2)"])
