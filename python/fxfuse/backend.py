"""``torch.compile(model, backend="fxfuse")``: Inductor with the fxfuse pass installed as
its post-grad custom pass. Everything fxfuse does not fuse, Inductor still compiles; the
backward graph of a training step goes through the same post-grad pass.

    torch.compile(m, backend="fxfuse")                       # after `import fxfuse`, or by
                                                             # entry point without import
    torch.compile(m, backend="fxfuse", mode="max-autotune")  # mode / options reach Inductor
    torch.compile(m, backend="fxfuse", options={"fxfuse.dump_dir": "d", "max_autotune": True})
    fxfuse.compile(m, mode="reduce-overhead", dump_dir="d")  # same, fxfuse options as kwargs
    torch.compile(m, backend=fxfuse.backend_with(mode="reduce-overhead", min_k=64))

Option keys starting with ``fxfuse.`` (or ``fxfuse_``) go to :class:`Options`; the others
are Inductor config keys, validated like ``torch.compile(backend="inductor", options=...)``.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import os
from typing import Any, Callable

import torch
import torch.fx

from . import collapsed_groups, decomposed_activations, decomposed_groups, decomposed_round, linear_output_views
from .pass_driver import Options, run_on_graph
from .stats import record_cached_graph

log = logging.getLogger("fxfuse")

__all__ = ["FxfusePass", "fxfuse_backend", "backend_with", "compile", "register", "BACKEND_NAME"]

BACKEND_NAME = "fxfuse"

try:  # torch ≥ 2.4
    from torch._inductor.custom_graph_pass import CustomGraphPass as _PassBase
except ImportError:  # pragma: no cover - older torch: a plain callable is accepted
    _PassBase = object  # type: ignore[assignment,misc]


@functools.lru_cache(maxsize=1)
def _sources_hash() -> str:
    h = hashlib.sha256()
    here = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            with open(os.path.join(here, name), "rb") as f:
                h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()


def _library_version() -> str:
    from . import _C

    fn = getattr(_C, "library_version", None)
    return str(fn()) if fn is not None else "unknown"


def _graph_label(graph: torch.fx.Graph) -> str:
    names = [n.name for n in graph.nodes if n.op == "placeholder"]
    if any(n.startswith("tangents") for n in names):
        return "backward"
    if any(n.startswith("primals") for n in names):
        return "forward"
    return "inference"


def _wrapper_refusal() -> tuple[str, str] | None:
    """Inductor's ``cpp_wrapper=True`` cannot call the fused op (two torch bugs any custom op with a string
    argument and a list result meets): it pastes the spec, which has newlines, into a C++ string literal as
    it is (the graph fails to compile), and with the newlines escaped it reads a one-tensor list result as a
    tensor (the program crashes). Under that wrapper every chain stays Inductor's, named."""
    from torch._inductor import config

    if not config.cpp_wrapper:
        return None
    return ("cpp_wrapper", "Inductor's cpp_wrapper=True cannot call the fused op (torch bugs: it pastes the "
            "op's spec into C++ unescaped and misreads a one-tensor list result); the chain stays Inductor's. "
            "The default Python wrapper fuses it")


class FxfusePass(_PassBase):
    """The fxfuse pass as an Inductor ``CustomGraphPass``. ``uuid()`` changes with the
    library version, these Python sources and the options, so Inductor's FX graph cache
    never serves a graph compiled by another fxfuse; and with `graph_key`, the code of the Dynamo
    graph it compiles (the backend's): the pass reads the nodes' provenance (decomposed_round.py,
    decomposed_activations.py, decomposed_groups.py), which Inductor's cache key does not see, so
    `round(y, decimals=1)` and a user's own `round(y * 10) * 0.1`, the same graph after Inductor's
    decompositions, were served each other's compiled graph (review, session 57)."""

    def __init__(self, options: Options | None = None, graph_key: str = ""):
        self.options = Options.given(options, "FxfusePass")
        self.graph_key = graph_key
        self.graphs_run = 0  # graphs this instance rewrote (one instance per backend compile)

    def __call__(self, graph: torch.fx.Graph) -> None:
        self.graphs_run += 1
        # Subgraphs (torch.cond / while_loop / map branches and bodies) are Inductor's to pass: it runs its
        # post-grad passes, this one among them, on each subgraph as a graph of its own before the graph
        # that holds it (torch._inductor.compile_fx._recursive_post_grad_passes), and those runs fuse and
        # report their GEMMs. Reporting them here too (control_flow) named each such GEMM twice; searching
        # them from here (subgraph_fusion.py) would repeat those runs on subgraphs Inductor is about to lower.
        refusal = _wrapper_refusal()
        if not self.options.enabled or refusal is not None:  # nothing will fuse: leave the graph as Inductor made it
            run_on_graph(graph, self.options, _graph_label(graph), subgraphs="own_runs", refusal=refusal)
            return
        collapsed = []  # ops standing for Inductor's decompositions while the pass runs, put back where unfused
        try:
            collapsed += decomposed_round.collapse(graph)  # Inductor's round(decimals=d) back to one op (its docstring)
            collapsed += decomposed_activations.collapse(graph)  # GELU / SiLU back to one op on the CPU (its docstring)
            linear_output_views.read_products_through_their_view(graph)  # 3-D linears in training (its docstring)
            options = self.options
            unrounded = decomposed_groups.unrounded_groups(graph)  # eager ops Inductor wrote as 16-bit steps
            if unrounded:
                extra = options.extra + (("unrounded_groups", ",".join(unrounded)),)
                options = dataclasses.replace(options, extra=extra)
            run_on_graph(graph, options, _graph_label(graph), subgraphs="own_runs", refusal=None)
        finally:
            collapsed_groups.expand_unfused(graph, collapsed)

    def uuid(self) -> Any:
        h = hashlib.sha256()
        for part in (_library_version(), _sources_hash(), self.options.key(), self.graph_key):
            h.update(part.encode() + b"\0")
        return h.hexdigest()

    def __repr__(self) -> str:
        return f"FxfusePass({self.options})"


# Inductor config keys this module owns; a user's value for one of them would silently
# remove the fxfuse pass, so it is chained instead.
_PASS_KEY = "post_grad_custom_post_pass"


def _split_options(options: dict[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    fx, ind = {}, {}
    for key, value in (options or {}).items():
        for prefix in ("fxfuse.", "fxfuse_"):
            if key.startswith(prefix):
                fx[key[len(prefix):]] = value
                break
        else:
            ind[key.replace("-", "_")] = value
    return fx, ind


def inductor_config_patches(mode: str | None, options: dict[str, Any] | None,
                            dynamic: bool | None = None) -> dict[str, Any]:
    """What ``torch.compile(backend="inductor", mode=mode, options=options)`` would patch."""
    from torch._inductor import config

    patches: dict[str, Any] = {}
    if mode and mode != "default":
        from torch._inductor import list_mode_options

        patches.update(list_mode_options(mode, dynamic))
    known = config.get_config_copy()
    for key, value in (options or {}).items():
        if key not in known:
            raise RuntimeError(f"Unexpected optimization option {key!r} for the fxfuse backend "
                               f"(Inductor config keys, or fxfuse.<Options field>)")
        patches[key] = value
    return patches


def _in_process(inner: Callable) -> Callable:
    """``inner`` (Inductor's compile_fx_inner, which compiles the forward and, later, the backward graph) run with
    Inductor's FX compile mode set to in-process. Under TORCHINDUCTOR_FX_COMPILE_MODE=subprocess (or with async)
    Inductor compiles in a child process from a portable copy of its config, which leaves out the custom post-grad
    passes: fxfuse's pass never ran, nothing was fused, and the report took the graph for a cache hit (session 59's
    hunt). The mode is a module global compile_fx reads at each compile; it is restored after."""
    import torch._inductor.compile_fx as cfx

    def compile_inner(*args: Any, **kwargs: Any) -> Any:
        modes = getattr(cfx, "FxCompileMode", None)
        saved = (getattr(cfx, "fx_compile_mode", None), getattr(cfx, "fx_compile_async", False))
        if modes is None or saved == (modes.NORMAL, False):
            return inner(*args, **kwargs)
        cfx.fx_compile_mode, cfx.fx_compile_async = modes.NORMAL, False
        try:
            return inner(*args, **kwargs)
        finally:
            cfx.fx_compile_mode, cfx.fx_compile_async = saved

    return compile_inner


def _compile(gm: torch.fx.GraphModule, example_inputs: list[Any], fx_opts: Options,
             patches: dict[str, Any]) -> Callable:
    from torch._inductor import config
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner

    patches = dict(patches)
    if fx_opts.baseline is None:  # a chain left unfused here is compiled by Inductor
        fx_opts = dataclasses.replace(fx_opts, baseline="inductor")
    ours = FxfusePass(fx_opts, graph_key=hashlib.sha256(gm.code.encode()).hexdigest())
    the_pass: Any = ours
    user_pass = patches.get(_PASS_KEY, getattr(config, _PASS_KEY, None))
    if user_pass is not None and not isinstance(user_pass, FxfusePass):
        # Keep the user's pass too (runs before fxfuse). A list is accepted by torch ≥ 2.6;
        # on older releases the user's pass is dropped with a warning.
        try:
            from torch._inductor.custom_graph_pass import get_custom_graph_passes  # noqa: F401
            existing = list(user_pass) if isinstance(user_pass, (list, tuple)) else [user_pass]
            the_pass = existing + [the_pass]
        except ImportError:
            log.warning("fxfuse: replacing the existing post_grad_custom_post_pass %r", user_pass)
    patches[_PASS_KEY] = the_pass
    compiled = compile_fx(gm, example_inputs, inner_compile=_in_process(compile_fx_inner), config_patches=patches)
    if ours.graphs_run == 0 and fx_opts.enabled:  # (disabled, the pass has nothing to count: no cache message)
        # Inductor compiled the inference or forward graph without calling the pass: it served
        # it from its FX graph or AOT autograd cache, so the pass's counters and report miss the
        # graph's chains (the cached code still calls the fused op; the uuid keys the cache on
        # the pass's version and options). A backward graph is compiled later, at the first
        # backward, and is not counted either way here.
        record_cached_graph()
    return compiled


def fxfuse_backend(gm: torch.fx.GraphModule, example_inputs: list[Any], *, mode: str | None = None,
                   options: dict[str, Any] | None = None, **fxfuse_options: Any) -> Callable:
    """The Dynamo backend registered as ``"fxfuse"``. ``mode``/``options`` come from
    ``torch.compile(..., backend="fxfuse", mode=..., options=...)``."""
    fx_kw, ind = _split_options(options)
    fx_opts = Options.from_kwargs(**{**fx_kw, **fxfuse_options})
    return _compile(gm, example_inputs, fx_opts, inductor_config_patches(mode, ind))


def backend_with(mode: str | None = None, options: dict[str, Any] | None = None,
                 **fxfuse_options: Any) -> Callable:
    """A backend callable with fixed ``mode``/``options``/fxfuse options:
    ``torch.compile(m, backend=fxfuse.backend_with(mode="max-autotune", dump_dir="d"))``."""
    fx_kw, ind = _split_options(options)
    fx_opts = Options.from_kwargs(**{**fx_kw, **fxfuse_options})
    patches = inductor_config_patches(mode, ind)  # validate now, not at first call

    def backend(gm, example_inputs, **kw):
        extra_mode, extra_opts = kw.pop("mode", None), kw.pop("options", None)
        if kw:
            raise TypeError(f"unexpected backend arguments {sorted(kw)}")
        more = inductor_config_patches(extra_mode, _split_options(extra_opts)[1]) if (extra_mode or extra_opts) else {}
        return _compile(gm, example_inputs, fx_opts, {**patches, **more})

    backend.__name__ = "fxfuse_backend_with"
    return backend


def compile(model: Callable | None = None, *, mode: str | None = None,  # noqa: A001 - mirrors torch.compile
            options: dict[str, Any] | None = None, fullgraph: bool = False,
            dynamic: bool | None = None, disable: bool = False, **fxfuse_options: Any):
    """``torch.compile`` with the fxfuse backend; fxfuse :class:`Options` as keywords."""
    fx_kw, ind = _split_options(options)
    fx_opts = Options.from_kwargs(**{**fx_kw, **fxfuse_options})
    patches = inductor_config_patches(mode, ind, dynamic)

    def backend(gm, example_inputs):
        return _compile(gm, example_inputs, fx_opts, patches)

    backend.__name__ = "fxfuse"
    if model is None:
        return lambda m: torch.compile(m, backend=backend, fullgraph=fullgraph, dynamic=dynamic, disable=disable)
    return torch.compile(model, backend=backend, fullgraph=fullgraph, dynamic=dynamic, disable=disable)


def register() -> None:
    """Registers ``"fxfuse"`` with Dynamo (idempotent).

    With the ``torch_dynamo_backends`` entry point installed, Dynamo may already know the
    name as an entry point; it then loads ``fxfuse.backend:fxfuse_backend`` itself and
    registers it, and a registration here would be a duplicate."""
    from torch._dynamo.backends import registry

    if BACKEND_NAME in registry._COMPILER_FNS:
        return
    if registry._BACKENDS.get(BACKEND_NAME) is not None:  # a discovered entry point
        return
    registry.register_backend(compiler_fn=fxfuse_backend, name=BACKEND_NAME)
