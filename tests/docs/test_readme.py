"""README.md and the manual in docs/ stay true: every command block marked runnable runs and succeeds, and
every example manifest has its line in one of those pages.

A fenced block whose previous non-blank line is `<!-- runnable -->` runs with bash (-e -o pipefail) in a fresh
directory holding a link to examples/, with the virtualenv's commands on PATH, the repository on PYTHONPATH
and no Temporal server reachable. Blocks marked `<!-- runnable: stack -->` run in order, as one session,
against the Temporal dev server, the real stack (simulated Ray; `raypilot` and kubectl as its admin) and a
worker as raypilot's ServiceAccount on the task queue `raypilot` (the README's temporal CLI examples), after
which the workflow they drove must have completed.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.testing import WorkflowEnvironment

from tests.kubes import RealKube

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
# The README first: the stack blocks of all pages run in this order, as one session.
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
BLOCK_TIMEOUT_SECONDS = 120
MARKER = re.compile(r"^<!--\s*runnable(?::\s*(?P<kind>[\w-]+))?\s*-->$")
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\s*$")

pytestmark = pytest.mark.timeout(300)


@dataclass(frozen=True)
class Block:
    kind: str  # "plain" or "stack"
    line: int  # 1-based line of the opening fence
    code: str
    page: str = "README.md"

    @property
    def name(self) -> str:
        first = self.code.strip().splitlines()[0]
        return f"{self.page} line {self.line}: {first[:60]}"


def runnable_blocks(text: str, page: str = "README.md") -> list[Block]:
    """The fenced blocks marked runnable, in page order; a marker not followed by a fence is an error."""
    lines = text.splitlines()
    blocks = []
    pending: tuple[str, int] | None = None
    index = 0
    while index < len(lines):
        stripped = lines[index].strip()
        marker = MARKER.match(stripped)
        if marker:
            pending = (marker.group("kind") or "plain", index + 1)
        elif FENCE.match(stripped):
            end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
            if pending is not None:
                code = "\n".join(lines[index + 1 : end]) + "\n"
                blocks.append(Block(pending[0], index + 1, code, page))
                pending = None
            index = end
        elif stripped and pending is not None:
            raise AssertionError(f"{page} line {pending[1]}: a runnable marker must precede a fenced block")
        index += 1
    return blocks


def test_markers_are_found_in_a_sample() -> None:
    sample = [
        "text",
        "<!-- runnable -->",
        "```bash",
        "echo a",
        "```",
        "```bash",  # not marked
        "echo b",
        "```",
        "<!-- runnable: stack -->",
        "",
        "```",
        "c",
        "```",
    ]
    assert runnable_blocks("\n".join(sample)) == [Block("plain", 3, "echo a\n"), Block("stack", 11, "c\n")]


BLOCKS = [block for page in PAGES for block in runnable_blocks(page.read_text(), str(page.relative_to(REPO)))]
PLAIN = [block for block in BLOCKS if block.kind == "plain"]
STACK = [block for block in BLOCKS if block.kind == "stack"]


def test_the_readme_has_runnable_blocks_of_both_kinds() -> None:
    assert len(PLAIN) >= 3
    assert len(STACK) >= 2
    assert {block.kind for block in BLOCKS} == {"plain", "stack"}


def block_environment(workdir: Path, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("TEMPORAL_", "RAYPILOT_")) and key != "KUBECONFIG"
    }
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(REPO),
        HOME=str(workdir),
        # Nothing listens here: a plain block must not need a Temporal server.
        TEMPORAL_ADDRESS="127.0.0.1:1",
    )
    env.update(extra)
    return env


def block_directory(tmp_path: Path) -> Path:
    (tmp_path / "examples").symlink_to(REPO / "examples")
    return tmp_path


def outcome(block: Block, returncode: int | None, stdout: str, stderr: str) -> str:
    return f"{block.name} exited {returncode}\n--- stdout\n{stdout[-3000:]}\n--- stderr\n{stderr[-3000:]}"


@pytest.mark.parametrize("block", PLAIN, ids=lambda block: f"{block.page}:line{block.line}")
def test_runnable_block(block: Block, tmp_path: Path) -> None:
    workdir = block_directory(tmp_path)
    result = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.code],
        cwd=workdir,
        env=block_environment(workdir),
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_SECONDS,
        check=False,
    )
    assert result.returncode == 0, outcome(block, result.returncode, result.stdout, result.stderr)


def test_every_example_has_its_line_in_the_readme_or_the_manual() -> None:
    text = "\n".join(page.read_text() for page in PAGES)
    examples = sorted(path.name for path in (REPO / "examples").iterdir() if path.is_file())
    assert examples
    missing = [name for name in examples if f"`examples/{name}`" not in text]
    assert not missing, f"examples without a line in README.md or docs/: {missing}"


@dataclass(frozen=True)
class ReadmeStack:
    address: str
    kubeconfig: Path
    env: WorkflowEnvironment


@pytest.fixture(scope="module")
async def readme_stack(
    dev_server_env: WorkflowEnvironment, real_kube_of_simulated_ray: RealKube
) -> AsyncIterator[ReadmeStack]:
    """The dev server, the test process's real stack and a worker with the real activities, as raypilot's
    ServiceAccount (deploy/'s RBAC), on the task queue the README uses."""
    client, real = dev_server_env.client, real_kube_of_simulated_ray
    async with real.admin_and_worker(client, task_queue="raypilot"):
        yield ReadmeStack(client.service_client.config.target_host, real.admin, dev_server_env)


@pytest.mark.devserver
async def test_runnable_stack_blocks_drive_a_workflow(readme_stack: ReadmeStack, tmp_path: Path) -> None:
    workdir = block_directory(tmp_path)
    env = block_environment(
        workdir, TEMPORAL_ADDRESS=readme_stack.address, KUBECONFIG=str(readme_stack.kubeconfig)
    )
    workflow_ids: set[str] = set()
    for block in STACK:
        workflow_ids.update(re.findall(r"--workflow-id (\S+)", block.code))
        # The worker runs on this event loop: the block must not block it.
        process = await asyncio.create_subprocess_exec(
            "bash", "-e", "-o", "pipefail", "-c", block.code,
            cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            async with asyncio.timeout(BLOCK_TIMEOUT_SECONDS):
                stdout, stderr = await process.communicate()
        except TimeoutError:
            process.kill()
            await process.wait()
            raise
        print(outcome(block, process.returncode, stdout.decode(), stderr.decode()))  # shown with -s
        assert process.returncode == 0, outcome(block, process.returncode, stdout.decode(), stderr.decode())
    assert workflow_ids, "the stack blocks name no workflow"
    for workflow_id in workflow_ids:
        handle = readme_stack.env.client.get_workflow_handle(workflow_id)
        async with asyncio.timeout(90):
            await handle.result()
        assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_between_the_pages_leads_somewhere() -> None:
    """A relative link names a file of the repository and, with #anchor, a heading of that page."""
    headings = {
        page.resolve(): {
            github_anchor(m.group(1)) for m in re.finditer(r"^#{1,4} (.*)$", page.read_text(), re.M)
        }
        for page in PAGES
    }
    broken = []
    for page in PAGES:
        for link in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if link.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = link.partition("#")
            target = (page.parent / path).resolve() if path else page.resolve()
            if not target.exists() or (anchor and target in headings and anchor not in headings[target]):
                broken.append(f"{page.relative_to(REPO)}: {link}")
    assert not broken
