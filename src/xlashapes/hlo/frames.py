"""The stack frame tables of recent HLO dumps (``FileNames``, ``FunctionNames``, ``FileLocations``, ``StackFrames``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["StackFrameIndex"]


@dataclass(frozen=True)
class StackFrameIndex:
    """The ``FileNames``/``FunctionNames``/``FileLocations``/``StackFrames`` tables of recent dumps (ids from 1).

    >>> index = StackFrameIndex(["a.py"], ["f"], [{"file_name_id": 1, "function_name_id": 1, "line": 3}],
    ...                         [{"file_location_id": 1, "parent_frame_id": 0}])
    >>> index.frame(1)
    [{'file': 'a.py', 'function': 'f', 'line': 3}]
    """

    file_names: list[str] = field(default_factory=list)
    function_names: list[str] = field(default_factory=list)
    file_locations: list[dict[str, int]] = field(default_factory=list)
    stack_frames: list[dict[str, int]] = field(default_factory=list)

    __hash__ = None  # type: ignore[assignment]

    def frame(self, frame_id: int) -> list[dict[str, Any]]:
        """The call stack of ``stack_frame_id`` ``frame_id``, innermost first, as file/function/line dicts."""
        # As XLA prints them, a frame's parent_frame_id is one more than its parent's id (1: no parent).
        frames = []
        seen: set[int] = set()
        while 0 < frame_id <= len(self.stack_frames) and frame_id not in seen:
            seen.add(frame_id)
            entry = self.stack_frames[frame_id - 1]
            location = _entry(self.file_locations, entry.get("file_location_id", 0)) or {}
            frames.append({
                "file": _entry(self.file_names, location.get("file_name_id", 0)),
                "function": _entry(self.function_names, location.get("function_name_id", 0)),
                **{k: v for k, v in location.items() if k not in ("file_name_id", "function_name_id")},
            })
            frame_id = entry.get("parent_frame_id", 0) - 1
        return frames


def _entry(table: list[Any], number: int) -> Any:
    """Entry ``number`` (1-based) of ``table``, None when out of range."""
    return table[number - 1] if 0 < number <= len(table) else None
