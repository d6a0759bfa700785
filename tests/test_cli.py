"""The ``acp-fast`` command line, run as a real subprocess.

Each test starts ``python -m acp_fast`` (the ``acp-fast`` entry point) and
checks what a person at a terminal sees: the exit status, and that stderr
holds one line, never a traceback.
"""

from __future__ import annotations

import os
import platform
import signal
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from acp_fast import __version__
from acp_fast._cli import _COMMANDS

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = [entry.name for entry in _COMMANDS]


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    prelude: str = "pass",
    script: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``acp-fast ARGS``; ``prelude`` runs first (to hide an installed module);
    with ``script``, that installed script is run instead."""
    code = f"import sys; {prelude}; from acp_fast._cli import main; sys.exit(main())"
    command = [str(script)] if script is not None else [sys.executable, "-c", code]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=50,
        stdin=subprocess.DEVNULL,
    )


def hidden(*modules: str) -> str:
    """A prelude that makes ``modules`` look uninstalled (``find_spec`` says None)."""
    return "; ".join(f"sys.modules[{name!r}] = None" for name in modules)


def assert_one_line(stderr: str) -> None:
    assert "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1, stderr


@pytest.mark.parametrize(
    ("no_ext", "core"),
    [pytest.param("", "compiled", marks=pytest.mark.c_extension), ("1", "pure Python")],
)
def test_version_names_version_core_and_python(no_ext: str, core: str) -> None:
    env = {**os.environ, "ACP_FAST_NO_EXTENSIONS": no_ext}
    done = run_cli("--version", env=env)
    assert done.returncode == 0
    assert done.stdout.startswith(f"acp-fast {__version__} ")
    assert f"core: {core}" in done.stdout
    assert f"{platform.python_implementation()} {platform.python_version()}" in done.stdout


def test_top_level_help_lists_every_command_without_markup() -> None:
    done = run_cli("--help")
    assert done.returncode == 0
    for name in COMMANDS:
        assert f"    {name}" in done.stdout
    assert "``" not in done.stdout and "::" not in done.stdout


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_help_has_a_description_and_examples(name: str) -> None:
    done = run_cli(name, "--help")
    assert done.returncode == 0
    usage, description, *rest = done.stdout.split("\n\n")
    assert usage.startswith(f"usage: acp-fast {name}")
    assert len(description) > 40
    examples = done.stdout.split("examples:\n", 1)[1]
    assert f"  acp-fast {name}" in examples or "acp-fast conductor" in examples


def test_codegen_help_shows_its_options() -> None:
    done = run_cli("codegen", "--help")
    for option in ("--check", "--schema-dir DIR", "--out DIR"):
        assert option in done.stdout


def test_unknown_option_is_a_usage_error() -> None:
    done = run_cli("demo", "--no-such-option")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr and "unrecognized arguments" in done.stderr


def assert_usage_error(done: subprocess.CompletedProcess[str], prog: str, message: str) -> None:
    """argparse's way: the command's usage, then one error line, status 2."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"usage: {prog} ")
    assert done.stderr.splitlines()[-1] == f"{prog}: error: {message}"


@pytest.mark.parametrize(
    ("args", "prog", "message"),
    [
        (["--bogus"], "acp-fast", "unrecognized arguments: --bogus"),
        (["--bogus", "demo"], "acp-fast", "unrecognized arguments: --bogus"),
        (["demo", "--bogus"], "acp-fast demo", "unrecognized arguments: --bogus"),
        # An unknown option comes before a missing one.
        (["conductor", "--bogus"], "acp-fast conductor", "unrecognized arguments: --bogus"),
        (["conductor"], "acp-fast conductor", "the following arguments are required: --agent"),
        (["trace", "view", "--bogus"], "acp-fast trace view", "unrecognized arguments: --bogus"),
        (["trace", "view"], "acp-fast trace view", "the following arguments are required: FILE"),
        (["trace", "--bogus", "--", "cat"], "acp-fast trace", "unrecognized arguments: --bogus"),
        ([], "acp-fast", "give a COMMAND ('acp-fast --help' lists them)"),
    ],
)
def test_usage_errors_name_the_command_and_the_problem(
    args: list[str], prog: str, message: str
) -> None:
    assert_usage_error(run_cli(*args), prog, message)


@pytest.mark.parametrize("name", ["demo", "example-agent", "example-proxy"])
def test_trio_backend_without_trio_names_the_extra(name: str) -> None:
    done = run_cli(name, "--backend", "trio", prelude=hidden("trio"))
    assert done.returncode == 1
    assert_one_line(done.stderr)
    assert "pip install 'acp-fast[trio]'" in done.stderr


def test_codegen_without_its_extra_names_the_extra() -> None:
    done = run_cli("codegen", "--check", prelude=hidden("datamodel_code_generator"))
    assert done.returncode == 1
    assert_one_line(done.stderr)
    assert "pip install 'acp-fast[codegen]'" in done.stderr


def test_python_m_codegen_without_its_extra_is_one_line() -> None:
    code = f"import sys, runpy; {hidden('jsonschema')}; runpy.run_module('codegen', run_name='__main__')"
    done = subprocess.run(
        [sys.executable, "-c", code, "--check"], capture_output=True, text=True, cwd=ROOT
    )
    assert done.returncode == 2
    assert_one_line(done.stderr)
    assert "'codegen' extra" in done.stderr and "jsonschema" in done.stderr


@pytest.mark.slow
def test_codegen_check_passes_from_another_directory(tmp_path: Path) -> None:
    done = run_cli("codegen", "--check", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    progress = done.stderr.splitlines()
    assert progress[0].startswith("codegen: generating from")
    assert [line.split()[-1] for line in progress[1:]] == [
        "v1",
        "v1_unstable",
        "v2",
        "v2_unstable",
    ]


@pytest.mark.slow
def test_codegen_out_writes_the_committed_modules_elsewhere(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run_cli("codegen", "--out", str(out))
    assert done.returncode == 0, done.stderr
    written = sorted(path.name for path in out.iterdir())
    committed = {
        "methods.py": ROOT / "acp_fast" / "_typed" / "methods.py",
        **{name: ROOT / "acp_fast" / "schema" / name for name in ("v1.py", "v1_unstable.py")},
        **{name: ROOT / "acp_fast" / "schema" / name for name in ("v2.py", "v2_unstable.py")},
    }
    assert written == sorted(committed)
    for name in written:
        assert (out / name).read_text() == committed[name].read_text()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("lines", [1, 3, 8])  # main's output, a stream, a tool call
def test_demo_into_a_closed_pipe_exits_141_quietly(backend: str, lines: int) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "acp_fast", "demo", "--backend", backend],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline().startswith(b"acp_fast ")
        for _ in range(lines - 1):
            assert process.stdout.readline()
        process.stdout.close()  # as `| head -N` does
        stderr = process.stderr.read()
        assert process.wait(timeout=30) == 141
    assert stderr == b""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("name", ["example-agent", "demo"])
def test_ctrl_c_exits_130_quietly(name: str, backend: str) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "acp_fast", name, "--backend", backend],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None and process.stdin is not None
        if name == "demo":
            process.stdout.readline()  # running, and its agent spawned
            process.stdout.readline()
        else:
            # The agent answers initialize only once its loop runs: then Ctrl-C
            # arrives while it waits for the next line, as in a terminal.
            process.stdin.write(
                b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}\n'
            )
            process.stdin.flush()
            process.stdout.readline()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    assert stderr == b""


def test_trace_help_shows_out_and_the_view_options() -> None:
    done = run_cli("trace", "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: acp-fast trace --out FILE -- AGENT_CMD...\n")
    assert "acp-fast trace view FILE" in done.stdout
    for option in ("--out FILE", "AGENT_CMD", "--html OUT", "--live", "--port PORT", "--no-open"):
        assert f"\n  {option} " in done.stdout, option


def help_texts(help_output: str) -> dict[str, str]:
    """Each option of an argparse help's option list, with its help text."""
    options: dict[str, str] = {}
    current = ""
    for line in help_output.split("\noptions:\n", 1)[1].split("\n\n", 1)[0].splitlines():
        if line.startswith("  -"):
            current, _, text = line.strip().partition("  ")
            options[current] = text.strip()
        elif current:
            options[current] = f"{options[current]} {line.strip()}".strip()
    return options


def test_every_serve_option_has_a_help_text() -> None:
    done = run_cli("serve", "--help")
    assert done.returncode == 0
    options = help_texts(done.stdout)
    assert set(options) >= {
        "--http HOST:PORT",
        "--path PATH",
        "--token TOKEN",
        "--allowed-host NAME",
        "--allowed-origin ORIGIN",
        "--idle-timeout SECONDS",
    }
    assert all(options.values()), options


def run_piped(*args: str) -> subprocess.CompletedProcess[str]:
    """``acp-fast ARGS`` with stdin a pipe that is closed at once, as an
    editor's would be (the conductor watches a pipe for hang-ups)."""
    return subprocess.run(
        [sys.executable, "-m", "acp_fast", *args],
        capture_output=True,
        text=True,
        input="",
        timeout=50,
    )


def assert_error_line(done: subprocess.CompletedProcess[str], start: str) -> None:
    assert done.returncode == 2, done.stderr
    assert_one_line(done.stderr)
    assert done.stderr.startswith(start), done.stderr


MISSING = "no-such-agent-command"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("run", [run_cli, run_piped], ids=["devnull", "pipe"])
@pytest.mark.parametrize("which", ["--agent", "--proxy"])
def test_conductor_with_a_missing_command_is_one_line(
    which: str, run: Callable[..., subprocess.CompletedProcess[str]], backend: str
) -> None:
    agent = MISSING if which == "--agent" else f"{sys.executable} -m acp_fast example-agent"
    extra = ["--proxy", MISSING] if which == "--proxy" else []
    done = run("conductor", "--backend", backend, "--agent", agent, *extra)
    assert_error_line(done, "acp-fast conductor: cannot start a component: ")
    assert MISSING in done.stderr


def test_conductor_with_an_empty_command_is_one_line() -> None:
    done = run_cli("conductor", "--agent", " ")
    assert_error_line(done, "acp-fast conductor: a --proxy or --agent command is empty")


def unwritable_paths(tmp_path: Path) -> list[Path]:
    """A file in a missing directory, a directory, and (unless we are root,
    whom permissions do not stop) a file in a read-only directory."""
    paths = [tmp_path / "missing" / "t.jsons", tmp_path]
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        paths.append(locked / "t.jsons")
    return paths


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_conductor_with_an_unwritable_trace_is_one_line(backend: str, tmp_path: Path) -> None:
    for path in unwritable_paths(tmp_path):
        done = run_piped("conductor", "--backend", backend, "--trace", str(path), "--agent", "cat")
        assert_error_line(done, "acp-fast conductor: cannot write the trace: ")
        assert str(path) in done.stderr


def test_trace_with_an_unwritable_out_is_one_line(tmp_path: Path) -> None:
    for path in unwritable_paths(tmp_path):
        done = run_piped("trace", "--out", str(path), "--", "cat")
        assert_error_line(done, "acp-fast trace: cannot write the trace: ")
        assert str(path) in done.stderr


def test_trace_with_a_missing_agent_command_is_one_line(tmp_path: Path) -> None:
    done = run_piped("trace", "--out", str(tmp_path / "t.jsons"), "--", MISSING)
    assert_error_line(done, f"acp-fast trace: cannot start the agent: no such command: {MISSING!r}")


@pytest.mark.parametrize(
    ("address", "shown"),
    [
        ("foo", "'foo'"),
        ("127.0.0.1:99999", "'127.0.0.1:99999'"),
        ("localhost:x", "'localhost:x'"),
        ("[::1:8000", "'[::1:8000'"),
        ("[::1", "'[::1'"),
        ("[]:8000", "'[]:8000'"),
    ],
)
def test_serve_with_a_bad_address_is_a_usage_error(address: str, shown: str) -> None:
    pytest.importorskip("uvicorn")
    done = run_cli("serve", "--http", address, "--", "cat")
    assert_usage_error(
        done, "acp-fast serve", f"argument --http: wants HOST:PORT with a port 0-65535, not {shown}"
    )


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--path", "acp", "wants a path starting with /, not 'acp'"),
        ("--path", "", "wants a path starting with /, not ''"),
        ("--idle-timeout", "-5", "wants a positive number of seconds, not '-5'"),
        ("--idle-timeout", "0", "wants a positive number of seconds, not '0'"),
        ("--idle-timeout", "nan", "wants a positive number of seconds, not 'nan'"),
        ("--idle-timeout", "soon", "wants a positive number of seconds, not 'soon'"),
    ],
)
def test_serve_with_a_bad_path_or_idle_timeout_is_a_usage_error(
    option: str, value: str, message: str
) -> None:
    pytest.importorskip("uvicorn")
    done = run_cli("serve", f"{option}={value}", "--", "cat")
    assert_usage_error(done, "acp-fast serve", f"argument {option}: {message}")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give `-- AGENT_CMD...` or `module:factory`"),
        (["--"], "give the agent command after --"),
        (
            ["--http", "0.0.0.0:8000", "--", "cat"],
            "listening on '0.0.0.0' needs --allowed-host NAME",
        ),
    ],
)
def test_serve_without_a_target_is_a_usage_error(args: list[str], message: str) -> None:
    pytest.importorskip("uvicorn")
    assert_usage_error(run_cli("serve", *args), "acp-fast serve", message)


BROKEN_MODULE = "raise RuntimeError('broken at import')\n"
AGENTS_MODULE = "NAME = 'not callable'\n"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            "no_such_module_here:Agent",
            "cannot import 'no_such_module_here': ModuleNotFoundError: "
            "No module named 'no_such_module_here'",
        ),
        ("broken_agents:Agent", "cannot import 'broken_agents': RuntimeError: broken at import"),
        ("my_agents:Missing", "'my_agents:Missing': 'my_agents' has no attribute 'Missing'"),
        ("my_agents:NAME", "'my_agents:NAME' is a str, not a factory"),
        (":Agent", "':Agent' is not module:factory"),
        ("-- no-such-agent-command", "cannot start the agent: no such command"),
    ],
)
def test_serve_with_a_bad_target_is_one_line(target: str, message: str, tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    (tmp_path / "broken_agents.py").write_text(BROKEN_MODULE)
    (tmp_path / "my_agents.py").write_text(AGENTS_MODULE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    done = run_cli("serve", *target.split(), env=env)
    assert_error_line(done, f"acp-fast serve: {message}")


def test_serve_imports_a_module_of_the_working_directory(tmp_path: Path) -> None:
    """The installed ``acp-fast`` script (whose own directory, not the
    working one, heads sys.path) finds ``module:factory`` in the working
    directory, as uvicorn does: here it gets as far as the factory."""
    pytest.importorskip("uvicorn")
    script = Path(sys.executable).parent / "acp-fast"
    if not script.exists():
        pytest.fail(f"no acp-fast script beside {sys.executable}: install the package")
    (tmp_path / "my_agents.py").write_text(AGENTS_MODULE)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = run_cli("serve", "my_agents:NAME", env=env, cwd=tmp_path, script=script)
    assert_error_line(done, "acp-fast serve: 'my_agents:NAME' is a str, not a factory")


@pytest.mark.parametrize("address", ["in-use", "not-ours"])
def test_serve_on_an_address_it_cannot_listen_on_is_one_line(address: str) -> None:
    pytest.importorskip("uvicorn")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        if address == "in-use":
            port = taken.getsockname()[1]
            where, reason = f"127.0.0.1:{port}", "Address already in use"
        else:  # TEST-NET-1 (RFC 5737): never an address of this machine
            where, reason = "192.0.2.1:8000", "Cannot assign requested address"
        done = run_cli(
            "serve", "--http", where, "--allowed-host", "example.test", "--", sys.executable
        )
    assert_error_line(done, f"acp-fast serve: cannot listen on {where}: {reason}")


@pytest.mark.parametrize("port", ["99999", "-1", "x"])
def test_trace_view_with_a_bad_port_is_a_usage_error(port: str, tmp_path: Path) -> None:
    trace = tmp_path / "t.jsons"
    trace.write_text("")
    done = run_cli("trace", "view", str(trace), "--no-open", "--port", port)
    assert_usage_error(
        done, "acp-fast trace view", f"argument --port: wants a port 0-65535, not {port!r}"
    )


def test_trace_view_on_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsons"
    trace.write_text("")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = run_cli("trace", "view", str(trace), "--no-open", "--port", str(port))
    assert_error_line(
        done, f"acp-fast trace view: cannot listen on 127.0.0.1:{port}: Address already in use"
    )


@pytest.mark.parametrize("case", ["missing-trace", "unwritable-html"])
def test_trace_view_file_errors_are_one_line_status_2(case: str, tmp_path: Path) -> None:
    trace = tmp_path / "t.jsons"
    if case == "missing-trace":
        done = run_cli("trace", "view", str(tmp_path / "nope.jsons"), "--no-open")
    else:
        trace.write_text('{"type":"notification","ts":0,"method":"a"}\n')
        done = run_cli("trace", "view", str(trace), "--html", str(tmp_path / "no" / "x.html"))
    assert_error_line(done, "acp-fast trace view: ")
    assert "holds no trace events" not in done.stderr


@pytest.mark.parametrize("contents", ["", "print('not a trace')\n"])
def test_exporting_a_file_without_events_is_an_error_and_writes_nothing(
    contents: str, tmp_path: Path
) -> None:
    trace, out = tmp_path / "agent.py", tmp_path / "out.html"
    trace.write_text(contents)
    done = run_cli("trace", "view", str(trace), "--html", str(out))
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        f"acp-fast trace view: {trace} holds no trace events; nothing written"
    )
    if contents:  # and what it skipped, in the singular
        assert done.stderr.splitlines()[0] == (
            f"acp-fast trace view: skipped 1 line of {trace} that is not a JSON object (line 1)"
        )
    assert not out.exists()
