"""What the oracle's CTest scripts share: the skip without torch and triton (exit 77), where the
fetched release trees are, and a list of named checks that prints each and fails on any."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORACLE = os.path.join(ROOT, "scripts", "oracle", "vllm_oracle.py")
SKIP = 77


def torch_missing():
    """None when torch and triton import, else the message of the skip."""
    try:
        import torch  # noqa: F401
        import triton  # noqa: F401
    except ImportError as e:
        return f"skipped: {e.name} is not importable (the oracle runs vLLM's code on torch and triton)"
    return None


def release_cache():
    return os.environ.get("DSPARK_VLLM_CACHE", os.path.join(ROOT, ".vllm-cache"))


def has_release(cache, version):
    return os.path.isfile(os.path.join(cache, version, "vllm", "__init__.py"))


class Checks:
    """check(ok, what) prints 'ok' or 'FAIL' and the check; exit_status() is 1 after any failure."""

    def __init__(self):
        self.failures = []

    def check(self, ok, what):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            self.failures.append(what)

    def exit_status(self):
        print(f"{'all' if not self.failures else len(self.failures)} checks {'passed' if not self.failures else 'failed'}")
        return 1 if self.failures else 0
