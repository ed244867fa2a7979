"""Turn a real model's conversations into table-test cases for the dialect reader.

    python scripts/record_dialects.py MODEL_NAME TRANSCRIPTS_DIR... > tests/fixtures/llm/NAME.json

TRANSCRIPTS_DIR holds what ``bench/agent_eval.py`` saves beside its report (one JSON
file per task: the fixer's transcript). Each distinct answer of the model becomes a
case: its text exactly as the model wrote it, and the tool calls the dialect reader
finds in it now (name, arguments, dialect) or the problem it reports. Read the output
before committing it: it is what tests/fixers/test_dialects.py will hold the reader to.
Answers cut in the transcript (longer than it keeps) are left out.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from app.fixers.llm.agent.dialects import parse
from app.fixers.llm.agent.tools import TOOL_PARAMETERS


def cases(folders: list[Path]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    for folder in folders:
        for file in sorted(folder.glob("*.json")):
            entries = json.loads(file.read_text())
            answers: list[str] = []
            previous: dict[str, Any] | None = None
            for e in entries:
                text = e.get("content") or ""
                if e.get("role") == "assistant" and text and not text.endswith("[... cut]"):
                    # One answer with several calls is one entry per call, in a row.
                    same = previous is not None and previous.get("content") == text
                    if not same:
                        answers.append(text)
                previous = e
            for text in answers:
                if text in seen:
                    continue
                seen.add(text)
                parsed = parse(text, TOOL_PARAMETERS)
                calls = [
                    {"tool": c.name, "arguments": c.arguments, "dialect": c.dialect}
                    for c in parsed.calls
                ]
                out.append(
                    {"task": file.stem, "answer": text, "calls": calls, "problem": parsed.problem}
                )
    return out


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    model, folders = argv[0], [Path(a) for a in argv[1:]]
    doc = {
        "model": model,
        "recorded_with": "bench/agent_eval.py (PATCHWARDEN_LLM_TOOL_MODE=json)",
        "cases": cases(folders),
    }
    print(json.dumps(doc, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
