"""Regenerate the memory corpus (run by hand with jax installed; the tests read the stored files, not jax).

    python tools/make_memory_corpus.py            # every program
    python tools/make_memory_corpus.py mlp_train  # some programs

Each program is a small JAX function compiled on XLA:CPU in its own subprocess with
``XLA_FLAGS=--xla_dump_to=DIR --xla_dump_hlo_as_text`` (and ``--xla_force_host_platform_device_count=8`` for the
sharded one). Written to ``tests/data/memory/``: ``NAME.hlo`` (``compiled.as_text()``, the optimized scheduled
module), ``NAME.json`` (``compiled.memory_analysis()``) and XLA's dump files of the after-optimizations module:
``NAME.buffer-assignment.txt``, ``NAME.memory-usage-report.txt``, ``NAME.live-range.txt``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "memory"
SHARDED = {"sharded_matmul"}
DUMP_KINDS = ("buffer-assignment", "memory-usage-report", "live-range")

Program = Callable[[], tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]]
PROGRAMS: dict[str, Program] = {}


def program(func: Program) -> Program:
    """Register a program: returns (function, example arguments, jit keyword arguments)."""
    PROGRAMS[func.__name__] = func
    return func


def _mlp_params(jax: Any, jnp: Any, sizes: list[int], dtype: Any) -> list[tuple[Any, Any]]:
    keys = jax.random.split(jax.random.PRNGKey(0), len(sizes) - 1)
    return [((jax.random.normal(k, (a, b)) * 0.1).astype(dtype), jnp.zeros((b,), dtype))
            for k, a, b in zip(keys, sizes[:-1], sizes[1:])]


def _mlp_loss(jax: Any, jnp: Any) -> Callable[..., Any]:
    def loss(params: Any, x: Any, y: Any) -> Any:
        h = x
        for w, b in params[:-1]:
            h = jax.nn.relu(h @ w + b)
        w, b = params[-1]
        logits = (h @ w + b).astype(jnp.float32)
        return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))
    return loss


def _sgd(jax: Any, loss: Callable[..., Any]) -> Callable[..., Any]:
    def step(params: Any, x: Any, y: Any) -> Any:
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return value, jax.tree.map(lambda p, g: p - (0.01 * g).astype(p.dtype), params, grads)
    return step


@program
def mlp_train() -> Any:
    import jax
    import jax.numpy as jnp
    params = _mlp_params(jax, jnp, [256, 512, 512, 10], jnp.float32)
    return _sgd(jax, _mlp_loss(jax, jnp)), (params, jnp.ones((64, 256)), jnp.ones((64, 10))), {}


@program
def mlp_donated() -> Any:
    import jax
    import jax.numpy as jnp
    params = _mlp_params(jax, jnp, [256, 384, 384, 10], jnp.float32)
    return _sgd(jax, _mlp_loss(jax, jnp)), (params, jnp.ones((64, 256)), jnp.ones((64, 10))), {"donate_argnums": 0}


@program
def mlp_bf16() -> Any:
    import jax
    import jax.numpy as jnp
    params = _mlp_params(jax, jnp, [256, 512, 256, 10], jnp.bfloat16)
    x = jnp.ones((64, 256), jnp.bfloat16)
    return _sgd(jax, _mlp_loss(jax, jnp)), (params, x, jnp.ones((64, 10))), {}


@program
def mlp_remat() -> Any:
    import jax
    import jax.numpy as jnp
    base = _mlp_loss(jax, jnp)

    def loss(params: Any, x: Any, y: Any) -> Any:
        return jax.checkpoint(base)(params, x, y)
    params = _mlp_params(jax, jnp, [256, 512, 512, 512, 10], jnp.float32)
    return _sgd(jax, loss), (params, jnp.ones((64, 256)), jnp.ones((64, 10))), {}


def _transformer(jax: Any, jnp: Any, layers: int, d: int, heads: int, vocab: int) -> tuple[Any, Any]:
    keys = iter(jax.random.split(jax.random.PRNGKey(1), 4 + 6 * layers))

    def dense(a: int, b: int) -> Any:
        return jax.random.normal(next(keys), (a, b)) * 0.02
    params = {"embed": dense(vocab, d), "layers": [
        {"qkv": dense(d, 3 * d), "out": dense(d, d), "up": dense(d, 4 * d), "down": dense(4 * d, d),
         "ln1": jnp.ones((d,)), "ln2": jnp.ones((d,))} for _ in range(layers)]}

    def norm(x: Any, g: Any) -> Any:
        mean = x.mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(x.var(-1, keepdims=True) + 1e-5) * g

    def loss(params: Any, tokens: Any) -> Any:
        x = params["embed"][tokens]
        b, t, _ = x.shape
        mask = jnp.tril(jnp.ones((t, t), bool))
        for layer in params["layers"]:
            h = norm(x, layer["ln1"]) @ layer["qkv"]
            q, k, v = (a.reshape(b, t, heads, d // heads) for a in jnp.split(h, 3, axis=-1))
            s = jnp.einsum("bqhd,bkhd->bhqk", q, k) / (d // heads) ** 0.5
            p = jax.nn.softmax(jnp.where(mask, s, -1e9), axis=-1)
            x = x + jnp.einsum("bhqk,bkhd->bqhd", p, v).reshape(b, t, d) @ layer["out"]
            x = x + jax.nn.gelu(norm(x, layer["ln2"]) @ layer["up"]) @ layer["down"]
        logits = x @ params["embed"].T
        return -jnp.mean(jax.nn.log_softmax(logits)[..., 0])
    return params, loss


@program
def transformer_train() -> Any:
    import jax
    import jax.numpy as jnp
    params, loss = _transformer(jax, jnp, 2, 128, 4, 512)

    def step(params: Any, opt: Any, tokens: Any) -> Any:
        value, grads = jax.value_and_grad(loss)(params, tokens)
        opt = jax.tree.map(lambda m, g: 0.9 * m + 0.1 * g * g, opt, grads)
        params = jax.tree.map(lambda p, g, m: p - 0.001 * g * jax.lax.rsqrt(m + 1e-8), params, grads, opt)
        return value, params, opt
    opt = jax.tree.map(jnp.zeros_like, params)
    return step, (params, opt, jnp.zeros((4, 64), jnp.int32)), {"donate_argnums": (0, 1)}


@program
def attention_forward() -> Any:
    import jax
    import jax.numpy as jnp

    def attend(q: Any, k: Any, v: Any) -> Any:
        s = jnp.einsum("bqhd,bkhd->bhqk", q, k) * 0.125
        return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(s, axis=-1), v)
    x = jnp.ones((2, 256, 4, 64))
    return attend, (x, x, x), {}


@program
def convnet_train() -> Any:
    import jax
    import jax.numpy as jnp

    def loss(params: Any, x: Any) -> Any:
        dn = ("NHWC", "HWIO", "NHWC")
        h = jax.nn.relu(jax.lax.conv_general_dilated(x, params["k1"], (1, 1), "SAME", dimension_numbers=dn))
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = jax.nn.relu(jax.lax.conv_general_dilated(h, params["k2"], (1, 1), "SAME", dimension_numbers=dn))
        return jnp.mean(h.reshape(h.shape[0], -1) @ params["w"])
    params = {"k1": jnp.ones((3, 3, 3, 16)), "k2": jnp.ones((3, 3, 16, 32)), "w": jnp.ones((16 * 16 * 32, 10))}
    step = _sgd(jax, lambda p, x, _: loss(p, x))
    return step, (params, jnp.ones((8, 32, 32, 3)), jnp.zeros(())), {}


@program
def scan_rnn() -> Any:
    import jax
    import jax.numpy as jnp

    def loss(w: Any, u: Any, xs: Any) -> Any:
        def cell(h: Any, x: Any) -> Any:
            h = jnp.tanh(h @ w + x @ u)
            return h, h.sum()
        _, ys = jax.lax.scan(cell, jnp.zeros((32, 128)), xs)
        return ys.sum()
    return jax.value_and_grad(loss, argnums=(0, 1)), (jnp.ones((128, 128)), jnp.ones((64, 128)),
                                                       jnp.ones((50, 32, 64))), {}


@program
def fori_update() -> Any:
    import jax
    import jax.numpy as jnp

    def run(x: Any, table: Any) -> Any:
        def body(i: Any, carry: Any) -> Any:
            acc, t = carry
            row = jnp.sin(acc[i] * 2.0) + t[i % 8]
            return acc.at[i].set(row), t * 1.0001
        return jax.lax.fori_loop(0, x.shape[0], body, (x, table))
    return run, (jnp.ones((128, 1024)), jnp.ones((8, 1024))), {}


@program
def while_donated() -> Any:
    import jax
    import jax.numpy as jnp

    def run(x: Any, y: Any) -> Any:
        def cond(c: Any) -> Any:
            return c[2] < 10

        def body(c: Any) -> Any:
            a, b, n = c
            return jnp.tanh(a @ b), b + 1.0, n + 1
        a, b, _ = jax.lax.while_loop(cond, body, (x, y, 0))
        return a, b
    return run, (jnp.ones((256, 256)), jnp.ones((256, 256))), {"donate_argnums": (0, 1)}


@program
def cond_branches() -> Any:
    import jax
    import jax.numpy as jnp

    def run(p: Any, x: Any) -> Any:
        big = jax.lax.cond(p > 0, lambda v: jnp.outer(v, v).sum(0), lambda v: jnp.cumsum(v) * 2.0, x)
        return big + 1.0
    return run, (jnp.float32(1.0), jnp.ones((1024,))), {}


@program
def switch_branches() -> Any:
    import jax
    import jax.numpy as jnp

    def run(i: Any, x: Any) -> Any:
        branches = [lambda v: v @ v.T, lambda v: jnp.sin(v) @ v.T, lambda v: (v * 2.0) @ v.T + 1.0]
        return jax.lax.switch(i, branches, x)
    return run, (jnp.int32(1), jnp.ones((256, 128))), {}


@program
def int8_matmul() -> Any:
    import jax
    import jax.numpy as jnp

    def run(x: Any, w: Any, scale: Any) -> Any:
        q = jnp.clip(jnp.round(x / scale), -127, 127).astype(jnp.int8)
        acc = jax.lax.dot(q, w, preferred_element_type=jnp.int32)
        return acc.astype(jnp.float32) * scale
    return run, (jnp.ones((128, 512)), jnp.ones((512, 256), jnp.int8), jnp.float32(0.1)), {}


@program
def int4_dequant() -> Any:
    import jax.numpy as jnp

    def run(x: Any, w: Any) -> Any:
        return x @ (w.astype(jnp.float32) * 0.5)
    return run, (jnp.ones((64, 512)), jnp.ones((512, 512), jnp.int4)), {}


@program
def fp8_matmul() -> Any:
    import jax
    import jax.numpy as jnp

    def run(x: Any, w: Any) -> Any:
        x8 = x.astype(jnp.float8_e4m3fn)
        return jax.lax.dot(x8, w, preferred_element_type=jnp.float32)
    return run, (jnp.ones((128, 256)), jnp.ones((256, 256), jnp.float8_e4m3fn)), {}


@program
def sort_ops() -> Any:
    import jax
    import jax.numpy as jnp

    def run(x: Any, y: Any) -> Any:
        order = jnp.argsort(x, axis=-1)
        keys, vals = jax.lax.sort((x, y), num_keys=1)
        return order, keys, vals, jnp.sort(x * 2.0, axis=0)
    return run, (jnp.ones((256, 512)), jnp.ones((256, 512), jnp.int32)), {}


@program
def top_k() -> Any:
    import jax
    import jax.numpy as jnp

    def run(x: Any) -> Any:
        values, indices = jax.lax.top_k(jnp.tanh(x) * 3.0, 16)
        return values.sum(-1), indices
    return run, (jnp.ones((512, 1024)),), {}


@program
def scatter_add() -> Any:
    import jax
    import jax.numpy as jnp

    def run(table: Any, idx: Any, upd: Any) -> Any:
        out = table.at[idx].add(upd)
        seg = jax.ops.segment_sum(upd, idx % 16, num_segments=16)
        return out * 2.0, seg
    return run, (jnp.ones((4096, 64)), jnp.zeros((512,), jnp.int32), jnp.ones((512, 64))), {}


@program
def embedding_grad() -> Any:
    import jax
    import jax.numpy as jnp

    def loss(table: Any, tokens: Any) -> Any:
        return jnp.sum(jnp.tanh(table[tokens]) ** 2)
    return jax.value_and_grad(loss), (jnp.ones((8192, 64)), jnp.zeros((16, 128), jnp.int32)), {}


@program
def large_temporaries() -> Any:
    import jax.numpy as jnp

    def run(a: Any, b: Any) -> Any:
        outer = jnp.exp(a[:, None] - b[None, :])
        rows = outer.sum(1)
        outer2 = jnp.sin(b[:, None] * a[None, :]) @ jnp.cos(outer)
        return rows + outer2.sum(0)
    return run, (jnp.ones((1024,)), jnp.ones((1024,))), {}


@program
def many_small() -> Any:
    import jax.numpy as jnp

    def run(xs: Any) -> Any:
        outs = []
        acc = jnp.zeros((16,))
        for i, x in enumerate(xs):
            y = jnp.sort(x * (i + 1.0))
            acc = acc + y
            outs.append(y[:4])
        return acc, jnp.concatenate(outs)
    return run, ([jnp.ones((16,)) * i for i in range(60)],), {}


@program
def layernorm_softmax() -> Any:
    import jax
    import jax.numpy as jnp

    def run(x: Any, g: Any) -> Any:
        mean = x.mean(-1, keepdims=True)
        h = (x - mean) * jax.lax.rsqrt(x.var(-1, keepdims=True) + 1e-5) * g
        return jax.nn.softmax(h, axis=-1), jax.nn.logsumexp(h, axis=0)
    return run, (jnp.ones((512, 768)), jnp.ones((768,))), {}


@program
def tuple_outputs() -> Any:
    import jax.numpy as jnp

    def run(x: Any, y: Any) -> Any:
        return x, y + 1.0, jnp.arange(1000.0), {"a": x * 2.0, "b": (x @ x).T}
    return run, (jnp.ones((128, 128)), jnp.ones((300,))), {}


@program
def cumulative_ops() -> Any:
    import jax
    import jax.numpy as jnp

    def run(x: Any) -> Any:
        c = jnp.cumsum(x, axis=0)
        w = jax.lax.reduce_window(x, 0.0, jax.lax.add, (8, 8), (1, 1), "SAME")
        return c - w, jnp.fft.rfft(x[:16], axis=-1).real
    return run, (jnp.ones((256, 256)),), {}


@program
def sharded_matmul() -> Any:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("data", "model"))
    xs = NamedSharding(mesh, P("data", None))
    ws = NamedSharding(mesh, P(None, "model"))

    def run(x: Any, w1: Any, w2: Any) -> Any:
        h = jax.nn.relu(x @ w1)
        out = h @ w2
        return out, jnp.sum(out ** 2)
    x = jax.device_put(jnp.ones((256, 512)), xs)
    w1 = jax.device_put(jnp.ones((512, 1024)), ws)
    w2 = jax.device_put(jnp.ones((1024, 512)), NamedSharding(mesh, P("model", None)))
    return run, (x, w1, w2), {"out_shardings": (xs, NamedSharding(mesh, P()))}


def compile_one(name: str, dump: Path) -> None:
    """Compile one program (in this process, XLA_FLAGS already set) and write its files to OUT."""
    import jax

    func, args, jit_kwargs = PROGRAMS[name]()
    func.__name__ = f"prog_{name}"  # type: ignore[attr-defined]
    compiled = jax.jit(func, **jit_kwargs).lower(*args).compile()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{name}.hlo").write_text(compiled.as_text())
    stats = compiled.memory_analysis()
    figures = {key: int(getattr(stats, key)) for key in (
        "argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes", "temp_size_in_bytes",
        "generated_code_size_in_bytes")}
    figures["jax_version"] = jax.__version__  # type: ignore[assignment]
    (OUT / f"{name}.json").write_text(json.dumps(figures, indent=1) + "\n")
    for kind in DUMP_KINDS:
        found = sorted(dump.glob(f"module_*.jit_prog_{name}.*after_optimizations-{kind}.txt"))
        if not found:
            raise SystemExit(f"{name}: no {kind} dump in {dump}")
        shutil.copyfile(found[-1], OUT / f"{name}.{kind}.txt")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--one"]:
        compile_one(argv[1], Path(argv[2]))
        return 0
    names = argv or list(PROGRAMS)
    for name in names:
        with tempfile.TemporaryDirectory() as dump:
            flags = f"--xla_dump_to={dump} --xla_dump_hlo_as_text"
            if name in SHARDED:
                flags += " --xla_force_host_platform_device_count=8"
            env = dict(os.environ, XLA_FLAGS=flags, TF_CPP_MIN_LOG_LEVEL="3", JAX_PLATFORMS="cpu")
            subprocess.run([sys.executable, __file__, "--one", name, dump], check=True, env=env)
        print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
