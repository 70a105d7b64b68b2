"""Regenerate the bundled example HLO dump (run by hand with jax installed): python tools/make_examples.py"""

from pathlib import Path

import jax
import jax.numpy as jnp


def init(key, sizes):
    keys = jax.random.split(key, len(sizes) - 1)
    return [(jax.random.normal(k, (a, b), jnp.float32) * 0.1, jnp.zeros((b,), jnp.float32))
            for k, a, b in zip(keys, sizes[:-1], sizes[1:])]
def loss(params, x, y):
    h = x
    for w, b in params[:-1]:
        h = jax.nn.relu(h @ w + b)
    w, b = params[-1]
    logits = h @ w + b
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))
@jax.jit
def step(params, x, y):
    value, grads = jax.value_and_grad(loss)(params, x, y)
    return value, [(w - 0.01 * gw, b - 0.01 * gb) for (w, b), (gw, gb) in zip(params, grads)]
params = init(jax.random.PRNGKey(0), [784, 512, 256, 10])
x = jnp.zeros((128, 784), jnp.float32)
y = jnp.zeros((128, 10), jnp.float32)
text = step.lower(params, x, y).compile().as_text()
target = Path(__file__).resolve().parent.parent / "src" / "xlashapes" / "examples" / "mlp_train_step.hlo"
target.write_text(text)
print(f"wrote {target} ({len(text)} bytes)")
