"""A small acp_fast agent for the transport tests, importable and runnable.

Imported, ``agent_builder()`` and ``client_builder()`` are the two ends of
the large-message scenario; run as a script (``python peer.py``) the agent
serves this process's stdio, so the tests can hand it every kind of file as
stdin and stdout. It imports nothing from the tests.

Methods (all ``_t/...``, untyped):

* ``_t/echo``: answers its params;
* ``_t/big``: asks the client for a 10 MB file (``fs/read_text_file``), writes
  it back (``fs/write_text_file``), answers ``{"length": n}``: 10 MB each way;
* ``_t/print``: ``print()``s its ``text`` to stdout (a stray print), answers ``{}``;
* ``_t/stderr``: writes its ``text`` to stderr;
* ``_t/flags``: whether fd 0 and fd 1 are (still) in blocking mode.

Options: ``--backend``, ``--protect-stdout`` (``acp.stdio(protect_stdout=True)``),
``--after TEXT`` (written to stdout once the connection ended).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio

import acp_fast as acp
from acp_fast.schema import v1

BIG_SIZE = 10_000_000
# JSON has to escape some of these (newline, quote, backslash), and some
# are multi-byte in UTF-8: the framing must not care.
_PATTERN = 'ACP big message: "quoted" \\ back\tslash, é ✓ 日本\n'
BIG_CONTENT = (_PATTERN * (BIG_SIZE // len(_PATTERN) + 1))[:BIG_SIZE]
BIG_PATH = "/big/input.txt"
COPY_PATH = "/big/copy.txt"


def agent_builder() -> acp.Builder[Any]:
    """The agent end: the methods listed in the module docstring."""
    builder = acp.Agent.builder().name("transport-peer")

    @builder.on_receive_request("_t/echo")
    async def echo(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        responder.respond(message.params)

    @builder.on_receive_request("_t/big")
    async def big(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        async def run() -> None:
            read: v1.ReadTextFileResponse = await cx.send_request(
                v1.ReadTextFileRequest(session_id="s", path=BIG_PATH)
            )
            await cx.send_request(
                v1.WriteTextFileRequest(session_id="s", path=COPY_PATH, content=read.content)
            )
            responder.respond({"length": len(read.content)})

        cx.spawn(run)  # it awaits the client: not in the dispatch loop

    @builder.on_receive_request("_t/print")
    async def stray_print(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        print(message.params["text"], flush=True)
        responder.respond({})

    @builder.on_receive_request("_t/stderr")
    async def to_stderr(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        sys.stderr.write(message.params["text"])
        sys.stderr.flush()
        responder.respond({})

    @builder.on_receive_request("_t/flags")
    async def flags(message: acp.UntypedMessage, responder: Any, cx: Any) -> None:
        responder.respond(
            {"stdin_blocking": os.get_blocking(0), "stdout_blocking": os.get_blocking(1)}
        )

    return builder


def client_builder(written: dict[str, str]) -> acp.Builder[Any]:
    """The client end: serves BIG_PATH and records what is written."""
    builder = acp.Client.builder().name("transport-client")

    @builder.on_receive_request(v1.ReadTextFileRequest)
    async def read(request: v1.ReadTextFileRequest, responder: Any, cx: Any) -> None:
        if request.path != BIG_PATH:
            responder.respond_with_error(acp.Error.resource_not_found(request.path))
            return
        responder.respond(v1.ReadTextFileResponse(content=BIG_CONTENT))

    @builder.on_receive_request(v1.WriteTextFileRequest)
    async def write(request: v1.WriteTextFileRequest, responder: Any, cx: Any) -> None:
        written[request.path] = request.content
        responder.respond(v1.WriteTextFileResponse())

    return builder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--protect-stdout", action="store_true")
    parser.add_argument("--after", default=None)
    args = parser.parse_args(argv)
    transport = acp.stdio(protect_stdout=args.protect_stdout)
    anyio.run(agent_builder().connect_to, transport, backend=args.backend)
    if args.after is not None:
        print(args.after, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
