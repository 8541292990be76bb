#!/usr/bin/env python3
"""Runs the README's commands and snippets as a new user would, so that the README cannot drift.

    python3 tests/readme/readme_test.py [README.md]     (make test-readme, part of make test)

Every fenced block of README.md must match exactly one rule below, and every
rule must match a block: a block added to the README without a rule fails,
and so does a rule whose block was removed or rewritten. The rules run the
blocks verbatim, in the README's order:

  sh      run with bash -euo pipefail (in the checkout, or in the user's
          project folder, ~/app), with HOME a fresh folder (so that ~/ and
          $HOME/.local are scratch; Go's caches stay where they were) and
          "/tmp/" read as a scratch folder of this run (no file of another
          run is touched)
  c       written to ~/app/app.c; cmake: ~/app/CMakeLists.txt
  python  run by the python of the venv the README made, activated as the
          README activates it
  go      the README's whole program, in a module of its own that requires
          github.com/rmmgo/rmmgo (replaced by this checkout), run as the README
          says: RMMGO_BACKEND=simulated go run .

pip gets PIP_NO_INDEX=1 (the wheel has no dependencies to fetch). The
programs run on the backend `make test` chose, except where the README names
the simulated device itself. Also checked: what the README says of
scripts/rmm-suite/run.sh without RMM's test dependencies ("it says which are
missing").
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)


def blocks(text):
    """(line, language, body) for each fenced block."""
    for m in FENCE.finditer(text):
        yield text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2)


class Run:
    def __init__(self, scratch):
        self.scratch = scratch
        self.home = os.path.join(scratch, "home")
        self.app = os.path.join(self.home, "app")
        os.makedirs(self.app)
        go = shutil.which("go") or "/usr/local/go/bin/go"
        env = dict(os.environ)
        # Go's caches and module cache stay where they are (a new HOME would
        # rebuild the world); everything else of HOME's is the scratch one.
        if os.path.exists(go):
            out = subprocess.run([go, "env", "GOCACHE", "GOMODCACHE", "GOPATH"], capture_output=True, text=True, cwd=REPO)
            for k, v in zip(("GOCACHE", "GOMODCACHE", "GOPATH"), out.stdout.split("\n")):
                if v:
                    env.setdefault(k, v)
            env["PATH"] = env.get("PATH", "") + os.pathsep + os.path.dirname(go)
        env.update(HOME=self.home, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        if not env.get("RMMGO_BACKEND"):  # as the Makefile chooses, when run alone
            gpu = shutil.which("nvidia-smi") and subprocess.run(["nvidia-smi", "-L"], capture_output=True).returncode == 0
            env["RMMGO_BACKEND"] = "cuda" if gpu else "simulated"
        for k in ("PYTHONPATH", "RMMGO_LIBRARY", "RMMGO_TORCH_LIBRARY", "VIRTUAL_ENV", "PKG_CONFIG_PATH"):
            env.pop(k, None)
        self.env = env
        self.go = go
        self.venv_activate = None  # the README's activation line, once its venv block ran
        self.venv_python = None

    def sh(self, body, cwd, expect=None, env=None, drop=()):
        script = body.replace("/tmp/", self.scratch + "/")
        env = {k: v for k, v in dict(self.env, **(env or {})).items() if k not in drop}
        p = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True, text=True)
        out = p.stdout + p.stderr
        if p.returncode != 0:
            raise AssertionError("exit status %d; output:\n%s" % (p.returncode, out[-4000:]))
        if expect and not re.search(expect, out):
            raise AssertionError("output lacks %r:\n%s" % (expect, out[-4000:]))
        return out


def rules(run):
    """(name, language, pattern the block matches, action(body) -> note)."""

    def in_repo(expect):
        def act(body):
            run.sh(body, REPO, expect)
            return "ran in the checkout"

        return act

    def in_app(expect):
        def act(body):
            run.sh(body, run.app, expect)
            return "ran in ~/app"

        return act

    def write(name):
        def act(body):
            with open(os.path.join(run.app, name), "w") as f:
                f.write(body)
            return "written to ~/app/%s" % name

        return act

    def venv(body):
        run.sh(body, REPO, r"Successfully installed rmmgo")
        (line,) = [ln for ln in body.splitlines() if re.match(r"\s*(\.|source)\s+\S*activate", ln)]
        run.venv_activate = line.split("#")[0].strip()
        script = run.venv_activate.split()[-1].replace("~", run.home, 1).replace("$HOME", run.home)
        run.venv_python = os.path.join(os.path.dirname(script), "python")
        return "ran in the checkout: the wheel is installed in the venv"

    def python(body):
        if not run.venv_activate:
            raise AssertionError("no venv: the README's venv block must come first")
        path = os.path.join(run.app, "snippet.py")
        with open(path, "w") as f:
            f.write(body + "\nassert buf.size == 5 and buf.tobytes() == b'hello', buf\nprint('snippet ran on', rmm.backend())\n")
        # From ~/app, outside the checkout: the installed rmmgo, not python/rmmgo.
        run.sh('%s\npython -c "import rmmgo, sys; assert \'site-packages\' in rmmgo.__file__, rmmgo.__file__"\n'
               "python snippet.py" % run.venv_activate, run.app, r"snippet ran on")
        return "ran with the venv's python"

    def go(body):
        mod = os.path.join(run.scratch, "goapp")
        os.makedirs(mod)
        with open(os.path.join(mod, "main.go"), "w") as f:
            f.write(body)
        with open(os.path.join(mod, "go.mod"), "w") as f:
            f.write("module example.com/app\n\ngo 1.23.0\n\nrequire github.com/rmmgo/rmmgo v0.0.0\n\n"
                    "replace github.com/rmmgo/rmmgo => %s\n" % REPO)
        shutil.copy(os.path.join(REPO, "go.sum"), mod)
        env = {"RMMGO_BACKEND": "simulated", "GOFLAGS": "-mod=mod", "GOPROXY": "off", "CGO_ENABLED": "1"}
        drop = ("RMMGO_SIM_DEVICES", "RMMGO_SIM_MEMORY", "RMMGO_SIM_PAGEABLE")
        run.sh("go run .", mod, r"1 MiB at 0x[0-9a-f]+ from a pool", env, drop)
        return "go run . in a module of its own, RMMGO_BACKEND=simulated and nothing else"

    def skip(why):
        return lambda body: "not run: " + why

    return [
        ("make example", "sh", r"\Amake example\n\Z", in_repo(r"1 passed, 0 failed")),
        ("make test", "sh", r"\Amake test\n\Z", skip("it is the run this test is part of")),
        ("make install", "sh", r"\Amake install PREFIX=\$HOME/\.local\n\Z", in_repo(r"rmmgo installed in")),
        ("app.c", "c", r"#include <rmmgo.h>", write("app.c")),
        ("pkg-config build", "sh", r"pkg-config --cflags --libs rmmgo", in_app(r"1 MiB at 0x[0-9a-f]+ from a pool")),
        ("CMakeLists.txt", "cmake", r"find_package\(rmmgo REQUIRED\)", write("CMakeLists.txt")),
        ("CMake build", "sh", r"\Acmake -S \. -B build", in_app(r"1 MiB at 0x[0-9a-f]+ from a pool")),
        ("wheel into a venv", "sh", r"\Amake wheel\b.*python3 -m venv .*pip install dist/rmmgo-\*\.whl", venv),
        ("Python snippet", "python", r"import rmmgo", python),
        ("Go program", "go", r"\Apackage main\n", go),
        ("replay", "sh", r"go run \./cmd/rmmgo-replay ", in_repo(r"failures: 0 allocations failed")),
    ]


def rmm_suite_names_what_is_missing(run):
    """scripts/rmm-suite/run.sh on a Python without RMM's test dependencies stops and names them."""
    tests = os.path.join(run.scratch, "rmm-tests")
    os.makedirs(tests)
    open(os.path.join(tests, "conftest.py"), "w").close()
    py = run.venv_python
    if not py or not os.path.exists(py):
        raise AssertionError("no venv python to run rmm-suite with")
    probe = subprocess.run([py, "-c", "import numba, cuda.bindings"], capture_output=True)
    if probe.returncode == 0:
        return "skipped: this Python has RMM's test dependencies"
    p = subprocess.run(
        ["bash", os.path.join(REPO, "scripts/rmm-suite/run.sh"), tests],
        env=dict(run.env, PYTHON=py, RMM_SUITE_OUT=os.path.join(run.scratch, "rmm-suite")),
        capture_output=True, text=True,
    )
    out = p.stdout + p.stderr
    if p.returncode != 2 or not re.search(r"RMM's tests need .*numba.*, which .* lacks", out):
        raise AssertionError("rmm-suite without numba: exit %d, output:\n%s" % (p.returncode, out[-2000:]))
    return "stops at once and names what is missing"


def main():
    readme = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "README.md")
    text = open(readme).read()
    scratch = tempfile.mkdtemp(prefix="rmmgo-readme-")
    failures = 0
    try:
        run = Run(scratch)
        table = rules(run)
        used = set()
        found = list(blocks(text))
        plan = []
        for line, lang, body in found:
            hits = [r for r in table if r[1] == lang and re.search(r[2], body, re.S)]
            if len(hits) != 1:
                print("README.md:%d (%s): %s" % (line, lang or "no language",
                      "matches no rule of tests/readme/readme_test.py: give it one" if not hits
                      else "matches several rules: %s" % [h[0] for h in hits]))
                failures += 1
                continue
            used.add(hits[0][0])
            plan.append((line, lang, body, hits[0]))
        for name, lang, _, _ in table:
            if name not in used:
                print("tests/readme: no %s block in the README for the rule %r (was it removed or rewritten?)" % (lang, name))
                failures += 1
        for line, lang, body, (name, _, _, act) in plan:
            t0 = time.monotonic()
            try:
                note = act(body)
                print("README.md:%d (%s, %s): %s [%.1fs]" % (line, lang, name, note, time.monotonic() - t0))
            except AssertionError as exc:
                print("README.md:%d (%s, %s): FAILED: %s" % (line, lang, name, exc))
                failures += 1
        try:
            print("scripts/rmm-suite/run.sh without RMM's dependencies: %s" % rmm_suite_names_what_is_missing(run))
        except AssertionError as exc:
            print("scripts/rmm-suite/run.sh: FAILED: %s" % exc)
            failures += 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        print("test-readme: %d failure(s)" % failures)
        return 1
    print("test-readme: every block of the README ran or was accounted for (%d blocks, backend %s)"
          % (len(found), run.env["RMMGO_BACKEND"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
