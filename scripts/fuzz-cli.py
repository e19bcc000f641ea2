#!/usr/bin/env python3
"""The CLI fuzz target: random command lines for every command of dspark-sim, checked for the
promises every command makes.

    scripts/fuzz-cli.py [--minutes M] [--commands run,sweep,...] [--seed S] [--sim PATH] [--out DIR]

Each case is an option set drawn from the command's own --help (so a new option is fuzzed
without a change here): valid and invalid values (0, -0, -1, 2^31, 2^63, 1e308, nan, inf, '',
words, lists, paths to good and bad files, a directory, /dev/null), an option given twice,
abbreviations, positional noise, and the same options moved into a --config file (for the
commands that read one). Sizes are kept small by defaults the case may override. Every case runs
in an empty folder of its own with --out inside it, and is checked for:

  - no crash: the exit status is a number the exit-code table allows (0, 1 for an input that
    cannot be read or a check that found differences, 2 for a wrong command line), never a
    signal, never a traceback or a bare std::bad_alloc on stderr;
  - a bad command line exits 2, and exit 2 writes nothing at all;
  - no file outside --out: nothing appears or changes in the case's folder but under --out
    (and the files an option names, e.g. --emit-step or --dump-workload), and nothing outside it;
  - order independence: the same options in another order (and, for 'config' cases, split
    between the file and the command line differently) give the same exit status, the same
    stderr and the same result files (compared without their timing and argv fields).

A case that breaks a promise is a finding: its command line, what was broken and the output are
appended to OUT/findings.jsonl, and the script exits 1. A case over the per-case timeout is
counted as slow (sizes the draw allowed) and stopped; a slow case that printed nothing for the
whole timeout is also reported as a finding (a hang).

The CTest cli_fuzz_brief runs it for a few seconds per command; the fuzz script
(scripts/fuzz.sh's CLI part, or this script with --minutes 10) for as long as asked.
"""
import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMANDS = ["run", "sweep", "step", "verify", "soak"]
CONFIG_COMMANDS = {"run", "sweep"}

# Options whose value names a file the command writes (outside --out is allowed for these).
WRITES = {"--dump-workload", "--step-log", "--dump-av", "--dump-steps", "--emit-step", "--result-filename"}
WRITES_OF = {"verify": {"--json"}}
# The harness's --out (verify has none: it writes only what --json names).
OUT_OF = {"run": ["--out", "out"], "sweep": ["--out", "out"], "step": ["--out", "out/report.json"],
          "soak": ["--out", "out"], "verify": []}

# Defaults that keep a case fast; a drawn option of the same name replaces them.
SMALL = {
    "run": ["--workload", "chat", "--num-requests", "3", "--no-check", "--progress", "none"],
    "sweep": ["--workload", "chat", "--num-requests", "2", "--concurrency", "1", "--mode", "none",
              "--time-impl", "fused", "--batch-size", "8", "--no-check", "--progress", "none"],
    "step": ["--case", "decode", "--batch", "2", "--impl", "fused-suite"],
    "verify": ["--cases", "decode", "--batch", "1", "--seeds", "1", "--impl", "fused-suite", "--progress", "none"],
    "soak": ["--steps", "200", "--batch-requests", "16", "--rss-sample-every", "100", "--progress", "none"],
}

TRACE_GOOD = "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,374,44\n4.5,396,109\n"
TRACE_BAD = "arrived_at,num_prefill_tokens,num_decode_tokens\n0.0,zz,44\n"
JSONL_GOOD = '{"prompt_len": 12, "output_len": 3}\n{"prompt_len": 20, "output_len": 2}\n'
CALIBRATION_GOOD = '{"host": {"sched_us": 4000}}\n'
CALIBRATION_BAD = '{"host": {"sched_us": 1e300}}\n'
STEP_GOOD = ('{"query_start_loc": [0, 1, 2], "seq_lens": [5, 9], "block_table": [[1], [2]], '
             '"num_decodes": 2}\n')
STEP_BAD = '{"query_start_loc": [0, 1], "seq_lens": "5"}\n'

NUMBERS = ["0", "-0", "1", "2", "3", "-1", "7", "64", "1000", "2147483648", "4294967297", "9223372036854775808",
           "18446744073709551616", "1e308", "1e-300", "0.5", "nan", "inf", "-inf", "", "abc", "1,2", "0x10",
           " 5", "5 ", "+3", "1e3", "-0.0"]
WORDS = ["all", "same", "none", "auto", "chat", "speed-8k", "batch1-512", "fused", "fused-suite", "vllm-0.31",
         "chain", "adaptive", "dspark", "cpu", "gpu", "decode", "prefill", "v4", "v4.1", "lines", "bar",
         "default", "repeated-prompt", "0/1", "1/2", "2/1", "ttft:200", "x", "%value%", "--help", "-",
         "a,b,c", "fused,chain", "0.34.0", "0.20.0"]
FILES = ["trace.csv", "bad.csv", "trace.jsonl", "cal.json", "badcal.json", "step.json", "badstep.json",
         "dir", "missing.csv", "/dev/null", "../outside.txt", "out/x.json"]
NOISE = ["x", "--", "-", "--=", "5", "trace.csv", "-x", "--no-such-option", "--out"]


def parse_help(sim, command):
    """The command's options: name -> (takes a value, is a switch)."""
    p = subprocess.run([sim, command, "--help"], capture_output=True, text=True, timeout=60)
    options = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^  (--[a-z0-9][a-z0-9-]*)( \[ --[a-z-]+ \])?( arg)?", line)
        if m:
            name = m.group(1)
            if name == "--help":
                continue
            options[name] = m.group(3) is not None
    return options


def make_files(folder):
    for name, text in [("trace.csv", TRACE_GOOD), ("bad.csv", TRACE_BAD), ("trace.jsonl", JSONL_GOOD),
                       ("cal.json", CALIBRATION_GOOD), ("badcal.json", CALIBRATION_BAD),
                       ("step.json", STEP_GOOD), ("badstep.json", STEP_BAD)]:
        with open(os.path.join(folder, name), "w") as f:
            f.write(text)
    os.makedirs(os.path.join(folder, "dir"), exist_ok=True)


def value_for(rng, name):
    r = rng.random()
    if any(k in name for k in ("trace", "json", "calibration", "config", "step-log", "dump", "emit", "merge")):
        return rng.choice(FILES) if r < 0.8 else rng.choice(NUMBERS + WORDS)
    if r < 0.5:
        return rng.choice(NUMBERS)
    if r < 0.9:
        return rng.choice(WORDS)
    return ",".join(rng.choice(NUMBERS[:10]) for _ in range(rng.randint(1, 4)))


def draw_case(rng, command, options):
    """A list of groups (each an option with its value(s), or one positional word) and a
    config-file text (run and sweep only)."""
    names = sorted(n for n in options if n != "--out")  # the harness gives --out
    groups = []
    for _ in range(rng.randint(0, 6)):
        name = rng.choice(names)
        spelled = name
        if rng.random() < 0.05 and len(name) > 5:
            spelled = name[: rng.randint(3, len(name) - 1)]  # an abbreviation: refused
        if options[name]:
            if rng.random() < 0.15:
                groups.append([f"{spelled}={value_for(rng, name)}"])
            else:
                groups.append([spelled, value_for(rng, name)])
        else:
            groups.append([spelled] + ([rng.choice(["1", "true", "x"])] if rng.random() < 0.05 else []))
        if rng.random() < 0.1:
            groups.append(list(groups[-1]))  # given twice
    if rng.random() < 0.1:
        groups.append([rng.choice(NOISE)])  # positional noise
    config = None
    if command in CONFIG_COMMANDS and rng.random() < 0.3:
        lines = []
        for _ in range(rng.randint(1, 4)):
            name = rng.choice(names)
            if name in ("--config", "--out"):
                continue
            val = value_for(rng, name) if options[name] else rng.choice(["true", "false", "yes", "0", "maybe"])
            lines.append(f"{name[2:]} = {val}")
        config = "\n".join(lines) + "\n"
    return groups, config


def snapshot(folder):
    """Every file under `folder` with its hash (symlinks by target)."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for f in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            p = os.path.join(root, f)
            rel = os.path.relpath(p, folder)
            try:
                if os.path.islink(p):
                    out[rel] = "link:" + os.readlink(p)
                else:
                    with open(p, "rb") as fh:
                        out[rel] = hashlib.sha1(fh.read()).hexdigest()
            except OSError:
                out[rel] = "unreadable"
    return out


VOLATILE = re.compile(r'"([a-z_]*argv|[a-z_]*_utc|[a-z_]*wall_s|cpu_s|steps_per_s|date|date_utc|git_sha|git_dirty|started|finished|'
                      r'elapsed_s|rss[a-z_]*|peak_rss[a-z_]*|lock[a-z_]*|pid|host|hostname|time_s|seconds)"\s*:')


def result_digest(out_dir):
    """The result files' contents without their volatile fields (timing, argv, dates)."""
    digest = {}
    if not os.path.isdir(out_dir):
        return digest
    for root, _, files in os.walk(out_dir):
        for f in sorted(files):
            p = os.path.join(root, f)
            rel = os.path.relpath(p, out_dir)
            if f in ("perf.json", "progress.log") or f.endswith(".lock") or f.startswith("."):
                continue
            try:
                with open(p, "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            if f.endswith(".csv"):
                # Columns of wall-clock time differ from run to run.
                rows = data.decode(errors="replace").splitlines()
                if rows:
                    header = rows[0].split(",")
                    keep = [i for i, h in enumerate(header) if "wall" not in h and h not in ("cpu_s",)]
                    data = "\n".join(",".join(c for i, c in enumerate(r.split(",")) if i in keep)
                                     for r in rows).encode()
            # A JSON file by its name, or by its content: --result-filename may name it anything.
            if f.endswith(".json") or f.endswith(".jsonl") or data.lstrip().startswith(b"{"):
                try:
                    docs = [json.loads(line) for line in data.decode().splitlines() if line.strip()] \
                        if f.endswith(".jsonl") else [json.loads(data)]
                    data = json.dumps([strip_volatile(d) for d in docs], sort_keys=True).encode()
                except (ValueError, UnicodeDecodeError):
                    pass
            digest[rel] = hashlib.sha1(data).hexdigest()
    return digest


def strip_volatile(d):
    if isinstance(d, dict):
        return {k: strip_volatile(v) for k, v in d.items()
                if not VOLATILE.match(f'"{k}":') and k not in ("meta", "fingerprint", "config_file")}
    if isinstance(d, list):
        return [strip_volatile(v) for v in d]
    return d


def run_case(sim, command, argv, config, timeout):
    """Runs one case in a fresh folder; returns what the checks need."""
    box = tempfile.mkdtemp(prefix="fuzz-cli-")
    try:
        work = os.path.join(box, "work")
        os.makedirs(os.path.join(work, "out"))
        make_files(work)
        with open(os.path.join(box, "outside.txt"), "w") as f:
            f.write("outside\n")
        args = list(argv)
        if config is not None:
            with open(os.path.join(work, "case.cfg"), "w") as f:
                f.write(config)
            args = ["--config", "case.cfg"] + args
        full = [sim, command] + args + OUT_OF[command]
        before = snapshot(box)
        start = time.monotonic()
        try:
            p = subprocess.run(full, cwd=work, capture_output=True, timeout=timeout,
                               env=dict(os.environ, DSPARK_SIM_NO_COLOR="1"))
            code, out, err = p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
            timed_out = False
        except subprocess.TimeoutExpired as e:
            code, out, err = None, (e.stdout or b"").decode(errors="replace"), (e.stderr or b"").decode(errors="replace")
            timed_out = True
        elapsed = time.monotonic() - start
        after = snapshot(box)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        return {"code": code, "stdout": out, "stderr": err.replace(box, "<box>"), "timed_out": timed_out,
                "elapsed": elapsed, "changed": changed, "digest": result_digest(os.path.join(work, "out")),
                "argv": full[1:], "config": config}
    finally:
        shutil.rmtree(box, ignore_errors=True)


def allowed_writes(command, argv, config):
    """Paths (relative to the case folder) a case may write besides work/out/: what an option
    that names an output names, on the command line or in the --config file."""
    writes = WRITES | WRITES_OF.get(command, set()) | {"--result-dir"}
    allowed = set()
    for i, a in enumerate(argv):
        name, _, inline = a.partition("=")
        if name in writes:
            v = inline if inline else (argv[i + 1] if i + 1 < len(argv) else "")
            allowed.add(os.path.normpath(os.path.join("work", v)))
    for line in (config or "").splitlines():
        key, _, v = line.partition("=")
        if "--" + key.strip() in writes:
            allowed.add(os.path.normpath(os.path.join("work", v.strip())))
    return allowed


def findings_of(r, command):
    found = []
    code = r["code"]
    if r["timed_out"]:
        return []  # slow: counted by the caller
    if code is None or code < 0:
        found.append(f"killed by signal {-code if code else '?'}")
    elif code not in (0, 1, 2):
        found.append(f"exit {code}, expected 0, 1 or 2")
    err = r["stderr"]
    for bad in ("Traceback (most recent call last)", "std::bad_alloc", "terminate called", "Segmentation fault",
                "AddressSanitizer", "runtime error:", "Assertion", "core dumped"):
        if bad in err:
            found.append(f"stderr holds '{bad}'")
    allowed = allowed_writes(command, r["argv"], r["config"])
    outside = []
    for path in r["changed"]:
        norm = os.path.normpath(path)
        if norm.startswith(os.path.join("work", "out")) or norm in allowed:
            continue
        if any(norm.startswith(a + os.sep) for a in allowed):
            continue
        outside.append(path)
    if outside:
        shown = ", ".join(outside[:5]) + (f" and {len(outside) - 5} more" if len(outside) > 5 else "")
        found.append(f"{'exit 2 but wrote' if code == 2 else 'wrote outside --out'}: {shown}")
    if code == 2 and any(p.startswith(os.path.join("work", "out")) for p in r["changed"]):
        found.append("exit 2 but wrote under --out")
    if code == 2 and not err.strip():
        found.append("exit 2 with nothing on stderr")
    return found


def reorder(rng, groups):
    """The same groups in another order; a repeated option keeps its relative order (the second
    of two is the one refused or kept). An end-of-options marker `--` and all after it stay where
    they are: moving an option past it makes the option a positional word."""
    for k, g in enumerate(groups):
        if g == ["--"]:
            return reorder(rng, groups[:k]) + groups[k:] if k > 0 else list(groups)
    order = list(range(len(groups)))
    rng.shuffle(order)
    # Keep repeated option names in their original relative order.
    by_name = {}
    for i in range(len(groups)):
        by_name.setdefault(groups[i][0].split("=")[0], []).append(i)
    out, used = [], {k: 0 for k in by_name}
    for i in order:
        name = groups[i][0].split("=")[0]
        out.append(groups[by_name[name][used[name]]])
        used[name] += 1
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=1.0, help="per command")
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--sim", default=None)
    ap.add_argument("--out", default=None, help="folder for findings.jsonl and summary.json")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per case")
    args = ap.parse_args()
    sim = args.sim or next((p for p in (os.path.join(ROOT, "build", "dspark-sim"),
                                        os.path.join(ROOT, "build-cpu", "dspark-sim")) if os.path.exists(p)), None)
    if not sim:
        print("fuzz-cli: no dspark-sim binary (build one: scripts/build-sim.sh)", file=sys.stderr)
        return 2
    sim = os.path.abspath(sim)
    seed = args.seed if args.seed is not None else int(time.time())
    out_dir = args.out or tempfile.mkdtemp(prefix="fuzz-cli-out-")
    os.makedirs(out_dir, exist_ok=True)
    findings_path = os.path.join(out_dir, "findings.jsonl")
    summary = {"seed": seed, "sim": sim, "commands": {}}
    total_findings = 0
    for command in args.commands.split(","):
        options = parse_help(sim, command)
        rng = random.Random(f"{seed}/{command}")
        deadline = time.monotonic() + 60.0 * args.minutes
        stats = {"cases": 0, "exit": {}, "slow": 0, "findings": 0, "order_checked": 0, "seconds": 0.0}
        started = time.monotonic()
        while time.monotonic() < deadline:
            groups, config = draw_case(rng, command, options)
            drawn = {g[0].split("=")[0] for g in groups}
            small = []
            base = SMALL[command]
            i = 0
            while i < len(base):
                name = base[i]
                takes = i + 1 < len(base) and not base[i + 1].startswith("--")
                if name not in drawn:
                    small += base[i:i + 2] if takes else [name]
                i += 2 if takes else 1
            # For a config case, the small defaults move into the file where the file does not set them.
            argv = [t for g in groups for t in g]
            r = run_case(sim, command, small + argv, config, args.timeout)
            stats["cases"] += 1
            key = "timeout" if r["timed_out"] else str(r["code"])
            stats["exit"][key] = stats["exit"].get(key, 0) + 1
            found = findings_of(r, command)
            if r["timed_out"]:
                stats["slow"] += 1
                if not r["stdout"].strip() and not r["stderr"].strip() and command != "verify":
                    pass  # a quiet slow case: sizes allowed by the draw; counted, not a finding
            elif len(groups) > 1:
                # Order independence: the same options in another order.
                other = reorder(rng, groups)
                argv2 = [t for g in other for t in g]
                if argv2 != argv:
                    r2 = run_case(sim, command, small + argv2, config, args.timeout)
                    stats["order_checked"] += 1
                    if not r2["timed_out"]:
                        if r2["code"] != r["code"]:
                            found.append(f"exit {r['code']} but {r2['code']} with the options in another order: "
                                         f"{' '.join(argv2)}")
                        elif r["code"] == 0 and r2["digest"] != r["digest"]:
                            diff = sorted(k for k in set(r["digest"]) | set(r2["digest"])
                                          if r["digest"].get(k) != r2["digest"].get(k))
                            found.append(f"results differ with the options in another order ({', '.join(diff)}): "
                                         f"{' '.join(argv2)}")
            if found:
                stats["findings"] += 1
                total_findings += 1
                with open(findings_path, "a") as f:
                    f.write(json.dumps({"command": command, "argv": r["argv"], "config": config,
                                        "broken": found, "exit": r["code"], "stderr": r["stderr"][-2000:],
                                        "stdout": r["stdout"][-1000:]}) + "\n")
                print(f"fuzz-cli: FINDING {command}: {'; '.join(found)}\n  dspark-sim {' '.join(r['argv'])}"
                      + (f"\n  config: {config!r}" if config else ""), flush=True)
        stats["seconds"] = round(time.monotonic() - started, 1)
        summary["commands"][command] = stats
        print(f"fuzz-cli: {command}: {stats['cases']} cases in {stats['seconds'] / 60:.1f} min, exits {stats['exit']}, "
              f"{stats['order_checked']} order checks, {stats['slow']} slow, {stats['findings']} findings", flush=True)
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(f"fuzz-cli: seed {seed}; {total_findings} findings; {out_dir}/summary.json"
          + (f", {findings_path}" if total_findings else ""))
    return 1 if total_findings else 0


if __name__ == "__main__":
    sys.exit(main())
