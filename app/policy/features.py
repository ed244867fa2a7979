"""What the policy measures in a change: per file, per category, dependencies, tests,
credentials and protected paths. Pure: a :class:`ParsedDiff` and a :class:`Policy` in,
a :class:`Features` out."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from app.policy.behaviour import Behaviour, behaviours
from app.policy.deps import DepChange, dependency_changes, resealed
from app.policy.diff import ChangedFile, ParsedDiff
from app.policy.evidence import SecretFound
from app.policy.globs import GlobSet
from app.policy.policy_model import Policy
from app.policy.secrets import scan_added

_TEST_DEF = re.compile(
    r"""^\s*(?:(?:async\s+)?def\s+(?P<py>test\w*)\s*\(|func\s+(?P<go>Test\w+)\s*\(|"""
    r"""(?:x?it|x?test|(?:it|test)\.(?:skip|only|todo))\s*\(\s*["'`](?P<js>[^"'`]+))"""
)
SKIP_MARKERS = re.compile(
    r"@pytest\.mark\.(?:skip|skipif|xfail)\b|pytest\.(?:skip|xfail)\(|@unittest\.skip"
    r"|@unittest\.expectedFailure|\.skipTest\(|\b(?:it|test|describe)\.(?:skip|only|todo)\("
    r"|\bx(?:it|describe|test)\(|\bt\.Skip(?:Now|f)?\(|@Disabled\b|@Ignore\b"
)


@dataclass(frozen=True)
class FileFeature:
    path: str
    status: str
    category: str
    added: int
    removed: int
    old_path: str | None = None
    binary: bool = False
    made_executable: bool = False
    protected_by: str | None = None  # the protected pattern a path of this change matches

    @property
    def paths(self) -> tuple[str, ...]:
        return (self.path,) if self.old_path is None else (self.old_path, self.path)


@dataclass(frozen=True)
class CategoryStats:
    files: int = 0
    added: int = 0
    removed: int = 0

    @property
    def lines(self) -> int:
        return self.added + self.removed


@dataclass(frozen=True)
class Features:
    files: tuple[FileFeature, ...] = ()
    categories: dict[str, CategoryStats] = field(default_factory=dict)
    dependencies: tuple[DepChange, ...] = ()
    # npm lock entries whose integrity or source changed while their version stayed
    resealed: tuple[str, ...] = ()
    tests_added: tuple[str, ...] = ()
    tests_modified: tuple[str, ...] = ()
    tests_deleted: tuple[str, ...] = ()
    test_functions_removed: tuple[str, ...] = ()  # "path::name"
    skips_added: tuple[str, ...] = ()  # "path:line"
    secrets: tuple[SecretFound, ...] = ()
    behaviours: tuple[Behaviour, ...] = ()  # what the added lines make the code do
    parse_error: str | None = None
    truncated: bool = False

    @property
    def lines_added(self) -> int:
        return sum(f.added for f in self.files)

    @property
    def lines_removed(self) -> int:
        return sum(f.removed for f in self.files)

    @property
    def protected(self) -> tuple[FileFeature, ...]:
        return tuple(f for f in self.files if f.protected_by)

    def deps(self, kind: str, *, direct: bool = True) -> list[DepChange]:
        return [d for d in self.dependencies if d.kind == kind and d.direct == direct]


class Classifier:
    """Which category a path is in and whether it is protected, for one policy."""

    def __init__(self, policy: Policy) -> None:
        self.protected = GlobSet(policy.protected_paths)
        # Riskiest first: a file takes the highest weight among the categories it matches.
        ranked = sorted(policy.categories.items(), key=lambda kv: (-kv[1].weight, kv[0]))
        self.categories = [(name, GlobSet(c.paths)) for name, c in ranked if c.paths]
        tests = policy.categories.get("tests")
        self.tests = GlobSet(tests.paths if tests else ())

    def is_test(self, path: str) -> bool:
        """A test file, whatever category outranks ``tests`` for it (``tests/auth/...``)."""
        return self.tests.match(path) is not None

    def category(self, path: str) -> str:
        for name, globs in self.categories:
            if globs.match(path):
                return name
        return "source"


@dataclass
class _Read:
    """What ``extract`` has read so far, file by file."""

    files: list[FileFeature] = field(default_factory=list)
    stats: dict[str, list[int]] = field(default_factory=dict)  # category: files, +, -
    deps: list[DepChange] = field(default_factory=list)
    resealed: list[str] = field(default_factory=list)
    added_t: list[str] = field(default_factory=list)
    modified_t: list[str] = field(default_factory=list)
    deleted_t: list[str] = field(default_factory=list)
    removed_fns: list[str] = field(default_factory=list)
    skips: list[str] = field(default_factory=list)
    behaving: list[Behaviour] = field(default_factory=list)
    secrets: list[SecretFound] = field(default_factory=list)
    seen: set[SecretFound] = field(default_factory=set)  # the secrets, to look up


def extract(
    diff: ParsedDiff,
    policy: Policy,
    *,
    extra_secrets: Iterable[SecretFound] = (),
    pragma: bool = True,
) -> Features:
    """The features of ``diff`` under ``policy``; ``pragma=False`` when a fixer wrote it
    (its own ``pragma: allowlist secret`` comments do not waive a credential)."""
    cls = Classifier(policy)
    first = list(dict.fromkeys(extra_secrets))
    read = _Read(secrets=first, seen=set(first))
    for f in diff.files:
        _read_file(f, cls, policy, read, pragma=pragma)
    _stats_only(diff, cls, read.files)
    return Features(
        files=tuple(read.files),
        categories={k: CategoryStats(*v) for k, v in sorted(read.stats.items())},
        dependencies=tuple(read.deps),
        resealed=tuple(read.resealed),
        tests_added=tuple(read.added_t),
        tests_modified=tuple(read.modified_t),
        tests_deleted=tuple(read.deleted_t),
        test_functions_removed=tuple(read.removed_fns),
        skips_added=tuple(read.skips),
        secrets=tuple(read.secrets),
        behaviours=tuple(read.behaving),
        parse_error=diff.error,
        truncated=diff.truncated,
    )


def _read_file(
    f: ChangedFile, cls: Classifier, policy: Policy, read: _Read, *, pragma: bool
) -> None:
    """One changed file: its category and protection, its lines counted, its
    dependencies, tests, skips, behaviours and credentials."""
    category = cls.category(f.path)
    protected = next((p for p in map(cls.protected.match, f.paths) if p), None)
    read.files.append(
        FileFeature(
            path=f.path,
            status=f.status,
            category=category,
            added=f.added,
            removed=f.removed,
            old_path=f.old_path,
            binary=f.binary,
            made_executable=f.made_executable,
            protected_by=protected,
        )
    )
    s = read.stats.setdefault(category, [0, 0, 0])
    s[0] += 1
    s[1] += f.added
    s[2] += f.removed
    read.deps += dependency_changes(f)
    read.resealed += resealed(f)
    _tests(f, cls, read.added_t, read.modified_t, read.deleted_t, read.removed_fns)
    if cls.is_test(f.path):  # a marker elsewhere is a word in a comment or a string
        read.skips += _skips(f)
    read.behaving += behaviours(f)
    for hit in scan_added(f.path, f.added_lines, allow=policy.secrets.allow, pragma=pragma):
        if hit not in read.seen:
            read.seen.add(hit)
            read.secrets.append(hit)


def _stats_only(diff: ParsedDiff, cls: Classifier, files: list[FileFeature]) -> None:
    """Paths only git's stats know (the diff was cut): their lines are unknown."""
    known = {p for f in files for p in f.paths}
    for path in diff.extra_paths:
        if path not in known:
            known.add(path)
            files.append(
                FileFeature(
                    path=path,
                    status="modified",
                    category=cls.category(path),
                    added=0,
                    removed=0,
                    protected_by=cls.protected.match(path),
                )
            )


def _test_names(lines: Iterable[str]) -> list[str]:
    names = []
    for line in lines:
        m = _TEST_DEF.match(line)
        if m:
            names.append(m.group("py") or m.group("go") or m.group("js"))
    return names


def _tests(
    f: ChangedFile,
    cls: Classifier,
    added: list[str],
    modified: list[str],
    deleted: list[str],
    removed_fns: list[str],
) -> None:
    was_test = cls.is_test(f.old_path or f.path)
    is_test = cls.is_test(f.path)
    if not (was_test or is_test):
        return
    if f.status == "removed" or (was_test and not is_test):
        deleted.append(f.old_path or f.path)
    elif f.status == "added" or not was_test:
        added.append(f.path)
    else:
        modified.append(f.path)
        kept = set(_test_names(t for _, t in f.added_lines))
        for name in dict.fromkeys(_test_names(f.removed_lines)):
            if name not in kept:
                removed_fns.append(f"{f.path}::{name}")


_SKIP_NEEDLES = ("skip", "Skip", "xfail", "only(", "todo(", "xit(", "xdescribe(", "xtest(",
                 "expectedFailure", "@Disabled", "@Ignore")  # fmt: skip


def _skips(f: ChangedFile) -> list[str]:
    added = "\n".join(t for _, t in f.added_lines)
    if not any(needle in added for needle in _SKIP_NEEDLES):
        return []
    before = sum(len(SKIP_MARKERS.findall(t)) for t in f.removed_lines)
    out: list[str] = []
    for number, text in f.added_lines:
        for _ in SKIP_MARKERS.findall(text):
            if before:
                before -= 1  # a marker moved, not added
            else:
                out.append(f"{f.path}:{number}")
    return list(dict.fromkeys(out))  # each place once
