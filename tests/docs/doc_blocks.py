"""The command lines and printed outputs of README.md and docs/*.md, as the docs-commands test runs them.

A fenced block is a block of commands when its language is ``bash``, ``sh`` or ``console``, or
when it has ``$ `` prompts; every line that is not blank or a ``#`` comment is a command
(continuation lines ending in ``\\`` are joined). In a block with prompts, the lines after a
prompt line are that command's expected output.

HTML comments right before a block say how to run it (several may stand on one line, or on
consecutive lines):

- ``<!-- doc-test: skip: <reason> -->``: not run (a GPU, a placeholder such as ``<date>``, a
  command that rewrites the checkout's own files). The reason is required.
- ``<!-- doc-test: slow -->``: run only by the slow variant of the test.
- ``<!-- doc-test: exit <n> -->``: the exit status every command of the block must return.
- ``<!-- doc-test: output-of: <command> -->`` before a plain block: the block is what
  ``<command>`` prints; the test runs it and compares line by line (numbers within tolerance).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMMAND_LANGUAGES = {"bash", "sh", "shell", "console"}
_FENCE = re.compile(r"^\s*```(\S*)\s*$")
_MARKER = re.compile(r"<!--\s*doc-test:\s*(.*?)\s*-->")
_PROMPT = "$ "


@dataclass
class Command:
    line: str
    expected_output: list[str] = field(default_factory=list)


@dataclass
class DocBlock:
    path: Path
    line_number: int
    commands: list[Command]
    skip_reason: str | None = None
    slow: bool = False
    exit_status: int = 0

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT).as_posix()}:{self.line_number}"


def doc_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _markers(lines: list[str], fence_index: int) -> list[str]:
    """The doc-test markers on the comment lines right above a fence (blank lines allowed)."""
    found: list[str] = []
    index = fence_index - 1
    while index >= 0 and (not lines[index].strip() or _MARKER.search(lines[index])):
        found = _MARKER.findall(lines[index]) + found
        index -= 1
    return found


def _joined(body: list[str]) -> list[str]:
    joined: list[str] = []
    pending = ""
    for raw in body:
        line = raw.rstrip()
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        joined.append((pending + line.strip()) if pending else line)
        pending = ""
    if pending:
        joined.append(pending.rstrip())
    return joined


def _commands(language: str, body: list[str]) -> list[Command]:
    prompted = any(line.startswith(_PROMPT) for line in body)
    if not prompted and language not in COMMAND_LANGUAGES:
        return []
    commands: list[Command] = []
    for line in _joined(body):
        if prompted:
            if line.startswith(_PROMPT):
                commands.append(Command(line[len(_PROMPT):].strip()))
            elif commands and line.strip():
                commands[-1].expected_output.append(line)
        elif line.strip() and not line.strip().startswith("#"):
            commands.append(Command(line.strip()))
    return commands


def _apply(block: DocBlock, markers: list[str]) -> None:
    for marker in markers:
        name, _, value = marker.partition(":") if marker.startswith(("skip", "output-of")) else marker.partition(" ")
        name, value = name.strip(), value.strip()
        if name == "skip":
            if not value:
                raise ValueError(f"{block.id}: 'doc-test: skip' needs a reason")
            block.skip_reason = value
        elif name == "slow":
            block.slow = True
        elif name == "exit":
            block.exit_status = int(value)
        elif name != "output-of":
            raise ValueError(f"{block.id}: unknown doc-test marker {marker!r}")


def doc_blocks(path: Path) -> list[DocBlock]:
    """The runnable blocks of one Markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[DocBlock] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        end = next((j for j in range(index + 1, len(lines)) if lines[j].strip().startswith("```")), len(lines))
        body = lines[index + 1:end]
        markers = _markers(lines, index)
        block = DocBlock(path, index + 1, _commands(opening.group(1), body))
        output_of = [marker.partition(":")[2].strip() for marker in markers if marker.startswith("output-of")]
        if output_of:
            block.commands = [Command(output_of[0], [line for line in body if line.strip()])]
        _apply(block, markers)
        if block.commands:
            blocks.append(block)
        index = end + 1
    return blocks


_NUMBER = re.compile(r"-?\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?")


def _numbers_and_words(line: str) -> tuple[list[float], str]:
    numbers = [float(text.replace(",", "")) for text in _NUMBER.findall(line)]
    return numbers, " ".join(_NUMBER.sub("#", line).split())


def line_matches(expected: str, actual: str, relative_tolerance: float) -> bool:
    """The same words, and each number within `relative_tolerance` (or 0.051 absolute, a printed last digit)."""
    expected_numbers, expected_words = _numbers_and_words(expected)
    actual_numbers, actual_words = _numbers_and_words(actual)
    if expected_words != actual_words or len(expected_numbers) != len(actual_numbers):
        return False
    return all(abs(a - e) <= max(relative_tolerance * abs(e), 0.051)
               for e, a in zip(expected_numbers, actual_numbers, strict=True))


def is_placeholder(line: str) -> bool:
    """An output line that stands for something run-dependent (``<date>``, ``...``)."""
    return "<" in line and ">" in line or line.strip() == "..."


def missing_lines(expected: list[str], actual: list[str], relative_tolerance: float) -> list[str]:
    """Expected lines not found, in order, among the actual output lines."""
    missing: list[str] = []
    position = 0
    for line in expected:
        if is_placeholder(line):
            continue
        found = next((i for i in range(position, len(actual))
                      if line_matches(line, actual[i], relative_tolerance)), None)
        if found is None:
            missing.append(line)
        else:
            position = found + 1
    return missing
