"""Tempest's results for corral (scripts/tempest-run.sh): summary and gate.

Reads the tests the include list selected (`tempest run --list-tests`) and
the subunit stream of the run (`stestr last --subunit`), and gives every
selected test one result: a class whose setUpClass failed or skipped gives
that result, with its reason, to each of its tests (unittest reports the
class once). Prints passed / failed / skipped, each skip's reason and the
counts per test module, and writes results.json (id -> status, reason or
traceback) and failures.txt.

The gate, with --known FILE (one test id per line, without Tempest's
[id-...] attributes, then a short reason; # starts a comment): a failure
not in FILE fails the gate, and so does a test in FILE that did not fail
(it passed or was skipped: take it out of FILE, the list only shrinks).
Entries of FILE the selection does not hold fail it too unless
--partial-selection. Exit status: 0 the gate holds, 1 it does not.
"""

import argparse
import collections
import json
import os
import re
import sys

import subunit
import testtools

ATTRS = re.compile(r"\[[^\]]*\]$")
HOLDER = re.compile(r"^(setUpClass|tearDownClass|setUpModule|tearDownModule) \((.+)\)$")


def bare(test_id):
    return ATTRS.sub("", test_id)


def detail_text(details, *names):
    out = []
    for name in names:
        c = details.get(name)
        if c is None:
            continue
        try:
            out.append(c.as_text())
        except Exception:  # a binary attachment
            out.append(b"".join(c.iter_bytes()).decode(errors="replace"))
    return "\n".join(t for t in out if t).strip()


def read_stream(path):
    """id -> (status, text) for every test the stream reports."""
    got = {}

    def on_test(test):
        status = test["status"]
        if status in ("exists", "inprogress"):
            return
        if status == "skip":
            text = detail_text(test["details"], "reason")
        else:
            text = detail_text(test["details"], "traceback", "reason")
        prev = got.get(test["id"])
        # A test reported twice (a retried holder): keep the worse result.
        if prev is None or prev[0] == "success":
            got[test["id"]] = (status, text)

    with open(path, "rb") as f:
        case = subunit.ByteStreamToStreamResult(f, non_subunit_name="stdout")
        result = testtools.StreamToDict(on_test)
        result.startTestRun()
        try:
            case.run(result)
        finally:
            result.stopTestRun()
    return got


def read_known(path):
    known = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 1)
            tid = bare(parts[0])
            if tid in known:
                raise SystemExit("%s:%d: %s is listed twice" % (path, n, tid))
            known[tid] = parts[1].strip() if len(parts) > 1 else ""
    return known


def classify(selected, got):
    """Every selected test (bare id) -> (status, text); holders that failed stay as their own entries."""
    results = {}
    by_bare = {}
    for tid, r in got.items():
        by_bare[bare(tid)] = r
    holders = {}
    for tid, (status, text) in got.items():
        m = HOLDER.match(tid)
        if m:
            holders.setdefault(m.group(2), []).append((m.group(1), status, text))
    for tid in selected:
        b = bare(tid)
        r = by_bare.get(b)
        cls = b.rsplit(".", 1)[0]
        mod = cls.rsplit(".", 1)[0]
        if r is None:
            for scope in (cls, mod):
                for kind, status, text in holders.get(scope, []):
                    if kind.startswith("setUp") and status != "success":
                        r = (status, "%s: %s" % (kind, text))
                        break
                if r:
                    break
        results[b] = r if r is not None else ("missing", "no result: the test did not run (worker crash or timeout?)")
    # Teardown failures of a class whose tests passed: failures of their own.
    for scope, items in holders.items():
        for kind, status, text in items:
            if kind.startswith("tearDown") and status not in ("success", "skip"):
                results["%s (%s)" % (kind, scope)] = (status, text)
    return results


def module_of(test_id):
    """tempest.api.compute.admin.test_flavors.X.test_y -> admin.test_flavors"""
    parts = re.sub(r"^tempest\.api\.compute\.", "", test_id).split(".")
    for i, part in enumerate(parts):
        if part.startswith("test_"):
            return ".".join(parts[:i + 1])
    return ".".join(parts[:-1])


def norm(status):
    return {"success": "passed", "xfail": "passed", "skip": "skipped"}.get(status, "failed")


EXC_LINE = re.compile(r"^(?:setUpClass: )?[A-Za-z_][\w.]*(?:Error|Exception|Failure|BadRequest|NotFound|Conflict|"
                      r"Forbidden|Unauthorized|ServerFault|TimeoutException|InvalidHTTPResponseBody|"
                      r"UnexpectedResponseCode|MismatchError|[A-Z]\w+)\b.*?:")


def excerpt(text, limit=300):
    """The cause of a failure in one line: the schema violation, or the last exception and its details."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("jsonschema.exceptions.ValidationError:"):
            msg = line.split(":", 1)[1].strip()
            where = next((l.strip() for l in lines[i + 1:i + 4] if l.startswith("Failed validating")), "")
            out = "response schema: %s (%s)" % (msg, where.rstrip(":")) if where else "response schema: " + msg
            return out if len(out) <= limit else out[:limit - 3] + "..."
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if line and not line[0].isspace() and EXC_LINE.match(line) and not line.startswith("Traceback"):
            out = line.strip()
            for extra in lines[i + 1:i + 3]:
                if extra.startswith("Details:"):
                    out += " " + extra.strip()
            return out if len(out) <= limit else out[:limit - 3] + "..."
    return first_line(text, limit)


def first_line(text, limit=160):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line:
            return line if len(line) <= limit else line[:limit - 3] + "..."
    return ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--list", required=True, help="the selected tests, one id a line")
    ap.add_argument("--subunit", required=True)
    ap.add_argument("--known", help="known failures")
    ap.add_argument("--out", required=True, help="directory for results.json and failures.txt")
    ap.add_argument("--prune", action="store_true",
                    help="take the known failures that did not fail out of --known (never adds one)")
    ap.add_argument("--partial-selection", action="store_true",
                    help="the selection is not the default one: known failures it lacks are not stale")
    a = ap.parse_args()

    with open(a.list, encoding="utf-8") as f:
        selected = [l.strip() for l in f if l.strip().startswith("tempest.")]
    got = read_stream(a.subunit) if os.path.getsize(a.subunit) else {}
    results = classify(selected, got)
    known = read_known(a.known) if a.known else {}

    counts = collections.Counter(norm(s) for s, _ in results.values())
    failed = sorted(t for t, (s, _) in results.items() if norm(s) == "failed")
    new = [t for t in failed if t not in known]
    stale = sorted(t for t in known if t in results and norm(results[t][0]) != "failed")
    absent = sorted(t for t in known if t not in results)
    pruned = []
    if a.prune and a.known:
        drop = set(stale) | (set() if a.partial_selection else set(absent))
        with open(a.known, encoding="utf-8") as f:
            lines = f.readlines()
        keep = [l for l in lines if l.strip().startswith("#") or not l.strip() or bare(l.split()[0]) not in drop]
        pruned = sorted(drop)
        with open(a.known + ".tmp", "w", encoding="utf-8") as f:
            f.writelines(keep)
        os.replace(a.known + ".tmp", a.known)

    with open(os.path.join(a.out, "results.json"), "w", encoding="utf-8") as f:
        json.dump({t: {"status": norm(s), "subunit_status": s, "cause": excerpt(x) if norm(s) == "failed" else "",
                       "text": x} for t, (s, x) in sorted(results.items())},
                  f, indent=1, sort_keys=True)
    with open(os.path.join(a.out, "failures.txt"), "w", encoding="utf-8") as f:
        for t in failed:
            f.write("=" * 78 + "\n%s%s\n%s\n\n" % (t, "" if t in known else "  (NEW)", results[t][1]))

    total = len(results)
    p = print
    p("")
    p("Tempest: %d tests: %d passed, %d failed (%d known, %d new), %d skipped"
      % (total, counts["passed"], counts["failed"], counts["failed"] - len(new), len(new), counts["skipped"]))
    p("")
    mods = collections.defaultdict(collections.Counter)
    for t, (s, _) in results.items():
        m = HOLDER.match(t)
        name = m.group(2) if m else t
        mods[module_of(name)][norm(s)] += 1
    w = max(len(m) for m in mods) if mods else 10
    p("%-*s %6s %6s %7s" % (w, "module (tempest.api.compute.)", "passed", "failed", "skipped"))
    for m in sorted(mods):
        c = mods[m]
        p("%-*s %6d %6d %7d" % (w, m, c["passed"], c["failed"], c["skipped"]))
    p("")
    skips = collections.defaultdict(list)
    for t, (s, x) in sorted(results.items()):
        if norm(s) == "skipped":
            skips[first_line(x, 300) or "(no reason given)"].append(t)
    if skips:
        p("Skipped, by reason:")
        for reason, tests in sorted(skips.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            p("  %3d  %s" % (len(tests), reason))
            for t in tests:
                p("         %s" % t)
        p("")
    if new:
        p("NEW failures (not in %s):" % (a.known or "a known-failures file"))
        for t in new:
            p("  %s\n      %s" % (t, excerpt(results[t][1])))
        p("")
    if pruned:
        p("Taken out of %s (they did not fail, or are not selected): %d" % (a.known, len(pruned)))
        for t in pruned:
            p("  %s" % t)
        p("")
        stale, absent = [], []
    if stale:
        p("Known failures that did not fail this time (remove them from %s, or run with TEMPEST_PRUNE_KNOWN=1):" % a.known)
        for t in stale:
            p("  %s (%s)" % (t, norm(results[t][0])))
        p("")
    if absent and not a.partial_selection:
        p("Known failures that are not among the selected tests (remove them from %s):" % a.known)
        for t in absent:
            p("  %s" % t)
        p("")
    p("Details: %s, %s" % (os.path.join(a.out, "results.json"), os.path.join(a.out, "failures.txt")))
    bad = bool(new or stale or (absent and not a.partial_selection))
    if not a.known:
        bad = bool(failed)
    p("Gate: %s" % ("FAILED" if bad else "passed"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
