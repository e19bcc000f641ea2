"""Imports one released vLLM's own metadata code with its engine imports stubbed out.

    import vllm_loader
    rel = vllm_loader.load("0.34.0")            # tree from scripts/fetch-vllm.sh
    meta = rel.module("vllm.v1.attention.ops.metadata")
    meta.compute_token_to_req_indices(qsl, out, num_mapped, num_tokens)

What executes is the release's own Python (and Triton) code, imported from its extracted tree;
this file only decides which modules are *not* imported:
- Some packages are registered bare (a module object with ``__path__`` pointing into the tree),
  so their ``__init__`` - which pulls in the engine, the compiled extensions and the model
  registry - never runs; their submodules import normally from the tree.
- Some modules are answered by permissive stubs (a meta-path finder): configuration, the
  distributed layer, compiled extensions, and helpers that only the engine needs. Any attribute
  of a stub is another stub; calling a stub with one function or class returns it unchanged
  (decorators), calling it otherwise gives a stub instance; stubs can be subclassed.

One release per process: a second ``load`` of another version raises. The loader needs torch
(the releases import it at module level); triton is needed by the modules that define kernels.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.metadata
import os
import pathlib
import sys
import tempfile
import types
from typing import Iterable

# Packages whose __init__ must not run (they import the engine); their children still import.
BARE_PACKAGES = (
    "vllm",
    "vllm.model_executor",
    "vllm.model_executor.layers",
    "vllm.model_executor.kernels",
    "vllm.models",
    "vllm.models.deepseek_v4",
    "vllm.models.deepseek_v4.nvidia",
    "vllm.models.deepseek_v41",
    "vllm.models.deepseek_v41.nvidia",
    "vllm.v1.attention.backends.mla",
    "vllm.v1.worker",
    "vllm.v1.worker.gpu",
    "vllm.v1.worker.gpu.spec_decode",
)

# Modules (and everything below them) answered by permissive stubs.
STUB_MODULES = (
    "vllm._C",
    "vllm._C_stable_libtorch",
    "vllm._custom_ops",
    "vllm.config",
    "vllm.distributed",
    "vllm.forward_context",
    "vllm.multimodal",
    "vllm.transformers_utils",
    "vllm.utils.cache",
    "vllm.utils.mem_utils",
    "vllm.utils.deep_gemm",
    "vllm.v1.kv_cache_interface",
    "vllm.v1.utils",
    "vllm.v1.attention.ops.flashmla",
    "vllm.v1.attention.ops.shardq",
    "vllm.v1.worker.gpu.attn_utils",
    "vllm.v1.worker.gpu.async_utils",
    "vllm.model_executor.layers.attention_layer_base",
    "vllm.model_executor.layers.layernorm",
    "vllm.model_executor.layers.quantization",
    "vllm.model_executor.kernels",
    "vllm.models.deepseek_v41.common",
    "flashinfer",
    "transformers",
)

# Values a stub module must give instead of a stub (a stub is truthy).
STUB_VALUES = {
    "vllm.utils.deep_gemm": {"has_deep_gemm": lambda: False, "is_deep_gemm_supported": lambda: False},
}

_loaded: "Release | None" = None


def default_cache_dir() -> str:
    env = os.environ.get("DSPARK_VLLM_CACHE")
    if env:
        return env
    return os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        ".vllm-cache")


class _StubMeta(type):
    """Metaclass of every stub: class-level attributes are stubs, calls are permissive."""

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _make_stub_class(f"{cls.__qualname__}.{name}", cls.__module__)

    def __call__(cls, *args, **kwargs):
        if not cls.__dict__.get("_dspark_stub", False):
            return super().__call__(*args, **kwargs)  # a release class derived from a stub
        if len(args) == 1 and not kwargs and (isinstance(args[0], type) or callable(args[0])) \
                and not isinstance(args[0], _Stub):
            return args[0]  # used as a decorator
        return super().__call__()

    def __getitem__(cls, item):  # Generic-style subscripts: Stub[T]
        return cls

    def __or__(cls, other):
        return cls

    def __ror__(cls, other):
        return cls

    def __iter__(cls):
        return iter(())

    def __bool__(cls):
        return True


class _Stub(metaclass=_StubMeta):
    _dspark_stub = True

    def __init__(self, *args, **kwargs):
        pass

    def __init_subclass__(cls, **kwargs):
        cls._dspark_stub = False

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _make_stub_class(f"{type(self).__qualname__}.{name}", type(self).__module__)()

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], _Stub):
            return args[0]
        return _make_stub_class(f"{type(self).__qualname__}()", type(self).__module__)()

    def __getitem__(self, item):
        return self

    def __iter__(self):
        return iter(())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _make_stub_class(qualname: str, module: str) -> type:
    cls = _StubMeta(qualname.rsplit(".", 1)[-1], (_Stub,), {"_dspark_stub": True})
    cls.__qualname__ = qualname
    cls.__module__ = module
    return cls


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _make_stub_class(name, self.__name__)
        setattr(self, name, value)
        return value


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        mod = _StubModule(spec.name)
        mod.__path__ = []  # a package, so that any submodule is also answered by a stub
        mod.__dspark_stub__ = True
        for key, value in STUB_VALUES.get(spec.name, {}).items():
            setattr(mod, key, value)
        return mod

    def exec_module(self, module):
        pass


class _StubFinder(importlib.abc.MetaPathFinder):
    def __init__(self, names: Iterable[str], version: str):
        self.names = tuple(names)
        self.version = version
        self._dist_dir: str | None = None

    def find_distributions(self, context=importlib.metadata.DistributionFinder.Context()):
        # The release reads its own version (importlib.metadata.version("vllm")) to detect the
        # platform; without an installed wheel that lookup fails and Triton is disabled. Answer
        # it with the loaded version's name and version only.
        if context.name not in ("vllm",):
            return iter(())
        if self._dist_dir is None:
            self._dist_dir = tempfile.mkdtemp(prefix="dspark-vllm-dist-")
            info = os.path.join(self._dist_dir, f"vllm-{self.version}.dist-info")
            os.makedirs(info)
            with open(os.path.join(info, "METADATA"), "w") as f:
                f.write(f"Metadata-Version: 2.1\nName: vllm\nVersion: {self.version}\n")
        return iter([importlib.metadata.PathDistribution(
            pathlib.Path(self._dist_dir) / f"vllm-{self.version}.dist-info")])

    def stubbed(self, fullname: str) -> bool:
        return any(fullname == n or fullname.startswith(n + ".") for n in self.names)

    def find_spec(self, fullname, path=None, target=None):
        if not self.stubbed(fullname):
            return None
        return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)


class Release:
    """One loaded release. ``module(name)`` imports ``name`` from the release's tree."""

    def __init__(self, version: str, root: str, finder: _StubFinder):
        self.version = version
        self.root = root  # the folder holding vllm/
        self._finder = finder

    def module(self, name: str) -> types.ModuleType:
        if not (name == "vllm" or name.startswith("vllm.")):
            raise ValueError(f"{name}: not a vllm module")
        mod = importlib.import_module(name)
        if getattr(mod, "__dspark_stub__", False):
            raise ImportError(f"{name} is stubbed by the loader in vLLM {self.version}; "
                              "it is not the release's code")
        return mod

    def has(self, name: str) -> bool:
        """Whether the release's tree holds module ``name`` (a file or a package)."""
        rel = name.replace(".", os.sep)
        return (os.path.isfile(os.path.join(self.root, rel + ".py"))
                or os.path.isfile(os.path.join(self.root, rel, "__init__.py")))

    def source_file(self, name: str) -> str:
        return self.module(name).__file__

    def is_stub(self, name: str) -> bool:
        return self._finder.stubbed(name)


def load(version: str, cache_dir: str | None = None) -> Release:
    """Loads vLLM ``version`` from ``cache_dir``/``version``/vllm (scripts/fetch-vllm.sh)."""
    global _loaded
    if _loaded is not None:
        if _loaded.version == version:
            return _loaded
        raise RuntimeError(f"vLLM {_loaded.version} is already loaded in this process; "
                           f"load {version} in another process (one release per process)")
    cache_dir = cache_dir or default_cache_dir()
    root = os.path.join(cache_dir, version)
    if not os.path.isfile(os.path.join(root, "vllm", "__init__.py")):
        raise FileNotFoundError(f"{root}/vllm/__init__.py: no vLLM {version} tree; run "
                                f"DSPARK_VLLM_CACHE={cache_dir} scripts/fetch-vllm.sh {version}")
    clashing = [m for m in sys.modules if m == "vllm" or m.startswith("vllm.")]
    if clashing:
        raise RuntimeError(f"another vllm is already imported ({clashing[0]}); "
                           "the oracle needs a process of its own")
    import torch  # noqa: F401  (every release imports it; fail here with a clear message)

    finder = _StubFinder(STUB_MODULES, version)
    sys.meta_path.insert(0, finder)
    for name in BARE_PACKAGES:
        path = os.path.join(root, *name.split("."))
        if not os.path.isdir(path):
            continue  # e.g. deepseek_v41 before 0.30.0
        mod = types.ModuleType(name)
        mod.__path__ = [path]
        mod.__file__ = os.path.join(path, "__init__.py")
        mod.__package__ = name
        mod.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
        mod.__spec__.submodule_search_locations = [path]
        sys.modules[name] = mod
        parent, _, child = name.rpartition(".")
        if parent and parent in sys.modules:
            setattr(sys.modules[parent], child, mod)
    # Intermediate packages between bare ones (e.g. vllm.v1, vllm.v1.attention) import from the
    # tree through vllm.__path__; they are light (their __init__ files are empty or nearly).
    _loaded = Release(version, root, finder)
    if interpreting():
        _enable_triton_interpreter(root)
    return _loaded


def interpreting() -> bool:
    """Triton's interpreter runs kernels on CPU tensors (TRITON_INTERPRET=1)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _enable_triton_interpreter(root: str) -> None:
    """On a host without a GPU, the release's vllm.triton_utils finds no active Triton driver and
    hands out placeholders instead of triton. Under TRITON_INTERPRET=1 the kernels can run on CPU
    tensors, so the release's own host check (importing.HAS_TRITON) is set to True before its
    vllm.triton_utils package reads it. Nothing else of the release is changed."""
    name = "vllm.triton_utils"
    path = os.path.join(root, "vllm", "triton_utils")
    pkg = types.ModuleType(name)
    pkg.__path__ = [path]
    pkg.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    pkg.__spec__.submodule_search_locations = [path]
    sys.modules[name] = pkg
    try:
        importing = importlib.import_module(name + ".importing")
        if not importing.HAS_TRITON:
            import triton  # noqa: F401
            importing.HAS_TRITON = True
    finally:
        del sys.modules[name]
    importlib.import_module(name)
    _patch_interpreter_index()


def _patch_interpreter_index() -> None:
    """Triton's interpreter turns a scalar into a one-element numpy array and converts it with
    int(), which numpy >= 2.4 refuses for arrays of one dimension ("only 0-dimensional arrays
    can be converted"), so `for i in range(0, n, B)` over a kernel argument fails. This wraps the
    interpreter's tensor patching to convert through .item(); the kernels are unchanged."""
    try:
        import numpy as np
        import triton.runtime.interpreter as ti
    except ImportError:
        return
    orig = getattr(ti, "_patch_lang_tensor", None)
    if orig is None or getattr(orig, "_dspark_wrapped", False):
        return

    def patched(tensor, scope):
        orig(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(np.asarray(self.handle.data).reshape(-1)[0]))

    patched._dspark_wrapped = True
    ti._patch_lang_tensor = patched


def _main(argv: list[str]) -> int:
    import argparse
    ap = argparse.ArgumentParser(description="Import modules of one released vLLM through the "
                                 "loader and say which succeeded (a smoke check of a fetched tree).")
    ap.add_argument("version")
    ap.add_argument("modules", nargs="*", default=["vllm.v1.attention.backend"])
    ap.add_argument("--cache-dir", default=None)
    args = ap.parse_args(argv)
    try:
        import torch  # noqa: F401
    except ImportError:
        print("vllm_loader: skipped: torch is not importable here")
        return 0
    rel = load(args.version, args.cache_dir)
    bad = 0
    for name in args.modules:
        try:
            mod = rel.module(name)
            print(f"ok   {name}  ({os.path.relpath(mod.__file__, rel.root)})")
        except Exception as e:  # report every module, then fail
            print(f"FAIL {name}: {type(e).__name__}: {e}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
