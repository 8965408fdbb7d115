#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Render bypass-bench JSON as Markdown tables and PNG charts.

    report.py results/bench.json [more.json ...] [--out DIR] [--md FILE]
    report.py --compare A.json B.json     (bypass bench --compare)
    report.py --times run.json            (seconds per table and module)

Writes DIR/<experiment>.png (one chart per experiment) and a Markdown file
(default DIR/report.md) with, per experiment, the side-by-side table, its
notes and its targets, and the machine the figures came from.  Charts need
matplotlib (Debian: python3-matplotlib); without it only Markdown is written.

Rows whose params carry {"series": ..., "x": ...} are drawn as curves (one
line per series against x), e.g. fault latency against thread count; other
experiments are drawn as horizontal bars of the median with the p99 marked.
"""
import argparse
import json
import math
import os
import sys


def fmt(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    a = abs(v)
    if a >= 1e7:
        return f"{v:.3g}"
    if a >= 100:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def machine_line(doc):
    m = doc.get("machine", {})
    hz = m.get("tsc_hz") or 0
    return (f"{m.get('cpu_model', '?')}, {m.get('cores', '?')} cores, "
            f"Linux {m.get('kernel', '?')}, TSC {hz / 1e9:.3f} GHz; "
            f"{doc.get('mode', '?')} mode, {doc.get('rounds', '?')} rounds, "
            f"{doc.get('date', '?')}")


def provenance_lines(doc):
    """What the run was measured on and with (issue 9's provenance)."""
    p = doc.get("provenance")
    if not p:
        return ["Provenance: not recorded (JSON from a bypass-bench before provenance)."]
    commit = p.get("git_commit") or "unknown"
    dirty = p.get("git_dirty")
    state = (" with uncommitted changes (dirty tree)" if dirty else
             " (clean tree)" if dirty is False else " (tree state unknown)")
    if dirty and p.get("git_dirty_list"):
        state += f": `{p['git_dirty_list']}`"
    out = [f"- source: commit `{commit[:12]}`{state}"]
    env = p.get("env") or {}
    out.append("- BYPASS_* environment: " +
               (", ".join(f"`{k}={v}`" for k, v in sorted(env.items())) or "none set"))
    k = p.get("kernel") or {}
    if k:
        out.append("- kernel settings: " + "; ".join(f"{n} = `{v}`" for n, v in k.items()))
    facts = dict(p.get("facts") or {})
    swap = facts.pop("pager.swap_o_direct", None)
    out.append("- swap file O_DIRECT: " +
               (swap if swap is not None else "not reported (the pager experiment did not "
                "report it in this run)"))
    for n, v in facts.items():
        out.append(f"- {n}: {v}")
    pair = p.get("cpu_pair") or {}
    if pair:
        out.append(f"- the two CPUs of cross-core experiments: {pair.get('cpus')}, "
                   f"{pair.get('relation', '?')}")
    if p.get("loadavg_start") or p.get("loadavg_end"):
        out.append(f"- /proc/loadavg at start: `{p.get('loadavg_start')}`, at end: "
                   f"`{p.get('loadavg_end')}` (other work on the machine moves every figure)")
    c = p.get("cpu") or {}
    if c:
        out.append(f"- CPU: {c.get('model', '?')}, {c.get('online', '?')} online "
                   f"({c.get('configured', '?')} configured, {c.get('usable', '?')} usable "
                   f"by the run)")
    return out


def verdict(t):
    """A target's verdict, as the harness gave it (older JSON: from met and
    resolved)."""
    v = t.get("verdict")
    if v:
        return v
    if t.get("resolved") is False:
        return "not resolved"
    return "met" if t.get("met") else "not met"


def verdict_md(t):
    v = verdict(t)
    if v == "met":
        return "met"
    if v == "not resolved":
        return "**not resolved** (the goal lies inside the 95% CI)"
    return f"**{v}**"


def quiet_line(q):
    """How quiet the machine was (bypass-bench's disturbance record)."""
    if not q:
        return "not recorded (JSON from a bypass-bench before disturbance detection)"
    return q.get("line") or "not measured"


def _rx(v):
    """A ratio: two decimals, or three significant digits below 0.1."""
    return f"{v:.2f}" if abs(v) >= 0.1 or v == 0 else f"{v:.3g}"


def ratio_cell(r):
    if r.get("ratio") is None:
        return "-"
    ci = r.get("ratio_ci")
    if ci and None not in ci:
        return f"{_rx(r['ratio'])}x [{_rx(ci[0])}, {_rx(ci[1])}]"
    return f"{_rx(r['ratio'])}x"


def table(exp):
    rows = exp.get("rows", [])
    if not rows:
        return ""
    cyc = any(r.get("unit") == "cycles" for r in rows)
    src = any(r.get("source") for r in rows)
    ratio = any(r.get("ratio") is not None for r in rows)
    note = any(r.get("note") for r in rows)
    head = ["variant", "kind", "median", "mean", "p99"]
    if cyc:
        head += ["median ns", "p99 ns"]
    head += ["unit"]
    if ratio:
        head += ["ratio"]
    if src:
        head += ["source"]
    if note:
        head += ["note"]
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" if i < 2 or h in ("unit", "note", "source") else "---:"
                          for i, h in enumerate(head)) + "|"]
    for r in rows:
        cells = [r.get("variant", ""), r.get("kind", ""), fmt(r.get("median")),
                 fmt(r.get("mean")), fmt(r.get("p99"))]
        if cyc:
            cells += [fmt(r.get("median_ns")), fmt(r.get("p99_ns"))]
        cells += [r.get("unit", "")]
        if ratio:
            cells += [ratio_cell(r)]
        if src:
            cells += [r.get("source") or ""]
        if note:
            cells += [r.get("note") or ""]
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out)


def command_of(doc):
    """The command that made a run (older JSON: rebuilt from its mode)."""
    if doc.get("command"):
        return doc["command"]
    mode = doc.get("mode")
    flag = {"quick": " --quick", "smoke": " --smoke"}.get(mode, "")
    return f"bypass-bench {doc.get('modules', 'all')}{flag} (reconstructed: older JSON)"


def exp_md(exp, charts, heading="####", source=None, anchor=False):
    """One experiment: heading, ratio rule, how quiet, table, notes,
    failures, targets with the harness's verdicts, chart, and (source) the
    JSON and command it comes from."""
    out = [f"{heading} {exp['id']}: {exp.get('title', '')}\n"]
    if anchor:
        out.insert(0, f'<a id="{exp["id"]}"></a>\n')
    if source:
        out.append(source + "\n")
    if exp.get("skipped"):
        out.append(f"Skipped: {exp['skipped']}\n")
        return out
    rule = exp.get("ratio_rule")
    if exp.get("ratio_base") or rule:
        base = exp.get("ratio_base") or "the base row"
        out.append(f"Ratio = row median / median of {base}" +
                   (f": {rule}.\n" if rule else ".\n"))
    out.append(f"Quiet: {quiet_line(exp.get('quiet'))}.\n")
    out.append(table(exp) + "\n")
    for n in exp.get("notes", []):
        out.append(f"- {n}")
    if exp.get("notes"):
        out.append("")
    for f in exp.get("failures", []):
        out.append(f"- **FAILED**: {f}")
    if exp.get("failures"):
        out.append("")
    for t in exp.get("targets", []):
        ci = t.get("ci")
        cis = (f" (95% CI {fmt(ci[0])}..{fmt(ci[1])})"
               if ci and None not in ci else "")
        out.append(f"- target: {t['what']}: {fmt(t.get('value'))}{cis} "
                   f"{t['op']} {fmt(t.get('goal'))}: {verdict_md(t)}")
    if exp.get("targets"):
        out.append("")
    if exp["id"] in charts:
        out.append(f"![{exp['id']}]({charts[exp['id']]})\n")
    return out


def charts_of(charts, i):
    """One run's charts: experiment id -> path (charts is keyed by (run, id))."""
    return {eid: path for (j, eid), path in charts.items() if j == i}


def markdown(docs, charts):
    out = []
    for i, doc in enumerate(docs):
        out.append(f"Machine: {machine_line(doc)}.\n")
        out.append("\n".join(provenance_lines(doc)) + "\n")
        if doc.get("quiet"):
            out.append(f"The whole run ({fmt(doc.get('seconds'))} s): "
                       f"{quiet_line(doc.get('quiet'))}.\n")
        for exp in doc.get("experiments", []):
            out += exp_md(exp, charts_of(charts, i), heading="###")
    return "\n".join(out) + "\n"


# ------------------------------------------------------------ the document

MODULE_ORDER = ["notify", "batch", "ipc", "pager", "syslet"]


class Runs:
    """The JSON files a document is rendered from, each with its path as the
    document links it; an experiment id found in several is taken from the
    first (later files: other machines, other sizes)."""

    def __init__(self, paths, md_dir):
        self.runs = []
        for p in paths:
            with open(p) as f:
                d = json.load(f)
            link = os.path.relpath(p, md_dir) if md_dir else p
            self.runs.append((p, link, d))

    def find(self, exp_id):
        for p, link, d in self.runs:
            for e in d.get("experiments", []):
                if e.get("id") == exp_id:
                    return e, link, d
        return None, None, None

    def all_experiments(self):
        for p, link, d in self.runs:
            for e in d.get("experiments", []):
                yield e, link, d

    def index(self, d):
        return next(i for i, r in enumerate(self.runs) if r[2] is d)


def source_line(link, doc):
    pr = doc.get("provenance") or {}
    commit = (pr.get("git_commit") or "unknown")[:12]
    dirty = (" (dirty tree)" if pr.get("git_dirty") else
             " (clean tree)" if pr.get("git_dirty") is False else "")
    return (f"From [{link}]({link}): `{command_of(doc)}` at `{commit}`{dirty}, "
            f"{doc.get('date', '?')}.")


def targets_table(runs):
    """Every target of every run: the figure, its interval and the
    harness's verdict (never one written by hand)."""
    out = ["| module | target | figure | verdict | JSON |", "|---|---|---:|---|---|"]
    rows = []
    for e, link, d in runs.all_experiments():
        mod = e["id"].split(".")[0]
        for t in e.get("targets", []):
            ci = t.get("ci")
            cis = f" [{fmt(ci[0])}, {fmt(ci[1])}]" if ci and None not in ci else ""
            fig = f"{fmt(t.get('value'))}{cis} {t['op']} {fmt(t.get('goal'))}"
            anchor = e["id"]
            rows.append((MODULE_ORDER.index(mod) if mod in MODULE_ORDER else 99,
                         f"| {mod} | {t['what']} ([{e['id']}](#{anchor})) | {fig} | "
                         f"{verdict_md(t)} | [json]({link}) |"))
        if e.get("skipped") and not e.get("targets"):
            continue
    rows.sort(key=lambda r: r[0])
    return "\n".join(out + [r[1] for r in rows])


def status_lines(runs):
    """README's status lines: per module, the targets met and those not."""
    per = {}
    for e, link, d in runs.all_experiments():
        mod = e["id"].split(".")[0]
        for t in e.get("targets", []):
            per.setdefault(mod, []).append((t, e["id"]))
    out = []
    for mod in sorted(per, key=lambda m: MODULE_ORDER.index(m) if m in MODULE_ORDER else 99):
        ts = per[mod]
        met = sum(1 for t, _ in ts if verdict(t) == "met")
        rest = [f"{t['what']} ({verdict(t)}, {fmt(t.get('value'))})"
                for t, _ in ts if verdict(t) != "met"]
        line = f"- **{mod}**: {met} of {len(ts)} targets met"
        if rest:
            line += "; not met or not resolved: " + "; ".join(rest)
        out.append(line + ".")
    return "\n".join(out)


def run_paragraph(runs):
    out = []
    for p, link, d in runs.runs:
        m = d.get("machine", {})
        secs = f", {fmt(d.get('seconds'))} s" if d.get("seconds") is not None else ""
        out.append(f"- [{link}]({link}): `{command_of(d)}`, {d.get('mode', '?')} mode, "
                   f"{d.get('rounds', '?')} rounds{secs}, {d.get('date', '?')}, on "
                   f"{m.get('cpu_model', '?')} ({m.get('cores', '?')} cores, Linux "
                   f"{m.get('kernel', '?')}, TSC {(m.get('tsc_hz') or 0) / 1e9:.3f} GHz).")
        if d.get("mode") != "full":
            out.append(f"  **Not the full suite** ({d.get('mode')} mode: smaller sizes, "
                       "said under each table); the page is meant to be rendered from "
                       "a quiet full-suite run (`make bench-full`, then "
                       "`make bench-docs`).")
        out.append(f"  - how quiet: {quiet_line(d.get('quiet'))}")
        out += ["  " + x for x in provenance_lines(d)]
    return "\n".join(out)


def row_of(e, variant):
    for r in e.get("rows", []):
        if r.get("variant") == variant:
            return r
    return None


def render_doc(template, runs, charts):
    """Fill a template: {{run}}, {{targets}}, {{status}}, {{table ID}},
    {{tables}} (every experiment not placed by {{table}}), and inline
    {{ratio ID|variant}}, {{median ID|variant}}, {{target ID|text}} (the
    first target of ID whose description contains text: figure and
    verdict).  A figure missing from the runs renders as "(not in this
    run)"."""
    import re
    placed = set(re.findall(r"\{\{table ([^}]+)\}\}", template))

    def one_table(exp_id):
        """The experiment from every run that has it (a second machine's
        too), each with the JSON and command it comes from."""
        out = []
        for e, link, d in runs.all_experiments():
            if e.get("id") != exp_id.strip():
                continue
            out.append("\n".join(exp_md(e, charts_of(charts, runs.index(d)),
                                         source=source_line(link, d), anchor=not out)))
        if not out:
            return f"#### {exp_id.strip()}\n\nNot in this run.\n"
        return "\n".join(out)

    def rest():
        out = []
        for e, link, d in runs.all_experiments():
            if e["id"] in placed:
                continue
            out.append("\n".join(exp_md(e, charts_of(charts, runs.index(d)),
                                         source=source_line(link, d), anchor=True)))
        return "\n".join(out)

    def inline(m):
        kind, arg = m.group(1), m.group(2)
        exp_id, _, what = arg.partition("|")
        e, link, d = runs.find(exp_id.strip())
        if not e:
            return "(not in this run)"
        if kind == "target":
            for t in e.get("targets", []):
                if what.strip() in t["what"]:
                    ci = t.get("ci")
                    cis = f" [{fmt(ci[0])}, {fmt(ci[1])}]" if ci and None not in ci else ""
                    return f"{fmt(t.get('value'))}{cis} ({verdict(t)})"
            return "(not in this run)"
        r = row_of(e, what.strip())
        if not r:
            return "(not in this run)"
        if kind == "ratio":
            return ratio_cell(r)
        return f"{fmt(r.get('median'))} {r.get('unit', '')}".strip()

    out = template
    out = out.replace("{{run}}", run_paragraph(runs))
    out = out.replace("{{targets}}", targets_table(runs))
    out = out.replace("{{status}}", status_lines(runs))
    out = re.sub(r"\{\{table ([^}]+)\}\}", lambda m: one_table(m.group(1)), out)
    out = out.replace("{{tables}}", rest())
    out = re.sub(r"\{\{(ratio|median|target) ([^}]+)\}\}", inline, out)
    return out


def draw(exp, path, plt):
    rows = [r for r in exp.get("rows", []) if r.get("median") is not None]
    if not rows:
        return False
    unit = rows[0].get("unit", "")
    curves = [r for r in rows if isinstance(r.get("params"), dict)
              and "series" in r["params"] and "x" in r["params"]]
    fig, ax = plt.subplots(figsize=(9, max(3.0, 0.42 * len(rows) + 1.2)))
    if curves:
        series = {}
        for r in curves:
            series.setdefault(r["params"]["series"], []).append(
                (r["params"]["x"], r["median"], r.get("p99")))
        for name, pts in series.items():
            pts.sort()
            xs = [p[0] for p in pts]
            ax.plot(xs, [p[1] for p in pts], marker="o", label=f"{name} (median)")
            if all(p[2] is not None for p in pts):
                ax.plot(xs, [p[2] for p in pts], linestyle=":", alpha=0.6,
                        label=f"{name} (p99)")
        ax.set_xlabel(curves[0]["params"].get("x_label", "x"))
        ax.set_ylabel(unit)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    else:
        colors = {"baseline": "#8c8c8c", "bypass": "#1f77b4", "limit": "#2ca02c",
                  "peer": "#ff7f0e"}
        labels = [r["variant"] for r in rows][::-1]
        med = [r["median"] for r in rows][::-1]
        p99 = [r.get("p99") or r["median"] for r in rows][::-1]
        col = [colors.get(r.get("kind"), "#9467bd") for r in rows][::-1]
        y = range(len(rows))
        ax.barh(y, med, color=col)
        higher = rows[0].get("higher_is_better")
        if not higher:
            ax.scatter(p99, y, marker="|", color="black", s=80, label="p99")
            ax.legend(fontsize=8, loc="lower right")
        ax.set_yticks(list(y))
        ax.set_yticklabels(labels, fontsize=8)
        vals = [v for v in med + p99 if v and v > 0]
        if vals and max(vals) / min(vals) > 50:
            ax.set_xscale("log")
        ax.set_xlabel(f"median {unit}" + (" (higher is better)" if higher else
                                          " (lower is better)"))
        ax.grid(axis="x", alpha=0.3)
    ax.set_title(f"{exp['id']}: {exp.get('title', '')}"[:110], fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


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


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--times":
        if len(sys.argv) != 3:
            print("usage: report.py --times run.json", file=sys.stderr)
            sys.exit(2)
        sys.stdout.write(times(sys.argv[2]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--expect-failed":
        if len(sys.argv) != 4:
            print("usage: report.py --expect-failed ID run.json", file=sys.stderr)
            sys.exit(2)
        sys.exit(expect_failed(sys.argv[2], sys.argv[3]))
    if len(sys.argv) > 1 and sys.argv[1] == "--compare":
        if len(sys.argv) != 4:
            print("usage: report.py --compare A.json B.json", file=sys.stderr)
            sys.exit(2)
        sys.stdout.write(compare(sys.argv[2], sys.argv[3]))
        return
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", nargs="+")
    ap.add_argument("--out", default="results", help="directory for charts and report.md")
    ap.add_argument("--md", help="Markdown output file (default OUT/report.md)")
    ap.add_argument("--chart-prefix", default="",
                    help="path prefix for chart links in the Markdown")
    ap.add_argument("--template", help="render this Markdown template "
                    "into --md instead of the plain report")
    ap.add_argument("--status", action="store_true",
                    help="print README's status lines (targets met and not) and exit")
    args = ap.parse_args()
    if args.status:
        print(status_lines(Runs(args.json, None)))
        return
    docs = []
    for p in args.json:
        with open(p) as f:
            docs.append(json.load(f))
    os.makedirs(args.out, exist_ok=True)
    charts = {}
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
        print("report: matplotlib missing (apt-get install python3-matplotlib): "
              "Markdown only", file=sys.stderr)
    if plt:
        for i, doc in enumerate(docs):
            for exp in doc.get("experiments", []):
                if exp.get("skipped"):
                    continue
                # the first run's charts keep the experiment's name; a later
                # run's (another machine) get its index
                name = exp["id"].replace("/", "_") + (f".{i}" if i else "") + ".png"
                if draw(exp, os.path.join(args.out, name), plt):
                    charts[(i, exp["id"])] = args.chart_prefix + name
    dest = args.md or os.path.join(args.out, "report.md")
    if args.template:
        with open(args.template) as f:
            tpl = f.read()
        md = render_doc(tpl, Runs(args.json, os.path.dirname(os.path.abspath(dest))),
                        charts)
    else:
        md = markdown(docs, charts)
    with open(dest, "w") as f:
        f.write(md)
    print(f"report: {dest}" + (f", {len(charts)} charts in {args.out}" if charts else ""))


if __name__ == "__main__":
    main()
