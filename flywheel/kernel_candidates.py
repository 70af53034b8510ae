"""Kernel candidates from the flywheel layer: an LLM writes them (``LLMWriter``, through the policy backends) and the
project's sandbox screens them (``sandbox_runner``), for ``flywheel kernels tune``.

``kernels`` imports nothing above ``solvers.errors``: the tuner takes candidate *files* and a *runner* (a callable
``kernels.candidate.Job -> JobResult``), and this module supplies both.

``LLMWriter`` asks a policy (any spec ``flywheel run-round --policy`` takes, through the same backends, response cache
and code extraction) for candidates: ``kernels.candidate.prompt(op)`` goes out, the reply's Python block is written
as a candidate file with its provenance in a header comment, and from there it is raced like any other file. A reply
that yields no usable file (no reply, no code, no ``OP`` / ``candidate``, the wrong op) is a ``Rejected`` with the
reason.

``sandbox_runner`` runs the tuner's screening harness as a ``solvers.sandbox`` program: no network (namespace and
seccomp), memory / process / CPU / file-size caps, a scrubbed environment (nothing of the user's: no API keys, no
HOME), a private working directory, an unprivileged uid where the machine allows. The warm workers are built for
solver programs; a candidate gets a worker flavour that preloads torch (``KERNEL_PRELOAD``), so each screen pays
the fork and the harness, not torch's import (measured: ~0.47 s per screen of a small op against ~2.5 s without the
preload; ``kernels/README.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flywheel.config import PolicySection
from flywheel.policies.backends.base import Backend, ChatRequest, Completion, make_backend
from flywheel.policies.cache import fingerprint
from flywheel.policies.extract import extract_code
from flywheel.policies.run import PolicyRun, ask, sample_seed
from kernels.candidate import Job, JobResult, Rejected, Runner, check_source, prompt
from solvers.records import ExecStatus, content_hash

# The worker flavour kernel candidates run on: torch imported once per warm worker, shared by every fork.
KERNEL_PRELOAD = ("torch",)
# Limits of one screen. Memory: torch's import plus a tiny model's captured activations fit well under 2 GiB;
# processes: torch starts a few threads even at one intra-op thread.
KERNEL_MEMORY_MB = 3072
KERNEL_MAX_PIDS = 64


@dataclass
class Written:
    files: list[str] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    requests_sent: int = 0
    cache_hits: int = 0

    def meta(self, spec: str) -> dict[str, Any]:
        return {"spec": spec, "files": self.files, "requests_sent": self.requests_sent,
                "cache_hits": self.cache_hits,
                "rejected": [{"op": r.op, "name": r.name, "reason": r.reason} for r in self.rejected]}


@dataclass
class LLMWriter:
    """Writes ``k`` candidate files per op into ``folder`` from policy ``spec``; ``top`` is how many of the
    profile's most expensive ops to ask about. Replies go through the policy response cache (``cache_dir``,
    default ``folder``), so a re-run of the tuner asks nothing already answered."""

    spec: str
    folder: Path
    k: int = 1
    top: int = 3
    temperature: float = 0.7
    cache_dir: Path | None = None
    settings: PolicySection | None = None
    backend: Backend | None = None

    def __call__(self, ops: list[str]) -> Written:
        settings = self.settings or PolicySection()
        backend = self.backend or make_backend(self.spec, settings)
        sampling = {"temperature": self.temperature, "top_p": settings.top_p, "max_tokens": settings.max_tokens}
        jobs: list[tuple[str, int, str, ChatRequest]] = []
        for op in ops:
            text = prompt(op)
            prompt_hash = content_hash(text, 64)
            for n in range(self.k):
                key = fingerprint(**backend.identity, purpose="kernel_candidate", prompt_hash=prompt_hash,
                                  sampling=sampling, op=op, sample_index=n)
                jobs.append((op, n, prompt_hash, ChatRequest(
                    key=key, messages=({"role": "user", "content": text},), temperature=self.temperature,
                    top_p=settings.top_p, max_tokens=settings.max_tokens, seed=sample_seed(f"kernels/{op}", n))))
        self.folder.mkdir(parents=True, exist_ok=True)
        run = PolicyRun()
        outcomes = ask(backend, [j[3] for j in jobs], self.cache_dir or self.folder, run, spec=self.spec)
        out = Written(requests_sent=run.requests_sent, cache_hits=run.cache_hits)
        for op, n, prompt_hash, req in jobs:
            stem = f"{op}-{n}"
            outcome = outcomes.get(req.key)
            if not isinstance(outcome, Completion):
                why = f"{outcome.kind}: {outcome.message}" if outcome is not None else "backend returned nothing"
                out.rejected.append(Rejected(op, f"llm:{stem}", f"no reply ({why})"))
                continue
            (self.folder / f"{stem}.reply.md").write_text(outcome.text)
            code = extract_code(outcome.text)
            reason = check_source(code, op) if code else "reply holds no code"
            if reason:
                out.rejected.append(Rejected(op, f"llm:{stem}", reason))
                continue
            header = (f"# Kernel candidate for {op!r}, written by an LLM for `flywheel kernels tune`.\n"
                      f"# policy: {self.spec}\n# model: {backend.spec.model}\n# prompt_sha256: {prompt_hash}\n"
                      f"# request: {req.key}\n# sample: {n} (temperature {self.temperature:g})\n"
                      f"# finish_reason: {outcome.finish_reason}\n\n")
            path = self.folder / f"{stem}.py"
            path.write_text(header + code)
            out.files.append(str(path.resolve()))
        return out


def sandbox_config(timeout_s: float = 300.0, memory_mb: int = KERNEL_MEMORY_MB, preload: tuple[str, ...] =
                   KERNEL_PRELOAD) -> Any:
    """The ``SandboxConfig`` kernel candidates are screened under (one thread, no MPS capture: nothing solves)."""
    from solvers.sandbox import SandboxConfig

    return SandboxConfig(timeout_s=timeout_s, memory_mb=memory_mb, max_pids=KERNEL_MAX_PIDS, solver_threads=1,
                         capture_mps=False, preload=preload, retries=1)


def sandbox_runner(config: Any = None) -> Runner:
    """A ``kernels.candidate.Runner`` that runs each job as a sandboxed program (``solvers.sandbox.run_program``).
    ``returned`` is the harness's value only when the program finished normally (status ``no_solve_call``: it
    never called a solver, as expected); anything else is reported with the sandbox's status and message."""
    from solvers.sandbox import Program, run_program

    base = config or sandbox_config()

    def run(job: Job) -> JobResult:
        cfg = base if job.timeout_s == base.timeout_s else base.model_copy(update={"timeout_s": job.timeout_s})
        ex = run_program(Program(program_id=job.job_id, code=job.code, entry=job.entry, args=list(job.args),
                                 files=dict(job.files)), cfg)
        if ex.status in (ExecStatus.NO_SOLVE_CALL, ExecStatus.OK) and ex.returned is not None:
            return JobResult(ex.returned, "", ex.isolation, ex.wall_s)
        tail = (ex.stderr.strip().splitlines() or [""])[-1][:200]
        why = f"{ex.status}: {ex.error}" + (f" ({tail})" if tail and tail not in ex.error else "")
        return JobResult(None, why, ex.isolation, ex.wall_s)
    return run
