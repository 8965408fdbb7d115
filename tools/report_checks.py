# SPDX-License-Identifier: MIT
"""tools/report.py's checks and comparisons of runs: --compare (--floors),
--times, --check-rounds, --expect, --expect-quiet, --expect-failed (the planted
checks of tests/<module>/bench-plant.sh)."""
import json
import math

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


def _is_floor(r):
    """A floor row: the table's limit or baseline, or its base row."""
    return r.get("kind") in ("limit", "baseline") or bool(r.get("is_base"))


def floor_reading(a, b, name):
    """--floors: whether the floor rows beside row NAME explain its move
    from run B to run A (issue 34, D4).  The floor rows are the table's
    limit, baseline and base rows with a median in both runs; in a table of
    "PROGRAM: side" rows (pager.unmodified, pager.throughput), those of the
    same program where it has any.  The row is explained when one of them
    moved the same way by at least half as much in log terms as the row's
    own median did.  Returns (kind, text): kind "floor" (a floor row
    itself), "explained", "not explained" or "-" (no median in a run)."""
    ra = {r["variant"]: r for r in a.get("rows", [])}
    rb = {r["variant"]: r for r in b.get("rows", [])}
    x, y = ra.get(name), rb.get(name)
    if not x or not y or not x.get("median") or not y.get("median"):
        return "-", "no median in both runs"
    own = f"median {y['median']:.4g} -> {x['median']:.4g} {x.get('unit') or ''}".rstrip()
    if _is_floor(x):
        return "floor", f"a floor row itself ({x.get('kind') or 'base'}); {own}"
    floors = [(f, rb[f]["median"], fx["median"], fx.get("unit") or "")
              for f, fx in ra.items()
              if f != name and f in rb and _is_floor(fx) and fx.get("median") and
              rb[f].get("median")]
    pre = name.split(": ")[0] if ": " in name else None
    same = [f for f in floors if pre and f[0].startswith(pre + ": ")]
    if same:
        floors = same
    m = math.log(x["median"] / y["median"])
    why = [f for f in floors if math.log(f[2] / f[1]) * m > 0 and
           abs(math.log(f[2] / f[1])) >= 0.5 * abs(m)]
    if why:
        return "explained", f"{own}; explained by " + "; ".join(
            f"{f[0]} {f[1]:.4g} -> {f[2]:.4g} {f[3]}".rstrip() for f in why[:3])
    return "not explained", f"{own}; NOT explained by a floor row" + (
        "" if floors else " (the table has none in both runs)")


def compare(pa, pb, floors=False):
    """bypass bench --compare A.json B.json [--floors]: two runs side by
    side; with floors, each moved row says whether a floor row beside it
    explains the move (floor_reading), and a summary ends the output."""
    da, db = (json.load(open(p)) for p in (pa, pb))
    tally = {"floor": [], "explained": [], "not explained": [], "-": []}
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
    if floors:
        out.append("--floors: each moved row (B to A) says whether a floor row of its "
                   "table (its limit, baseline or base row; of the same program where "
                   "the rows are \"PROGRAM: side\") moved the same way by at least half "
                   "as much in log terms as the row's own median: then the machine's "
                   "floor, not bypass, explains the move.")
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
            mv = moved(xa, xb, _ci(ra) if ra else None, _ci(rbb) if rbb else None)
            if floors and mv.startswith("**moved**"):
                kind, text = floor_reading(a, b, v)
                tally[kind].append(f"{i} | {v}: {text}")
                mv += f": {text}"
            out.append(f"| {v} | {cell(xa, _ci(ra) if ra else None)} | "
                       f"{cell(xb, _ci(rbb) if rbb else None)} | {q} | {mv} |")
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
    if floors:
        out.append("## Floors (--floors)")
        out.append("")
        out.append(f"Moved rows: {sum(len(v) for v in tally.values())}: floor rows themselves "
                   f"{len(tally['floor'])}, explained by a floor row "
                   f"{len(tally['explained'])}, not explained {len(tally['not explained'])}"
                   f", without a median in both runs {len(tally['-'])}. (Moved targets are "
                   "read through their rows.)")
        for kind in ("not explained", "explained", "floor", "-"):
            if tally[kind]:
                out.append("")
                out.append(f"{kind.capitalize()}:")
                out.append("")
                out += [f"- {t}" for t in tally[kind]]
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
