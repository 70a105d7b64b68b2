"""Group a campaign's findings: one line per (target, kind@place), its count and its smallest reproducer.

    python tools/fuzz/summarize.py /tmp/xlashapes-fuzz/findings.jsonl
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def group_key(entry: dict[str, object]) -> str:
    """``target kind@file:line`` (slow/timeout/memory findings group by target and kind)."""
    problem = str(entry["problem"])
    head = problem.split(":", 2)
    kind = head[0] if "@" not in head[0] else head[0] + ":" + head[1].split()[0] if len(head) > 1 else head[0]
    return f"{entry['target']} {re.sub(r' [0-9.]+ s.*', '', kind)}"


def main() -> None:
    groups: dict[str, list[dict[str, object]]] = {}
    for line in Path(sys.argv[1]).read_text().splitlines():
        entry = json.loads(line)
        groups.setdefault(group_key(entry), []).append(entry)
    for key, entries in sorted(groups.items()):
        smallest = min(entries, key=lambda e: (int(str(e["size"])), len(str(e["input"]))))
        print(f"## {key}  ({len(entries)} inputs)")
        print(f"    problem: {str(smallest['problem'])[:300]}")
        print(f"    input:   {str(smallest['input'])[:400]}")
        print(f"    replay:  campaign.py --replay {smallest['target']} {smallest['seed']} {smallest['number']}")


if __name__ == "__main__":
    main()
