# SPDX-License-Identifier: MIT
"""tools/report.py's checks and comparisons of runs: --compare, --times,
--check-rounds, --expect, --expect-quiet, --expect-failed (the planted
checks of tests/<module>/bench-plant.sh)."""
import json

from reportlib import fmt, quiet_line, verdict


def _ci(r):
    ci = r.get("ratio_ci") or r.get("ci")
    return ci if ci and None not in ci else None


def moved(a, b, ca, cb):
    """Whether a figure moved between two runs: the intervals do not
    overlap; without intervals, more than the 20% run-to-run spread."""
    if a is None or b is None:
        return "-"
    if ca and cb:
        return "**moved**" if ca[1] < cb[0] or cb[1] < ca[0] else "within the intervals"
    if a == 0:
        return "-"
    d = abs(b - a) / abs(a)
    return ("**moved** (no interval: > 20%)" if d > 0.2
            else "within 20% (no interval)")


def cell(v, ci):
    if v is None:
        return "-"
    return f"{v:.3g}x [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else f"{v:.3g}x"


def compare(pa, pb):
    """bypass bench --compare A.json B.json: two runs side by side."""
    da, db = (json.load(open(p)) for p in (pa, pb))
    out = [f"# {pa} (A) against {pb} (B)", ""]
    for name, p, d in (("A", pa, da), ("B", pb, db)):
        pr = d.get("provenance") or {}
        c = (pr.get("git_commit") or "unknown")[:12]
        dirty = " (dirty tree)" if pr.get("git_dirty") else ""
        m = d.get("machine", {})
        out.append(f"- {name}: `{p}`: commit `{c}`{dirty}, {d.get('mode', '?')} mode, "
                   f"{d.get('rounds', '?')} rounds, {d.get('date', '?')}, on "
                   f"{m.get('cpu_model', '?')} ({m.get('cores', '?')} cores, Linux "
                   f"{m.get('kernel', '?')}); quiet: {quiet_line(d.get('quiet'))}")
    out.append("")
    out.append("A figure moved when the two 95% intervals do not overlap; a ratio "
               "without an interval moved when it changed by more than 20% (this "
               "machine's run-to-run spread).")
    out.append("")
    ea = {e["id"]: e for e in da.get("experiments", [])}
    eb = {e["id"]: e for e in db.get("experiments", [])}
    ids = list(ea) + [i for i in eb if i not in ea]
    for i in ids:
        a, b = ea.get(i), eb.get(i)
        out.append(f"## {i}")
        out.append("")
        if not a or not b:
            out.append(f"Only in {'A' if a else 'B'}.")
            out.append("")
            continue
        if a.get("skipped") or b.get("skipped"):
            out.append(f"Skipped: A {a.get('skipped') or 'ran'}; B {b.get('skipped') or 'ran'}.")
            out.append("")
            continue
        out.append(f"Quiet: A {quiet_line(a.get('quiet'))}; B {quiet_line(b.get('quiet'))}.")
        out.append("")
        out.append("| row | A ratio | B ratio | B / A | |")
        out.append("|---|---:|---:|---:|---|")
        rb = {r["variant"]: r for r in b.get("rows", [])}
        seen = set()
        for r in a.get("rows", []) + [x for x in b.get("rows", [])
                                       if x["variant"] not in
                                       {y["variant"] for y in a.get("rows", [])}]:
            v = r["variant"]
            if v in seen:
                continue
            seen.add(v)
            ra = r if r in a.get("rows", []) else None
            rbb = rb.get(v)
            xa = ra.get("ratio") if ra else None
            xb = rbb.get("ratio") if rbb else None
            q = f"{xb / xa:.3g}" if xa and xb else "-"
            out.append(f"| {v} | {cell(xa, _ci(ra) if ra else None)} | "
                       f"{cell(xb, _ci(rbb) if rbb else None)} | {q} | "
                       f"{moved(xa, xb, _ci(ra) if ra else None, _ci(rbb) if rbb else None)} |")
        ta = {t["what"]: t for t in a.get("targets", [])}
        tb = {t["what"]: t for t in b.get("targets", [])}
        if ta or tb:
            out.append("")
            out.append("| target | A | B | |")
            out.append("|---|---|---|---|")
            for w in list(ta) + [x for x in tb if x not in ta]:
                x, y = ta.get(w), tb.get(w)

                def tc(t):
                    if not t:
                        return "-"
                    ci = _ci(t)
                    cs = f" [{fmt(ci[0])}, {fmt(ci[1])}]" if ci else ""
                    return f"{fmt(t.get('value'))}{cs}: {verdict(t)}"
                mv = moved(x.get("value") if x else None, y.get("value") if y else None,
                           _ci(x) if x else None, _ci(y) if y else None)
                out.append(f"| {w} | {tc(x)} | {tc(y)} | {mv} |")
        fa, fb = a.get("failures") or [], b.get("failures") or []
        if fa or fb:
            out.append("")
            out.append(f"Failures: A {len(fa)}, B {len(fb)}.")
        out.append("")
    return "\n".join(out) + "\n"


def expect_failed(exp_id, path):
    """report.py --expect-failed ID run.json: the planted-failure tests'
    check (tests/<module>/bench-plant.sh).  Exit 0 when experiment ID ran,
    recorded a failure in "failures" and left no target met (each says "no
    verdict: failed"); 77 when it was skipped here (the reason printed); 1
    otherwise."""
    d = json.load(open(path))
    exps = [e for e in d.get("experiments", []) if e.get("id") == exp_id]
    if not exps:
        print(f"no experiment {exp_id} in {path}")
        return 1
    e = exps[0]
    if e.get("skipped") and not e.get("failures"):
        print(f"SKIP: {exp_id} skipped here: {e['skipped']}")
        return 77
    if not e.get("failures"):
        print(f"{exp_id}: no failure recorded")
        return 1
    bad = [t for t in e.get("targets", []) if t.get("met") or
           not verdict(t).startswith("no verdict")]
    if bad:
        print(f"{exp_id}: targets judged despite the failure: "
              f"{[(t['what'], verdict(t)) for t in bad]}")
        return 1
    met = sum(1 for x in d.get("experiments", []) for t in x.get("targets", [])
              if t.get("met") and x.get("failures"))
    if met:
        print(f"{met} targets met in experiments with failures")
        return 1
    print(f"{exp_id}: failed as it should: {e['failures'][0]}; "
          f"{len(e.get('targets', []))} targets without a verdict")
    return 0


def check_rounds(path):
    """report.py --check-rounds run.json: no timing target is met or not met
    from fewer than 5 rounds per side, and none without its method (issue
    33; ../shared/BENCHMARKING.md, rule 14).  Exit 0, or 1 listing them."""
    d = json.load(open(path))
    bad, judged = [], 0
    for e in d.get("experiments", []):
        for t in e.get("targets", []):
            if verdict(t) not in ("met", "not met") or t.get("exact"):
                continue
            judged += 1
            n = t.get("rounds")
            if n is None or n < 5 or not t.get("method") or t.get("ci_kind") != "95%":
                bad.append(f"{e['id']}: {t['what']}: {verdict(t)} from "
                           f"{n if n is not None else 'unstated'} rounds, method "
                           f"{t.get('method') or 'unstated'}")
    for b in bad:
        print(f"FEWER THAN 5 ROUNDS: {b}")
    print(f"{path}: {judged} timing targets met or not met, {len(bad)} of them from fewer "
          "than 5 rounds or without a stated method")
    return 1 if bad else 0


def expect(path, exp_id, what, want):
    """report.py --expect run.json ID TEXT VERDICT: every target of
    experiment ID whose description contains TEXT (all: '') has a verdict
    that starts with VERDICT, and there is at least one.  Exit 0; 77 when
    ID was skipped here (the reason printed); 1 otherwise.  The planted
    checks of the verdicts (tests/<module>/bench-plant.sh)."""
    d = json.load(open(path))
    exps = [e for e in d.get("experiments", []) if e.get("id") == exp_id]
    if not exps:
        print(f"no experiment {exp_id} in {path}")
        return 1
    e = exps[0]
    if e.get("skipped"):
        print(f"SKIP: {exp_id} skipped here: {e['skipped']}")
        return 77
    ts = [t for t in e.get("targets", []) if what in t["what"]]
    if not ts:
        print(f"{exp_id}: no target whose description contains {what!r}")
        return 1
    wrong = [(t["what"], verdict(t)) for t in ts if not verdict(t).startswith(want)]
    for w, v in wrong:
        print(f"{exp_id}: {w}: {v!r}, want {want!r}")
    if not wrong:
        print(f"{exp_id}: {len(ts)} target(s) with {what!r}: {want}")
    return 1 if wrong else 0


def expect_quiet(path, exp_id, want):
    """report.py --expect-quiet run.json ID STATE: the table's quiet record
    says STATE: "disturbed" (a round, or its short rounds together),
    "short-disturbed" (short rounds judged together and disturbed), or
    "quiet".  Exit 0, 77 when skipped, else 1."""
    d = json.load(open(path))
    exps = [e for e in d.get("experiments", []) if e.get("id") == exp_id]
    if not exps:
        print(f"no experiment {exp_id} in {path}")
        return 1
    e = exps[0]
    if e.get("skipped"):
        print(f"SKIP: {exp_id} skipped here: {e['skipped']}")
        return 77
    q = e.get("quiet") or {}
    ok = {"disturbed": bool(q.get("disturbed")),
          "short-disturbed": bool(q.get("short_disturbed")) and q.get("short_rounds", 0) > 0,
          "quiet": not q.get("disturbed") and not q.get("too_short")}.get(want)
    print(f"{exp_id}: quiet: {q.get('line')}: want {want}: {'yes' if ok else 'NO'}")
    return 0 if ok else 1


def times(path):
    """report.py --times run.json: seconds per table and per module, and the
    run's total (the quick suite's budget is in bench/bench.h)."""
    d = json.load(open(path))
    per = {}
    out = []
    for e in d.get("experiments", []):
        sec = e.get("seconds") or 0
        mod = e["id"].split(".")[0]
        per[mod] = per.get(mod, 0) + sec
        q = e.get("quiet") or {}
        extra = f", {q.get('reruns')} reruns" if q.get("reruns") else ""
        out.append(f"  {e['id']:28s} {sec:7.1f} s{extra}")
    head = [f"{path}: {d.get('mode', '?')} mode, {fmt(d.get('seconds'))} s in all"]
    head += [f"{m:8s} {v:7.1f} s" for m, v in per.items()]
    return "\n".join(head + ["per table:"] + out) + "\n"
