"""Counts of a JUnit XML report from pytest, per test module and in all.

    python3 summary.py REPORT.xml [FAILURES.txt]

Prints one line per module (passed, failed, errors, skipped) and, last, the
totals as "N passed, M failed, K errors, S skipped"; writes each failure's
test id and first line of message to FAILURES.txt when given.
"""

import collections
import sys
import xml.etree.ElementTree as ET


def main(report, failures_out=None):
    root = ET.parse(report).getroot()
    counts = collections.defaultdict(collections.Counter)
    failures = []
    for case in root.iter("testcase"):
        # A module that failed to import is one case with no class name.
        where = case.get("classname") or (case.get("name") or "?").rsplit("/", 1)[-1].replace(".py", "")
        module = where.split(".")[-1] if not case.get("classname") else where.split(".")[0]
        kind = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                kind = {"failure": "failed", "error": "errors", "skipped": "skipped"}[child.tag]
                if kind in ("failed", "errors"):
                    msg = (child.get("message") or child.text or "").strip().splitlines()
                    failures.append("%s::%s [%s] %s" % (case.get("classname"), case.get("name"), kind, msg[0][:300] if msg else ""))
                break
        counts[module][kind] += 1
    total = collections.Counter()
    print("%-48s %7s %7s %7s %7s" % ("module", "passed", "failed", "errors", "skipped"))
    for module in sorted(counts):
        c = counts[module]
        total.update(c)
        print("%-48s %7d %7d %7d %7d" % (module, c["passed"], c["failed"], c["errors"], c["skipped"]))
    if failures_out:
        with open(failures_out, "w") as f:
            f.write("\n".join(failures) + ("\n" if failures else ""))
    print("rmm-suite: %d passed, %d failed, %d errors, %d skipped" % (total["passed"], total["failed"], total["errors"], total["skipped"]))


if __name__ == "__main__":
    main(*sys.argv[1:3])
