"""What every subcommand shares: exit codes, bundled examples, safe input reading, argument types."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from typing import Any

from ..errors import ShapeError

SEED_SHAPE = "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}"
"""The seed document's ``add.936`` shape, explained when no shape is given."""

FIGURE_1 = "f32[3,5]{1,0:T(2,2)}"
"""The tiled-layout document's Figure 1: element (2,3) is at linear index 17."""

EXIT_OK = 0
EXIT_BAD_INPUT = 2

MAX_INPUT_BYTES = 1 << 30
"""The largest input file (or stdin) any subcommand reads: 1 GiB, about ten times the largest real HLO dumps."""

_CHUNK = 1 << 20


def example_path(name: str) -> str:
    """The path of a bundled example file."""
    from importlib.resources import files

    return str(files("xlashapes") / "examples" / name)


def mib(size: int) -> str:
    """``size`` bytes in MiB with two decimals.

    >>> mib(3 * 2**20)
    '3.00 MiB'
    """
    return f"{size / 2**20:,.2f} MiB"


def parse_index(text: str, what: str = "index") -> tuple[int, ...]:
    """``"2,3"`` (or ``"(2, 3)"``, or ``""`` for a scalar) as a tuple of ints, else ShapeError naming ``what``.

    >>> parse_index(" -1, 0")
    (-1, 0)
    """
    body = text.strip().strip("()[]").strip()
    if not body:
        return ()
    parts = [part.strip() for part in body.split(",")]
    if not all(map(_is_integer, parts)):
        raise ShapeError(f"{what} {text.strip()!r} is not a comma-separated list of integers, e.g. 2,3")
    return tuple(int(part) for part in parts)


def _is_integer(part: str) -> bool:
    """Whether ``part`` is a decimal integer in ASCII digits (``"²"`` is a digit to ``str.isdigit``, not to ``int``).

    >>> _is_integer("-12"), _is_integer("²"), _is_integer("1" * 31)
    (True, False, False)
    """
    digits = part.lstrip("+-")
    return digits.isascii() and digits.isdigit() and len(part) <= 30


def parse_offset(text: str) -> int:
    """One integer offset, else ShapeError naming the offset.

    >>> parse_offset("17")
    17
    """
    part = text.strip()
    if not _is_integer(part):
        raise ShapeError(f"offset {part!r} is not an integer, e.g. 17")
    return int(part)


def read_bytes(path: str, what: str = "input", limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of file ``path`` (``-``: stdin), refusing directories and anything over ``limit`` bytes."""
    if path == "-":
        stream: Any = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a text stream (tests, embedding): its text as UTF-8
            data = sys.stdin.read(limit + 1)
            raw: bytes = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
            if len(raw) > limit:
                _too_large("stdin", what, limit)
            return raw
        return _read_limited(stream, "stdin", what, limit)
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise ShapeError(f"cannot read {what} {path}: it is a directory")
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            _too_large(path, what, limit)
        with open(path, "rb") as handle:
            return _read_limited(handle, path, what, limit)
    except OSError as error:
        raise ShapeError(f"cannot read {what} {path}: {error.strerror or error}") from None


def _too_large(name: str, what: str, limit: int) -> Any:
    most = mib(limit) if limit >= 1 << 20 else f"{limit:,} bytes"
    raise ShapeError(f"{what} {name} is larger than {most}, the most read here")


def _read_limited(stream: Any, name: str, what: str, limit: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        total += len(chunk)
        if total > limit:
            _too_large(name, what, limit)


def read_text(path: str, what: str = "input", limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of file ``path`` (``-``: stdin): not a directory, no NUL bytes, at most ``limit`` bytes.

    >>> read_text("/nonexistent/x.hlo")
    Traceback (most recent call last):
    ...
    xlashapes.errors.ShapeError: cannot read input /nonexistent/x.hlo: No such file or directory
    """
    name = "stdin" if path == "-" else path
    if path != "-":
        try:
            info = os.stat(path)
        except OSError as error:
            raise ShapeError(f"cannot read {what} {path}: {error.strerror or error}") from None
        if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode):
            head = read_bytes_head(path, what)
            if b"\0" in head:
                raise ShapeError(f"cannot read {what} {name}: not text (NUL byte at offset {head.index(0)})")
    data = read_bytes(path, what, limit)
    if b"\0" in data:
        raise ShapeError(f"cannot read {what} {name}: not text (NUL byte at offset {data.index(0)})")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ShapeError(f"cannot read {what} {name}: not UTF-8 text (byte 0x{data[error.start]:02x} at offset "
                         f"{error.start})") from None


def read_bytes_head(path: str, what: str) -> bytes:
    """The first KiB of a device file (so /dev/zero is refused without reading it all)."""
    try:
        with open(path, "rb") as handle:
            head: bytes = handle.read(1024)
            return head
    except OSError as error:
        raise ShapeError(f"cannot read {what} {path}: {error.strerror or error}") from None


def text_argument(text: str, what: str = "shape") -> str:
    """A shape (or instruction) argument: the text itself, or stdin's stripped text for ``-``."""
    if text != "-":
        return text
    body = read_text("-", what, 64 << 20).strip()
    if not body:
        raise ShapeError(f"no {what} on stdin")
    return body


def count_type(low: int, high: int | None = None) -> Any:
    """An argparse type: an integer in ``[low, high]``, with a message naming the bounds.

    >>> count_type(1, 10)("3")
    3
    """

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text.strip()!r} is not an integer") from None
        if value < low or (high is not None and value > high):
            bound = f"at least {low}" if high is None else f"between {low} and {high}"
            raise argparse.ArgumentTypeError(f"{value} is out of range: give a number {bound}")
        return value

    parse.__name__ = "count"
    return parse


_NOTES: list[str] = []  # (notes said once the command has succeeded: a failure is its one error line)


def example_note(command: str, example: str) -> None:
    """Say on stderr, once the command has succeeded, that no arguments were given and the output is the bundled
    example's (a failure, say of an option given with the example, says only what failed)."""
    _NOTES.append(f"xlashapes {command}: no arguments given; this is the example `xlashapes {command} {example}`")


def said_notes(succeeded: bool) -> None:
    """Print the notes kept for a command that ``succeeded`` on stderr (none for a failure), and forget them."""
    notes = list(_NOTES) if succeeded else []
    _NOTES.clear()
    for note in notes:
        print(note, file=sys.stderr)
