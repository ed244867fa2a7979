"""Containment, after verification: the change's scope, and what its modules compute.

Detectors read what a change writes; they cannot read every way it could build a
string (docs/security.md#containment). Two checks close the class instead, for a
change a model wrote (its outcome says so: ``FixOutcome.model``, true for a fixer with
no record too; the others write nothing new: an autofix, a revert of history, a
version raised):

1. **Scope** (:mod:`app.sessions.scope`): each changed place the task does not
   explain. The functions implicated are the fixer's own localisation's, the ones the
   task names as code, and — only when a changed function is not yet explained — the
   ones the tests that show the fix reach on the base tree (run with the
   :mod:`patchwarden_tests <app.sessions.probes.patchwarden_tests>` plugin, the
   patch's test files in place).
2. **Module values**: each changed Python module of the patched tree, and of the base,
   imported in the sandbox (:mod:`module_values
   <app.sessions.probes.module_values>`), and every string its module level holds
   that the base's modules did not hold scanned with the credential detectors. A
   credential found this way is a ``SecretFound`` like any: the change is rejected.

What either finds is also returned as text to mask wherever the session's result
stores it: the literals of a module that computes a credential, and the
random-looking values of key/value entries in files outside the scope.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from app import credentials
from app.policy.evidence import OutsidePlace, Scope, SecretFound, TestDelta
from app.policy.features import Classifier
from app.policy.policy_model import Policy
from app.policy.secrets import scan_line
from app.redact import material, opaque_values
from app.sessions.files import read_confined
from app.sessions.repo_commands import RepoCommands
from app.sessions.reproduce import patch_tests_in_base
from app.sessions.result import Diff, FixOutcome, ModuleScan, Step
from app.sessions.sandbox import WORKSPACE, Mount
from app.sessions.scope import FileChange, Module, changed_lines, functions, named_in, read_module
from app.sessions.scope import outside as outside_of
from app.sessions.selection import PROBES, PROBES_MOUNT, read_trace, selecting
from app.sessions.task import Task
from app.sessions.test_command import tree_mounts
from app.sessions.verify import Verifier, make_step

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 1024 * 1024
MAX_MODULES = 40  # changed modules imported, per tree
IMPORT_SECONDS = 10  # per module
TRACED_TESTS = 50
_LEAF = re.compile(r"""(?:\[(['"])(\w+)\1\]|([A-Za-z_]\w*))(?:\[\d+\])*$""")


@dataclass
class Contained:
    """What containment found: the scope, credentials only the modules' values show,
    the steps it ran, and text to mask wherever the result stores it."""

    scope: Scope | None = None
    secrets: list[SecretFound] = field(default_factory=list)
    modules: ModuleScan | None = None
    steps: list[Step] = field(default_factory=list)
    known: list[str] = field(default_factory=list)  # masked as a secret
    opaque: list[str] = field(default_factory=list)  # masked as opaque


@dataclass(frozen=True)
class Trees:
    """The session's two trees and the environment both run with."""

    base: Path
    head: Path
    env_dir: Path | None
    head_env_dir: Path | None


async def contain(
    verifier: Verifier,
    trees: Trees,
    *,
    task: Task,
    fix: FixOutcome,
    diff: Diff,
    tests: TestDelta | None,
    commands: RepoCommands,
    policy: Policy,
) -> Contained:
    """Both checks of the module docstring, for the change of a fixer a model drives
    (the others write nothing new: an autofix, a revert of history, a version raised):
    the module values first (a constant whose value was computed and scanned can be in
    scope), then the scope."""
    out = Contained()
    if not fix.model:
        return out
    classifier = Classifier(policy)
    changes = [_read(f.path, f.old_path, f.status, trees, classifier) for f in diff.files]
    out.modules, out.secrets, found_in = await _module_values(
        verifier, trees, changes, policy, out.steps
    )
    for change in changes:
        if change.path in found_in:
            out.known += material(_added(change))
    out.known += [v for _, v in found_in.values()]
    computed = set(out.modules.imported) if out.modules is not None else set()
    out.scope = await _scope(verifier, trees, task, fix, changes, tests, commands, out, computed)
    outside_files = {p.path for p in out.scope.outside}
    examples = credentials.allow_list(tuple(policy.secrets.allow))
    for change in changes:
        if change.path in outside_files:
            found = opaque_values(_added(change))
            out.opaque += [v for v in found if not credentials.allowed(v, examples)]
    return out


def _read(
    path: str, old_path: str | None, status: str, trees: Trees, classifier: Classifier
) -> FileChange:
    def text(tree: Path, rel: str) -> str | None:
        data = read_confined(tree, rel, limit=MAX_FILE_BYTES + 1)
        if data is None or len(data) > MAX_FILE_BYTES or b"\0" in data:
            return None
        return data.decode("utf-8", "replace")

    return FileChange(
        path=path,
        status=status,
        base=None if status == "added" else text(trees.base, old_path or path),
        head=None if status == "removed" else text(trees.head, path),
        old_path=old_path,
        test=classifier.is_test(path) and path.endswith(".py"),
    )


def _added(change: FileChange) -> list[str]:
    head = (change.head or "").splitlines()
    added, _ = changed_lines((change.base or "").splitlines(), head)
    return [head[n - 1] for n in added]


# -- scope ---------------------------------------------------------------------------------


async def _scope(
    verifier: Verifier,
    trees: Trees,
    task: Task,
    fix: FixOutcome,
    changes: list[FileChange],
    tests: TestDelta | None,
    commands: RepoCommands,
    out: Contained,
    computed: set[str],
) -> Scope:
    """The places outside; the reach run only when a changed function of the base is
    not explained otherwise."""
    modules = {
        c.path: m
        for c in changes
        if c.base is not None and c.path.endswith(".py") and not c.test
        for m in [read_module(c.base)]
        if m is not None
    }
    why: dict[tuple[str, str], str] = {}
    for entry in fix.implicated:
        path, _, qualname = entry.partition("::")
        why.setdefault((path, qualname), "the fixer's localisation")
    for path, names in named_in(task.words, modules).items():
        for qualname in sorted(names):
            why.setdefault((path, qualname), "the task names it")
    places = _outside(changes, why, computed)
    notes = []
    # Places inside a module a traced function could explain (a function, a constant it reads)
    unexplained = [p for p in places if p.line and not p.what.startswith("a new function")]
    shown = sorted({*(tests.fixed if tests else []), *(tests.reproduced if tests else [])})
    if unexplained and shown and commands.is_pytest:
        reached, step, note = await _reach(verifier, trees, changes, shown, commands, modules)
        out.steps += [step] if step is not None else []
        notes.append(note)
        for key, test in reached.items():
            why.setdefault(key, f"`{test}` reaches it on the base")
        places = _outside(changes, why, computed)
    elif unexplained:
        notes.append("no test that shows the fix could be traced (none fixed or reproduced)")
    return Scope(
        implicated=[f"{p}::{q}: {w}" for (p, q), w in sorted(why.items())],
        outside=places,
        note="; ".join(notes),
    )


def _outside(
    changes: list[FileChange], why: dict[tuple[str, str], str], computed: set[str]
) -> list[OutsidePlace]:
    places: list[OutsidePlace] = []
    for change in changes:
        implicated = [q for (p, q) in why if p == change.path]
        found, _ = outside_of(change, implicated, computed=change.path in computed)
        places += found
    return places


async def _reach(
    verifier: Verifier,
    trees: Trees,
    changes: list[FileChange],
    shown: list[str],
    commands: RepoCommands,
    modules: dict[str, Module],
) -> tuple[dict[tuple[str, str], str], Step | None, str]:
    """The base's functions (of changed files) each test of ``shown`` reaches, run on
    the base tree with the patch's test files in place."""
    scratch = Path(tempfile.mkdtemp(prefix="reach-", dir=verifier.scratch))
    selection = selecting(shown[:TRACED_TESTS], scratch, trace=True)
    verifier.sandbox.prepare_writable(scratch)
    new_tests = [c.path for c in changes if c.test and c.head is not None]
    try:
        with patch_tests_in_base(verifier, trees.base, trees.head, new_tests):
            step, _ = await verifier.tests(
                trees.base,
                trees.env_dir,
                commands,
                label="base",
                name="reach",
                addopts=selection.addopts,
                env=selection.env,
                mounts=selection.mounts,
            )
    except OSError as exc:
        return {}, None, f"the tests that show the fix could not be traced ({exc})"
    traced = read_trace(scratch, selection.trace.name, limit=16 * 1024 * 1024)
    if not traced:
        return {}, step, "the tests that show the fix could not be traced (no report)"
    reached: dict[tuple[str, str], str] = {}
    for test, places in sorted(traced.items()):
        for item in places if isinstance(places, list) else []:
            if not (isinstance(item, list) and len(item) == 2):
                continue
            path, line = item
            module = modules.get(path)
            for unit in functions(module) if module is not None else []:
                if unit.start <= line <= unit.end:
                    reached.setdefault((path, unit.qualname), str(test))
    return reached, step, f"traced {len(traced)} test(s) that show the fix on the base"


# -- module values -------------------------------------------------------------------------


async def _module_values(
    verifier: Verifier,
    trees: Trees,
    changes: list[FileChange],
    policy: Policy,
    ran: list[Step],
) -> tuple[ModuleScan | None, list[SecretFound], dict[str, tuple[str, str]]]:
    """The scan, the credentials found only this way (a value the patched module holds
    that no added line writes as it is: assembled), and by path the (name, value) of
    the first; the steps it ran go to ``ran``."""
    head_paths = [c.path for c in changes if c.path.endswith(".py") and c.head is not None]
    if not head_paths:
        return None, [], {}
    head_paths = head_paths[:MAX_MODULES]
    base_paths = [
        c.old_path or c.path
        for c in changes
        if c.path in head_paths and c.base is not None and c.status != "added"
    ]
    runs = [_values(verifier, trees.head, trees.head_env_dir, head_paths, "head")]
    if base_paths:
        runs.append(_values(verifier, trees.base, trees.env_dir, base_paths, "base"))
    done = await asyncio.gather(*runs)  # the two trees side by side
    (head_values, failed, _), steps = done[0], [step for _, _, step in done]
    base_values = done[1][0] if base_paths else {}
    before = {v for found in base_values.values() for _, v in found}
    written = {c.path: "\n".join(_added(c)) for c in changes if c.path in head_values}
    seen: set[tuple[str, str]] = set()
    secrets: list[SecretFound] = []
    found_in: dict[str, tuple[str, str]] = {}
    for path, found in head_values.items():
        for where, value in found:
            if value in before:
                continue
            leaf = _LEAF.search(where)
            name = (leaf.group(2) or leaf.group(3)) if leaf else "value"
            line = f"{name} = {json.dumps(value)}"
            for kind in dict.fromkeys(
                scan_line(line, path=path, allow=policy.secrets.allow, pragma=False)
            ):
                if value in written.get(path, ""):
                    continue  # written as it is: the diff's own scan finds and masks it
                found_in.setdefault(path, (where, value))
                if (path, kind) not in seen:
                    seen.add((path, kind))
                    secrets.append(SecretFound(path=path, line=0, kind=kind, computed=where))
    scan = ModuleScan(
        imported=sorted(head_values),
        failed=failed,
        found=len(secrets),
        steps=[s.name for s in steps],
    )
    ran += steps
    return scan, secrets, found_in


async def _values(
    verifier: Verifier, tree: Path, env_dir: Path | None, paths: list[str], label: str
) -> tuple[dict[str, list[tuple[str, str]]], dict[str, str], Step]:
    argv = ["python", f"{PROBES_MOUNT}/module_values.py", WORKSPACE, str(IMPORT_SECONDS), *paths]
    timeout = IMPORT_SECONDS * len(paths) + 30
    mounts = [*tree_mounts(tree, env_dir), Mount(PROBES, PROBES_MOUNT)]
    done = await verifier.run_tool(argv, mounts=mounts, timeout=timeout)
    step = make_step(done, name=f"module-values-{label}", phase="verify", tree=None,
                     secrets=verifier.secrets, include_stdout=False)  # fmt: skip
    values: dict[str, list[tuple[str, str]]] = {}
    failed: dict[str, str] = {}
    for line in done.stdout.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        path = item.get("path") if isinstance(item, dict) else None
        if path not in paths:
            continue
        if "error" in item:
            failed[path] = str(item["error"])[:300]
        elif item.get("imported") is True:
            values.setdefault(path, [])
        elif isinstance(item.get("value"), str) and path in values:
            values[path].append((str(item.get("name", "")), item["value"]))
    for path in paths:
        if path not in failed and path not in values:
            why = (
                "timed out" if done.timed_out else f"ended with {done.killed_by or done.exit_code}"
            )
            failed[path] = f"not imported: the scan {why} first"
    return {p: v for p, v in values.items() if p not in failed}, failed, step
