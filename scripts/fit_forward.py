#!/usr/bin/env python3
"""Fits the target forward's three free constants and the drafter's fixed cost.

The fit uses only what issue 13 allows: seed 000's batch-1 512/128 table and SPEED-Bench at
concurrency 1. It never runs concurrency 8, 128 or 1024. Those are the model's predictions.

  unknown                                  solved from (seed 000, "After" = vllm-56562)
  target_roofline.floor_us                 batch-1 no-DSpark TPOT        5.736 ms
  drafter.fixed_us                         batch-1 DSpark TPOT           1.407 ms
  target_roofline.compute_efficiency       SPEED-Bench c=1 mean TTFT     193.766 ms
  target_roofline.row_latency_us_per_ctx_token  SPEED-Bench c=1 mean TPOT  2.494 ms

Each unknown mostly moves its own figure. The script runs a fixed-point iteration: each
round runs the three workloads and moves every unknown by its residual over its figure's
sensitivity. Every other constant is the calibration file's.

row_latency_us_per_ctx_token is not fitted by default (it stays 0). Fitted to the c=1 TPOT
(--fit-row-latency: 0.185 us), it puts the ~1.7 ms by which the c=1 iteration (8k context)
exceeds the batch-1 one (576 context) on the GPU. The c=1 engine is then GPU-bound with both
implementations, and (c)'s extra dispatch is hidden: the c=1 TPOT reduction falls from the
seed's 19.3 % to 2.2 %. The seed's c=1 reduction says that the After engine's host step is
about as long as its 8.2 ms iteration, while batch-1 says it is ~5.6 ms. The fitting data
name no host work that grows with context, so that gap is left unexplained (README, "Serving
figures").

  scripts/fit_forward.py --sim build-cpu/dspark-sim [--calibration workloads/calibration_h200.json]
      [--write]   # write the fitted values into the calibration file
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

SEED = {"none_tpot": 5.736, "dspark_tpot": 1.407, "c1_ttft": 193.766, "c1_tpot": 2.494}
LIMITS = ["--max-num-batched-tokens", "16384", "--max-model-len", "16384"]


def run(sim, calib, out, args):
    cmd = [sim, "run", "--calibration", calib, "--no-check", "--time-impl", "after", "--out", out] + args
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(out, "summary.json")) as f:
        d = json.load(f)
    d["mean_acceptance_length"] = d["metrics"]["speculative"]["mean_acceptance_length"]
    return d


def measure(sim, calib, tmp):
    b1 = ["--workload", "batch1-512", "--num-requests", "1000"]
    none = run(sim, calib, os.path.join(tmp, "none"), b1 + ["--mode", "none"])
    dspark = run(sim, calib, os.path.join(tmp, "dspark"), b1 + ["--mode", "dspark"])
    c1 = run(sim, calib, os.path.join(tmp, "c1"),
             ["--workload", "speed-8k", "--concurrency", "1", "--num-requests", "32", "--max-num-seqs", "256",
              "--mode", "adaptive"] + LIMITS)
    return {"none_tpot": none["mean_tpot_ms"], "dspark_tpot": dspark["mean_tpot_ms"],
            "c1_ttft": c1["mean_ttft_ms"], "c1_tpot": c1["mean_tpot_ms"],
            "acc_b1": dspark["mean_acceptance_length"], "acc_c1": c1["mean_acceptance_length"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sim", default="build-cpu/dspark-sim")
    ap.add_argument("--calibration", default="workloads/calibration_h200.json")
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--fit-row-latency", action="store_true",
                    help="also fit row_latency_us_per_ctx_token to the c=1 TPOT (off: it stays 0; see the docstring)")
    a = ap.parse_args()
    with open(a.calibration) as f:
        doc = json.load(f)
    roof = doc["forward"]["target_roofline"]
    drafter = doc["forward"].setdefault("drafter", {})
    drafter.setdefault("fixed_us", 560.0)
    if not a.fit_row_latency:
        roof["row_latency_us_per_ctx_token"] = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        calib = os.path.join(tmp, "calib.json")
        for rnd in range(a.rounds):
            with open(calib, "w") as f:
                json.dump(doc, f)
            m = measure(a.sim, calib, tmp)
            print(f"round {rnd}: floor {roof['floor_us']:.1f} us, drafter {drafter['fixed_us']:.1f} us, "
                  f"efficiency {roof['compute_efficiency']:.5f}, row latency {roof['row_latency_us_per_ctx_token']:.5f} us"
                  f" -> none {m['none_tpot']:.4f}, dspark {m['dspark_tpot']:.4f}, c1 TTFT {m['c1_ttft']:.2f},"
                  f" c1 TPOT {m['c1_tpot']:.4f} ms", flush=True)
            targets = [k for k in SEED if k != "c1_tpot" or a.fit_row_latency]
            err = max(abs(m[k] / SEED[k] - 1) for k in targets)
            if err < 2e-4:
                break
            # Sensitivities: a decode step is one token (GPU-bound After), a DSpark iteration
            # emits ~acc_b1 tokens, the c=1 TTFT's prefill is compute-bound (time ~ 1/efficiency),
            # and the c=1 iteration holds one verification of ~8.7k context per ~acc_c1 tokens.
            roof["floor_us"] += 1e3 * (SEED["none_tpot"] - m["none_tpot"])
            drafter["fixed_us"] = max(0.0, drafter["fixed_us"] + 1e3 * m["acc_b1"] * (SEED["dspark_tpot"] - m["dspark_tpot"]))
            roof["compute_efficiency"] = min(1.0, roof["compute_efficiency"] * (0.7 * m["c1_ttft"] / SEED["c1_ttft"] + 0.3))
            if a.fit_row_latency:
                roof["row_latency_us_per_ctx_token"] = max(
                    0.0, roof["row_latency_us_per_ctx_token"] + 1e3 * m["acc_c1"] * (SEED["c1_tpot"] - m["c1_tpot"]) / 8700.0)
    fitted = {"floor_us": round(roof["floor_us"], 1), "compute_efficiency": round(roof["compute_efficiency"], 5),
              "row_latency_us_per_ctx_token": round(roof["row_latency_us_per_ctx_token"], 5),
              "drafter.fixed_us": round(drafter["fixed_us"], 1)}
    print(json.dumps(fitted))
    if a.write:
        roof.update({k: v for k, v in fitted.items() if "." not in k})
        drafter["fixed_us"] = fitted["drafter.fixed_us"]
        with open(a.calibration, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
