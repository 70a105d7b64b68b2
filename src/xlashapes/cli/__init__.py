"""The ``xlashapes`` command line: answers about shapes, layouts and HLO modules without writing Python.

Every failure exits 2 with one line on stderr (a parse error adds the offending line and a caret), never a
traceback; with ``--json`` the error is also printed on stdout as ``{"error": {...}}``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from ..errors import ParseError, XlaShapesError
from . import memory, shapes
from ._common import EXIT_BAD_INPUT, EXIT_OK, FIGURE_1, SEED_SHAPE, said_notes

EXIT_INTERRUPTED = 130
"""Ctrl-C: the shell's convention (128 + SIGINT), one line and no traceback."""

NEGATIVE = re.compile(r"-\d+(?:\s*,\s*[+-]?\d+)*\s*,?")
"""An argument like ``-1,0`` or ``-3``: a negative index or number, never an option."""


class UsageError(Exception):
    """A command line argparse rejects: one line, the command it belongs to."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors raised as UsageError instead of a usage block and SystemExit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, message)


class _Version(argparse.Action):
    """``--version``: the version, and which compiled kernels large conversions run here (found only when asked)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and the compiled kernels, and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from .. import __version__
        from ..physical._dispatch import kernels_summary

        sys.stdout.write(f"xlashapes {__version__}\ncompiled kernels: {kernels_summary()}\n")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = _Parser(
        prog="xlashapes",
        description="XLA's array model at the terminal: shapes, layouts, tiling, memory spaces and bytes.",
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    shapes.register(sub)
    memory.register(sub)
    return parser


def error_report(error: BaseException) -> dict[str, Any]:
    """An error as plain data: kind, message, and for parse errors the 1-based line and column.

    >>> from xlashapes import parse_shape
    >>> try:
    ...     parse_shape("f32[3,5")
    ... except ParseError as e:
    ...     error_report(e)["column"]
    8
    """
    if isinstance(error, ParseError):
        report: dict[str, Any] = {"kind": "ParseError", "message": error.reason}
        if error.text:
            report["line"], report["column"] = error.line, error.column
        return report
    kind = "UsageError" if isinstance(error, UsageError) else type(error).__name__
    return {"kind": kind, "message": str(error)}


def error_lines(error: BaseException) -> list[str]:
    """The message for a person: one line, plus the offending line and a caret for a parse error."""
    if not isinstance(error, ParseError) or not error.text:
        return [" ".join(str(error).split()) if not isinstance(error, ParseError) else error.reason]
    start = error.text.rfind("\n", 0, error.position) + 1
    end = error.text.find("\n", error.position)
    line = error.text[start: end if end >= 0 else len(error.text)]
    column = error.position - start
    if len(line) > 160:  # one screen: a window around the caret
        cut = max(0, column - 80)
        line, column = ("..." if cut else "") + line[cut: cut + 160], column - cut + (3 if cut else 0)
    return [f"{error.reason} (at line {error.line}, column {error.column})", f"    {line}", f"    {' ' * column}^"]


def _silence_stdout() -> None:
    """After a broken pipe or a full disk: point stdout at /dev/null so the exit flush cannot fail again."""
    try:
        if sys.stdout is sys.__stdout__ and sys.stdout is not None:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _fail(command: str, error: BaseException, as_json: bool) -> int:
    said_notes(False)
    lines = error_lines(error)
    if as_json:
        try:
            print(json.dumps({"error": error_report(error)}))
            sys.stdout.flush()
        except (OSError, ValueError):
            _silence_stdout()
    prefix = f"xlashapes {command}: " if command else "xlashapes: "
    try:
        print(prefix + lines[0], *lines[1:], sep="\n", file=sys.stderr)
    except (OSError, ValueError):
        pass
    return EXIT_BAD_INPUT


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 2 bad input or any other failure)."""
    raw = list(sys.argv[1:] if argv is None else argv)
    arguments = [" " + a if NEGATIVE.fullmatch(a) else a for a in raw]  # "-1,0" is an index, not an option
    as_json = "--json" in arguments
    command = next((a for a in arguments if not a.startswith("-")), "")
    parser = build_parser()
    try:
        try:
            args = parser.parse_args(arguments)
        except SystemExit as stop:  # --help and --version
            sys.stdout.flush()
            return stop.code if isinstance(stop.code, int) else EXIT_OK
        command = args.command or ""
        run: Callable[[argparse.Namespace], int] | None = getattr(args, "run", None)
        if run is None:
            parser.print_help()
            code = EXIT_OK
        else:
            code = run(args)
        sys.stdout.flush()
        said_notes(code == EXIT_OK)
        return code
    except UsageError as error:
        return _fail(error.prog.removeprefix("xlashapes").strip(), error, as_json)
    except XlaShapesError as error:
        return _fail(command, error, as_json)
    except BrokenPipeError:
        _silence_stdout()
        return _fail(command, OSError("output closed before everything was written (broken pipe)"), False)
    except OSError as error:
        if error.filename is not None:  # a file a subcommand opened itself
            return _fail(command, OSError(f"cannot access {error.filename}: {error.strerror or error}"), as_json)
        _silence_stdout()
        return _fail(command, OSError(f"cannot write the output: {error.strerror or error}"), False)
    except KeyboardInterrupt:
        _fail(command, OSError("interrupted"), False)
        return EXIT_INTERRUPTED
    except (MemoryError, RecursionError) as error:
        return _fail(command, OSError(f"input too large to process ({type(error).__name__})"), as_json)
    except Exception as error:
        if os.environ.get("XLASHAPES_DEBUG"):
            raise
        message = f"internal error, please report it: {type(error).__name__}: {error}"
        return _fail(command, RuntimeError(message[:300]), as_json)


__all__ = ["EXIT_BAD_INPUT", "EXIT_OK", "FIGURE_1", "SEED_SHAPE", "UsageError", "build_parser", "error_lines",
           "error_report", "main"]
