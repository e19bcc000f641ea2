"""Readers for the result files dspark-sim writes (no plotting here; standard library only).

Every reader returns plain Python data, or raises InputError naming the file and field that is
missing or malformed. Nothing here reruns anything.
"""

import csv
import json
import math
import os

# Display order and names of the axes (docs/design.md sections 3 and 4). The implementations are not
# listed here: every result file's meta.impls carries them (ImplRegistry below).
MODES = ["none", "dspark", "adaptive"]
CASES = [
    "prefill",
    "chunked_prefill",
    "mixed",
    "decode",
    "dspark_verify",
    "dspark_adaptive_verify",
    "dspark_draft",
    "dspark_adaptive_draft",
]
CASE_TITLES = {
    "prefill": "Prefill",
    "chunked_prefill": "Chunked prefill",
    "mixed": "Mixed",
    "decode": "Decode",
    "dspark_verify": "DSpark verification",
    "dspark_adaptive_verify": "DSpark adaptive verification",
    "dspark_draft": "DSpark draft",
    "dspark_adaptive_draft": "DSpark adaptive draft",
}
MODE_TITLES = {"none": "No DSpark", "dspark": "DSpark", "adaptive": "DSpark + adaptive"}
# The three kinds of metadata difference, never folded into each other (docs/design.md section 6).
MISMATCH_KINDS = ["stale_host", "padding_residue", "bug"]


# vLLM `bench serve`'s result keys, the one spelling of summary.json, sweep rows and sweep.csv
# (sim/observe/serving_result.h ServingColumns(); tests/test_run_conventions.cc checks the two lists are
# equal). Latencies in ms, throughputs per second, duration in s.
SERVING_COLUMNS = [
    "completed", "failed", "total_input_tokens", "total_output_tokens", "duration",
    "request_throughput", "request_goodput", "output_throughput", "total_token_throughput",
    "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p50_ttft_ms", "p90_ttft_ms", "p99_ttft_ms",
    "mean_tpot_ms", "median_tpot_ms", "std_tpot_ms", "p50_tpot_ms", "p90_tpot_ms", "p99_tpot_ms",
    "mean_itl_ms", "median_itl_ms", "std_itl_ms", "p50_itl_ms", "p90_itl_ms", "p99_itl_ms",
    "mean_e2el_ms", "median_e2el_ms", "std_e2el_ms", "p50_e2el_ms", "p90_e2el_ms", "p99_e2el_ms",
]
# Sweep rows written before the keys were vLLM's (result schema 1 of 2026-11): renamed on read,
# so that older result folders still plot. Nothing writes these names any more.
LEGACY_ROW_NAMES = {
    "output_throughput_tok_s": "output_throughput",
    "request_throughput_req_s": "request_throughput",
    "total_token_throughput_tok_s": "total_token_throughput",
    "duration_s": "duration",
}
for _metric in ("ttft", "tpot", "itl", "e2el"):
    LEGACY_ROW_NAMES[f"{_metric}_ms_mean"] = f"mean_{_metric}_ms"
    LEGACY_ROW_NAMES[f"{_metric}_ms_median"] = f"median_{_metric}_ms"
    for _p in ("p90", "p99"):
        LEGACY_ROW_NAMES[f"{_metric}_ms_{_p}"] = f"{_p}_{_metric}_ms"


def upgrade_row(row):
    """A sweep row with the legacy metric names renamed to SERVING_COLUMNS' names."""
    return {LEGACY_ROW_NAMES.get(k, k): v for k, v in row.items()}


class InputError(Exception):
    """A result file is absent or does not hold what the plot needs."""


def ordered(values, canonical):
    """`values` in the order of `canonical`, unknown ones after, alphabetically."""
    values = set(values)
    return [v for v in canonical if v in values] + sorted(v for v in values if v not in canonical)


def _load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from e
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from e


def _load_csv(path):
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from e


def _number(value, where):
    try:
        return float(value)
    except (TypeError, ValueError) as e:
        raise InputError(f"{where}: expected a number, got {value!r}") from e


# ---- The implementation registry of the result files (meta.impls) ----

ROLE_TITLES = {"baseline": "baseline", "vllm-state": "", "seed-before": "seed Before",
               "seed-after": "seed After", "own": "own", "user": "user"}
REGISTRY_FIELDS = ("name", "aliases", "role", "order", "color", "hatch", "marker")
# Colours for names no file's registry holds (results of a build that registered more
# implementations than the one whose meta was read): any unused one, never a name's own.
_SPARE_COLORS = ["#7f7f7f", "#bcbd22", "#8c564b", "#17becf", "#9467bd", "#e377c2", "#2ca02c", "#1f77b4",
                 "#ff7f0e", "#d62728"]
_SPARE_MARKERS = ["x", "+", "1", "2", "3", "4", "|", "_"]


class ImplRegistry:
    """Every implementation a result file's meta.impls names: its order, role, vLLM state,
    colour, hatch and marker, as dspark-sim's registry (kernels/suite/impl_registry.h) gave
    them. Several files merge by name (the first file's entry wins)."""

    def __init__(self):
        self.entries = {}   # canonical name -> entry
        self.aliases = {}   # alias -> canonical name
        self.sources = []   # files whose meta.impls was read
        self._spare = {}    # names without an entry -> (colour, marker)

    def add_meta(self, meta, path):
        """Merges meta["impls"] of one result file; a file without one adds nothing."""
        if not isinstance(meta, dict) or "impls" not in meta:
            return self
        impls = meta["impls"]
        if not isinstance(impls, list):
            raise InputError(f"{path}: meta.impls must be a list of implementations")
        for i, entry in enumerate(impls):
            if not isinstance(entry, dict):
                raise InputError(f"{path}: meta.impls[{i}] must be an object")
            for key in REGISTRY_FIELDS:
                if key not in entry:
                    raise InputError(f"{path}: meta.impls[{i}] has no '{key}'")
            if entry["name"] not in self.entries:
                self.entries[entry["name"]] = entry
                for alias in entry.get("aliases") or []:
                    self.aliases.setdefault(alias, entry["name"])
        self.sources.append(path)
        return self

    def __bool__(self):
        return bool(self.entries)

    def canonical(self, name):
        return name if name in self.entries else self.aliases.get(name, name)

    def entry(self, name):
        return self.entries.get(self.canonical(name))

    def ordered(self, names):
        """`names` in the registry's order; names it does not hold after, alphabetically."""
        names = set(names)
        known = sorted((n for n in names if self.entry(n)), key=lambda n: (self.entry(n)["order"], n))
        return known + sorted(n for n in names if not self.entry(n))

    def _spare_for(self, name):
        if name not in self._spare:
            used = {e["color"].lower() for e in self.entries.values()} | {c for c, _ in self._spare.values()}
            color = next((c for c in _SPARE_COLORS if c not in used), "#7f7f7f")
            marker = _SPARE_MARKERS[len(self._spare) % len(_SPARE_MARKERS)]
            self._spare[name] = (color, marker)
        return self._spare[name]

    def color(self, name):
        e = self.entry(name)
        return e["color"] if e else self._spare_for(name)[0]

    def hatch(self, name):
        e = self.entry(name)
        return e["hatch"] if e else ""

    def marker(self, name):
        e = self.entry(name)
        return e["marker"] if e else self._spare_for(name)[1]

    def role(self, name):
        e = self.entry(name)
        return e["role"] if e else None

    def with_role(self, role):
        """The first implementation (in order) whose role is `role`; None when none has it."""
        for name in self.ordered(self.entries):
            if self.entries[name]["role"] == role:
                return name
        return None

    @property
    def baseline(self):
        return self.with_role("baseline")

    def baseline_of(self, names):
        """The baseline among `names`: the registry's baseline when one of them, else (a DeepSeek-V4
        sweep, whose states exclude it) the first of them in order that is vLLM's state (a); None
        when neither is there."""
        names = set(names)
        if self.baseline in names:
            return self.baseline
        for name in self.ordered(names):
            e = self.entry(name)
            if e and str(e.get("vllm_state") or "").startswith("(a)"):
                return name
        return None

    def label(self, name):
        """Legend text: the name, its vLLM state's letter and its role, e.g.
        "vllm-pre56562 (c), seed Before"."""
        e = self.entry(name)
        if not e:
            return name
        state = (e.get("vllm_state") or "").split(" ")[0]
        role = ROLE_TITLES.get(e["role"], e["role"])
        return ", ".join(p for p in (f"{name} {state}".strip(), role) if p)

    def why_no_baseline(self):
        if not self.entries:
            return ("the result files carry no implementation registry (meta.impls; written by an older "
                    "dspark-sim), so no implementation is known to be the baseline")
        return f"no implementation in {', '.join(self.sources)} has the role baseline"


def read_meta(path):
    """The meta block of a JSON result file ({} when it has none)."""
    doc = _load_json(path)
    return doc.get("meta", {}) if isinstance(doc, dict) else {}


def registry_of(*paths):
    """The merged meta.impls of the given result files (absent files are passed over)."""
    reg = ImplRegistry()
    for path in paths:
        if path and os.path.isfile(path):
            reg.add_meta(read_meta(path), path)
    return reg


# ---- Finding result folders ----


def find_results(root):
    """Folders under `root` (itself included) holding a sweep, a run or a bench result.

    Returns {"sweep": [...], "run": [...], "bench": [...]}, shallowest first. Runs inside a
    sweep's points/ folder are not listed as runs.
    """
    found = {"sweep": [], "run": [], "bench": []}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if "sweep.jsonl" in filenames:
            found["sweep"].append(dirpath)
            # points/ holds the points' own runs; vllm/ holds vLLM's sweep-plotter file (a list of
            # runs, not a run folder)
            for skip in ("points", "vllm"):
                if skip in dirnames:
                    dirnames.remove(skip)
        if "summary.json" in filenames:
            found["run"].append(dirpath)
        if "bench.json" in filenames:
            found["bench"].append(dirpath)
    for kind in found:
        found[kind].sort(key=lambda p: (p.count(os.sep), p))
    return found


# ---- sweep.jsonl ----


def read_sweep(folder):
    """Rows of folder/sweep.jsonl, one per point id ("ok" beats "skipped" beats "failed").

    A last line cut short by a killed sweep is ignored, as `sweep --resume` does.
    """
    path = os.path.join(folder, "sweep.jsonl")
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})") from e
    rank = {"ok": 0, "skipped": 1}
    best = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            if number >= len(lines) - 1:
                continue  # cut short by a kill
            raise InputError(f"{path}:{number}: not a sweep row ({e.msg})") from e
        if not isinstance(row, dict) or "point_id" not in row:
            raise InputError(f"{path}:{number}: a sweep row needs a point_id")
        row = upgrade_row(row)
        _check_row(row, f"{path}:{number}")
        pid = row["point_id"]
        if pid not in best or rank.get(row.get("status"), 2) < rank.get(best[pid].get("status"), 2):
            best[pid] = row
    return sorted(best.values(), key=lambda r: (r.get("index", 0), r["point_id"]))


ROW_TEXT_FIELDS = ("point_id", "workload", "mode", "impl")
ROW_INT_FIELDS = ("concurrency", "batch_size", "num_requests")


def _check_row(row, where):
    """An InputError naming the line and the field when a row's field has the wrong type, or a
    metric of an "ok" row is not a finite number (null is allowed: vLLM writes it for no value)."""
    for key in ROW_TEXT_FIELDS:
        if key in row and not isinstance(row[key], str):
            raise InputError(f"{where}: field '{key}': expected a string, got {row[key]!r}")
    for key in ROW_INT_FIELDS:
        if key in row and row[key] is not None and (isinstance(row[key], bool) or not isinstance(row[key], int)):
            raise InputError(f"{where}: field '{key}': expected an integer, got {row[key]!r}")
    if row.get("status") != "ok":
        return
    for key in ("workload", "mode", "impl", "concurrency", "batch_size"):
        if key not in row:
            raise InputError(f"{where}: field '{key}': missing from an ok row")
    for key in SERVING_COLUMNS:
        v = row.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise InputError(f"{where}: field '{key}': expected a finite number or null, got {v!r}")


def ok_rows(rows):
    return [r for r in rows if r.get("status") == "ok"]


def sweep_groups(rows):
    """Groups of ok rows that differ only in concurrency, mode and impl.

    Returns [(title, slug, rows)], one per (workload, batch size), split further by request
    count only when a (concurrency, mode, impl) occurs twice (an explicit --num-requests list).
    """
    by_key = {}
    for r in ok_rows(rows):
        by_key.setdefault((r.get("workload", "?"), r.get("batch_size")), []).append(r)
    groups = []
    for (workload, batch), members in sorted(by_key.items(), key=lambda kv: (str(kv[0][0]), kv[0][1] or 0)):
        seen = {}
        for r in members:
            seen.setdefault((r.get("concurrency"), r.get("mode"), r.get("impl")), []).append(r)
        if all(len(v) == 1 for v in seen.values()):
            groups.append((f"{workload}, max_num_seqs {batch}", f"{workload}_b{batch}", members))
            continue
        by_n = {}
        for r in members:
            by_n.setdefault(r.get("num_requests"), []).append(r)
        for n, sub in sorted(by_n.items(), key=lambda kv: kv[0] or 0):
            groups.append((f"{workload}, max_num_seqs {batch}, {n} requests", f"{workload}_b{batch}_n{n}", sub))
    return groups


# ---- A run folder ----


def read_summary(folder):
    """summary.json, its sections checked to be objects (the one-run plots read inside them)."""
    path = os.path.join(folder, "summary.json")
    summary = _load_json(path)
    if not isinstance(summary, dict):
        raise InputError(f"{path}: expected a JSON object, got {type(summary).__name__}")
    for key in ("metrics", "config", "workload", "meta", "scheduler"):
        if key in summary and not isinstance(summary[key], dict):
            raise InputError(f"{path}: field '{key}': expected an object, got {summary[key]!r:.60}")
    metrics = summary.get("metrics", {})
    for key in ("speculative",):
        if key in metrics and not isinstance(metrics[key], dict):
            raise InputError(f"{path}: field 'metrics.{key}': expected an object, got {metrics[key]!r:.60}")
    return summary


def read_steps(folder):
    """steps.csv as columns: start_s, num_reqs_real, num_reqs, num_tokens_real, num_tokens, case."""
    path = os.path.join(folder, "steps.csv")
    rows = _load_csv(path)
    need = ["start_s", "num_reqs_real", "num_reqs", "num_tokens_real", "num_tokens", "case"]
    if rows and any(k not in rows[0] for k in need):
        missing = [k for k in need if k not in rows[0]]
        raise InputError(f"{path}: missing columns {', '.join(missing)}")
    out = {k: [] for k in need}
    for i, row in enumerate(rows, start=2):
        for k in need[:-1]:
            out[k].append(_number(row[k], f"{path}:{i}: {k}"))
        out["case"].append(row["case"])
    return out


def read_acceptance_lengths(folder):
    """Per-request acceptance lengths (1 + accepted / verifications) of requests that verified.

    requests.csv is the only file with per-request acceptance (steps.csv has none).
    """
    path = os.path.join(folder, "requests.csv")
    rows = _load_csv(path)
    if rows and ("acceptance_length" not in rows[0] or "verifications" not in rows[0]):
        raise InputError(f"{path}: missing the acceptance_length / verifications columns")
    lengths = []
    for i, row in enumerate(rows, start=2):
        if _number(row["verifications"], f"{path}:{i}: verifications") > 0:
            lengths.append(_number(row["acceptance_length"], f"{path}:{i}: acceptance_length"))
    return lengths


def metadata_check_by_case(summary, path="summary.json"):
    """{impl: {case: {kind: count}}} from summary.json's metadata_check section.

    Accepted shape: metadata_check = {"impls": {impl: {"by_case": {case: {"stale_host": n,
    "padding_residue": n, "bug": n}}}}}, with or without the "impls" level. Raises InputError
    when the section is absent or holds no per-case counts (e.g. the run had --no-check).
    """
    section = summary.get("metadata_check")
    if not isinstance(section, dict):
        why = f"it says: {section!r}" if isinstance(section, str) else "it is absent"
        raise InputError(f"{path}: no metadata_check counts ({why})")
    per_impl = section.get("impls", section)
    out = {}
    for impl, entry in per_impl.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("by_case"), dict):
            continue
        out[impl] = {}
        for case, counts in entry["by_case"].items():
            if isinstance(counts, dict):
                out[impl][case] = {k: int(counts.get(k, 0) or 0) for k in MISMATCH_KINDS}
    if not out:
        raise InputError(f"{path}: metadata_check has no per-implementation by_case counts")
    return out


# ---- bench.json ----


def read_bench_tables(folder):
    """bench.md: the tables bench printed and wrote beside bench.json (its one renderer)."""
    path = os.path.join(folder, "bench.md")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror}); bench writes it beside bench.json") from e
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from e


def read_bench(folder):
    """bench.json, checked against the schema in plots/README.md."""
    path = os.path.join(folder, "bench.json")
    bench = _load_json(path)
    if not isinstance(bench, dict):
        raise InputError(f"{path}: expected an object at the top level")
    metadata = bench.get("metadata", [])
    if not isinstance(metadata, list):
        raise InputError(f"{path}: 'metadata' must be a list")
    for i, entry in enumerate(metadata):
        for key in ("case", "impl", "method", "gpu_us_median"):
            if key not in entry:
                raise InputError(f"{path}: metadata[{i}] has no '{key}'")
        if entry["method"] not in ("graph", "eager"):
            raise InputError(f"{path}: metadata[{i}].method must be graph or eager, got {entry['method']!r}")
        _number(entry["gpu_us_median"], f"{path}: metadata[{i}].gpu_us_median")
    tpot = bench.get("tpot", [])
    if not isinstance(tpot, list):
        raise InputError(f"{path}: 'tpot' must be a list")
    for i, entry in enumerate(tpot):
        for key in ("mode", "impl", "tpot_ms"):
            if key not in entry:
                raise InputError(f"{path}: tpot[{i}] has no '{key}'")
    floor = bench.get("floor_us", {})
    if not isinstance(floor, dict):
        raise InputError(f"{path}: 'floor_us' must be an object {{graph: us, eager: us}}")
    return bench


def bench_methods(bench):
    return ordered({e["method"] for e in bench.get("metadata", [])}, ["graph", "eager"])


def bench_table(bench, method, field):
    """{case: {impl: value}} of one metadata field for one method (entries lacking it skipped)."""
    table = {}
    for e in bench.get("metadata", []):
        if e["method"] == method and e.get(field) is not None:
            table.setdefault(e["case"], {})[e["impl"]] = e[field]
    return table
