"""The jobs that turn a request into a pull request, and a pull request into a merge.

``fix`` / ``alert`` / ``revert`` / ``update`` jobs (the sessions queue) run a coding
session, score it with the policy from the base branch and publish the outcome:
branch, pull request (or, when the policy rejects the change, an explanation on the
issue), labels, review request and the ``patchwarden`` Check Run. ``merge`` jobs (the
events queue, one per event that might let a pull request merge) read GitHub, ask the
pure :func:`app.publish.merge.decide`, and merge with the head-sha guard.

An ``alert`` for a failing check on the default branch runs the culprit finder. When
Patchwarden merged something there within the policy's window (the *canary*), that
merge is a suspect, not the culprit: only when bisect blames it is its revert opened
(a ``revert`` job, at most once per merge, never of a revert). When a person's commit
is to blame, its revert is opened as a pull request that waits for a person, and
Patchwarden's merge is left alone.

Every job records its :class:`~app.store.Outcome`; every decision is audited.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol, cast

from app.config import Settings
from app.errors import PermanentJobError
from app.fixers.base import Fixer
from app.fixers.carry import CarryFixer
from app.fixers.choose import budget_from, choose, is_about_lint, make_fixer
from app.git import Remote
from app.github import GitHubApp
from app.github.repos import WRITE_ROLES, role_for
from app.policy.config import LADDER, Decision, Policy
from app.policy.score import HISTORY_DAYS, History, Score, Trigger, TriggerKind, score_session
from app.publish.body import inline, labels_for, render_body, verdict
from app.publish.github import MergeAnswer, Publisher
from app.publish.merge import Facts, Verdict, approvers_of, checks_of, decide
from app.queue import EVENTS_QUEUE, SESSIONS_QUEUE
from app.queue.worker import JobHandler
from app.redact import redact
from app.sessions.result import SessionResult
from app.sessions.session import Document, SessionRunner, SessionSpec, Task
from app.sessions.workspace import branch_name
from app.store import Job, NewJob, Outcome, Store
from app.store.models import FAILURE_NOTICE
from app.store.outcomes import (
    canary_minutes,
    pause_reason,
    revert_job_key,
    reverted,
    watched_merges,
)

log = logging.getLogger(__name__)

MERGEABLE: frozenset[str] = frozenset({"automerge", "review"})
CONCLUSION = {"automerge": "success", "review": "success", "draft": "neutral"}


@dataclass
class Pipeline:
    settings: Settings
    store: Store
    github: GitHubApp
    runner: SessionRunner
    wake: Callable[[str], None] | None = None  # wakes idle workers of a queue
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)  # merges, per repository

    @property
    def bot_login(self) -> str:
        return f"{self.settings.bot_name}[bot]"

    def handlers(self) -> dict[str, tuple[str, JobHandler]]:
        return {
            "fix": (SESSIONS_QUEUE, self.fix_job),
            "alert": (SESSIONS_QUEUE, self.alert_job),
            "revert": (SESSIONS_QUEUE, self.revert_job),
            "update": (SESSIONS_QUEUE, self.update_job),
            "merge": (EVENTS_QUEUE, self.merge_job),
            FAILURE_NOTICE: (EVENTS_QUEUE, self.failure_notice_job),
        }

    # -- helpers ------------------------------------------------------------------
    def _publisher(self, job: Job, repo: str) -> Publisher:
        if job.installation_id is None:
            raise PermanentJobError(f"job {job.id} names no installation; cannot act on {repo}")
        return Publisher(
            self.github.installation(job.installation_id), repo, bot_login=self.bot_login
        )

    async def _paused(self, repo: str) -> str | None:
        pause = await self.store.get_pause(repo)
        return pause_reason(
            pause, globally=self.settings.paused, repo=repo, bot=self.settings.bot_name
        )

    async def _refused_if_paused(
        self, job: Job, outcome: Outcome, report: _Report, what: str
    ) -> dict[str, Any] | None:
        """A paused repository starts nothing: say so, record it, audit it."""
        paused = await self._paused(str(job.repo))
        if paused is None:
            return None
        await report.say(f"{what}: {paused}.")
        await self.store.save_outcome(replace(outcome, status="refused"))
        await self._audit("job.refused", job, reason=paused)
        return {"status": "refused", "reason": paused}

    async def _enqueue(self, job: NewJob, *, actor: str | None) -> bool:
        """Enqueue ``job`` unless one with its key exists; True when it is new."""
        _, created = await self.store.enqueue(job, actor=actor)
        if created and self.wake is not None:
            self.wake(job.queue)
        return created

    async def _audit(self, action: str, job: Job, *, reason: str, **details: Any) -> None:
        await self.store.audit(
            action,
            actor=job.payload.get("requested_by"),
            repo=job.repo,
            job_id=job.id,
            reason=reason,
            details=details or None,
        )

    def _result_path(self, job_id: int) -> Path:
        return self.settings.cache_dir / "results" / f"{job_id}.json"

    def _save_result(self, result: SessionResult) -> None:
        assert result.job_id is not None
        path = self._result_path(result.job_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(result.to_json()))
        tmp.replace(path)

    def _load_result(self, job_id: int) -> SessionResult | None:
        path = self._result_path(job_id)
        if not path.is_file():
            return None
        return SessionResult.load(json.loads(path.read_text()))

    async def _remote(self, job: Job, pub: Publisher) -> tuple[Remote, dict[str, Any]]:
        """Where git fetches and pushes the repository, with the installation's token
        (it goes into git's environment only), and the repository as GitHub shows it."""
        repository = await pub.repository()
        token = await self.github.auth.installation_token(int(job.installation_id or 0))
        return Remote(pub.repo, str(repository["clone_url"]), token), repository

    async def _outcome(self, job: Job, *, kind: str, trigger: str) -> Outcome:
        found = await self.store.get_outcome(job.id)
        if found is not None:
            return found
        outcome = Outcome(
            job_id=job.id,
            repo=str(job.repo),
            kind=kind,
            trigger=trigger,
            created_at=job.created_at,
            issue_number=job.payload.get("issue_number"),
            requested_by=job.payload.get("requested_by"),
        )
        await self.store.save_outcome(outcome)
        return outcome

    async def _history(self, repo: str) -> History:
        """Outcomes feed back into the risk: Patchwarden's merges reverted lately."""
        since = time.time() - HISTORY_DAYS * 86400
        # Only reverts that merged count: one opened and never merged undid nothing.
        undone = reverted(await self.store.find_outcomes(repo=repo, since=since))
        return History(reverted_recently=len(undone))

    # -- a job that failed for good: tell the person who asked ------------------------
    async def failure_notice_job(self, job: Job) -> dict[str, Any]:
        """Edit the failed job's comment ("Working on it…") to say what failed and what
        to do; its outcome becomes ``failed``. Queued by the store with the failure."""
        failed = await self.store.get_job(int(job.payload["job_id"]))
        if failed is None or failed.repo is None:
            return {"told": False, "why": "the failed job is gone"}
        number = failed.payload.get("issue_number") or failed.payload.get("pr")
        if not number:
            return {"told": False, "why": "the job has no issue or pull request"}
        why = redact(failed.last_error or "an unknown error").splitlines()[0][:300]
        bot = self.settings.bot_name
        again = {
            "fix": f"Ask again with `@{bot} fix this` (a new request starts a new job)",
            "merge": f"A new approval or `@{bot} ship it` checks it again",
            "revert": f"Ask again with `@{bot} revert`",
        }.get(failed.kind, "Ask again")
        report = _report_for(self._publisher(failed, failed.repo), failed, int(number))
        await report.say(
            f"Stopped: this {failed.kind} job failed after {failed.attempts} run(s) and "
            f"will not go on by itself. What failed: {inline(why)}. {again}; if it keeps "
            f"failing, a maintainer can run `patchwarden audit --job {failed.id}`."
        )
        outcome = await self.store.get_outcome(failed.id)
        if outcome is not None and outcome.status == "running":
            await self.store.save_outcome(replace(outcome, status="failed"))
        await self.store.audit("job.failure_told", repo=failed.repo, job_id=failed.id, reason=why)
        return {"told": True, "job": failed.id, "on": int(number)}

    # -- fix: an issue's "fix this" ------------------------------------------------
    async def fix_job(self, job: Job) -> dict[str, Any]:
        p = job.payload
        repo = str(p["repo"])
        number = int(p["issue_number"])
        pub = self._publisher(job, repo)
        outcome = await self._outcome(job, kind="fix", trigger=str(p.get("trigger", "comment")))
        report = _job_comment(pub, number, job.id)
        refused = await self._refused_if_paused(job, outcome, report, "Not started")
        if refused:
            return refused
        await report.say("Working on it: a coding session is setting up.")
        issue = await pub.gh.getitem(
            "/repos/{owner}/{repo}/issues/{number}", {**pub.vars, "number": number}
        )
        documents = []
        if issue.get("body"):
            documents.append(Document(f"issue #{number} body", str(issue["body"])))
        task = Task(
            title=str(issue.get("title") or p.get("issue_title") or f"issue #{number}")[:200],
            kind="lint" if p.get("mode") == "lint" else "fix",
            instructions=str(p.get("instructions") or ""),
            documents=tuple(documents),
        )
        trigger: TriggerKind = "label" if p.get("trigger") == "label" else "comment"
        # No fixer can answer it (no model, not about lint): say so before any setup,
        # network or test run is spent on it.
        choice = choose(
            task.kind,
            llm_configured=self.settings.llm_configured,
            llm_on_alerts=False,
            about_lint=is_about_lint(task),
        )
        answer = choice.answer(self.settings.bot_name)
        if answer is not None:
            return await self._ended(job, outcome, report, status="failed", why=answer)
        # A new request on an issue whose pull request is still open updates that one.
        branch = await self._open_pull_branch(job, pub, number)
        return await self._session_to_pull(
            job,
            pub,
            outcome,
            task=task,
            fixer=make_fixer("auto", self.settings, ledger=self.store),
            trigger=Trigger(trigger),
            report=report,
            closes=number,
            branch=branch,
        )

    async def _open_pull_branch(self, job: Job, pub: Publisher, number: int) -> str | None:
        """The branch of an open Patchwarden pull request for issue ``number``, if any."""
        earlier = [
            o
            for o in await self.store.find_outcomes(repo=pub.repo)
            if o.issue_number == number
            and o.kind == "fix"
            and o.job_id != job.id
            and o.pr_number is not None
            and o.branch
            and o.merged_at is None
        ]
        for outcome in reversed(earlier):
            assert outcome.branch is not None
            pull = await pub.find_pull(outcome.branch)
            if pull is None or pull.get("state") != "open":
                continue
            # Only a branch still at the patch Patchwarden pushed: a person's commits
            # on it would be lost to the force-push.
            if (pull.get("head") or {}).get("sha") == outcome.head_sha:
                return outcome.branch
            return None
        return None

    async def _session_to_pull(
        self,
        job: Job,
        pub: Publisher,
        outcome: Outcome,
        *,
        task: Task,
        fixer: Fixer,
        trigger: Trigger,
        report: _Report,
        closes: int | None = None,
        base: str | None = None,
        revert_of: Outcome | None = None,
        branch: str | None = None,
        links: list[str] | None = None,
        blame: Callable[[SessionResult], Awaitable[dict[str, Any] | None]] | None = None,
    ) -> dict[str, Any]:
        """Session → score → reject (the issue says why) or publish, recording the outcome.

        ``blame`` hears a patched session's result first and may end the job there (the
        canary hands the revert of Patchwarden's own merge to a ``revert`` job)."""
        remote, repository = await self._remote(job, pub)
        spec = SessionSpec(
            remote=remote,
            task=task,
            job_id=job.id,
            base=base,
            installation_id=job.installation_id,
            budget=budget_from(self.settings),
            branch=branch,
        )
        # A retried job (a worker restarted mid-job) whose pull request is already
        # merged or closed is done: running it again must not open a second one.
        earlier = await pub.find_pull(spec.branch or branch_name(job.id, task.title))
        if earlier is not None and earlier.get("state") != "open":
            await fixer.aclose()
            state = "merged" if earlier.get("merged_at") else "closed"
            await self._audit("job.done_before", job, reason=f"#{earlier['number']} is {state}")
            return {"status": state, "pr": int(earlier["number"])}
        ticker = _Ticker(report, every=self.settings.progress_seconds)
        ticking = asyncio.create_task(ticker.run(), name=f"progress:{job.id}")
        try:
            result = await self.runner.run(spec, fixer, progress=ticker.hear)
        finally:
            ticking.cancel()
            await asyncio.gather(ticking, return_exceptions=True)
            await fixer.aclose()
        self._save_result(result)
        usage = result.fix.usage if result.fix is not None else None
        outcome = replace(
            outcome,
            tokens=usage.total_tokens if usage else 0,
            cost_usd=usage.cost_usd if usage else 0.0,
            branch=result.branch,
            base_sha=result.base_sha,
        )
        if result.status != "patched" or result.head_sha is None or result.policy is None:
            why = result.error or (result.fix.reason if result.fix else None) or "no change"
            return await self._ended(job, outcome, report, status=result.status, why=why)
        if blame is not None:
            ended = await blame(result)
            if ended is not None:
                await self.store.save_outcome(replace(outcome, status=str(ended["status"])))
                return ended
        whose = await self._whose(pub.repo, result, trigger)
        if whose is None:
            why = "the culprit is Patchwarden's own revert, and a revert is never reverted"
            return await self._ended(job, outcome, _Silent(), status="ignored", why=why)
        trigger = whose
        policy = Policy.model_validate(result.policy)
        score = score_session(
            result,
            policy,
            trigger=trigger,
            max_tokens=spec.budget.max_tokens,
            max_cost_usd=spec.budget.max_cost_usd,
            # A revert is not held back by the reverts before it.
            history=await self._history(pub.repo) if trigger.reverts is None else None,
        )
        outcome = replace(
            outcome,
            decision=score.decision,
            score=score.score,
            risk=score.risk,
            head_sha=result.head_sha,
            details={
                **outcome.details,
                "score": score.to_json(),
                "merge": policy.merge.model_dump(mode="json"),
                "title": task.title,
                **({"reverts": trigger.reverts} if trigger.reverts else {}),
            },
        )
        await self._audit(
            "policy.decided",
            job,
            reason=verdict(score),
            score=score.score,
            decision=score.decision,
            rules=[r.reason for r in score.rules],
        )
        if score.decision == "reject":
            return await self._rejected(outcome, report, score)
        if links is None:
            # Merging closes the issue only when the patch is what the issue asked for:
            # a lint fix on a bug report, or a revert, is not.
            mergeable = score.decision in MERGEABLE and answers(task, result)
            links = body_links(closes=closes, revert_of=revert_of, mergeable=mergeable)
        title = _title(result, task, revert_of)
        draft = _Draft(
            title=title,
            body=render_body(
                result,
                score,
                title=title,
                bot=self.settings.bot_name,
                links=links,
                merge_commit=policy.merge.method == "merge",
            ),
            links=links,
            base=str(repository.get("default_branch") or "main"),
        )
        return await self._publish(job, pub, outcome, report, spec.remote, result, score, draft)

    async def _ended(
        self, job: Job, outcome: Outcome, report: _Report, *, status: str, why: str
    ) -> dict[str, Any]:
        """No patch to publish: say why where the request came from, and record it."""
        status = "no-change" if status == "patched" else status  # patched, yet nothing to push
        await report.say(f"No pull request: {inline(why)}")
        await self.store.save_outcome(replace(outcome, status=status))
        await self._audit("job.no_patch", job, reason=why)
        return {"status": status, "reason": why}

    async def _whose(self, repo: str, result: SessionResult, trigger: Trigger) -> Trigger | None:
        """For a revert the culprit finder chose: of Patchwarden's merge or a person's
        commit (``Trigger.reverts``); None when it is Patchwarden's own revert."""
        culprit = result.fix.culprit if result.fix is not None else None
        if culprit is None or trigger.reverts is not None:
            return trigger
        theirs = await self.store.find_outcomes(repo=repo, merge_sha=culprit.sha)
        if any(o.kind == "revert" for o in theirs):
            return None
        return replace(trigger, reverts="bot" if theirs else "human")

    async def _rejected(self, outcome: Outcome, report: _Report, score: Score) -> dict[str, Any]:
        # Rule reasons quote paths from the patch: kept inert like the PR body's.
        reasons = "\n".join(f"- {inline(r.reason)}" for r in score.rules)
        await report.say(
            f"The patch was **rejected** by the policy (risk {score.score}/100), so no pull "
            f"request was opened:\n\n{reasons}\n\nWhat a maintainer can do: fix it by hand, "
            f"give clearer instructions with `@{self.settings.bot_name} fix this …`, or "
            "change the policy in `.github/patchwarden.yml` on the default branch "
            "(docs/policy.md)."
        )
        await self.store.save_outcome(replace(outcome, status="rejected"))
        return {"status": "rejected", "score": score.score}

    async def _publish(
        self,
        job: Job,
        pub: Publisher,
        outcome: Outcome,
        report: _Report,
        remote: Remote,
        result: SessionResult,
        score: Score,
        draft: _Draft,
    ) -> dict[str, Any]:
        """Branch, check run, pull request, labels, review request; then a merge check."""
        assert result.head_sha is not None
        head = result.head_sha
        cache = self.runner.cache
        await pub.push_branch(
            mirror=cache.mirror_path(pub.repo), branch=result.branch, remote=remote, home=cache.home
        )
        run = await pub.check_run(
            head, status="queued", title="Publishing", summary="", external_id=str(job.id)
        )
        await pub.check_run(
            head, status="in_progress", title="Opening the pull request", summary="", run_id=run
        )
        pull, created = await pub.upsert_pull(
            branch=result.branch,
            base=draft.base,
            title=draft.title,
            body=draft.body,
            draft=score.decision == "draft",
        )
        number = int(pull["number"])
        await pub.set_labels(number, labels_for(score), prefix="risk:")
        requested_by = outcome.requested_by
        if requested_by and created:
            refused = await pub.request_review(number, requested_by)
            if refused:
                log.info("review request for %s on #%s: %s", requested_by, number, refused)
        await pub.check_run(
            head,
            status="completed",
            conclusion=CONCLUSION[score.decision],
            title=f"Risk {score.score}/100 ({score.risk}): {score.decision}",
            summary=verdict(score),
            run_id=run,
        )
        outcome = replace(
            outcome,
            status="published",
            pr_number=number,
            pr_opened_at=outcome.pr_opened_at or time.time(),
            details={**outcome.details, "pr_url": pull.get("html_url"), "links": draft.links},
        )
        await self.store.save_outcome(outcome)
        await self.store.audit(
            "pr.opened" if created else "pr.updated",
            actor=requested_by,
            repo=pub.repo,
            job_id=job.id,
            reason=f"#{number}: {verdict(score)}",
            details={"pr": number, "head": head, "decision": score.decision},
        )
        what = "the revert, " if outcome.kind == "revert" else ""
        await report.say(
            f"Opened {what}#{number}: risk {score.score}/100 ({score.risk}). {_next_step(score)}"
        )
        await self._enqueue(
            NewJob(
                kind="merge",
                key=f"merge:{pub.repo}#{number}:opened:{head}",
                queue=EVENTS_QUEUE,
                repo=pub.repo,
                installation_id=job.installation_id,
                payload={"repo": pub.repo, "pr": number, "reason": "opened"},
            ),
            actor=None,
        )
        return {
            "status": "published",
            "pr": number,
            "score": score.score,
            "decision": score.decision,
        }

    # -- alert: a failing check on the default branch, or a monitoring alert ----------
    async def alert_job(self, job: Job) -> dict[str, Any]:
        p = job.payload
        repo = str(p["repo"])
        pub = self._publisher(job, repo)
        trigger_kind: TriggerKind = "ci" if p.get("sha") else "alert"
        outcome = await self._outcome(job, kind="alert", trigger=trigger_kind)
        refused = await self._refused_if_paused(job, outcome, _Silent(), "Not started")
        if refused:
            return refused
        sha = p.get("sha")
        # Patchwarden's own merges the failing commit contains, within their canary
        # window: suspects, not culprits. The culprit finder decides (below).
        watching = await self._watching(job, pub, str(sha)) if sha else []
        documents = []
        if p.get("body"):
            documents.append(Document(f"{p.get('source', 'alert')} alert", str(p["body"])))
        task = Task(
            title=str(
                p.get("title")
                or f"{p.get('name', 'a check')} fails on {p.get('branch', 'the default branch')}"
            )[:200],
            kind="alert",
            documents=tuple(documents),
            check=p.get("name"),
            monitoring=not sha,  # posted to /alerts, not a check failing on a commit
        )
        where = f"{p.get('name', 'a check')} failed on {str(sha)[:12]}"

        async def blame(result: SessionResult) -> dict[str, Any] | None:
            return await self._canary(job, pub, result, watching, where)

        return await self._session_to_pull(
            job,
            pub,
            outcome,
            task=task,
            fixer=make_fixer("auto", self.settings, ledger=self.store),
            trigger=Trigger(trigger_kind),
            report=_Silent(),
            base=sha,
            blame=blame if watching else None,
        )

    async def _watching(self, job: Job, pub: Publisher, sha: str) -> list[Outcome]:
        """Patchwarden's merges within their window that ``sha`` contains, newest first."""
        watched = watched_merges(await self.store.find_outcomes(repo=pub.repo), now=time.time())
        if not watched:
            return []
        remote, _ = await self._remote(job, pub)
        return [
            m for m in watched if await self.runner.cache.contains(remote, sha, str(m.merge_sha))
        ]

    async def _canary(
        self,
        job: Job,
        pub: Publisher,
        result: SessionResult,
        watching: list[Outcome],
        where: str,
    ) -> dict[str, Any] | None:
        """After the culprit finder: when it blamed one of Patchwarden's watched merges,
        the revert of that merge (a ``revert`` job, at most one per merge, never of a
        revert); None when a person's commit is to blame (its revert is published as
        any alert's, waiting for a person) — Patchwarden's merge is left alone."""
        culprit = result.fix.culprit if result.fix is not None else None
        merged = next((m for m in watching if culprit and m.merge_sha == culprit.sha), None)
        if merged is None:
            if culprit is not None:
                names = ", ".join(f"#{m.pr_number}" for m in watching)
                await self._audit(
                    "canary.cleared",
                    job,
                    reason=f"{where}; bisect blamed {culprit.sha[:12]}, not {names}",
                )
            return None
        if merged.kind == "revert":
            await self._audit(
                "canary.ignored",
                job,
                reason=f"{where}; #{merged.pr_number} is a revert: a revert is never reverted",
            )
            return {"status": "ignored", "reason": "never revert a revert"}
        # One revert per merge: the revert job's key is the pull request's, for the
        # canary and `@patchwarden revert` alike, so a second one is never enqueued.
        created = await self._enqueue(
            NewJob(
                kind="revert",
                key=revert_job_key(pub.repo, int(merged.pr_number or 0)),
                repo=pub.repo,
                installation_id=job.installation_id,
                payload={
                    "repo": pub.repo,
                    "pr": merged.pr_number,
                    "trigger": "canary",
                    "why": f"{where}; bisect blamed its merge",
                },
            ),
            actor=None,
        )
        if not created:
            await self._audit(
                "canary.ignored",
                job,
                reason=f"{where}; #{merged.pr_number} is already being reverted",
            )
            return {"status": "ignored", "reason": "already reverted"}
        await self._audit(
            "canary.tripped",
            job,
            reason=f"{where}; bisect blamed the merge of #{merged.pr_number}",
            pr=merged.pr_number,
        )
        return {"status": "canary", "pr": merged.pr_number}

    # -- revert: of a Patchwarden merge, by the canary or on request ---------------
    async def revert_job(self, job: Job) -> dict[str, Any]:
        p = job.payload
        repo = str(p["repo"])
        pub = self._publisher(job, repo)
        # The row that merged: a pull request updated onto a new base has several.
        merged = [
            o
            for o in await self.store.find_outcomes(repo=repo, pr_number=int(p["pr"]))
            if o.merge_sha
        ]
        trigger = "canary" if p.get("trigger") == "canary" else "request"
        outcome = await self._outcome(job, kind="revert", trigger=trigger)
        outcome = replace(outcome, revert_of_pr=int(p["pr"]))
        report = _report_for(pub, job, int(p["pr"]))
        if not merged:
            await report.say("Nothing to revert: Patchwarden has not merged this pull request.")
            await self.store.save_outcome(replace(outcome, status="refused"))
            return {"status": "refused", "reason": "not merged"}
        original = merged[-1]
        refused = await self._refused_if_paused(job, outcome, report, "Not reverting")
        if refused:
            return refused
        why = str(p.get("why") or f"@{p.get('requested_by')} asked for it")
        await report.say(f"Reverting #{original.pr_number} ({why}).")
        task = Task(
            title=f"Revert #{original.pr_number}: {original.details.get('title', '')}"[:200],
            kind="alert",
            culprit=original.merge_sha,
            instructions=why,
        )
        result = await self._session_to_pull(
            job,
            pub,
            outcome,
            task=task,
            fixer=make_fixer("revert", self.settings),
            trigger=Trigger("canary" if trigger == "canary" else "comment", reverts="bot"),
            report=report,
            revert_of=original,
        )
        if result.get("pr"):
            latest = await self.store.get_outcome(original.job_id)
            if latest is not None:
                await self.store.save_outcome(replace(latest, reverted_by_pr=int(result["pr"])))
        return result

    # -- update: the base moved; carry the scored patch onto it and verify again ---
    async def update_job(self, job: Job) -> dict[str, Any]:
        p = job.payload
        repo = str(p["repo"])
        pub = self._publisher(job, repo)
        first = await self.store.get_outcome(int(p["job"]))
        if first is None or first.head_sha is None or first.base_sha is None:
            raise PermanentJobError(f"job {p['job']} has no published patch to carry")
        outcome = await self._outcome(job, kind=first.kind, trigger=first.trigger)
        outcome = replace(
            outcome,
            issue_number=first.issue_number,
            requested_by=first.requested_by,
            revert_of_pr=first.revert_of_pr,
        )
        report = _report_for(pub, job, int(first.pr_number or 0))
        refused = await self._refused_if_paused(job, outcome, report, "Not updated")
        if refused:
            return refused
        old = self._load_result(first.job_id)
        fixer_name = old.fix.fixer if old is not None and old.fix is not None else "carry"
        task = Task(title=str(first.details.get("title") or "update"), kind="fix")
        carry = CarryFixer(
            first.head_sha,
            fixer_name=fixer_name,
            summary=(old.fix.summary if old and old.fix else ""),
        )
        result = await self._session_to_pull(
            job,
            pub,
            outcome,
            task=task,
            fixer=carry,
            trigger=Trigger(_trigger_kind(first.trigger), reverts=first.details.get("reverts")),
            report=report,
            branch=first.branch,
            links=list(first.details.get("links") or []),
        )
        return result

    # -- merge: one event that may let a pull request merge -----------------------
    async def merge_job(self, job: Job) -> dict[str, Any]:
        p = job.payload
        repo = str(p["repo"])
        number = int(p["pr"])
        lock = self._locks.setdefault(repo, asyncio.Lock())
        async with lock:
            return await self._merge(job, repo, number)

    async def _merge(self, job: Job, repo: str, number: int) -> dict[str, Any]:
        outcomes = await self.store.find_outcomes(repo=repo, pr_number=number)
        if not outcomes:
            return {"status": "not-ours"}
        outcome = outcomes[-1]
        pub = self._publisher(job, repo)
        pull = await pub.get_pull(number)
        if pull.get("merged"):
            if outcome.merged_at is None:
                merged_by = (pull.get("merged_by") or {}).get("login")
                await self._merged(
                    job,
                    pub,
                    outcome,
                    sha=str(pull.get("merge_commit_sha")),
                    how="manual",
                    by=merged_by,
                )
            return {"status": "merged"}
        rules = outcome.details.get("merge") or {}
        outcome, approvers = await self._approvers(job, pub, outcome, pull)
        runs, statuses = await pub.checks(pull["head"]["sha"])
        # The branch's tip, not the PR's base.sha: GitHub does not refresh that reliably.
        base_tip = await pub.branch_sha(str(pull["base"]["ref"]))
        facts = Facts(
            decision=_decision(outcome.decision),
            state=str(pull.get("state")),
            merged=bool(pull.get("merged")),
            draft=bool(pull.get("draft")),
            head_sha=str(pull["head"]["sha"]),
            scored_sha=str(outcome.head_sha),
            base_moved=bool(outcome.base_sha) and base_tip != outcome.base_sha,
            checks=checks_of(runs, statuses, bot_slug=self.settings.bot_name),
            approvers=approvers,
            requested_by=outcome.requested_by,
            two_person=bool(rules.get("two_person", True)),
            paused=await self._paused(repo),
            bot=self.settings.bot_name,
            refused_before=_refused_at(outcome, str(pull["head"]["sha"])),
            person_asked=job.payload.get("reason") in ("approval", "ship-it"),
        )
        decided = decide(facts)
        if decided.action == "merge":
            return await self._do_merge(job, pub, outcome, pull, decided, rules, approvers)
        if decided.action == "update":
            await self._say_merge(
                pub,
                number,
                outcome,
                "The base branch moved since the session: carrying the patch onto it and "
                "verifying it again before merging.",
            )
            await self._enqueue(
                NewJob(
                    kind="update",
                    key=f"update:{repo}#{number}:{base_tip}",
                    repo=repo,
                    installation_id=job.installation_id,
                    payload={"repo": repo, "pr": number, "job": outcome.job_id},
                ),
                actor=None,
            )
            return {"status": "updating"}
        if decided.action != "done":
            await self._say_merge(pub, number, outcome, f"Not merged yet: {decided.reason}.")
            if decided.action == "refuse":
                await self.store.audit(
                    "merge.refused",
                    repo=repo,
                    job_id=outcome.job_id,
                    reason=decided.reason,
                    details={"pr": number},
                )
        return {"status": decided.action, "reason": decided.reason}

    async def _approvers(
        self, job: Job, pub: Publisher, outcome: Outcome, pull: dict[str, Any]
    ) -> tuple[Outcome, frozenset[str]]:
        """Writers who approved the current head: by review, or by `ship it` (kept in the
        outcome with the head it was said for; a new head needs a new one)."""
        head = str(pull["head"]["sha"])
        said: dict[str, str] = dict(outcome.details.get("ship_it") or {})
        actor = job.payload.get("actor")
        if job.payload.get("reason") == "ship-it" and actor:
            said[str(actor)] = head
            outcome = replace(outcome, details={**outcome.details, "ship_it": said})
            await self.store.save_outcome(outcome)
        ship_it = {login for login, at in said.items() if at == head}
        reviews = await pub.reviews(pull["number"])
        logins = {str((r.get("user") or {}).get("login")) for r in reviews} | ship_it
        # A failed lookup is no role: its approval does not count (fail closed).
        roles = {
            login: (await role_for(pub.gh, repo=pub.repo, login=login))[0]
            for login in sorted(logins)
            if login
        }
        by_review = approvers_of(reviews, head_sha=head, roles=roles)
        return outcome, by_review | {login for login in ship_it if roles.get(login) in WRITE_ROLES}

    async def _do_merge(
        self,
        job: Job,
        pub: Publisher,
        outcome: Outcome,
        pull: dict[str, Any],
        decided: Verdict,
        rules: dict[str, Any],
        approvers: frozenset[str],
    ) -> dict[str, Any]:
        number = int(pull["number"])
        method = str(rules.get("method") or "merge")
        title = (
            f"Merge pull request #{number} from {pub.owner}/{pull['head']['ref']}"
            if method == "merge"
            else f"{pull['title']} (#{number})"
        )
        answer: MergeAnswer = await pub.merge(
            number, sha=str(outcome.head_sha), method=method, title=title
        )
        if answer.merged and answer.sha:
            by = ", ".join(sorted(approvers)) if decided.how == "approved" else None
            await self._merged(job, pub, outcome, sha=answer.sha, how=decided.how or "auto", by=by)
            return {"status": "merged", "sha": answer.sha}
        if answer.status == 409:
            scored = str(outcome.head_sha)[:12]
            reason = (
                f"GitHub refused the merge: the head moved since Patchwarden scored {scored} "
                "(409). Not retried."
            )
        else:
            again = await pub.get_pull(number)
            if again.get("merged"):
                if outcome.merged_at is None:
                    await self._merged(
                        job,
                        pub,
                        outcome,
                        sha=str(again.get("merge_commit_sha")),
                        how="manual",
                        by=(again.get("merged_by") or {}).get("login"),
                    )
                return {"status": "merged"}
            reason = (
                f"GitHub refused the merge ({answer.status}: {answer.message}). Not retried "
                f"until a writer approves it or comments `@{self.settings.bot_name} ship it`."
            )
        await self.store.audit(
            "merge.refused",
            repo=pub.repo,
            job_id=outcome.job_id,
            reason=reason,
            details={"pr": number, "status": answer.status},
        )
        refused = {"head": str(outcome.head_sha), "why": f"{answer.status}: {answer.message}"}
        latest = await self.store.get_outcome(outcome.job_id) or outcome
        outcome = replace(latest, details={**latest.details, "merge_refused": refused})
        await self.store.save_outcome(outcome)
        await self._say_merge(pub, number, outcome, reason)
        return {"status": "refused", "reason": reason}

    async def _merged(
        self, job: Job, pub: Publisher, outcome: Outcome, *, sha: str, how: str, by: str | None
    ) -> None:
        now = time.time()
        outcome = replace(outcome, merged_at=now, merged_how=how, merged_by=by, merge_sha=sha)
        await self.store.save_outcome(outcome)
        await self.store.audit(
            "pr.merged",
            actor=by,
            repo=pub.repo,
            job_id=outcome.job_id,
            reason=f"#{outcome.pr_number} merged ({how}) as {sha[:12]}",
            details={"pr": outcome.pr_number, "sha": sha, "how": how},
        )
        number = int(outcome.pr_number or 0)
        result = self._load_result(outcome.job_id)
        score_data = outcome.details.get("score")
        if result is not None and score_data:
            score = Score.model_validate(score_data)
            method = str((outcome.details.get("merge") or {}).get("method") or "merge")
            body = render_body(
                result,
                score,
                title=str(outcome.details.get("title")),
                bot=self.settings.bot_name,
                merge_sha=sha,
                merge_commit=method == "merge",
                links=list(outcome.details.get("links") or []),
            )
            await pub.update_body(number, body)
        window = canary_minutes(outcome)
        watch = (
            f" Patchwarden watches the default branch for {window:g} minutes and opens "
            "the revert if a check fails."
            if window and outcome.kind != "revert"
            else ""
        )
        how_text = {
            "auto": "automatically: every check green",
            "approved": f"approved by {by}",
            "manual": f"by @{by}",
        }.get(how, how)
        await self._say_merge(pub, number, outcome, f"Merged as {sha[:12]} ({how_text}).{watch}")
        if outcome.issue_number:
            await _job_comment(pub, outcome.issue_number, outcome.job_id).say(
                f"#{number} merged ({how_text}) as {sha[:12]}. Undo: comment "
                f"`@{self.settings.bot_name} revert` on #{number}."
            )

    async def _say_merge(self, pub: Publisher, number: int, outcome: Outcome, text: str) -> None:
        if outcome.details.get("merge_said") == text:
            return
        await pub.upsert_comment(number, "merge", text)
        latest = await self.store.get_outcome(outcome.job_id) or outcome
        await self.store.save_outcome(
            replace(latest, details={**latest.details, "merge_said": text})
        )


# -- what the job says where ----------------------------------------------------------
@dataclass(frozen=True)
class _Draft:
    """The pull request to open or update."""

    title: str
    body: str
    links: list[str]
    base: str


class _Report(Protocol):
    async def say(self, text: str) -> None: ...


class _Ticker:
    """The session's phase, shown in the job's comment as it goes (at most every
    ``every`` seconds: one edit per phase, not a stream of comments)."""

    def __init__(self, report: _Report, *, every: float) -> None:
        self.report = report
        self.every = every
        self.latest: str | None = None
        self.shown: str | None = None

    def hear(self, line: str) -> None:
        self.latest = line

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            line = self.latest
            if line is None or line == self.shown:
                continue
            self.shown = line
            try:
                await self.report.say(f"Working on it: {inline(line)}")
            except Exception as exc:  # progress is a courtesy; the job goes on
                log.warning("could not show progress: %s", exc)


class _Silent:
    """A CI alert has no issue to talk on: its pull request says it all."""

    async def say(self, text: str) -> None:
        return None


class _Comment:
    """One comment of Patchwarden's on an issue or pull request, found by its marker
    ``key`` and edited in place as the job goes (its id kept after the first say)."""

    def __init__(self, pub: Publisher, number: int, key: str, prefix: str) -> None:
        self.pub, self.number, self.key, self.prefix = pub, number, key, prefix
        self.comment_id: int | None = None

    async def say(self, text: str) -> None:
        if self.number:
            self.comment_id = await self.pub.upsert_comment(
                self.number, self.key, self.prefix + text, comment_id=self.comment_id
            )


def _job_comment(pub: Publisher, number: int, job_id: int) -> _Comment:
    """The job's one comment on its issue."""
    return _Comment(pub, number, f"job={job_id}", f"**Patchwarden** (job {job_id}): ")


def _report_for(pub: Publisher, job: Job, number: int) -> _Comment:
    """The comment a job of this kind speaks through on ``number`` (and a notice of its
    failure edits): a revert's on the reverted pull request, the merge comment for a
    merge or an update, else the job's own."""
    if job.kind == "revert":
        return _Comment(pub, number, f"revert={number}", "**Patchwarden**: ")
    if job.kind in ("merge", "update"):
        return _Comment(pub, number, "merge", "**Patchwarden**: ")
    return _job_comment(pub, number, job.id)


def _title(result: SessionResult, task: Task, revert_of: Outcome | None) -> str:
    if revert_of is not None:
        return f"Revert #{revert_of.pr_number}: {revert_of.details.get('title', '')}"[:200]
    message = result.fix.commit_message if result.fix is not None else None
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    return (first or task.title)[:200]


def answers(task: Task, result: SessionResult) -> bool:
    """Whether the patch is what the issue asked for (so merging it may close it)."""
    fixer = result.fix.fixer if result.fix is not None else ""
    if fixer == "lint":
        return is_about_lint(task)
    return fixer != "revert"


def body_links(*, closes: int | None, revert_of: Outcome | None, mergeable: bool) -> list[str]:
    """Patchwarden's own lines in the body: the issue it fixes, the merge it reverts."""
    links = []
    if closes is not None:
        # A closing keyword only when the decision lets it merge: a draft must not close
        # the issue by being merged half-done.
        links.append(f"Fixes #{closes}" if mergeable else f"For #{closes}")
    if revert_of is not None:
        links.append(f"Reverts #{revert_of.pr_number} (merged as {str(revert_of.merge_sha)[:12]})")
    return links


def _refused_at(outcome: Outcome, head: str) -> str | None:
    """Why GitHub refused to merge ``head`` last time, if it did."""
    refused = outcome.details.get("merge_refused") or {}
    return str(refused["why"]) if refused.get("head") == head else None


def _decision(text: str | None) -> Decision:
    """The recorded decision; anything unreadable is a rejection (fail closed)."""
    return text if text in LADDER else "reject"


def _trigger_kind(text: str) -> TriggerKind:
    known = ("comment", "label", "ci", "alert", "canary")
    return cast(TriggerKind, text) if text in known else "comment"


def _next_step(score: Score) -> str:
    return {
        "automerge": "It merges itself once every check on it passes.",
        "review": "It waits for a maintainer's approval (a review, or `ship it`).",
        "draft": "It is a draft: it needs a person's work before it can merge.",
    }.get(score.decision, "")
