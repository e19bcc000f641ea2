#!/usr/bin/env python3
"""CTest `replay_steps_dump`: `dspark-sim run --dump-steps` on a small adaptive run, then
scripts/replay_steps.py over the dump with numpy callables (no torch needed):
  - the device-boundary example (token map + indexer decode of #56562) has no difference at all;
  - the host mapping of #47474 has stale-host cells, and no bug;
  - an indexer that zeroes only column 0 of padding rows (the old chain) has padding residue only;
  - a callable with an off-by-one is reported as a bug, with exit status 1;
  - a dump that is not one is a clear error, exit status 2.
Usage: test_replay_steps.py PATH/TO/dspark-sim
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPLAY = os.path.join(ROOT, "scripts", "replay_steps.py")
EXAMPLES = os.path.join(ROOT, "scripts", "replay_examples")

BROKEN = '''
import numpy_device
def build(step):
    out = numpy_device.build(step)
    out["indexer_r1.seq_out"] = out["indexer_r1.seq_out"] + (out["indexer_r1.seq_out"] > 0)
    return out
'''

RESIDUE = '''
import numpy as np, numpy_device
def build(step):
    out = numpy_device.build(step)
    bt = out["indexer_r1.bt_out"]
    actual = int(step.device["query_start_loc"][step.sizes["num_decodes"]])
    bt[actual:, 1:] = 7  # what an earlier step left there
    return {"indexer_r1.bt_out": bt}
'''


def replay(dump, impl, out_json):
    # The test's own callables import the bundled example next to them.
    env = dict(os.environ, PYTHONPATH=EXAMPLES)
    p = subprocess.run([sys.executable, REPLAY, dump, "--impl", impl, "--json", out_json], capture_output=True,
                       text=True, env=env)
    totals = {}
    if os.path.exists(out_json):
        with open(out_json) as f:
            totals = json.load(f)["fields"]
    return p.returncode, totals, p.stdout + p.stderr


def kind_total(totals, kind):
    return sum(t[kind] for t in totals.values())


def main():
    sim = sys.argv[1]
    failures = []

    def expect(cond, what, log=""):
        if not cond:
            failures.append(what + ("\n" + log if log else ""))

    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "dump")
        run = subprocess.run([sim, "run", "--workload", "chat", "--num-requests", "12", "--concurrency", "8",
                              "--mode", "adaptive", "--max-model-len", "2048", "--max-num-seqs", "16",
                              "--max-num-batched-tokens", "512", "--no-check", "--seed", "3", "--out",
                              os.path.join(tmp, "run"), "--dump-steps", dump, "--dump-steps-limit", "80"],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stdout + run.stderr)
            return 1
        with open(os.path.join(dump, "index.json")) as f:
            index = json.load(f)
        expect(index["steps_dumped"] == 80 and index["steps_in_run"] > 80, f"dump bounds: {index['steps_dumped']}")
        expect(any(s["host_view_stale"] for s in index["steps"]), "no stale step in the dump")

        for name, source in (("broken.py", BROKEN), ("residue.py", RESIDUE)):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(source)

        rc, t, log = replay(dump, os.path.join(EXAMPLES, "numpy_device.py") + ":build", os.path.join(tmp, "a.json"))
        expect(rc == 0 and t and all(kind_total(t, k) == 0 for k in ("stale_host", "padding_residue", "bug")),
               f"device example: rc={rc} {t}", log)
        # The indexer decode fields exist only in steps with a decode request (as in vLLM).
        with_decodes = sum(1 for s in index["steps"] if s["sizes"]["num_decodes"] > 0)
        expect(len(t) == 6 and 0 < with_decodes < 80 and
               all(v["steps"] == (80 if f.startswith("token_map.") else with_decodes) for f, v in t.items()),
               f"device example fields: {t}", log)

        rc, t, log = replay(dump, os.path.join(EXAMPLES, "numpy_host_map.py") + ":build", os.path.join(tmp, "b.json"))
        expect(rc == 0 and kind_total(t, "stale_host") > 0 and kind_total(t, "bug") == 0,
               f"host map: rc={rc} {t}", log)

        rc, t, log = replay(dump, os.path.join(tmp, "residue.py") + ":build", os.path.join(tmp, "c.json"))
        expect(rc == 0 and kind_total(t, "padding_residue") > 0 and kind_total(t, "bug") == 0,
               f"residue: rc={rc} {t}", log)

        rc, t, log = replay(dump, os.path.join(tmp, "broken.py") + ":build", os.path.join(tmp, "d.json"))
        expect(rc == 1 and kind_total(t, "bug") > 0 and "first bug: step" in log, f"broken: rc={rc} {t}", log)

        rc, _, log = replay(tmp, os.path.join(EXAMPLES, "numpy_device.py") + ":build", os.path.join(tmp, "e.json"))
        expect(rc == 2 and "index.json: not found" in log, f"not a dump: rc={rc}", log)

        # A step folder named in index.json is one of the dump's own: never a path outside it.
        bad_dump = os.path.join(tmp, "bad_dump")
        os.makedirs(bad_dump)
        first = index["steps"][0]
        for k, bad in enumerate(("../run", os.path.join(dump, first["dir"]), first["dir"] + "/../../../run", "",
                                 None, "steps/-1")):
            with open(os.path.join(bad_dump, "index.json"), "w") as f:
                json.dump(dict(index, steps=[dict(first, dir=bad)]), f)
            rc, _, log = replay(bad_dump, os.path.join(EXAMPLES, "numpy_device.py") + ":build",
                                os.path.join(tmp, f"bad{k}.json"))
            expect(rc == 2 and "dir: expected 'steps/<6+ digits>'" in log, f"dir {bad!r}: rc={rc}", log)
        os.symlink(os.path.join(dump, "steps"), os.path.join(bad_dump, "steps"))
        with open(os.path.join(bad_dump, "index.json"), "w") as f:
            json.dump(dict(index, steps=[first]), f)
        rc, _, log = replay(bad_dump, os.path.join(EXAMPLES, "numpy_device.py") + ":build", os.path.join(tmp, "bl.json"))
        expect(rc == 2 and "is a symlink" in log, f"symlinked steps folder: rc={rc}", log)

    for f in failures:
        print("FAIL:", f)
    total = 13
    print(f"{total} of {total} checks passed" if not failures else f"{len(failures)} of {total} checks failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
