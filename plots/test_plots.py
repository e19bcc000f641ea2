#!/usr/bin/env python3
"""Plot tests (CTest `plots_make_all`): plot_all.py on result files that dspark-sim writes here.

    python3 plots/test_plots.py [PATH/TO/dspark-sim]      (default: $DSPARK_SIM, else build/dspark-sim)

The test runs the binary into a temporary folder with tiny workloads: a sweep over every
implementation (its points check every implementation), a run, and verify --json. bench needs a
GPU, so its bench.json is made here: its meta is the run's (the binary's registry) and its rows
are invented, one per implementation the registry names. Then plot_all.py makes the plots and
the test checks that:
  - every expected PNG and SVG (and Markdown table) exists and is what its extension says; bench's
    tables are its bench.md, copied as they are;
  - every implementation has its own colour, and each plot draws each one in that colour;
  - the vs-baseline plot is drawn against the implementation whose role is baseline;
  - the one-run plots of a sweep come from its adaptive point of the seed's After at the
    highest concurrency;
  - absent or malformed inputs are skipped or reported with the reason.
Exits non-zero on any failure, including a missing matplotlib (scripts/deps.sh installs it) or
a missing binary.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PLOT_ALL = os.path.join(HERE, "plot_all.py")
sys.path.insert(0, HERE)
import results_io as rio  # noqa: E402

BINARY = None
WORK = None  # the results the binary wrote, shared by the tests (made once)
SMALL_RUN = ["--num-requests", "6", "--max-model-len", "1536", "--max-num-batched-tokens", "1024", "--seed", "3",
             "--progress", "none"]


def dspark(*args):
    p = subprocess.run([BINARY, *args], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise AssertionError(f"dspark-sim {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


def setUpModule():
    global WORK
    WORK = tempfile.mkdtemp(prefix="dspark_plots_")
    results = os.path.join(WORK, "results")
    dspark("sweep", "--workload", "chat", "--concurrency", "1,4", "--batch-size", "8", "--num-requests", "6",
           "--mode", "dspark,adaptive", "--time-impl", "all", "--impl", "all", "--out",
           os.path.join(results, "sweep"), "--progress", "none", "--max-model-len", "1536",
           "--max-num-batched-tokens", "1024")
    dspark("run", "--workload", "chat", "--concurrency", "4", "--max-num-seqs", "4", "--mode", "adaptive",
           "--impl", "all", "--out", os.path.join(results, "run"), *SMALL_RUN)
    dspark("verify", "--cases", "decode,adaptive_verify", "--batch", "3", "--seeds", "1", "--progress", "none",
           "--json", os.path.join(WORK, "verify.json"))
    with open(os.path.join(results, "run", "summary.json"), encoding="utf-8") as f:
        meta = json.load(f)["meta"]
    os.makedirs(os.path.join(results, "bench"))
    with open(os.path.join(results, "bench", "bench.json"), "w", encoding="utf-8") as f:
        json.dump(synthetic_bench(meta), f)
    with open(os.path.join(results, "bench", "bench.md"), "w", encoding="utf-8") as f:
        f.write(SYNTHETIC_BENCH_MD)


def tearDownModule():
    shutil.rmtree(WORK, ignore_errors=True)


# bench's tables are bench's own (it prints them and writes bench.md); plot_all copies the file
# as it is, so the test's stands in for it: not a table plot_all could have rendered.
SYNTHETIC_BENCH_MD = "# dspark-sim bench\n\n| Case | x (µs) |\n|---|---:|\n| decode | 1.00 |\n\nsynthetic\n"


def synthetic_bench(meta):
    """A bench.json in the schema of plots/README.md for each implementation of `meta`'s
    registry: invented numbers (not a measurement), the binary's meta."""
    impls = [e["name"] for e in meta["impls"]]
    base = next(e["name"] for e in meta["impls"] if e["role"] == "baseline")
    rows, tpot = [], []
    for c, case in enumerate(("prefill", "decode", "dspark_adaptive_verify")):
        for k, impl in enumerate(impls):
            for method, extra in (("graph", 0.0), ("eager", 5.0)):
                base_us = 100.0 + 20 * c + extra
                us = base_us * (1.0 - 0.6 * k / len(impls))  # positive however many implementations
                rows.append({"case": case, "impl": impl, "method": method, "gpu_us_median": us,
                             "gpu_us_p10": us * 0.95, "gpu_us_p90": us * 1.05, "samples": 50, "launches": 2 + 3 * (len(impls) - k),
                             "speedup_vs_chain": base_us / us if impl != base else 1.0,
                             "stale_host": 2 if k == 0 and c == 2 else 0, "padding_residue": 1 if k < 3 else 0,
                             "bug": 0})
    for m, mode in enumerate(("none", "dspark", "adaptive")):
        for k, impl in enumerate(impls):
            tpot.append({"mode": mode, "impl": impl, "tpot_ms": 10.0 - m - 0.2 * k})
    meta = dict(meta, tool="plots/test_plots.py: synthetic bench rows, the binary's meta")
    return {"meta": meta, "floor_us": {"graph": 2.8, "eager": 4.3}, "metadata": rows, "tpot": tpot}


def run_plot_all(*args):
    return subprocess.run([sys.executable, PLOT_ALL, *args], capture_output=True, text=True, check=False)


def ran_impls():
    """The implementations the test's sweep ran, in the registry's order: the DeepSeek-V4.1 ones
    (the registry also holds DeepSeek-V4's, which a V4.1 run does not run)."""
    dspark("verify", "--model", "v4.1", "--json", os.path.join(WORK, "verify_v41.json"))
    with open(os.path.join(WORK, "verify_v41.json"), encoding="utf-8") as f:
        return list(json.load(f)["seed_cases"])


def registry(path):
    return rio.ImplRegistry().add_meta(rio.read_meta(path), path)


class PlotTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dspark_plots_case_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def assert_figure(self, out_dir, stem):
        for ext, magic in (("png", b"\x89PNG\r\n\x1a\n"), ("svg", b"<svg")):
            path = os.path.join(out_dir, f"{stem}.{ext}")
            self.assertTrue(os.path.isfile(path), f"missing {path}")
            self.assertGreater(os.path.getsize(path), 1000, f"{path} is (nearly) empty")
            with open(path, "rb") as f:
                head = f.read(4096)
            if ext == "png":
                self.assertTrue(head.startswith(magic), f"{path} is not a PNG")
            else:
                self.assertIn(magic, head, f"{path} is not an SVG")

    def svg(self, out_dir, stem):
        with open(os.path.join(out_dir, f"{stem}.svg"), encoding="utf-8") as f:
            return f.read().lower()


class ResultFilesTest(PlotTestCase):
    """What the plots rely on in the files the binary wrote."""

    def test_every_result_file_carries_the_registry(self):
        results = os.path.join(WORK, "results")
        paths = [os.path.join(results, "sweep", "sweep_meta.json"), os.path.join(results, "run", "summary.json"),
                 os.path.join(WORK, "verify.json")]
        point = next(r for r in rio.ok_rows(rio.read_sweep(os.path.join(results, "sweep"))))
        paths.append(os.path.join(results, "sweep", point["out"], "summary.json"))
        names = None
        for path in paths:
            reg = registry(path)
            self.assertTrue(reg, f"{path}: no meta.impls")
            order = reg.ordered(reg.entries)
            if names is None:
                names = order
            self.assertEqual(order, names, f"{path}: another registry")
        self.assertGreaterEqual(len(names), 2)

    def test_every_implementation_has_its_own_colour_and_one_is_the_baseline(self):
        reg = registry(os.path.join(WORK, "results", "run", "summary.json"))
        colors = [reg.color(n).lower() for n in reg.entries]
        self.assertEqual(len(set(colors)), len(colors), f"implementations share a colour: {colors}")
        for color in colors:
            self.assertRegex(color, r"^#[0-9a-f]{6}$")
        markers = [reg.marker(n) for n in reg.entries]
        self.assertEqual(len(set(markers)), len(markers), f"implementations share a marker: {markers}")
        self.assertIsNotNone(reg.baseline)
        self.assertIsNotNone(reg.with_role("seed-after"))
        # An alias names the same implementation.
        for name, entry in reg.entries.items():
            for alias in entry["aliases"]:
                self.assertEqual(reg.canonical(alias), name)

    def test_a_deepseek_v4_group_is_against_its_state_a(self):
        reg = registry(os.path.join(WORK, "results", "run", "summary.json"))
        # A DeepSeek-V4.1 group holds the registry's baseline; a DeepSeek-V4 group (its states
        # only) is against its state (a), the first of them in order.
        self.assertEqual(reg.baseline_of(set(reg.entries)), reg.baseline)
        v4 = {"vllm-0.27", "vllm-0.29", "vllm-0.24"}
        self.assertEqual(reg.baseline_of(v4), "vllm-0.24")
        self.assertIsNone(reg.baseline_of({"vllm-0.29", "fused-suite"}))

    def test_sweep_rows_name_registered_implementations(self):
        reg = registry(os.path.join(WORK, "results", "sweep", "sweep_meta.json"))
        impls = {r["impl"] for r in rio.ok_rows(rio.read_sweep(os.path.join(WORK, "results", "sweep")))}
        # every implementation of the model the sweep ran (DeepSeek-V4.1): all registered ones but
        # those of DeepSeek-V4 alone, which `verify --model v4` lists
        self.assertLessEqual(impls, set(reg.entries))
        self.assertEqual(impls, set(ran_impls()))


class AllPlotsTest(PlotTestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = tempfile.mkdtemp(prefix="dspark_plots_all_")
        cls.results = os.path.join(WORK, "results")
        cls.result = run_plot_all(cls.results, "--out", cls.out)
        cls.reg = registry(os.path.join(cls.results, "run", "summary.json"))
        cls.slug = "chat_b8"
        cls.ran = ran_impls()
        cls.figures = ["metadata_gpu_us", "launches_per_suite", "stale_host_divergence_bench", "tpot_by_mode",
                       f"serving_vs_concurrency_{cls.slug}", f"serving_vs_baseline_{cls.slug}", "steps_over_time",
                       "acceptance_length", "stale_host_divergence_run"]
        cls.tables = ["bench.md", "serving_tables.md"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def test_matplotlib_is_installed(self):
        import matplotlib  # noqa: F401  (an ImportError fails this test: run scripts/deps.sh)

    def test_every_plot_is_made(self):
        self.assertEqual(self.result.returncode, 0, self.result.stdout + self.result.stderr)
        self.assertNotIn("skipped", self.result.stdout)
        for stem in self.figures:
            self.assert_figure(self.out, stem)
        produced = sorted(os.listdir(self.out))
        expected = sorted([f"{s}.{e}" for s in self.figures for e in ("png", "svg")] + self.tables)
        self.assertEqual(produced, expected)

    def test_each_implementation_is_drawn_in_its_own_colour(self):
        self.assertEqual(self.result.returncode, 0, self.result.stdout + self.result.stderr)
        everyone = list(self.reg.entries)  # the synthetic bench has a row of each
        ran = self.ran  # what the sweep and the run ran
        others = [n for n in ran if n != self.reg.baseline]
        for stem, drawn in (("metadata_gpu_us", everyone), ("launches_per_suite", everyone),
                            ("tpot_by_mode", everyone), (f"serving_vs_concurrency_{self.slug}", ran),
                            ("stale_host_divergence_run", ran), (f"serving_vs_baseline_{self.slug}", others)):
            svg = self.svg(self.out, stem)
            for name in drawn:
                self.assertIn(self.reg.color(name).lower(), svg, f"{stem}: {name} is not drawn in its colour")

    def test_the_vs_baseline_plot_is_against_the_baseline(self):
        self.assertNotIn("skipped serving_vs_baseline", self.result.stdout)
        base = self.reg.baseline
        svg = self.svg(self.out, f"serving_vs_baseline_{self.slug}")
        # The baseline is the zero line, not a curve of its own.
        self.assertNotIn(self.reg.color(base).lower(), svg)
        with open(os.path.join(self.out, "serving_tables.md"), encoding="utf-8") as f:
            serving = f.read()
        for name in self.ran:
            if name != base:
                self.assertIn(f"{name} reduction vs {base}", serving)
                self.assertIn(f"{name} speedup vs {base}", serving)

    def test_bench_tables_are_benchs_own_file_copied(self):
        with open(os.path.join(self.out, "bench.md"), encoding="utf-8") as f:
            self.assertEqual(f.read(), SYNTHETIC_BENCH_MD)

    def test_tables_list_the_implementations_in_the_registrys_order(self):
        with open(os.path.join(self.out, "serving_tables.md"), encoding="utf-8") as f:
            serving = f.read()
        order = self.reg.ordered(self.ran)
        self.assertIn("| Concurrency | " + " | ".join(order) + " | ", serving)
        for c in (1, 4):
            self.assertIn(f"\n| {c} | ", serving)

    def test_svg_is_byte_stable(self):
        again = os.path.join(self.tmp, "again")
        result = run_plot_all(self.results, "--out", again)
        self.assertEqual(result.returncode, 0, result.stderr)
        for stem in self.figures:
            with open(os.path.join(self.out, f"{stem}.svg"), "rb") as a, \
                    open(os.path.join(again, f"{stem}.svg"), "rb") as b:
                self.assertEqual(a.read(), b.read(), f"{stem}.svg differs between two runs")


class SweepOnlyTest(PlotTestCase):
    def test_one_run_plots_come_from_the_adaptive_seed_after_point_at_the_highest_concurrency(self):
        sweep = os.path.join(WORK, "results", "sweep")
        result = run_plot_all(sweep, "--out", os.path.join(self.tmp, "plots"))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        after = registry(os.path.join(sweep, "sweep_meta.json")).with_role("seed-after")
        self.assertIn(f"one-run plots from sweep point chat_c4_b8_n6_adaptive_{after}_", result.stdout)
        self.assertIn(f"(mode adaptive, {after}, concurrency 4)", result.stdout)
        self.assert_figure(os.path.join(self.tmp, "plots"), "steps_over_time")
        # Its points checked every implementation: the stale-host plot comes from one of them.
        self.assert_figure(os.path.join(self.tmp, "plots"), "stale_host_divergence_run")

    def test_a_sweep_without_the_registry_skips_the_baseline_plot_saying_why(self):
        sweep = os.path.join(self.tmp, "sweep")
        shutil.copytree(os.path.join(WORK, "results", "sweep"), sweep)
        path = os.path.join(sweep, "sweep_meta.json")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        del doc["meta"]["impls"]
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        for point in os.listdir(os.path.join(sweep, "points")):
            summary = os.path.join(sweep, "points", point, "summary.json")
            with open(summary, encoding="utf-8") as f:
                doc = json.load(f)
            del doc["meta"]["impls"]
            with open(summary, "w", encoding="utf-8") as f:
                json.dump(doc, f)
        result = run_plot_all(sweep, "--out", os.path.join(self.tmp, "plots"))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("skipped serving_vs_baseline_chat_b8: the result files carry no implementation registry",
                      result.stdout)
        # The other plots are still made, each implementation in a colour of its own.
        svg = self.svg(os.path.join(self.tmp, "plots"), "serving_vs_concurrency_chat_b8")
        reg = rio.ImplRegistry()
        names = {r["impl"] for r in rio.ok_rows(rio.read_sweep(sweep))}
        colors = {reg.color(n) for n in names}
        self.assertEqual(len(colors), len(names))
        for c in colors:
            self.assertIn(c, svg)

    def test_a_cut_sweep_without_baseline_points_or_a_point_that_checked_all_says_why(self):
        # One edited copy (one plot_all run): no baseline rows, each point checked only its own
        # implementation, and a last line cut short by a kill.
        sweep = os.path.join(self.tmp, "sweep")
        os.makedirs(sweep)
        src = os.path.join(WORK, "results", "sweep")
        shutil.copy(os.path.join(src, "sweep_meta.json"), sweep)
        base = registry(os.path.join(src, "sweep_meta.json")).baseline
        with open(os.path.join(src, "sweep.jsonl"), encoding="utf-8") as f:
            rows = [json.loads(line) for line in f if line.strip()]
        text = ""
        for r in rows:
            if r.get("impl") != base:
                r["check_impls"] = r["impl"]
                text += json.dumps(r) + "\n"
        with open(os.path.join(sweep, "sweep.jsonl"), "w", encoding="utf-8") as f:
            f.write(text + text.splitlines()[0][:50])
        out = os.path.join(self.tmp, "plots")
        result = run_plot_all(sweep, "--out", out)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn(f"skipped serving_vs_baseline_chat_b8: the sweep group chat, max_num_seqs 8 has no point of "
                      f"the baseline {base}", result.stdout)
        self.assertIn("skipped stale_host_divergence_run: no point of", result.stdout)
        self.assertIn("checked every implementation", result.stdout)
        self.assert_figure(out, "serving_vs_concurrency_chat_b8")


class InputsTest(PlotTestCase):
    def test_a_run_alone_makes_its_plots_and_says_why_others_are_skipped(self):
        result = run_plot_all(os.path.join(WORK, "results", "run"), "--out", os.path.join(self.tmp, "plots"))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        for stem in ("stale_host_divergence_run", "steps_over_time", "acceptance_length"):
            self.assert_figure(os.path.join(self.tmp, "plots"), stem)
        for name in ("metadata_gpu_us", "launches_per_suite", "serving_vs_concurrency"):
            self.assertIn(f"skipped {name}: no ", result.stdout)

    def test_malformed_bench_is_reported_by_field(self):
        bench = os.path.join(self.tmp, "bench")
        os.makedirs(bench)
        with open(os.path.join(bench, "bench.json"), "w", encoding="utf-8") as f:
            json.dump({"metadata": [{"case": "decode", "impl": "x", "method": "graph"}]}, f)
        result = run_plot_all(bench, "--out", os.path.join(self.tmp, "plots"))
        self.assertIn("metadata[0] has no 'gpu_us_median'", result.stdout)

    def test_a_bench_folder_without_bench_md_makes_its_plots_and_says_so(self):
        bench = os.path.join(self.tmp, "bench")
        shutil.copytree(os.path.join(WORK, "results", "bench"), bench)
        os.remove(os.path.join(bench, "bench.md"))
        out = os.path.join(self.tmp, "plots")
        result = run_plot_all(bench, "--out", out)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assert_figure(out, "metadata_gpu_us")
        self.assertIn(f"skipped bench.md: {bench}/bench.md: cannot read (No such file or directory)", result.stdout)
        self.assertFalse(os.path.exists(os.path.join(out, "bench.md")))

    def test_a_malformed_registry_is_reported_by_field(self):
        reg = rio.ImplRegistry()
        with self.assertRaises(rio.InputError) as e:
            reg.add_meta({"impls": [{"name": "a", "aliases": [], "role": "user", "order": 0, "color": "#000000",
                                     "hatch": ""}]}, "x.json")
        self.assertIn("x.json: meta.impls[0] has no 'marker'", str(e.exception))

    def test_bad_sweep_rows_and_summaries_are_reported_by_file_line_and_field(self):
        # Wrong types, NaN or inf, and a missing field: one line naming the file and field, no traceback.
        good = {"point_id": "p", "index": 0, "status": "ok", "workload": "chat", "mode": "none", "impl": "x",
                "concurrency": 1, "batch_size": 8, "num_requests": 2, "mean_tpot_ms": 1.0}
        cases = [({"mean_tpot_ms": "fast"}, "field 'mean_tpot_ms': expected a finite number or null, got 'fast'"),
                 ({"mean_ttft_ms": float("nan")}, "field 'mean_ttft_ms': expected a finite number or null, got nan"),
                 ({"p99_e2el_ms": float("inf")}, "field 'p99_e2el_ms': expected a finite number or null, got inf"),
                 ({"concurrency": "8"}, "field 'concurrency': expected an integer, got '8'"),
                 ({"mode": None}, "field 'mode': expected a string, got None"),
                 ({"mode": "drop"}, "field 'mode': missing from an ok row")]
        for k, (change, message) in enumerate(cases):
            folder = os.path.join(self.tmp, f"sweep{k}")
            os.makedirs(folder)
            row = dict(good, **change)
            if change.get("mode") == "drop":
                del row["mode"]
            with open(os.path.join(folder, "sweep.jsonl"), "w", encoding="utf-8") as f:
                f.write(json.dumps(dict(good, point_id="q", index=1)) + "\n" + json.dumps(row) + "\n")
            result = run_plot_all(folder, "--out", os.path.join(self.tmp, f"plots{k}"))
            self.assertNotIn("Traceback", result.stderr, message)
            self.assertIn(f"{folder}/sweep.jsonl:2: {message}", result.stdout, result.stdout + result.stderr)
        run = os.path.join(self.tmp, "run")
        os.makedirs(run)
        with open(os.path.join(run, "summary.json"), "w", encoding="utf-8") as f:
            json.dump({"metrics": "oops"}, f)
        result = run_plot_all(run, "--out", os.path.join(self.tmp, "plots_run"))
        self.assertNotIn("Traceback", result.stderr)
        self.assertIn(f"{run}/summary.json: field 'metrics': expected an object, got 'oops'",
                      result.stdout + result.stderr)

    def test_a_folder_without_results_fails(self):
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        result = run_plot_all(empty, "--out", os.path.join(self.tmp, "plots"))
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("nothing to plot", result.stderr)
        self.assertNotEqual(run_plot_all(os.path.join(self.tmp, "absent")).returncode, 0)


class ReadabilityTest(PlotTestCase):
    """Labelled log ticks, request counts said."""

    def test_a_log_axis_under_a_factor_of_two_still_has_four_labels(self):
        import matplotlib.pyplot as plt
        import plot_common
        for lo, hi in ((2.2, 3.1), (150.0, 9000.0), (0.9, 1.05)):
            fig, ax = plt.subplots()
            ax.plot([1, 2], [lo, hi])
            ax.set_yscale("log")
            plot_common.label_log_axis(ax)
            fig.canvas.draw()
            ymin, ymax = ax.get_ylim()
            labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text() and ymin <= t.get_position()[1] <= ymax]
            self.assertGreaterEqual(len(labels), 4, f"{lo}..{hi}: {labels}")
            plt.close(fig)

    def test_points_with_different_request_counts_are_said(self):
        sweep = os.path.join(self.tmp, "sweep")
        os.makedirs(sweep)
        src = os.path.join(WORK, "results", "sweep")
        shutil.copy(os.path.join(src, "sweep_meta.json"), sweep)
        impl = registry(os.path.join(src, "sweep_meta.json")).with_role("seed-after")
        rows = []
        for i, (c, n) in enumerate(((1, 32), (8, 32), (64, 128))):
            rows.append({"point_id": f"p{i}", "index": i, "status": "ok", "workload": "speed-8k",
                         "batch_size": 256, "concurrency": c, "num_requests": -1, "requests": n,
                         "mode": "dspark", "impl": impl, "mean_tpot_ms": 2.0 + i, "p50_tpot_ms": 2.0 + i,
                         "p90_tpot_ms": 2.5 + i, "p99_tpot_ms": 3.0 + i, "mean_ttft_ms": 100.0 * (i + 1),
                         "output_throughput": 300.0 * (i + 1), "mean_acceptance_length": 3.0})
        with open(os.path.join(sweep, "sweep.jsonl"), "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" for r in rows))
        result = run_plot_all(sweep, "--out", os.path.join(self.tmp, "plots"))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("request counts differ: 32 at concurrency 1, 8; 128 at concurrency 64", result.stdout)

    def test_old_sweep_rows_are_read_in_vllm_keys(self):
        row = rio.upgrade_row({"point_id": "p", "tpot_ms_mean": 2.0, "ttft_ms_p99": 5.0,
                               "output_throughput_tok_s": 10.0, "duration_s": 3.0})
        self.assertEqual(row, {"point_id": "p", "mean_tpot_ms": 2.0, "p99_ttft_ms": 5.0,
                               "output_throughput": 10.0, "duration": 3.0})
        for r in rio.ok_rows(rio.read_sweep(os.path.join(WORK, "results", "sweep"))):
            self.assertIn("mean_tpot_ms", r)


class AtomicWriteTest(PlotTestCase):
    """Outputs are written beside their final name and renamed over it: never seen half-written."""

    def test_a_write_replaces_the_file_and_leaves_no_temporary(self):
        import plot_common
        out = plot_common.Output(os.path.join(self.tmp, "out"))
        out.text("t.md", "old\n")
        out.text("t.md", "new\n")
        with open(os.path.join(out.out_dir, "t.md"), encoding="utf-8") as f:
            self.assertEqual(f.read(), "new\n")
        self.assertEqual(os.listdir(out.out_dir), ["t.md"])

    def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(self):
        import plot_common
        path = os.path.join(self.tmp, "t.md")
        with open(path, "w", encoding="utf-8") as f:
            f.write("old\n")
        with self.assertRaises(RuntimeError):
            with plot_common.replaced_whole(path) as tmp:
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write("half")
                raise RuntimeError("killed mid-write")
        with open(path, encoding="utf-8") as f:
            self.assertEqual(f.read(), "old\n")
        self.assertEqual(os.listdir(self.tmp), ["t.md"])


def _find_binary(argv):
    if len(argv) > 1 and not argv[1].startswith("-"):
        return os.path.abspath(argv.pop(1))
    return os.environ.get("DSPARK_SIM") or os.path.join(REPO, "build", "dspark-sim")


if __name__ == "__main__":
    BINARY = _find_binary(sys.argv)
    if not os.access(BINARY, os.X_OK):
        print(f"test_plots.py: no dspark-sim binary at {BINARY}: pass its path, or set DSPARK_SIM", file=sys.stderr)
        sys.exit(2)
    unittest.main(verbosity=2)
