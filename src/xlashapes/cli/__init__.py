"""The ``xlashapes`` command line: answers about shapes, layouts and HLO modules without writing Python."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ..errors import XlaShapesError
from . import memory, shapes
from ._common import EXIT_BAD_INPUT, EXIT_OK, FIGURE_1, SEED_SHAPE


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="xlashapes",
        description="XLA's array model at the terminal: shapes, layouts, tiling, memory spaces and bytes.",
    )
    from .. import __version__

    parser.add_argument("--version", action="version", version=f"xlashapes {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    shapes.register(sub)
    memory.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 2 bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "broadcast" and args.dims is None and args.lhs == "f32[2,3]" and args.rhs == "f32[3]":
        args.dims = "1"  # the bundled example: matrix + vector along dimension 1
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "run", None)
    if run is None:
        parser.print_help()
        return EXIT_OK
    try:
        return run(args)
    except XlaShapesError as error:
        print(f"xlashapes {args.command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "FIGURE_1", "SEED_SHAPE", "build_parser", "main"]

