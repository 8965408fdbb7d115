#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Render bypass-bench JSON as Markdown tables and PNG charts.

    report.py results/bench.json [more.json ...] [--out DIR] [--md FILE]
    report.py --compare A.json B.json [--floors]   (bypass bench --compare)
    report.py --times run.json            (seconds per table and module)
    report.py --check-rounds run.json     (no timing verdict from < 5 rounds)
    report.py --expect run.json ID TEXT VERDICT, --expect-quiet run.json ID STATE,
    report.py --expect-failed ID run.json (the planted checks)

Writes DIR/<experiment>.png (one chart per experiment) and a Markdown file
(default DIR/report.md) with, per experiment, the side-by-side table, its
notes and its targets, and the machine the figures came from.  Charts need
matplotlib (Debian: python3-matplotlib); without it only Markdown is written.

Rows whose params carry {"series": ..., "x": ...} are drawn as curves (one
line per series against x), e.g. fault latency against thread count; other
experiments are drawn as horizontal bars of the median with the p99 marked.
"""
import argparse
import glob
import json
import math
import os
import sys

from reportlib import (charts_of, command_of, exp_md, fmt, interval_brackets,
                       markdown, provenance_lines, quiet_line, ratio_cell, row_of,
                       verdict, verdict_md, pre_rules, _rx)
from report_checks import (check_rounds, compare, expect, expect_failed, expect_quiet,
                           times)


MODULE_ORDER = ["notify", "batch", "ipc", "pager", "syslet"]


class Runs:
    """The JSON files a document is rendered from, each with its path as the
    document links it; an experiment id found in several is taken from the
    first (later files: other machines, other sizes)."""

    def __init__(self, paths, md_dir):
        self.md_dir = md_dir
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
            if t.get("value") is None and verdict(t).startswith("no verdict:"):
                fig = "-"
            else:
                fig = (f"{fmt(t.get('value'))}{interval_brackets(t)} {t['op']} "
                       f"{fmt(t.get('goal'))}")
            anchor = e["id"]
            rows.append((MODULE_ORDER.index(mod) if mod in MODULE_ORDER else 99,
                         f"| {mod} | {t['what']} ([{e['id']}](#{anchor})) | {fig} | "
                         f"{verdict_md(t)} | [json]({link}) |"))
        if e.get("skipped") and not e.get("targets"):
            continue
    rows.sort(key=lambda r: r[0])
    return "\n".join(out + [r[1] for r in rows])


def status_lines(runs):
    """README's status lines: per module, the targets met, not met and not
    resolved, each with its figure and interval (the harness's verdicts;
    an experiment found in several runs counts once, from the first)."""
    per, seen = {}, set()
    for e, link, d in runs.all_experiments():
        if e["id"] in seen:
            continue
        seen.add(e["id"])
        mod = e["id"].split(".")[0]
        for t in e.get("targets", []):
            per.setdefault(mod, []).append((t, e["id"]))
    out = []
    for mod in sorted(per, key=lambda m: MODULE_ORDER.index(m) if m in MODULE_ORDER else 99):
        ts = per[mod]

        def item(t):
            if t.get("value") is None:
                return t["what"]
            return f"{t['what']}: {fmt(t.get('value'))}{interval_brackets(t)}"
        groups = {"met": [], "not met": [], "other": []}
        for t, _ in ts:
            v = verdict(t)
            groups[v if v in ("met", "not met") else "other"].append(t)
        for k in ("met", "not met"):
            for t in [t for t in groups[k] if pre_rules(t)]:
                groups[k].remove(t)
                groups["other"].append(t)
        line = f"- **{mod}**: {len(groups['met'])} of {len(ts)} targets met"
        if groups["met"]:
            line += " (" + "; ".join(item(t) for t in groups["met"]) + ")"
        if groups["not met"]:
            line += "; not met: " + "; ".join(item(t) for t in groups["not met"])
        if groups["other"]:
            line += "; no verdict: " + "; ".join(
                f"{item(t)} ({verdict(t)}" +
                (", from before the 5-round rule" if pre_rules(t) else "") + ")"
                for t in groups["other"])
        out.append(line + ".")
    return "\n".join(out)


README_BEGIN = "<!-- targets: begin (tools/report.py --readme; do not edit by hand) -->"


README_END = "<!-- targets: end -->"


def readme_block(runs):
    """README's "Where the targets stand", rendered: the runs (JSON, command,
    commit, machine, how quiet) and the status lines."""
    out = ["From the runs on [docs/BENCHMARKS.md](docs/BENCHMARKS.md), rendered by "
           "`tools/report.py --readme README.md` from their JSON (the harness's "
           "verdicts; an interval is `[lo, hi; method, n=rounds]`, a range of fewer "
           "than 5 rounds decides nothing):", ""]
    for p, link, d in runs.runs:
        pr = d.get("provenance") or {}
        m = d.get("machine", {})
        q = d.get("quiet") or {}
        dirty = " (dirty tree)" if pr.get("git_dirty") else ""
        out.append(f"- `{os.path.relpath(p)}`: `{command_of(d)}` at "
                   f"`{(pr.get('git_commit') or 'unknown')[:12]}`{dirty}, {d.get('date', '?')}, "
                   f"{m.get('cpu_model', '?')} ({m.get('cores', '?')} CPUs, Linux "
                   f"{m.get('kernel', '?')}); other processes "
                   f"{100 * (q.get('other_cpu_mean') or 0):.1f}% of a CPU on average, "
                   f"{q.get('disturbed_rounds', 0)} disturbed rounds")
    out.append("")
    out.append(status_lines(runs))
    return "\n".join(out)


def update_readme(path, runs):
    with open(path) as f:
        text = f.read()
    a, b = text.find(README_BEGIN), text.find(README_END)
    if a < 0 or b < a:
        print(f"report: {path} has no {README_BEGIN!r} ... {README_END!r} block",
              file=sys.stderr)
        return 1
    text = text[:a + len(README_BEGIN)] + "\n" + readme_block(runs) + "\n" + text[b:]
    with open(path, "w") as f:
        f.write(text)
    print(f"report: {path}: the targets rendered")
    return 0


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


def render_doc(template, runs, charts):
    """Fill a template: {{run}}, {{targets}}, {{status}}, {{table ID}},
    {{tables}} (every experiment not placed by {{table}}), and inline
    {{ratio ID|variant}}, {{median ID|variant}}, {{target ID|text}} (the
    first target of ID whose description contains text: figure and
    verdict); ID may be FILE@ID, a committed JSON file (relative to the
    page) other than the runs; {{range FILES@ID|variant[|median]}} and
    {{trange FILES@ID|text}}: the lowest and highest over several JSON
    files (a glob).  A figure missing from the runs renders as "(not in
    this run)"."""
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
        exp_id = exp_id.strip()
        if kind in ("range", "trange"):
            return range_of(kind, exp_id, what)
        if "@" in exp_id:
            src, exp_id = exp_id.split("@", 1)
            e = None
            for path in sorted(glob.glob(os.path.join(runs.md_dir or ".", src))):
                with open(path) as f:
                    for x in json.load(f).get("experiments", []):
                        if x.get("id") == exp_id:
                            e = x
                break
        else:
            e, link, d = runs.find(exp_id)
        if not e:
            return "(not in this run)"
        if kind == "target":
            for t in e.get("targets", []):
                if what.strip() in t["what"]:
                    if t.get("value") is None:
                        return f"({verdict(t)})"
                    return f"{fmt(t.get('value'))}{interval_brackets(t)} ({verdict(t)})"
            return "(not in this run)"
        r = row_of(e, what.strip())
        if not r:
            return "(not in this run)"
        if kind == "ratio":
            return ratio_cell(r)
        return f"{fmt(r.get('median'))} {r.get('unit', '')}".strip()

    def range_of(kind, spec, what):
        """{{range FILES@ID|variant[|median]}}: the lowest and highest ratio
        (or median) of that row over the JSON files FILES (a glob relative
        to the page); {{trange FILES@ID|target text}}: of that target's
        figure.  With the number of runs and the files, so that a range
        over several runs is as traceable as a table."""
        src, _, exp_id = spec.partition("@")
        field = "ratio"
        if kind == "range" and what.count("|"):
            what, _, field = what.rpartition("|")
        vals = []
        paths = sorted(glob.glob(os.path.join(runs.md_dir or ".", src)))
        for path in paths:
            with open(path) as f:
                doc = json.load(f)
            for x in doc.get("experiments", []):
                if x.get("id") != exp_id:
                    continue
                if kind == "range":
                    r = row_of(x, what.strip())
                    if r and r.get(field) is not None:
                        vals.append(r[field])
                else:
                    for t in x.get("targets", []):
                        if what.strip() in t["what"] and t.get("value") is not None:
                            vals.append(t["value"])
                            break
        if not vals:
            return "(not in these runs)"
        unit = "x" if field == "ratio" or kind == "trange" else ""
        one = (lambda v: _rx(v) + unit) if unit else fmt
        span = one(vals[0]) if len(vals) == 1 else f"{one(min(vals))}-{one(max(vals))}"
        return f"{span} ({len(vals)} run{'s' if len(vals) != 1 else ''}: `{src}`)"

    out = template
    out = out.replace("{{run}}", run_paragraph(runs))
    out = out.replace("{{targets}}", targets_table(runs))
    out = out.replace("{{status}}", status_lines(runs))
    out = re.sub(r"\{\{table ([^}]+)\}\}", lambda m: one_table(m.group(1)), out)
    out = out.replace("{{tables}}", rest())
    out = re.sub(r"\{\{(ratio|median|target|range|trange) ([^}]+)\}\}", inline, out)
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


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--times":
        if len(sys.argv) != 3:
            print("usage: report.py --times run.json", file=sys.stderr)
            sys.exit(2)
        sys.stdout.write(times(sys.argv[2]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--check-rounds":
        if len(sys.argv) != 3:
            print("usage: report.py --check-rounds run.json", file=sys.stderr)
            sys.exit(2)
        sys.exit(check_rounds(sys.argv[2]))
    if len(sys.argv) > 1 and sys.argv[1] == "--expect":
        if len(sys.argv) != 6:
            print("usage: report.py --expect run.json ID TEXT VERDICT", file=sys.stderr)
            sys.exit(2)
        sys.exit(expect(*sys.argv[2:6]))
    if len(sys.argv) > 1 and sys.argv[1] == "--expect-quiet":
        if len(sys.argv) != 5:
            print("usage: report.py --expect-quiet run.json ID STATE", file=sys.stderr)
            sys.exit(2)
        sys.exit(expect_quiet(*sys.argv[2:5]))
    if len(sys.argv) > 1 and sys.argv[1] == "--expect-failed":
        if len(sys.argv) != 4:
            print("usage: report.py --expect-failed ID run.json", file=sys.stderr)
            sys.exit(2)
        sys.exit(expect_failed(sys.argv[2], sys.argv[3]))
    if len(sys.argv) > 1 and sys.argv[1] == "--compare":
        args = [x for x in sys.argv[2:] if x != "--floors"]
        if len(args) != 2:
            print("usage: report.py --compare A.json B.json [--floors]", file=sys.stderr)
            sys.exit(2)
        sys.stdout.write(compare(args[0], args[1], floors="--floors" in sys.argv[2:]))
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
    ap.add_argument("--readme", help="render README's \"Where the targets stand\" "
                    "between its markers from the JSON files, and exit")
    args = ap.parse_args()
    if args.status:
        print(status_lines(Runs(args.json, None)))
        return
    if args.readme:
        sys.exit(update_readme(args.readme, Runs(args.json, None)))
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
