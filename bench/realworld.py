"""Where a session's time goes on real projects, and Patchwarden's overhead.

Run: ``.venv/bin/python bench/realworld.py [--warm 2] [--only NAME] [--json]``.

For each project of the real-world suite (tests/realworld/projects.py: pinned PyPI
sdists, downloaded and cached) a repository with an injected unused import gets the
lint-fix session, the way ``patchwarden run --fixer lint`` runs it: once on a fresh
cache (**cold**: the setup phase builds the environment, with network) and ``--warm``
more times on the same cache (**cached**: the environment is found). From the stored
steps:

- ``setup``: the setup commands (0 when cached);
- ``fix``: the fixer's own commands (ruff, semgrep --autofix), which run while the base
  tree's tests do;
- ``verify``: from the commit to the end: the patched tree's tests, then ruff, bandit
  and semgrep on the changed files of both trees, concurrently with them;
- ``tests``: one run of the project's own test command (the patched tree's);
- ``wall``: the whole session;
- ``overhead``: wall minus one run of the project's own tests: what Patchwarden adds to
  what a maintainer would wait for anyway;
- ``contain``: the containment step after verification (the changed modules imported in
  the sandbox, both trees side by side, their values scanned: app/sessions/contain.py);
  0 for the lint fixer, whose changes are not contained (no model writes them).

Target: overhead ≤ 10 s, median over the projects, with a cached environment.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.fixers.lint import LintFixer  # noqa: E402
from app.fixers.registry import KNOWN  # noqa: E402
from app.git import Remote  # noqa: E402
from app.sessions.backends import BwrapSandbox  # noqa: E402
from app.sessions.mirrors import WorkspaceCache  # noqa: E402
from app.sessions.result import SessionResult  # noqa: E402
from app.sessions.session import SessionRunner  # noqa: E402
from app.sessions.task import SessionSpec, Task  # noqa: E402
from tests.conftest import git_commit  # noqa: E402
from tests.realworld.conftest import as_repository, inject_unused_import  # noqa: E402
from tests.realworld.projects import PROJECTS, Project  # noqa: E402

TARGET_SECONDS = 10.0
CONTAIN = ("module-values", "reach")  # the steps app/sessions/contain.py runs


def phases(result: SessionResult) -> dict[str, float]:
    steps = result.steps
    setup = sum(s.duration_seconds for s in steps if s.phase == "setup")
    fix = sum(s.duration_seconds for s in steps if s.phase == "fix")
    head = [s for s in steps if s.name == "tests" and s.tree == "head"]
    base = [s for s in steps if s.name == "tests" and s.tree == "base"]
    tests = head[0].duration_seconds if head else (base[0].duration_seconds if base else 0.0)
    linters = [s.duration_seconds for s in steps if s.name in ("ruff", "bandit", "semgrep")]
    verify = max([tests, *linters]) if steps else 0.0
    wall = result.usage.wall_seconds
    return {
        "setup": round(setup, 2),
        "fix": round(fix, 2),
        "verify": round(verify, 2),
        "tests": round(tests, 2),
        "semgrep": round(sum(s.duration_seconds for s in steps if s.name.startswith("semgrep")), 2),
        "wall": round(wall, 2),
        "overhead": round(wall - tests, 2),
        # Containment: the changed modules imported (both trees side by side) and scanned.
        "contain": round(
            max([s.duration_seconds for s in steps if s.name.startswith(CONTAIN)] or [0.0]), 2
        ),
    }


async def one(project: Project, work: Path, warm: int) -> dict[str, Any]:
    repo = work / project.name
    as_repository(project, repo)
    inject_unused_import(repo / project.lint_file)
    git_commit(repo, "an unused import")
    runner = SessionRunner(
        fixers=KNOWN,
        cache=WorkspaceCache(work / "cache"),
        sandbox=BwrapSandbox(state_dir=work / "sandbox"),
    )
    runs = []
    for _ in range(1 + warm):
        spec = SessionSpec(
            remote=Remote(f"bench/{project.name}", str(repo)),
            task=Task(f"remove the unused import in {project.lint_file}", fixer="lint"),
        )
        result = await runner.run(spec, LintFixer())
        if result.status != "patched":
            raise SystemExit(f"{project.id}: {result.status}: {result.error}")
        runs.append(phases(result))
    cached = runs[1:]
    return {
        "project": project.id,
        "cold": runs[0],
        "cached": {k: round(statistics.median(r[k] for r in cached), 2) for k in runs[0]}
        if cached
        else None,
    }


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        f"{'project':<28} {'setup cold':>10} {'setup':>6} {'fix':>6} {'verify':>7} "
        f"{'semgrep':>8} {'tests':>6} {'wall':>6} {'overhead':>9} {'contain':>8}"
    )
    lines = [head, "-" * len(head)]
    for row in rows:
        cold, hot = row["cold"], row["cached"] or row["cold"]
        lines.append(
            f"{row['project']:<28} {cold['setup']:>10.1f} {hot['setup']:>6.1f} "
            f"{hot['fix']:>6.1f} {hot['verify']:>7.1f} {hot['semgrep']:>8.1f} "
            f"{hot['tests']:>6.1f} {hot['wall']:>6.1f} {hot['overhead']:>9.1f} "
            f"{hot['contain']:>8.1f}"
        )
    return "\n".join(lines)


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", type=int, default=2, help="cached runs after the cold one")
    parser.add_argument("--only", action="append", help="a project's name (repeatable)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        print("bench/realworld.py needs bubblewrap (apt-get install bubblewrap)")
        return 2
    chosen = [p for p in PROJECTS if not args.only or p.name in args.only]
    rows = []
    with tempfile.TemporaryDirectory(prefix="pw-bench-realworld-") as tmp:
        for project in chosen:
            rows.append(await one(project, Path(tmp) / project.name, args.warm))
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(table(rows))
    overheads = [(r["cached"] or r["cold"])["overhead"] for r in rows]
    contained = [(r["cached"] or r["cold"])["contain"] for r in rows]
    print(f"containment (module values, both trees): median {statistics.median(contained):.2f} s")
    median = statistics.median(overheads)
    met = "MET" if median <= TARGET_SECONDS else "MISSED"
    print(
        f"\noverhead with a cached environment: median {median:.1f} s over {len(rows)} "
        f"projects (target <= {TARGET_SECONDS:g} s: {met})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
