"""What the example agent imports before its first answer (benchmarks/README.md, "Start-up")."""

from __future__ import annotations

import subprocess
import sys


def loaded_after(code: str, *modules: str) -> list[bool]:
    probe = "; ".join(f"print({name!r} in sys.modules)" for name in modules)
    result = subprocess.run(
        [sys.executable, "-c", f"import sys; {code}; {probe}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return [line == "True" for line in result.stdout.split()]


def test_example_agent_loads_neither_unstable_schema_nor_remote_transports():
    code = "import acp_fast.examples.agent, acp_fast._cli; acp_fast.examples.agent.ExampleAgent()"
    loaded = loaded_after(code, "acp_fast.schema.v1", "acp_fast.schema.v1_unstable")
    assert loaded == [True, False]
    remote = loaded_after(code, "acp_fast._transports.remote", "acp_fast._transports.remote.wire")
    assert remote == [False, False]


def test_remote_transports_still_import_from_the_package_on_first_use():
    code = (
        "import acp_fast, acp_fast._transports as t; "
        "assert acp_fast.HttpTransport is t.HttpTransport; "
        "assert acp_fast.WebSocketTransport.__module__ == 'acp_fast'; "
        "from acp_fast import WebSocketError"
    )
    assert loaded_after(code, "acp_fast._transports.remote.ws_client") == [True]


def test_unstable_agent_and_client_still_load_the_unstable_schema():
    code = (
        "import acp_fast; from acp_fast._typed.agent import AgentEndpoint; "
        "from acp_fast._typed.client import ClientEndpoint; "
        "A = type('A', (acp_fast.BaseAgent,), {'unstable': True}); AgentEndpoint(A()); "
        "C = type('C', (acp_fast.BaseClient,), {'unstable': True}); ClientEndpoint(C())"
    )
    assert loaded_after(code, "acp_fast.schema.v1_unstable") == [True]


def serve_example_agent_and_probe(*arguments: str) -> list[bool]:
    # The agent reads an empty stdin, ends, and the probe runs in its process.
    code = (
        "import sys; from acp_fast._cli import main; "
        f"status = main({list(arguments)!r}); "
        "print(status, 'argparse' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=True,
    )
    status, loaded = result.stdout.split()
    return [status == "0", loaded == "True"]


def test_example_agent_command_line_is_parsed_without_argparse():
    assert serve_example_agent_and_probe("example-agent") == [True, False]
    assert serve_example_agent_and_probe("example-agent", "--backend", "asyncio") == [True, False]
    assert serve_example_agent_and_probe("example-agent", "--backend=asyncio") == [True, False]


def test_other_spellings_of_the_example_agent_still_go_through_argparse():
    # An abbreviated option is argparse's to understand.
    assert serve_example_agent_and_probe("example-agent", "--back", "asyncio") == [True, True]
