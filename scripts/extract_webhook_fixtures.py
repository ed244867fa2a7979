"""Extract GitHub webhook payload fixtures from the ``@octokit/webhooks-examples`` npm package.

Usage::

    mkdir -p /tmp/octo && cd /tmp/octo && npm install @octokit/webhooks-examples@latest
    python scripts/extract_webhook_fixtures.py PATH_TO_node_modules/@octokit/webhooks-examples

The package stores every example in ``api.github.com/index.json``: a list of
``{"name": <event>, "actions": [...], "examples": [<payload>, ...]}`` entries. This script:

* copies up to ``MAX_PER_ACTION`` real payloads per (event, action) listed in ``WANTED`` to
  ``tests/fixtures/webhooks/<event>/<action-or-"event">-<n>.json`` (smallest first, but making
  sure that distinct check/workflow conclusions and the presence of an ``installation`` object
  are represented when the package has them);
* builds a few derived payloads the package lacks (see ``DERIVED``), each a copy of a
  real example with minimal, documented edits;
* writes ``tests/fixtures/webhooks/index.json`` describing every fixture.

The output is deterministic for a given package version. Fixtures listed in an existing
``index.json`` (written by this script) are removed first so that stale files do not linger.
Stdlib only.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

Payload = dict[str, Any]

SOURCE = "@octokit/webhooks-examples"
GENERATED_BY = "scripts/extract_webhook_fixtures.py"
EXAMPLES_FILE = "api.github.com/index.json"
MAX_PER_ACTION = 3
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "webhooks"

# (event, actions); ``None`` means the event has no ``action`` field.
WANTED: list[tuple[str, list[str] | None]] = [
    ("issue_comment", ["created", "edited", "deleted"]),
    ("issues", ["labeled", "opened"]),
    ("check_run", ["completed"]),
    ("workflow_run", ["completed"]),
    ("installation", ["created", "deleted"]),
    ("installation_repositories", ["added", "removed"]),
    ("pull_request", ["opened", "closed", "synchronize"]),
    ("pull_request_review", ["submitted"]),
    ("check_suite", ["completed"]),
    (
        "code_scanning_alert",
        [
            "appeared_in_branch",
            "closed_by_user",
            "created",
            "fixed",
            "reopened",
            "reopened_by_user",
        ],
    ),
    ("dependabot_alert", ["created", "dismissed", "fixed", "reintroduced", "reopened"]),
    ("push", None),
    ("status", None),
    ("ping", None),
]

DEFAULT_INSTALLATION: Payload = {
    "id": 12345678,
    "node_id": "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMTIzNDU2Nzg=",
}

BOT_LOGIN = "dependabot[bot]"
BOT_ID = 49699333
BOT_NODE_ID = "MDM6Qm90NDk2OTkzMzM="
FIX_COMMAND_BODY = "@patchwarden fix this\n\nThe parser crashes on empty input."
FIX_LABEL = "patchwarden:fix"


def dump(payload: object) -> str:
    """Serialise exactly as written to disk (also used for size comparisons)."""
    return json.dumps(payload, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def load_package(package_dir: Path) -> tuple[str, dict[str, list[Payload]]]:
    """Return the package version and a mapping event name -> list of example payloads."""
    package_json = json.loads((package_dir / "package.json").read_text(encoding="utf-8"))
    if package_json.get("name") != SOURCE:
        raise SystemExit(f"{package_dir} is not {SOURCE} (name={package_json.get('name')!r})")
    entries = json.loads((package_dir / EXAMPLES_FILE).read_text(encoding="utf-8"))
    examples = {entry["name"]: list(entry.get("examples") or []) for entry in entries}
    return str(package_json["version"]), examples


def diversity_key(event: str, payload: Payload) -> tuple[bool, str | None]:
    """Properties we want represented among the selected examples of one (event, action)."""
    conclusion: str | None = None
    if event in ("check_run", "workflow_run", "check_suite"):
        conclusion = (payload.get(event) or {}).get("conclusion")
    return "installation" in payload, conclusion


def select_examples(event: str, candidates: list[tuple[int, Payload]]) -> list[tuple[int, Payload]]:
    """Pick at most MAX_PER_ACTION examples: smallest per diversity key first, then smallest.

    Identical payloads are skipped. The result keeps the package's order.
    """
    unique: list[tuple[int, Payload]] = []
    seen: set[str] = set()
    for index, payload in candidates:
        text = dump(payload)
        if text not in seen:
            seen.add(text)
            unique.append((index, payload))
    by_size = sorted(unique, key=lambda item: (len(dump(item[1])), item[0]))
    chosen: list[tuple[int, Payload]] = []
    keys_seen: set[tuple[bool, str | None]] = set()
    for item in by_size:
        key = diversity_key(event, item[1])
        if key not in keys_seen and len(chosen) < MAX_PER_ACTION:
            keys_seen.add(key)
            chosen.append(item)
    for item in by_size:
        if len(chosen) >= MAX_PER_ACTION:
            break
        if item not in chosen:
            chosen.append(item)
    return sorted(chosen, key=lambda item: item[0])


def index_entry(
    file: str,
    event: str,
    action: str | None,
    example_index: int | None,
    *,
    derived_from: str | None = None,
    note: str | None = None,
) -> Payload:
    return {
        "file": file,
        "event": event,
        "action": action,
        "origin": "derived" if derived_from else "example",
        "derived_from": derived_from,
        "note": note,
        "example_index": example_index,
    }


def ensure_installation(payload: Payload) -> str:
    """Give the payload an ``installation`` object; return a note describing what happened."""
    installation = payload.get("installation")
    if isinstance(installation, dict) and "id" in installation:
        return "kept the example's installation object"
    payload["installation"] = dict(DEFAULT_INSTALLATION)
    return f"added installation {{id: {DEFAULT_INSTALLATION['id']}}}"


def bot_user(user: Payload) -> Payload:
    """Turn a GitHub user object into the dependabot[bot] account, keeping its key order."""
    old_login = user["login"]
    api_login = BOT_LOGIN.replace("[", "%5B").replace("]", "%5D")
    bot: Payload = {}
    for key, value in user.items():
        if key == "login":
            value = BOT_LOGIN
        elif key == "id":
            value = BOT_ID
        elif key == "node_id":
            value = BOT_NODE_ID
        elif key == "type":
            value = "Bot"
        elif key == "site_admin":
            value = False
        elif key == "html_url":
            value = "https://github.com/apps/dependabot"
        elif key == "avatar_url":
            value = "https://avatars.githubusercontent.com/in/29110?v=4"
        elif isinstance(value, str):
            value = value.replace(f"/users/{old_login}", f"/users/{api_login}")
        bot[key] = value
    return bot


def derive_created_on_pr(payload: Payload) -> str:
    repo = payload["repository"]["full_name"]
    number = payload["issue"]["number"]
    issue = payload["issue"]
    issue["html_url"] = f"https://github.com/{repo}/pull/{number}"
    issue["pull_request"] = {
        "url": f"https://api.github.com/repos/{repo}/pulls/{number}",
        "html_url": f"https://github.com/{repo}/pull/{number}",
        "diff_url": f"https://github.com/{repo}/pull/{number}.diff",
        "patch_url": f"https://github.com/{repo}/pull/{number}.patch",
        "merged_at": None,
    }
    comment = payload["comment"]
    comment["html_url"] = comment["html_url"].replace(f"/issues/{number}#", f"/pull/{number}#")
    return (
        "issue.pull_request added (url, html_url, diff_url, patch_url, merged_at=null); "
        "issue.html_url and comment.html_url switched from /issues/N to /pull/N"
    )


def derive_created_by_bot(payload: Payload) -> str:
    payload["sender"] = bot_user(payload["sender"])
    payload["comment"]["user"] = bot_user(payload["comment"]["user"])
    payload["comment"]["author_association"] = "NONE"
    return (
        f"sender and comment.user replaced by {BOT_LOGIN} (type Bot, id {BOT_ID}); "
        "comment.author_association set to NONE"
    )


def derive_fix_command(payload: Payload) -> str:
    payload["comment"]["body"] = FIX_COMMAND_BODY
    payload["issue"].pop("pull_request", None)
    if payload["sender"].get("type") != "User":
        raise SystemExit("fix-command base example must have a User sender")
    return "comment.body set to the '@patchwarden fix this' command; issue is not a PR"


def derive_check_run_failure(payload: Payload) -> str:
    check_run = payload["check_run"]
    default_branch = payload["repository"]["default_branch"]
    notes = []
    if check_run.get("status") != "completed" or check_run.get("conclusion") != "failure":
        check_run["status"] = "completed"
        check_run["conclusion"] = "failure"
        notes.append("check_run.status/conclusion set to completed/failure")
    suite = check_run["check_suite"]
    if suite.get("head_branch") != default_branch:
        notes.append(f"check_suite.head_branch {suite.get('head_branch')!r} -> {default_branch!r}")
        suite["head_branch"] = default_branch
    suite["pull_requests"] = []
    check_run["pull_requests"] = []
    notes.append("check_suite.pull_requests and check_run.pull_requests emptied")
    return "; ".join(notes)


def derive_workflow_run_failure(payload: Payload) -> str:
    run = payload["workflow_run"]
    repository = payload["repository"]
    wanted = {
        "status": "completed",
        "conclusion": "failure",
        "event": "push",
        "head_branch": repository["default_branch"],
        "pull_requests": [],
    }
    notes = [
        f"workflow_run.{key} {run.get(key)!r} -> {value!r}"
        for key, value in wanted.items()
        if run.get(key) != value
    ]
    run.update(wanted)
    head_repo = run.get("head_repository")
    if isinstance(head_repo, dict) and head_repo.get("full_name") != repository["full_name"]:
        notes.append(f"head_repository.full_name {head_repo.get('full_name')!r} -> repository's")
        head_repo["full_name"] = repository["full_name"]
        head_repo["name"] = repository["name"]
    return "; ".join(notes) or "no changes needed"


def derive_labeled_fix(payload: Payload) -> str:
    label = payload["label"]
    old_name = label["name"]
    old_id = label.get("id")
    label["name"] = FIX_LABEL
    if "url" in label:
        label["url"] = label["url"].rsplit("/", 1)[0] + "/" + FIX_LABEL.replace(":", "%3A")
    if "default" in label:
        label["default"] = False
    if "description" in label:
        label["description"] = "Ask Patchwarden to propose a fix"
    labels = payload["issue"].get("labels") or []
    payload["issue"]["labels"] = [
        copy.deepcopy(label) if item.get("id") == old_id else item for item in labels
    ]
    return (
        f"label {old_name!r} renamed to {FIX_LABEL!r} (url, default, description updated) "
        "in both label and issue.labels"
    )


# (output file, event, action, base picker, edit function)
DerivedSpec = tuple[str, str, str, Callable[[Payload], bool], Callable[[Payload], str]]


def _any(_: Payload) -> bool:
    return True


def _has_installation(payload: Payload) -> bool:
    return "installation" in payload


def _check_failure(payload: Payload) -> bool:
    return payload["check_run"].get("conclusion") == "failure"


def _workflow_completed(payload: Payload) -> bool:
    run = payload["workflow_run"]
    return run.get("status") == "completed" and run.get("conclusion") is not None


DERIVED: list[DerivedSpec] = [
    (
        "issue_comment/created-on-pr.json",
        "issue_comment",
        "created",
        _has_installation,
        derive_created_on_pr,
    ),
    (
        "issue_comment/created-by-bot.json",
        "issue_comment",
        "created",
        _has_installation,
        derive_created_by_bot,
    ),
    (
        "issue_comment/created-fix-command.json",
        "issue_comment",
        "created",
        _has_installation,
        derive_fix_command,
    ),
    (
        "check_run/completed-failure-default-branch.json",
        "check_run",
        "completed",
        _check_failure,
        derive_check_run_failure,
    ),
    (
        "workflow_run/completed-failure-default-branch.json",
        "workflow_run",
        "completed",
        _workflow_completed,
        derive_workflow_run_failure,
    ),
    (
        "issues/labeled-patchwarden-fix.json",
        "issues",
        "labeled",
        _any,
        derive_labeled_fix,
    ),
]


def pick_base(
    event: str,
    action: str,
    prefer: Callable[[Payload], bool],
    examples: dict[str, list[Payload]],
) -> tuple[int, Payload]:
    """First example of (event, action) matching ``prefer``, else the first of that action."""
    candidates = [
        (index, payload)
        for index, payload in enumerate(examples.get(event, []))
        if payload.get("action") == action
    ]
    if not candidates:
        raise SystemExit(f"no {event}.{action} example to derive from")
    for index, payload in candidates:
        if prefer(payload):
            return index, payload
    return candidates[0]


def remove_previous_output(out_dir: Path) -> None:
    """Delete the fixtures listed in a previous index.json written by this script."""
    index_path = out_dir / "index.json"
    if not index_path.exists():
        return
    previous = json.loads(index_path.read_text(encoding="utf-8"))
    if previous.get("generated_by") != GENERATED_BY:
        raise SystemExit(f"{index_path} was not written by {GENERATED_BY}; refusing to overwrite")
    for entry in previous.get("fixtures", []):
        (out_dir / entry["file"]).unlink(missing_ok=True)


def build(package_dir: Path, out_dir: Path) -> tuple[Payload, list[str]]:
    """Write all fixtures; return the index and a list of (event, action) pairs with no example."""
    version, examples = load_package(package_dir)
    files: dict[str, Payload] = {}
    entries: list[Payload] = []
    missing: list[str] = []
    example_files: dict[tuple[str, int], str] = {}

    for event, actions in WANTED:
        all_examples = list(enumerate(examples.get(event, [])))
        for action in actions or [None]:
            candidates = [
                (index, payload)
                for index, payload in all_examples
                if action is None or payload.get("action") == action
            ]
            if not candidates:
                missing.append(f"{event}.{action}" if action else event)
                continue
            for n, (index, payload) in enumerate(select_examples(event, candidates), start=1):
                file = f"{event}/{action or 'event'}-{n}.json"
                files[file] = payload
                example_files[(event, index)] = file
                entries.append(index_entry(file, event, action, index))

    for file, event, action, prefer, edit in DERIVED:
        index, base = pick_base(event, action, prefer, examples)
        payload = copy.deepcopy(base)
        note = edit(payload)
        note += "; " + ensure_installation(payload)
        source = example_files.get((event, index), f"{EXAMPLES_FILE}#{event}[{index}]")
        files[file] = payload
        entries.append(index_entry(file, event, action, index, derived_from=source, note=note))

    remove_previous_output(out_dir)
    for file, payload in files.items():
        path = out_dir / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dump(payload), encoding="utf-8")

    index = {
        "source": SOURCE,
        "version": version,
        "generated_by": GENERATED_BY,
        "examples_file": EXAMPLES_FILE,
        "max_per_action": MAX_PER_ACTION,
        "missing": missing,
        "fixtures": entries,
    }
    (out_dir / "index.json").write_text(dump(index), encoding="utf-8")
    return index, missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package_dir", type=Path, help="node_modules/@octokit/webhooks-examples")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output directory")
    args = parser.parse_args(argv)
    index, missing = build(args.package_dir, args.out)
    total = sum((args.out / entry["file"]).stat().st_size for entry in index["fixtures"])
    print(
        f"{SOURCE}@{index['version']}: wrote {len(index['fixtures'])} fixtures "
        f"({total} bytes) to {args.out}"
    )
    if missing:
        print("no real example for: " + ", ".join(missing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
