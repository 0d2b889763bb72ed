#!/usr/bin/env python3
"""report.py RAW.csv OUTDIR: tests/bench/run's tables, targets and plot.

Reads the lines the benchmarks appended to RAW.csv (workload, case, tool,
metric, unit, n, median, min, max), adds the ratios to flock and to the
best peer, judges the issue's targets, and writes OUTDIR/results.csv (the
columns are in README.md), OUTDIR/summary.md (printed too) and, when
gnuplot is there, OUTDIR/results.png, titled with OUTDIR/machine.txt's
first line.  Standard library only.
"""

import csv
import math
import os
import shutil
import subprocess
import sys

raw_path, out = sys.argv[1], sys.argv[2]
FIELDS = ["workload", "case", "tool", "metric", "unit", "n", "median", "min", "max"]
COLUMNS = ["kind"] + FIELDS + ["x_flock", "x_best_peer", "target", "met"]


def num(s):
	try:
		return float(s)
	except (TypeError, ValueError):
		return None


rows = []
with open(raw_path, newline="") as f:
	for rec in csv.reader(f):
		if len(rec) != len(FIELDS):
			print(f"report.py: skipping a line of {len(rec)} fields: {rec}", file=sys.stderr)
			continue
		d = dict(zip(FIELDS, rec))
		d["kind"] = "measure"
		rows.append(d)


def role(tool):
	"""dlock itself, flock the base, a floor (what any tool pays), or a peer"""
	t = tool.lower()
	if t.startswith("dlock"):
		return "self"
	if t.startswith("flock"):
		return "base"
	if t in ("true", "date (exec floor)", "redis-cli ping (1 node)", "redis-cli --latency") \
			or t.startswith("floor"):
		return "floor"
	return "peer"


def higher_is_better(unit):
	return unit == "1/s"


# Ratios within one (workload, case, metric): to flock's median, to the best
# peer's (the fastest, or the smallest RSS, or the most sections/s).
groups = {}
for d in rows:
	groups.setdefault((d["workload"], d["case"], d["metric"]), []).append(d)
for g in groups.values():
	flock = [num(d["median"]) for d in g if role(d["tool"]) == "base"]
	peers = [(num(d["median"]), d["tool"]) for d in g
		 if role(d["tool"]) == "peer" and num(d["median"])]
	best = None
	if peers:
		best = (max if higher_is_better(g[0]["unit"]) else min)(peers)
	for d in g:
		m = num(d["median"])
		d["x_flock"] = f"{m / flock[0]:.2f}" if flock and flock[0] and m is not None else ""
		d["x_best_peer"] = f"{m / best[0]:.2f}" if best and m is not None else ""
		d["best_peer"] = best[1] if best else ""


def find(workload, tool=None, metric=None, case=None, prefix=False):
	for d in rows:
		if d["kind"] != "measure" or d["workload"] != workload:
			continue
		if case is not None and d["case"] != case:
			continue
		if metric is not None and d["metric"] != metric:
			continue
		if tool is None or d["tool"] == tool or (prefix and d["tool"].startswith(tool)):
			return d
	return None


targets = []	# (workload, text, value, want, ok, how, short label)


def target(workload, case, text, value, op, limit, how, unit="ratio", short=""):
	if value is None:
		targets.append((workload, text, None, f"{op} {limit:g}", None, "not measured", short))
		return
	ok = value <= limit if op == "<=" else value >= limit
	targets.append((workload, text, value, f"{op} {limit:g}", ok, how, short))
	rows.append({"kind": "target", "workload": workload, "case": case, "tool": "dlock",
		     "metric": text, "unit": unit, "n": "", "median": f"{value:.2f}",
		     "min": "", "max": "", "x_flock": "", "x_best_peer": "",
		     "target": f"{op} {limit:g}", "met": "yes" if ok else "no"})


def med(d):
	return num(d["median"]) if d else None


def ratio(a, b):
	return a / b if a is not None and b else None


# W1: dlock K true (tcp) against flock, and against etcdctl lock
W1 = "uncontended, 1 server"
dl = med(find("W1", "dlock K true (tcp)"))
target("W1", W1, "dlock K true (tcp) / flock FILE true, median wall time",
       ratio(dl, med(find("W1", "flock FILE true"))), "<=", 1.2, "median over median",
       short="W1 x flock")
target("W1", W1, "etcdctl lock K true / dlock K true (tcp): times faster",
       ratio(med(find("W1", "etcdctl lock K true")), dl), ">=", 5, "median over median",
       short="W1 vs etcdctl")
# W2: sections/s at 4 and 16 workers against flock's
for d in rows:
	if d["kind"] == "measure" and d["workload"] == "W2" and d["tool"] == "dlock" \
			and d["metric"] == "sections/s":
		f = med(find("W2", "flock", "sections/s", d["case"]))
		target("W2", d["case"], f"dlock / flock sections/s, {d['case']}",
		       ratio(med(d), f), ">=", 0.8, "median of rounds over median",
		       short=f"W2 {d['case'].split()[0]} workers")
# W3: acquire in RTTs; whole process against 3 RTTs (connect, acquire, release)
w3 = find("W3", "redis-cli --latency", "RTT floor")
rtt = med(w3)
acq = find("W3", "dlock -S x5 K CMD", "acquire: start to command ms")
case3 = w3["case"] if w3 else ""
target("W3", case3, "dlock -S x5 acquire, start to command, in RTTs",
       ratio(med(acq), rtt), "<=", 2, "median ms over the average RTT floor", "RTTs",
       short="W3 acquire")
target("W3", case3, "dlock -S x5 K true / 3 RTTs (connect+acquire+release floor)",
       ratio(med(find("W3", "dlock -S x5 K true", "wall ms")), 3 * rtt if rtt else None),
       "<=", 1.3, "median wall ms over 3 x the average RTT floor", short="W3 whole")
# W4: peak RSS
target("W4", "peak RSS", "dlock K true (tcp) peak RSS, MiB",
       (med(find("W4", "dlock K true (tcp)")) or 0) / 1024 or None, "<=", 2.5,
       "median of /usr/bin/time -f %M", "MiB", short="W4 RSS")
# W5: an idle waiter's cost to the server; every waiter done, none beside another
W5 = find("W5", "dlock", "idle requests/s per waiter")
case5 = W5["case"] if W5 else ""
target("W5", case5, "idle requests/s per waiter (one every few seconds)",
       med(W5), "<=", 0.5, "server requests over the idle window, per waiter",
       "1/s", short="W5 idle")
n5 = case5.split()[0] if case5 else ""
target("W5", case5, "waiters that did not finish",
       (float(n5) - med(find("W5", "dlock", "waiters finished"))) if n5.isdigit() and
       find("W5", "dlock", "waiters finished") else None, "<=", 0,
       "waiters less those that exited 0", "count", short="W5 unfinished")
target("W5", case5, "mutual-exclusion violations",
       med(find("W5", "dlock", "mutual-exclusion violations")), "<=", 0,
       "an acquire while another held, from the sections' log", "count",
       short="W5 overlaps")
# W6: warm, the interleaved ratio to the floor (a hand-written pair of
# scripts making the same durable writes and TTL refreshes, issue 22); the
# ratio to redis-py's Lock, which writes far less, is shown
w6 = find("W6", "dlock", "x floor (interleaved)", "warm: server usec per cycle")
target("W6", "warm: server usec per cycle", "dlock / the floor's server time per cycle, warm",
       med(w6), "<=", 1.2, "median over rounds of the same round's ratio", short="W6 warm")
for case in ("warm", "process"):
	w6r = find("W6", "dlock", "x redis-py (interleaved)", f"{case}: server usec per cycle")
	if w6r:
		targets.append(("W6", f"dlock / redis-py's Lock, {case}", med(w6r), "<= 3",
				med(w6r) <= 3, "shown, not judged", ""))

os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "results.csv"), "w", newline="") as f:
	w = csv.DictWriter(f, COLUMNS, extrasaction="ignore", lineterminator="\n")
	w.writeheader()
	for d in rows:
		w.writerow(d)

# --- summary.md -------------------------------------------------------------
machine = ""
mpath = os.path.join(out, "machine.txt")
if os.path.exists(mpath):
	with open(mpath) as f:
		machine = f.read().strip()


def fmt(x):
	v = num(x)
	if v is None:
		return x or ""
	if v >= 100:
		return f"{v:.0f}"
	if v >= 10:
		return f"{v:.1f}"
	return f"{v:.2f}"


lines = []
if machine:
	lines += ["Machine: " + machine.replace("\n", "; "), ""]
lines += ["| workload | case | tool | metric | n | median | min | max | x flock | x best peer |",
	  "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
for d in rows:
	if d["kind"] != "measure" or d["workload"] == "W6 profile":
		continue
	lines.append(f"| {d['workload']} | {d['case']} | {d['tool']} | {d['metric']} | {d['n']} | "
		     f"{fmt(d['median'])} | {fmt(d['min'])} | {fmt(d['max'])} | "
		     f"{d['x_flock']} | {d['x_best_peer']} |")
lines += ["", "| target | measured | goal | met |", "| --- | ---: | ---: | --- |"]
for wl, text, value, want, ok, how, _ in targets:
	v = "-" if value is None else f"{value:.2f}"
	m = "-" if ok is None else ("yes" if ok else "**no**")
	if how == "shown, not judged":
		m = "(not judged)"
	lines.append(f"| {wl}: {text} | {v} | {want} | {m} |")
w5 = [d for d in rows if d["workload"] == "W5"]
if not w5:
	lines += ["", "W5: no results (tests/bench/waiters.sh missing, failed, or writes no CSV lines)."]
prof = [d for d in rows if d["workload"] == "W6 profile" and d["case"] != "cycle"]
if prof:
	lines += ["", "| W6 profile: script | variant | usec per call, median | min | max |",
		  "| --- | --- | ---: | ---: | ---: |"]
	for d in prof:
		lines.append(f"| {d['case']} | {d['tool']} | {fmt(d['median'])} | {fmt(d['min'])} | "
			     f"{fmt(d['max'])} |")
cyc = {}
for d in rows:
	if d["workload"] == "W6 profile" and d["case"] == "cycle":
		cyc.setdefault(d["tool"], {})[d["unit"]] = d["median"]
if cyc:
	lines += ["", "| W6 whole cycle (acquire + release medians) | usec | x redis-py warm |",
		  "| --- | ---: | ---: |"]
	for name, v in cyc.items():
		lines.append(f"| {name} | {fmt(v.get('us'))} | {v.get('ratio', '')} |")
summary = "\n".join(lines) + "\n"
with open(os.path.join(out, "summary.md"), "w") as f:
	f.write(summary)
print(summary)

# --- the plot -----------------------------------------------------------------
gnuplot = shutil.which("gnuplot")
if not gnuplot:
	print("report.py: no gnuplot (apt-get install gnuplot-nox): no plot", file=sys.stderr)
	sys.exit(0)
pdir = os.path.join(out, "plot")
os.makedirs(pdir, exist_ok=True)
SHORT = {
	"dlock K true (tcp)": "dlock tcp", "dlock K true (unix)": "dlock unix",
	"flock FILE true": "flock", "redis-cli SET NX+EVAL": "redis-cli",
	"etcdctl lock K true": "etcdctl", "redis-py Lock K true": "redis-py",
	"etcdctl lock": "etcdctl", "redis-py lock": "redis-py",
	"redis-cli poll": "redis-cli poll", "redis-cli PING (1 node)": "PING 1 node",
	"dlock K true (1 node)": "dlock 1 node", "dlock -S x5 K true": "dlock x5",
	"redis-cli x5 sequential": "redis-cli x5", "node-redlock whole.js": "node-redlock",
	"date (exec floor)": None, "dlock -S x5 K date": None,
}
COLOR = {"self": "0xd62728", "base": "0x1f77b4", "floor": "0xbbbbbb", "peer": "0x7f7f7f",
	 "met": "0x2ca02c", "missed": "0xff7f0e"}
ORDER = {"floor": 0, "base": 1, "self": 2, "peer": 3}


def dat(name, items):
	"""items: (label, median, min, max, role) -> data file; how many"""
	path = os.path.join(pdir, name + ".dat")
	with open(path, "w") as f:
		for label, m, lo, hi, r in items:
			f.write(f'"{label}" {m} {lo} {hi} {COLOR[r]}\n')
	return len(items)


def pick(workload, metric, case=None, scale=1.0):
	items = []
	for d in rows:
		if d["kind"] != "measure" or d["workload"] != workload or d["metric"] != metric:
			continue
		if case is not None and d["case"] != case:
			continue
		label = SHORT.get(d["tool"], d["tool"])
		if label is None or num(d["median"]) is None:
			continue
		lo, hi = num(d["min"]), num(d["max"])
		m = num(d["median"]) * scale
		items.append((label, m, (lo if lo is not None else m / scale) * scale,
			      (hi if hi is not None else m / scale) * scale, role(d["tool"])))
	return items


panels = []	# (title, file, ylabel, log)
if dat("w1", pick("W1", "wall ms")):
	panels.append(("W1: one lock around true, 1 server (median; bars min..max)", "w1",
		       "ms per run", True))
w2 = []
for d in rows:
	if d["kind"] == "measure" and d["workload"] == "W2" and d["metric"] == "sections/s":
		label = SHORT.get(d["tool"], d["tool"]) + " " + d["case"].split()[0] + "w"
		w2.append((label, num(d["median"]), num(d["min"]), num(d["max"]), role(d["tool"])))
w2.sort(key=lambda x: (int(x[0].split()[-1][:-1]), ORDER[x[4]]))
if dat("w2", w2):
	panels.append(("W2: contended handoff, 4 and 16 workers", "w2", "sections/s", True))
if dat("w3", pick("W3", "wall ms")):
	panels.append((f"W3: RedLock, 5 nodes, RTT {rtt or 0:.1f} ms: whole process", "w3",
		       "ms per run", True))
if dat("w4", pick("W4", "peak RSS", scale=1 / 1024)):
	panels.append(("W4: peak RSS", "w4", "MiB", True))
w6 = []
for d in rows:
	if d["kind"] == "measure" and d["workload"] == "W6" and d["metric"] == "server time":
		way = d["case"].split(":")[0]
		w6.append((f"{d['tool']} {way}", num(d["median"]), num(d["min"]), num(d["max"]),
			   role(d["tool"])))
if dat("w6", w6):
	panels.append(("W6: Redis server time per acquire+release", "w6", "usec per cycle", True))
tg = []
for wl, text, value, want, ok, how, short in targets:
	if value is None or how == "shown, not judged":
		continue
	op, lim = want.split()
	lim = float(lim)
	if lim == 0:	# a count that must be 0: in the table, no ratio to draw
		continue
	rel = value / lim if op == "<=" else lim / value	# <= 1: met
	tg.append((short or wl, rel, rel, rel, "met" if ok else "missed"))
if dat("targets", tg):
	panels.append(("targets: measured / goal (<= 1: met, green)", "targets",
		       "of the goal", False))

cols = 3
nrows = math.ceil(len(panels) / cols)
mlines = machine.splitlines()
title = "\\n".join(mlines[i] for i in (0, 2) if i < len(mlines))
gp = [f'set terminal pngcairo size 1500,{430 * nrows} font "DejaVu Sans,10"',
      f'set output "{os.path.join(os.path.abspath(out), "results.png")}"',
      f'set multiplot layout {nrows},{cols} title "dlock benchmarks (tests/bench/run)\\n{title}"',
      "set style fill solid 0.8 border -1", "set boxwidth 0.7", "set grid ytics",
      "set xtics rotate by -35 left noenhanced", "set key off", "set bmargin 6",
      "set title noenhanced"]
for ptitle, f, ylabel, log in panels:
	path = os.path.join(pdir, f + ".dat")
	gp.append(f'set title "{ptitle}"')
	gp.append(f'set ylabel "{ylabel}"')
	gp.append("set logscale y" if log else "unset logscale y")
	gp.append("set yrange [*:*]" if log else "set yrange [0:*]")
	extra = ", 1 with lines lc rgb 'black' dt 2" if f == "targets" else ""
	gp.append(f'plot "{path}" using 0:2:5:xtic(1) with boxes lc rgb variable, '
		  f'"" using 0:2:3:4 with yerrorbars lc rgb "black" pt 0{extra}')
gp.append("unset multiplot")
with open(os.path.join(pdir, "plot.gp"), "w") as f:
	f.write("\n".join(gp) + "\n")
r = subprocess.run([gnuplot, os.path.join(pdir, "plot.gp")], capture_output=True, text=True)
if r.returncode != 0:
	print(f"report.py: gnuplot failed: {r.stderr.strip()[:500]}", file=sys.stderr)
	sys.exit(1)
print(f"plot: {os.path.join(out, 'results.png')}")
