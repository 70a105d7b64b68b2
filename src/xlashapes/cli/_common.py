"""What every subcommand shares: exit codes, bundled examples, index arguments."""

from __future__ import annotations

from ..errors import ShapeError

SEED_SHAPE = "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}"
"""The seed document's ``add.936`` shape, explained when no shape is given."""

FIGURE_1 = "f32[3,5]{1,0:T(2,2)}"
"""The tiled-layout document's Figure 1: element (2,3) is at linear index 17."""

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def example_path(name: str) -> str:
    """The path of a bundled example file."""
    from importlib.resources import files

    return str(files("xlashapes") / "examples" / name)


def mib(size: int) -> str:
    """``size`` bytes in MiB with two decimals."""
    return f"{size / 2**20:,.2f} MiB"


def parse_index(text: str) -> tuple[int, ...]:
    """``"2,3"`` (or ``"(2, 3)"``, or ``""`` for a scalar) as a tuple of ints, else ShapeError."""
    body = text.strip().strip("()[]").strip()
    if not body:
        return ()
    try:
        return tuple(int(part) for part in body.split(","))
    except ValueError:
        raise ShapeError(f"index {text!r} is not a comma-separated list of integers, e.g. 2,3") from None
