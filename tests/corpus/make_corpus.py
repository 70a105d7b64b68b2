"""Regenerate the HLO corpus in this folder from a handful of JAX programs (run by hand, commit the outputs).

    XLA_FLAGS=--xla_force_host_platform_device_count=8 python tests/corpus/make_corpus.py

Each program is written twice: ``NAME.unopt.hlo`` (``jax.jit(f).lower(...).as_text(dialect="hlo")``) and
``NAME.opt.hlo`` (``.compile().as_text()``).
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

HERE = Path(__file__).parent
PROGRAMS: dict[str, Callable[[], tuple[Callable[..., Any], tuple[Any, ...]]]] = {}


def program(func: Callable[[], tuple[Callable[..., Any], tuple[Any, ...]]]) -> Callable[[], Any]:
    """Register a program: a function returning (jittable function, example arguments)."""
    PROGRAMS[func.__name__] = func
    return func


@program
def convnet() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """A small conv net with pooling, batch-norm-like statistics and its gradient."""

    def loss(params: dict[str, jax.Array], x: jax.Array) -> jax.Array:
        dn = ("NHWC", "HWIO", "NHWC")
        h = jax.lax.conv_general_dilated(x, params["k1"], (1, 1), "SAME", dimension_numbers=dn)
        h = jax.nn.relu(h)
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        mean = h.mean(axis=(0, 1, 2))
        h = (h - mean) * jax.lax.rsqrt(h.var(axis=(0, 1, 2)) + 1e-5)
        h = jax.lax.conv_general_dilated(h, params["k2"], (2, 2), ((1, 1), (1, 1)), rhs_dilation=(1, 1),
                                         dimension_numbers=dn, feature_group_count=2)
        return jnp.mean(h.reshape(h.shape[0], -1) @ params["w"])

    params = {"k1": jnp.ones((3, 3, 3, 8)), "k2": jnp.ones((3, 3, 4, 8)), "w": jnp.ones((128, 10))}
    return jax.value_and_grad(loss), (params, jnp.ones((2, 16, 16, 3)))


@program
def scan_rnn() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """An RNN written with lax.scan, its gradient and a cumulative sum."""

    def loss(w: jax.Array, xs: jax.Array) -> jax.Array:
        def step(h: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
            h = jnp.tanh(h @ w + x)
            return h, h.sum()

        h, ys = jax.lax.scan(step, jnp.zeros((4, 8)), xs)
        return jnp.cumsum(ys).sum() + h.sum()

    return jax.grad(loss), (jnp.ones((8, 8)), jnp.ones((5, 4, 8)))


@program
def while_cond() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """fori_loop, while_loop, cond and switch, with 2-D constants (array literals)."""
    table = np.arange(12, dtype=np.float32).reshape(3, 4) / 7

    def f(x: jax.Array, n: jax.Array) -> jax.Array:
        x = jax.lax.fori_loop(0, 3, lambda i, v: v * 0.5 + table, x)
        x = jax.lax.while_loop(lambda v: v.sum() < 100.0, lambda v: v * 2.0 + 1.0, x)
        x = jax.lax.cond(n > 0, lambda v: v + table, lambda v: v - 1.0, x)
        branches = [lambda v: v, lambda v: jnp.sin(v), lambda v: v @ table.T @ table]
        return jax.lax.switch(n, branches, x) + jnp.array([[1, 2, 3, 4]] * 3, dtype=jnp.float32)

    return f, (jnp.ones((3, 4)), jnp.int32(1))


@program
def gather_scatter() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Indexing, take_along_axis, scatter-add, sort, top_k, dynamic slices, iota, argmax."""

    def f(x: jax.Array, idx: jax.Array) -> tuple[jax.Array, ...]:
        g = x[idx]
        t = jnp.take_along_axis(x, jnp.argsort(x, axis=1), axis=1)
        s = jnp.zeros_like(x).at[idx].add(g * 2.0)
        m = jnp.zeros((4,), jnp.int32).at[idx % 4].max(idx)
        v, i = jax.lax.top_k(x, 3)
        d = jax.lax.dynamic_slice(x, (idx[0], 1), (2, 3))
        u = jax.lax.dynamic_update_slice(x, d, (1, idx[1]))
        return g, t, s, m, v, i, u, jnp.argmax(x, axis=0), jnp.pad(x, ((1, 2), (0, 1)), constant_values=-1.0)

    return f, (jnp.arange(48.0).reshape(8, 6), jnp.array([3, 1, 4, 1], jnp.int32))


@program
def attention_grad() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Gradients of multi-head attention with a causal mask."""

    def loss(wq: jax.Array, wk: jax.Array, wv: jax.Array, x: jax.Array) -> jax.Array:
        q = jnp.einsum("btd,dhk->bhtk", x, wq)
        k = jnp.einsum("btd,dhk->bhtk", x, wk)
        v = jnp.einsum("btd,dhk->bhtk", x, wv)
        s = jnp.einsum("bhtk,bhsk->bhts", q, k) / 4.0
        mask = jnp.tril(jnp.ones((x.shape[1], x.shape[1]), bool))
        p = jax.nn.softmax(jnp.where(mask, s, -1e9), axis=-1)
        return jnp.einsum("bhts,bhsk->bhtk", p, v).sum()

    w = jnp.ones((16, 2, 8)) * 0.1
    return jax.grad(loss, argnums=(0, 1, 2)), (w, w, w, jnp.ones((2, 6, 16)))


@program
def low_precision() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """bf16, f16, fp8, int8, int4 and bool arithmetic with conversions and bitcasts."""

    def f(a: jax.Array, b: jax.Array, q: jax.Array, p: jax.Array) -> tuple[jax.Array, ...]:
        c = (a @ b.astype(jnp.bfloat16)).astype(jnp.float16)
        e = a.astype(jnp.float8_e4m3fn).astype(jnp.float32) + b.astype(jnp.float8_e5m2).astype(jnp.float32).T
        i = (q.astype(jnp.int32) * 3).astype(jnp.int8)
        n = q.astype(jnp.int4).astype(jnp.int32) + jax.lax.bitcast_convert_type(c, jnp.int16).astype(jnp.int32)
        return c, e, i, n, jnp.logical_xor(p, q > 0), jnp.uint8(7) * p.astype(jnp.uint8)

    return f, (jnp.ones((4, 4), jnp.bfloat16), jnp.ones((4, 4), jnp.float32), jnp.ones((4, 4), jnp.int8),
               jnp.ones((4, 4), bool))


@program
def linalg_rng() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Custom calls (LAPACK), random numbers, FFT, reductions with several outputs."""

    def f(key: jax.Array, x: jax.Array) -> tuple[jax.Array, ...]:
        spd = x @ x.T + 4.0 * jnp.eye(4)
        chol = jnp.linalg.cholesky(spd)
        noise = jax.random.normal(key, (4, 4))
        spectrum = jnp.fft.rfft(x + noise, axis=-1)
        vals, idx = jax.lax.reduce((x, jnp.broadcast_to(jnp.arange(4), (4, 4))), (-jnp.inf, 0),
                                   lambda a, b: (jnp.maximum(a[0], b[0]), jnp.maximum(a[1], b[1])), (1,))
        return chol, spectrum, vals, idx, jnp.linalg.solve(spd, x)

    return f, (jax.random.key(0), jnp.arange(16.0).reshape(4, 4))


@program
def sharded() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """A program sharded over 8 host devices: all-reduce, all-gather, reduce-scatter, all-to-all, permutes."""
    mesh = Mesh(np.array(jax.devices()[:8]).reshape(4, 2), ("data", "model"))
    spec = NamedSharding(mesh, P("data", "model"))

    @partial(jax.shard_map, mesh=mesh, in_specs=(P("data", "model"), P(None, "model")),
             out_specs=(P("data", "model"),) * 4)
    def collectives(x: jax.Array, w: jax.Array) -> tuple[jax.Array, ...]:
        total = jax.lax.psum(x, "data")
        gathered = jax.lax.all_gather(x, "model", axis=1, tiled=True)
        scattered = jax.lax.psum_scatter(w, "data", scatter_dimension=0, tiled=True)
        shifted = jax.lax.ppermute(x, "data", [(i, (i + 1) % 4) for i in range(4)])
        swapped = jax.lax.all_to_all(gathered, "model", 1, 1, tiled=True)
        return total + shifted, scattered, swapped, jax.lax.pmax(x, ("data", "model"))

    def f(x: jax.Array, w: jax.Array) -> tuple[jax.Array, ...]:
        y = jax.lax.with_sharding_constraint(jnp.sin(x) @ w, spec)
        return (*collectives(y, w), y.sum())

    x = jax.device_put(jnp.ones((16, 8)), spec)
    w = jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P(None, "model")))
    return f, (x, w)


@program
def misc_ops() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    """Rematerialization, an RBG key, cumsum, reduce_precision, QR, complex constants and a 23-element tuple."""

    def f(x: jax.Array, i: jax.Array, key: jax.Array) -> tuple[jax.Array, ...]:
        remat = jax.grad(lambda v: jax.checkpoint(lambda u: jnp.sin(jnp.cos(u) @ u))(v).sum())(x)
        noise = jax.random.uniform(key, (4, 4))
        picked = jax.lax.cond(i > 0, lambda t: (t[0] + 1, t[1]), lambda t: (t[0], t[1] * 2), (x, i))
        spectrum = jnp.fft.fft(x.astype(jnp.complex64)) * (1 + 2j)
        parts = (jnp.cumsum(x, axis=0), jax.lax.reduce_precision(x, 5, 10), jnp.linalg.qr(x)[0], *picked,
                 jax.lax.population_count(i), jnp.round(x), jnp.isfinite(x), spectrum, remat, noise)
        return (*parts, *(x[k] * k for k in range(23 - len(parts))))

    return f, (jnp.arange(16.0).reshape(4, 4), jnp.int32(2), jax.random.key(1, impl="rbg"))


def write(name: str, func: Callable[..., Any], args: tuple[Any, ...]) -> None:
    """Lower and compile one program and write both dumps."""
    lowered = jax.jit(func).lower(*args)
    (HERE / f"{name}.unopt.hlo").write_text(lowered.as_text(dialect="hlo"))
    (HERE / f"{name}.opt.hlo").write_text(lowered.compile().as_text())


def main() -> None:
    """Write every program's dumps and report the total size."""
    for name, make in PROGRAMS.items():
        write(name, *make())
    total = sum(path.stat().st_size for path in HERE.glob("*.hlo") if ".large" not in path.name)
    print(f"{len(PROGRAMS)} programs, {total / 1e6:.2f} MB in {HERE}")


if __name__ == "__main__":
    main()
