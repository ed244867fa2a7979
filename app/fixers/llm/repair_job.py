"""What one repair job carries: its context, its meter, and what it has found out so far
(:class:`Report`, frozen into the session result's :class:`RepairReport`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from app.fixers.llm.localize import Index
from app.fixers.llm.spend import Meter
from app.sessions.result import RepairReport, TranscriptEntry
from app.sessions.session import FixContext, Task

TRANSCRIPT_ENTRY_CHARS = 4000


@dataclass
class Report:
    """What a repair found out so far (the fields of :class:`RepairReport`)."""

    suspects: list[str] = field(default_factory=list)
    picked: str = ""
    reproduction: str | None = None
    reproduction_note: str = ""
    target: str | None = None
    rounds: int = 0
    samples: int = 0
    candidates: int = 0
    passed: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    failed: Counter[str] = field(default_factory=Counter)
    chosen: str = ""
    mechanical: int = 0
    mechanical_note: str = ""
    masked: int = 0

    def frozen(self) -> RepairReport:
        return RepairReport(
            **{**self.__dict__, "dropped": dict(self.dropped), "failed": dict(self.failed)}
        )


@dataclass
class Job:
    """One task's repair: the context, the meter and what it has found out."""

    ws: FixContext
    task: Task
    meter: Meter
    idx: Index
    report: Report = field(default_factory=Report)
    transcript: list[TranscriptEntry] = field(default_factory=list)
    stopped: str | None = None  # why no more model calls may be made
    printed: dict[str, str] = field(default_factory=dict)  # the reproduction's base output

    def note(self, role: Any, content: str) -> None:
        if len(content) > TRANSCRIPT_ENTRY_CHARS:
            content = content[:TRANSCRIPT_ENTRY_CHARS] + "\n[... cut]"
        self.transcript.append(TranscriptEntry(role=role, content=content))
