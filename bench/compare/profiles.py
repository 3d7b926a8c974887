"""Where a profiled server spent its time: the top frames of a py-spy ``--format raw`` file.

py-spy's raw format is one collapsed stack per line, ``outer;...;inner COUNT``, each frame
``function (file:line)``. Samples are summed per innermost function (its own time) and per
function anywhere on the stack (its time including callees); line numbers are dropped so a
function's lines add up.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

_LINE = re.compile(r":\d+\)$")
ALMOST_ALL = 0.9


@dataclass(frozen=True)
class Hot:
    frame: str
    share: float  # of all samples, 0..1


@dataclass(frozen=True)
class Profile:
    samples: int
    self_time: list[Hot]
    inclusive: list[Hot]


def _frame(raw: str) -> str:
    return _LINE.sub(")", raw.strip())


def summarize(collapsed: str, top: int = 8) -> Profile:
    own: Counter[str] = Counter()
    anywhere: Counter[str] = Counter()
    callees: dict[str, set[str]] = {}
    total = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame(f) for f in stack.split(";") if f.strip()]
        if not frames:
            continue
        total += count
        own[frames[-1]] += count
        for frame in set(frames):
            anywhere[frame] += count
        for caller, callee in itertools.pairwise(frames):
            callees.setdefault(caller, set()).add(callee)
    if total == 0:
        return Profile(0, [], [])

    def hot(counter: Counter[str]) -> list[Hot]:
        return [Hot(frame, n / total) for frame, n in counter.most_common(top)]

    # Including callees, entry points say nothing: frames that only pass the call on (one
    # callee, no time of their own) and frames on nearly every sample (the event loop).
    inclusive = Counter(
        {
            f: n
            for f, n in anywhere.items()
            if n / total < ALMOST_ALL and (own[f] > 0 or len(callees.get(f, ())) > 1)
        }
    )
    return Profile(total, hot(own), hot(inclusive))


def read(path: Path, top: int = 8) -> Profile:
    return summarize(path.read_text(errors="replace"), top)
