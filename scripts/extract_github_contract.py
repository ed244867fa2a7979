"""Extract the part of GitHub's published contract that LocalForge implements.

GitHub publishes its REST API as an OpenAPI description (npm ``@octokit/openapi``)
and its webhook payloads as JSON Schemas (npm ``@octokit/webhooks-schemas``). Both
are large (13 MB and 2 MB); LocalForge needs a few dozen operations and a dozen
events. This script keeps exactly those, with every schema they reference, and
writes two small files the forge validates against at run time:

* ``app/localforge/contract/rest.json`` — one entry per operation: method, path,
  parameters, request body schema, and a schema per documented response status.
  OpenAPI 3.0 schemas are turned into JSON Schema (2020-12): ``nullable`` becomes a
  ``null`` type, ``oneOf`` becomes ``anyOf`` (GitHub's ``oneOf`` branches overlap,
  so "exactly one" would reject valid answers), and prose keys are dropped.
* ``app/localforge/contract/webhooks.json`` — the ``event$action`` definitions for
  the deliveries the forge sends, with the definitions they reference (draft-07).

Both record the package name and version they came from. Refresh with::

    mkdir -p /tmp/octokit && cd /tmp/octokit
    npm install @octokit/openapi @octokit/webhooks-schemas
    python scripts/extract_github_contract.py /tmp/octokit/node_modules

When LocalForge learns a new operation or event, add it to OPERATIONS or EVENTS
below and run the script again.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "app" / "localforge" / "contract"

# Every REST call Patchwarden makes, and no other: (operationId, method, path).
OPERATIONS = [
    ("apps/get-authenticated", "get", "/app"),
    ("apps/list-installations", "get", "/app/installations"),
    ("apps/create-from-manifest", "post", "/app-manifests/{code}/conversions"),
    ("users/get-by-username", "get", "/users/{username}"),
    (
        "apps/create-installation-access-token",
        "post",
        "/app/installations/{installation_id}/access_tokens",
    ),
    ("apps/get-repo-installation", "get", "/repos/{owner}/{repo}/installation"),
    ("repos/get", "get", "/repos/{owner}/{repo}"),
    ("repos/get-content", "get", "/repos/{owner}/{repo}/contents/{path}"),
    ("repos/get-branch", "get", "/repos/{owner}/{repo}/branches/{branch}"),
    (
        "repos/get-collaborator-permission-level",
        "get",
        "/repos/{owner}/{repo}/collaborators/{username}/permission",
    ),
    ("git/get-ref", "get", "/repos/{owner}/{repo}/git/ref/{ref}"),
    ("git/create-ref", "post", "/repos/{owner}/{repo}/git/refs"),
    ("git/update-ref", "patch", "/repos/{owner}/{repo}/git/refs/{ref}"),
    ("git/delete-ref", "delete", "/repos/{owner}/{repo}/git/refs/{ref}"),
    ("git/create-blob", "post", "/repos/{owner}/{repo}/git/blobs"),
    ("git/create-tree", "post", "/repos/{owner}/{repo}/git/trees"),
    ("git/create-commit", "post", "/repos/{owner}/{repo}/git/commits"),
    ("pulls/list", "get", "/repos/{owner}/{repo}/pulls"),
    ("pulls/create", "post", "/repos/{owner}/{repo}/pulls"),
    ("pulls/get", "get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("pulls/update", "patch", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("pulls/merge", "put", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"),
    ("pulls/list-files", "get", "/repos/{owner}/{repo}/pulls/{pull_number}/files"),
    ("pulls/list-reviews", "get", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"),
    ("pulls/create-review", "post", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"),
    (
        "pulls/request-reviewers",
        "post",
        "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers",
    ),
    ("issues/create", "post", "/repos/{owner}/{repo}/issues"),
    ("issues/get", "get", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("issues/update", "patch", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("issues/list-comments", "get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("issues/create-comment", "post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("issues/update-comment", "patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("reactions/create-for-issue", "post", "/repos/{owner}/{repo}/issues/{issue_number}/reactions"),
    (
        "reactions/create-for-issue-comment",
        "post",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
    ),
    ("issues/get-label", "get", "/repos/{owner}/{repo}/labels/{name}"),
    ("issues/create-label", "post", "/repos/{owner}/{repo}/labels"),
    ("issues/add-labels", "post", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("issues/remove-label", "delete", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}"),
    ("checks/create", "post", "/repos/{owner}/{repo}/check-runs"),
    ("checks/get", "get", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("checks/update", "patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("checks/list-for-ref", "get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
    ("checks/list-suites-for-ref", "get", "/repos/{owner}/{repo}/commits/{ref}/check-suites"),
    ("repos/get-combined-status-for-ref", "get", "/repos/{owner}/{repo}/commits/{ref}/status"),
    ("repos/create-commit-status", "post", "/repos/{owner}/{repo}/statuses/{sha}"),
]

# Every delivery the forge sends: "event$action" (push has no action: "push$event").
EVENTS = [
    "installation$created",
    "issue_comment$created",
    "issue_comment$edited",
    "issues$opened",
    "issues$labeled",
    "issues$closed",
    "pull_request$opened",
    "pull_request$synchronize",
    "pull_request$edited",
    "pull_request$closed",
    "pull_request$review_requested",
    "pull_request_review$submitted",
    "check_suite$completed",
    "check_run$created",
    "check_run$completed",
    "push$event",
    # GitHub's own security alerts (issue 34): every action the schema knows
    "dependabot_alert$created",
    "dependabot_alert$dismissed",
    "dependabot_alert$fixed",
    "dependabot_alert$reintroduced",
    "dependabot_alert$reopened",
    "code_scanning_alert$created",
    "code_scanning_alert$appeared_in_branch",
    "code_scanning_alert$reopened",
    "code_scanning_alert$reopened_by_user",
    "code_scanning_alert$closed_by_user",
    "code_scanning_alert$fixed",
]

DROP = {
    "description",
    "example",
    "examples",
    "readOnly",
    "writeOnly",
    "discriminator",
    "externalDocs",
    "title",
    "deprecated",
    "xml",
    "tsAdditionalProperties",
}


def _clean(node: Any, refs: set[str], *, openapi: bool) -> Any:
    """Drop prose keys and collect the names ``$ref`` points at. With ``openapi``, also turn
    OpenAPI 3.0 into JSON Schema 2020-12 (``nullable``, ``oneOf``, refs to ``#/$defs``)."""
    if isinstance(node, list):
        return [_clean(item, refs, openapi=openapi) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        refs.add(name)
        if openapi:
            return {"$ref": f"#/$defs/{name}"}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if (key in DROP and (openapi or key != "title")) or key.startswith("x-"):
            continue
        if openapi and key == "nullable":
            continue
        if key == "properties":
            out[key] = {name: _clean(sub, refs, openapi=openapi) for name, sub in value.items()}
        else:
            out["anyOf" if openapi and key == "oneOf" else key] = _clean(
                value, refs, openapi=openapi
            )
    if openapi and node.get("nullable"):
        if "type" in out:
            out["type"] = [out["type"], "null"]
            if "enum" in out and None not in out["enum"]:
                out["enum"] = [*out["enum"], None]
        else:
            out = {"anyOf": [out, {"type": "null"}]}
    return out


def _to_json_schema(node: Any, refs: set[str]) -> Any:
    return _clean(node, refs, openapi=True)


def _closure(names: set[str], source: dict[str, Any], *, openapi: bool) -> dict[str, Any]:
    """``names`` and every schema they reference, cleaned, sorted by name."""
    kept: dict[str, Any] = {}
    pending = set(names)
    while pending:
        name = pending.pop()
        found: set[str] = set()
        kept[name] = _clean(source[name], found, openapi=openapi)
        pending |= found - kept.keys()
    return dict(sorted(kept.items()))


def _resolve(spec: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        *_, section, name = node["$ref"].split("/")
        node = spec["components"][section][name]
    return node


def _content_schema(spec: dict[str, Any], content: dict[str, Any] | None) -> Any:
    if not content:
        return None
    for media in ("application/json", *content):
        if media in content and "schema" in content[media]:
            return content[media]["schema"]
    return None


def extract_rest(spec: dict[str, Any], version: str) -> dict[str, Any]:
    refs: set[str] = set()
    operations = []
    for op_id, method, path in OPERATIONS:
        op = spec["paths"][path][method]
        if op["operationId"] != op_id:
            raise SystemExit(f"{method.upper()} {path} is {op['operationId']}, expected {op_id}")
        parameters = []
        for param in op.get("parameters", []):
            param = _resolve(spec, param)
            if param["in"] not in {"path", "query"}:
                continue
            parameters.append(
                {
                    "name": param["name"],
                    "in": param["in"],
                    "required": bool(param.get("required")),
                    "schema": _to_json_schema(param.get("schema", {}), refs),
                }
            )
        body = None
        if "requestBody" in op:
            request_body = _resolve(spec, op["requestBody"])
            schema = _content_schema(spec, request_body.get("content"))
            body = {
                "required": bool(request_body.get("required")),
                "schema": _to_json_schema(schema or {}, refs),
            }
        responses = {}
        for status, response in op["responses"].items():
            response = _resolve(spec, response)
            schema = _content_schema(spec, response.get("content"))
            responses[status] = None if schema is None else _to_json_schema(schema, refs)
        operations.append(
            {
                "operationId": op_id,
                "method": method.upper(),
                "path": path,
                "documentation_url": op.get("externalDocs", {}).get("url", ""),
                "parameters": parameters,
                "requestBody": body,
                "responses": responses,
            }
        )
    defs = _closure(refs, spec["components"]["schemas"], openapi=True)
    return {
        "source": {
            "package": "@octokit/openapi",
            "version": version,
            "file": "generated/api.github.com.json",
            "openapi": spec["openapi"],
        },
        "operations": operations,
        "$defs": defs,
    }


def extract_webhooks(schema: dict[str, Any], version: str) -> dict[str, Any]:
    keep = _closure(set(EVENTS), schema["definitions"], openapi=False)
    return {
        "source": {
            "package": "@octokit/webhooks-schemas",
            "version": version,
            "file": "schema.json",
        },
        "events": EVENTS,
        "definitions": dict(sorted(keep.items())),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("node_modules", type=Path, help="a node_modules holding both packages")
    args = parser.parse_args(argv)
    octokit = args.node_modules / "@octokit"
    openapi_pkg = json.loads((octokit / "openapi" / "package.json").read_text())
    webhooks_pkg = json.loads((octokit / "webhooks-schemas" / "package.json").read_text())
    spec = json.loads((octokit / "openapi" / "generated" / "api.github.com.json").read_text())
    hooks = json.loads((octokit / "webhooks-schemas" / "schema.json").read_text())
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in (
        ("rest.json", extract_rest(spec, openapi_pkg["version"])),
        ("webhooks.json", extract_webhooks(hooks, webhooks_pkg["version"])),
    ):
        target = OUT / name
        target.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
        print(f"wrote {target.relative_to(ROOT)} ({target.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
