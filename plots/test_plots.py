#!/usr/bin/env python3
"""Plot tests (CTest `plots_make_all`): plot_all.py on the committed fixture makes every plot.

    python3 plots/test_plots.py

Runs plots/plot_all.py on tests/fixtures/results/ into a temporary folder and checks that
every expected PNG and SVG (and Markdown table) exists, is not empty and is what its extension
says. Also checks the metadata-check plot from a run summary, the reasons printed for absent
inputs, and that a folder with no results fails. Exits non-zero on any failure, including a
missing matplotlib (scripts/deps.sh installs it).
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
FIXTURE = os.path.join(REPO, "tests", "fixtures", "results")
PLOT_ALL = os.path.join(HERE, "plot_all.py")

# What the fixture has inputs for (its run was made with --no-check, so it has no
# metadata_check counts and stale_host_divergence_run is tested separately below).
EXPECTED_FIGURES = [
    "metadata_gpu_us",
    "launches_per_suite",
    "stale_host_divergence_bench",
    "tpot_by_mode",
    "serving_vs_concurrency_speed-8k_b256",
    "serving_vs_chain_speed-8k_b256",
    "steps_over_time",
    "acceptance_length",
]
EXPECTED_TABLES = ["metadata_tables.md", "serving_tables.md"]


def run_plot_all(*args):
    return subprocess.run([sys.executable, PLOT_ALL, *args], capture_output=True, text=True, check=False)


class PlotTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="dspark_plots_")

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


class FixtureTest(PlotTestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = tempfile.mkdtemp(prefix="dspark_plots_fixture_")
        cls.result = run_plot_all(FIXTURE, "--out", cls.out)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, ignore_errors=True)

    def test_matplotlib_is_installed(self):
        import matplotlib  # noqa: F401  (an ImportError fails this test: run scripts/deps.sh)

    def test_every_plot_of_the_fixture_is_made(self):
        self.assertEqual(self.result.returncode, 0, self.result.stdout + self.result.stderr)
        for stem in EXPECTED_FIGURES:
            self.assert_figure(self.out, stem)
        for name in EXPECTED_TABLES:
            path = os.path.join(self.out, name)
            self.assertTrue(os.path.isfile(path), f"missing {path}")
            self.assertGreater(os.path.getsize(path), 100, f"{path} is (nearly) empty")
        self.assertIn("skipped stale_host_divergence_run", self.result.stdout)
        produced = sorted(os.listdir(self.out))
        expected = sorted([f"{s}.{e}" for s in EXPECTED_FIGURES for e in ("png", "svg")] + EXPECTED_TABLES)
        self.assertEqual(produced, expected)

    def test_tables_follow_the_seeds_layout(self):
        self.assertEqual(self.result.returncode, 0, self.result.stderr)
        with open(os.path.join(self.out, "metadata_tables.md"), encoding="utf-8") as f:
            metadata = f.read()
        # The fixture's fused decode is the seed's 46.27 us, 4.13x the chain's 191.10 us.
        self.assertIn("| Decode | 191.10 | ", metadata)
        self.assertIn("46.27 (4.13x)", metadata)
        with open(os.path.join(self.out, "serving_tables.md"), encoding="utf-8") as f:
            serving = f.read()
        self.assertIn("| Concurrency | chain | fused | fused reduction vs chain |", serving)
        self.assertIn("| Concurrency | chain | fused | fused speedup vs chain |", serving)
        for c in (1, 8, 128):
            self.assertIn(f"\n| {c} | ", serving)

    def test_svg_is_byte_stable(self):
        again = os.path.join(self.tmp, "again")
        result = run_plot_all(FIXTURE, "--out", again)
        self.assertEqual(result.returncode, 0, result.stderr)
        for stem in EXPECTED_FIGURES:
            with open(os.path.join(self.out, f"{stem}.svg"), "rb") as a, \
                    open(os.path.join(again, f"{stem}.svg"), "rb") as b:
                self.assertEqual(a.read(), b.read(), f"{stem}.svg differs between two runs")


class InputsTest(PlotTestCase):
    def test_metadata_check_counts_of_a_run_are_plotted(self):
        run = os.path.join(self.tmp, "results", "run")
        shutil.copytree(os.path.join(FIXTURE, "run"), run)
        path = os.path.join(run, "summary.json")
        with open(path, encoding="utf-8") as f:
            summary = json.load(f)
        summary["metadata_check"] = {"impls": {
            "chain": {"by_case": {"dspark_adaptive_verify": {"stale_host": 38, "padding_residue": 1, "bug": 0},
                                  "dspark_adaptive_draft": {"stale_host": 12, "padding_residue": 0, "bug": 0}}},
            "fused": {"by_case": {"dspark_adaptive_verify": {"stale_host": 0, "padding_residue": 0, "bug": 0},
                                  "dspark_adaptive_draft": {"stale_host": 0, "padding_residue": 0, "bug": 0}}}}}
        with open(path, "w", encoding="utf-8") as f:
            json.dump(summary, f)
        out = os.path.join(self.tmp, "plots")
        result = run_plot_all(os.path.join(self.tmp, "results"), "--out", out)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assert_figure(out, "stale_host_divergence_run")
        self.assert_figure(out, "steps_over_time")
        # No bench or sweep here: their plots are skipped, each with the reason.
        for name in ("metadata_gpu_us", "launches_per_suite", "serving_vs_concurrency"):
            self.assertIn(f"skipped {name}: no ", result.stdout)

    def test_a_killed_sweeps_cut_last_line_is_ignored(self):
        sweep = os.path.join(self.tmp, "sweep")
        os.makedirs(sweep)
        with open(os.path.join(FIXTURE, "sweep", "sweep.jsonl"), encoding="utf-8") as f:
            text = f.read()
        with open(os.path.join(sweep, "sweep.jsonl"), "w", encoding="utf-8") as f:
            f.write(text + text.splitlines()[0][:50])
        out = os.path.join(self.tmp, "plots")
        result = run_plot_all(sweep, "--out", out)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assert_figure(out, "serving_vs_concurrency_speed-8k_b256")

    def test_malformed_bench_is_reported_by_field(self):
        bench = os.path.join(self.tmp, "bench")
        os.makedirs(bench)
        with open(os.path.join(bench, "bench.json"), "w", encoding="utf-8") as f:
            json.dump({"metadata": [{"case": "decode", "impl": "fused", "method": "graph"}]}, f)
        result = run_plot_all(bench, "--out", os.path.join(self.tmp, "plots"))
        self.assertIn("metadata[0] has no 'gpu_us_median'", result.stdout)

    def test_a_folder_without_results_fails(self):
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        result = run_plot_all(empty, "--out", os.path.join(self.tmp, "plots"))
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("nothing to plot", result.stderr)
        self.assertNotEqual(run_plot_all(os.path.join(self.tmp, "absent")).returncode, 0)


class ReadabilityTest(PlotTestCase):
    """Readability: labelled log ticks, request counts said, a stale-host plot that checked all."""

    def setUp(self):
        super().setUp()
        sys.path.insert(0, HERE)
        import plot_common  # noqa: E402
        import results_io  # noqa: E402
        self.plot_common, self.rio = plot_common, results_io

    def test_a_log_axis_under_a_factor_of_two_still_has_four_labels(self):
        import matplotlib.pyplot as plt
        for lo, hi in ((2.2, 3.1), (150.0, 9000.0), (0.9, 1.05)):
            fig, ax = plt.subplots()
            ax.plot([1, 2], [lo, hi])
            ax.set_yscale("log")
            self.plot_common.label_log_axis(ax)
            fig.canvas.draw()
            ymin, ymax = ax.get_ylim()
            labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text() and ymin <= t.get_position()[1] <= ymax]
            self.assertGreaterEqual(len(labels), 4, f"{lo}..{hi}: {labels}")
            plt.close(fig)

    def test_points_with_different_request_counts_are_said(self):
        sweep = os.path.join(self.tmp, "sweep")
        os.makedirs(sweep)
        rows = []
        for i, (c, n) in enumerate(((1, 32), (8, 32), (64, 128))):
            rows.append({"point_id": f"p{i}", "index": i, "status": "ok", "workload": "speed-8k",
                         "batch_size": 256, "concurrency": c, "num_requests": -1, "requests": n,
                         "mode": "dspark", "impl": "fused", "mean_tpot_ms": 2.0 + i, "p50_tpot_ms": 2.0 + i,
                         "p90_tpot_ms": 2.5 + i, "p99_tpot_ms": 3.0 + i, "mean_ttft_ms": 100.0 * (i + 1),
                         "output_throughput": 300.0 * (i + 1), "mean_acceptance_length": 3.0})
        with open(os.path.join(sweep, "sweep.jsonl"), "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(r) + "\n" for r in rows))
        result = run_plot_all(sweep, "--out", os.path.join(self.tmp, "plots"))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("request counts differ: 32 at concurrency 1, 8; 128 at concurrency 64", result.stdout)

    def test_the_stale_host_plot_of_a_sweep_needs_a_point_that_checked_every_impl(self):
        result = run_plot_all(os.path.join(FIXTURE, "sweep"), "--out", os.path.join(self.tmp, "plots"))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertIn("skipped stale_host_divergence_run: no point of", result.stdout)
        self.assertIn("checked every implementation", result.stdout)

    def test_old_sweep_rows_are_read_in_vllm_keys(self):
        row = self.rio.upgrade_row({"point_id": "p", "tpot_ms_mean": 2.0, "ttft_ms_p99": 5.0,
                                    "output_throughput_tok_s": 10.0, "duration_s": 3.0})
        self.assertEqual(row, {"point_id": "p", "mean_tpot_ms": 2.0, "p99_ttft_ms": 5.0,
                               "output_throughput": 10.0, "duration": 3.0})
        for r in self.rio.read_sweep(os.path.join(FIXTURE, "sweep")):
            if r["status"] == "ok":
                self.assertIn("mean_tpot_ms", r)


class AtomicWriteTest(PlotTestCase):
    """Outputs are written beside their final name and renamed over it: never seen half-written."""

    def setUp(self):
        super().setUp()
        sys.path.insert(0, HERE)
        import plot_common  # noqa: E402
        self.plot_common = plot_common

    def test_a_write_replaces_the_file_and_leaves_no_temporary(self):
        out = self.plot_common.Output(os.path.join(self.tmp, "out"))
        out.text("t.md", "old\n")
        out.text("t.md", "new\n")
        with open(os.path.join(out.out_dir, "t.md"), encoding="utf-8") as f:
            self.assertEqual(f.read(), "new\n")
        self.assertEqual(os.listdir(out.out_dir), ["t.md"])

    def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(self):
        path = os.path.join(self.tmp, "t.md")
        with open(path, "w", encoding="utf-8") as f:
            f.write("old\n")
        with self.assertRaises(RuntimeError):
            with self.plot_common.replaced_whole(path) as tmp:
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write("half")
                raise RuntimeError("killed mid-write")
        with open(path, encoding="utf-8") as f:
            self.assertEqual(f.read(), "old\n")
        self.assertEqual(os.listdir(self.tmp), ["t.md"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
