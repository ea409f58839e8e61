"""A tiny deterministic interpreter for job entrypoints in the simulated dashboard.

Understood: command lists joined by `;`, `&&`, `||` or newlines; `sleep N`, `echo ...`, `exit N`, `true`,
`false`, `:`; `sh -c CMD` (and bash); `python -c CODE` (top-level `print(<constants>)`, `time.sleep(N)`,
`sys.exit(N)`/`exit(N)`, `raise ...`). Any other command (e.g. `python script.py`) succeeds after
`command_s` with no output, so KubeRay's sample entrypoints run. The result is a plan: timed output lines
and the exit code.
"""

from __future__ import annotations

import ast
import shlex
from dataclasses import dataclass

OPERATORS = frozenset({";", "&&", "||", "\n"})


@dataclass(frozen=True)
class Step:
    """Wait `seconds`, then append `output` (a line, without newline) to the log if it is not None."""

    seconds: float
    output: str | None = None


@dataclass(frozen=True)
class EntrypointPlan:
    steps: tuple[Step, ...]
    exit_code: int

    @property
    def duration_s(self) -> float:
        return sum(step.seconds for step in self.steps)


@dataclass(frozen=True)
class _Outcome:
    steps: tuple[Step, ...]
    status: int
    exits: bool = False  # `exit` ends the whole entrypoint, not just the command


def _tokens(entrypoint: str) -> list[str]:
    lexer = shlex.shlex(entrypoint, posix=True, punctuation_chars=";&|\n")
    lexer.whitespace = " \t\r"  # a newline separates commands, unless quoted
    lexer.whitespace_split = True
    return list(lexer)


def _commands(tokens: list[str]) -> list[tuple[str, list[str]]]:
    """Split into (operator before the command, argv) pairs; the first operator is ';'."""
    commands: list[tuple[str, list[str]]] = []
    operator = ";"
    argv: list[str] = []
    for token in tokens:
        if token in OPERATORS:
            if argv:
                commands.append((operator, argv))
            operator, argv = token, []
        else:
            argv.append(token)
    if argv:
        commands.append((operator, argv))
    return commands


def _number(text: str, default: float = 0.0) -> float:
    try:
        return float(text)
    except ValueError:
        return default


def _python_code(code: str, command_s: float, sleep_scale: float) -> _Outcome:
    try:
        module = ast.parse(code)
    except SyntaxError as error:
        return _Outcome((Step(command_s, f"SyntaxError: {error.msg}"),), 1)
    steps: list[Step] = [Step(command_s)]
    for statement in module.body:
        if isinstance(statement, ast.Raise):
            steps.append(Step(0.0, "Traceback (most recent call last):"))
            steps.append(Step(0.0, ast.unparse(statement.exc) if statement.exc else "RuntimeError"))
            return _Outcome(tuple(steps), 1)
        if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
            continue
        call = statement.value
        name = ast.unparse(call.func)
        constants = [arg.value for arg in call.args if isinstance(arg, ast.Constant)]
        if name == "print":
            steps.append(Step(0.0, " ".join(str(value) for value in constants)))
        elif name == "time.sleep" and constants and isinstance(constants[0], int | float):
            steps.append(Step(float(constants[0]) * sleep_scale))
        elif name in ("sys.exit", "exit", "quit", "os._exit"):
            code_value = constants[0] if constants else 0
            if isinstance(code_value, int):
                return _Outcome(tuple(steps), code_value & 0xFF)
            steps.append(Step(0.0, str(code_value)))
            return _Outcome(tuple(steps), 1)
    return _Outcome(tuple(steps), 0)


def _run(argv: list[str], command_s: float, sleep_scale: float) -> _Outcome:
    name, args = argv[0], argv[1:]
    if name == "sleep":
        return _Outcome((Step(sum(_number(arg) for arg in args) * sleep_scale),), 0)
    if name == "echo":
        return _Outcome((Step(0.0, " ".join(args)),), 0)
    if name == "exit":
        return _Outcome((), int(_number(args[0])) & 0xFF if args else 0, exits=True)
    if name in ("true", ":"):
        return _Outcome((), 0)
    if name == "false":
        return _Outcome((), 1)
    program = name.rsplit("/", 1)[-1]
    if program.startswith("python") and len(args) >= 2 and args[0] == "-c":
        return _python_code(args[1], command_s, sleep_scale)
    if program in ("sh", "bash", "dash") and len(args) >= 2 and args[0] == "-c":
        # `ray job submit -- sh -c '...'` arrives like this; an `exit` inside ends only the inner shell.
        inner = plan_entrypoint(args[1], command_s=command_s, sleep_scale=sleep_scale)
        return _Outcome(inner.steps, inner.exit_code)
    return _Outcome((Step(command_s),), 0)


def plan_entrypoint(entrypoint: str, *, command_s: float = 0.5, sleep_scale: float = 1.0) -> EntrypointPlan:
    """What running `entrypoint` does: its timed output and exit code, like `sh -c` would for the subset."""
    try:
        commands = _commands(_tokens(entrypoint))
    except ValueError:  # unbalanced quotes; the text is dash's
        return EntrypointPlan((Step(0.0, "sh: 1: Syntax error: Unterminated quoted string"),), 2)
    steps: list[Step] = []
    status = 0
    for operator, argv in commands:
        if (operator == "&&" and status != 0) or (operator == "||" and status == 0):
            continue
        outcome = _run(argv, command_s, sleep_scale)
        steps.extend(outcome.steps)
        status = outcome.status
        if outcome.exits:
            break
    return EntrypointPlan(tuple(steps), status)
