"""Which real fixes the repair's mechanical round can write at all, with no model and no
test run: an upper bound on what it can fix, and where in its order the fix comes.

    .venv/bin/python bench/realbugs/reachable.py --sources DIR [--split dev] [--report PATH]

For each verified bug of the split whose fix changes one Python file, every function
the fix changes (its module constants come in with the functions that read them) is
given the round's changes (:func:`app.fixers.llm.repair.mutants.mutants`,
all of them), each spliced into the buggy file as the round
splices it; the bug is **reachable** when one of them makes the file the fix's, layout
aside (the normalised syntax). Prints each reachable bug with the change and its place
in the mutators' order (the round stops after 60 changes a target, and after 60 s of test
runs), and the counts; writes them as JSON. Deterministic; reads only the clones.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE.parent), str(ROOT)]

from app.fixers.llm.answers import normalised  # noqa: E402
from app.fixers.llm.localize import index  # noqa: E402
from app.fixers.llm.repair.mutants import MAX_MUTANTS, mutants  # noqa: E402
from app.fixers.llm.repair.splice import splice, target_of, unit_sources  # noqa: E402
from realbugs import (  # noqa: E402
    RealBug,
    changed_units,
    file_at,
    load,
    order_key,
    source_of,
    split_of,
)

EVERY = 600  # every change of a unit the mutators make, far past the round's 60

DEFAULT_REPORT = ROOT / ".eval" / "realbugs-reachable.json"


def reach(bug: RealBug, sources: Path) -> dict[str, Any]:
    """Whether one of the round's changes of a function the fix changes is the fix."""
    row: dict[str, Any] = {"bug": bug.id, "reachable": False}
    paths = [p for p in bug.files if p.endswith(".py")]
    if len(paths) != 1 or len(bug.files) != 1:
        return {**row, "why": f"the fix changes more than one Python file: {len(bug.files)}"}
    (path,) = paths
    clone = source_of(bug, sources)
    buggy, fixed = (file_at(clone, c, path) for c in (bug.buggy, bug.fixed))
    if buggy is None or fixed is None:
        return {**row, "why": "the file is added or removed"}
    units = sorted(u.split(":", 1)[1] for u in changed_units(bug, sources))
    row["units"] = units
    want = normalised(fixed.decode())
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp)
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_bytes(buggy)
        idx = index(tree)
        source = idx.sources.get(path, "")
        for unit in units:
            symbol = next((s for s in idx.symbols if s.path == path and s.qualname == unit), None)
            target = target_of(idx, symbol) if symbol is not None else None
            if target is None:
                continue
            parts = unit_sources(source, target)
            every = mutants(parts, limit=EVERY)
            for place, m in enumerate(every, 1):
                function = parts[""] if m.unit else m.source
                spliced = splice(source, target, function, {m.unit: m.source} if m.unit else {})
                if spliced is not None and normalised(spliced) == want:
                    return {**row, "reachable": True, "unit": unit, "change": m.what,
                            "place": place, "of": len(every)}  # fmt: skip
    return {**row, "why": "no change of the round is the fix"}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sources", type=Path, required=True)
    p.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    p.add_argument("--report", type=Path, default=DEFAULT_REPORT)
    args = p.parse_args()
    bugs = [b for b in load() if args.split == "all" or split_of(b.id) == args.split]
    bugs.sort(key=lambda b: order_key(b.id))
    rows = [reach(b, args.sources) for b in bugs]
    for r in rows:
        if r["reachable"]:
            late = " (past the first 60)" if r["place"] > MAX_MUTANTS else ""
            place = f"change {r['place']} of {r['of']}{late}"
            print(f"{r['bug']:18} {r['unit']}: {r['change']} — {place}")
    one_file = [r for r in rows if "more than one" not in r.get("why", "")]
    found = [r for r in rows if r["reachable"]]
    print(
        f"{args.split}: {len(found)} of {len(rows)} bugs reachable by one mechanical change "
        f"({len(one_file)} fixes change one file); within the first {MAX_MUTANTS} of their "
        f"target: {sum(r['place'] <= MAX_MUTANTS for r in found)}"
    )
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps({"split": args.split, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
