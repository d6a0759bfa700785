// Interop peer: an ACP v1 *agent* built with the reference TypeScript SDK
// (@agentclientprotocol/sdk 2.4.0, app-builder API), speaking NDJSON on stdio.
//
// It implements the interop contract in README.md so that acp_fast's client can
// be checked against the reference implementation. stdout carries protocol
// traffic only; every diagnostic goes to stderr.
//
// Run: node ts_agent.mjs   (then talk ACP on its stdin/stdout)

import { randomUUID } from "node:crypto";
import { Readable, Writable } from "node:stream";

import * as acp from "@agentclientprotocol/sdk";

const { methods, RequestError } = acp;
const log = (...args) => console.error("[ts_agent]", ...args);

// sessionId -> { onCancel: (() => void) | null }. onCancel is set only while a
// "wait" prompt is parked, so a session/cancel wakes exactly that prompt.
const sessions = new Map();

function requireSession(sessionId) {
  const session = sessions.get(sessionId);
  if (!session) throw RequestError.sessionNotFound(sessionId);
  return session;
}

// One agent_message_chunk with a text block. Awaiting notify() means the line
// has been handed to stdout before we send anything else, so the wire order
// is exactly the order of the awaits below.
function sendChunk(client, sessionId, text) {
  return client.notify(methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
  });
}

function sendUpdate(client, sessionId, update) {
  return client.notify(methods.client.session.update, { sessionId, update });
}

// Resolves when `signal` aborts (immediately if it already has).
function aborted(signal) {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

// "hello": two chunks, a tool call, a permission round trip, then (if allowed)
// read the input file and write it back upper-cased.
async function promptHello(client, sessionId) {
  await sendChunk(client, sessionId, "Hello");
  await sendChunk(client, sessionId, " world");
  await sendUpdate(client, sessionId, {
    sessionUpdate: "tool_call",
    toolCallId: "call-1",
    title: "Write file",
    kind: "edit",
    status: "pending",
  });
  const permission = await client.request(methods.client.session.requestPermission, {
    sessionId,
    toolCall: { toolCallId: "call-1", title: "Write file", kind: "edit", status: "pending" },
    options: [
      { optionId: "allow", name: "Allow", kind: "allow_once" },
      { optionId: "reject", name: "Reject", kind: "reject_once" },
    ],
  });
  const outcome = permission.outcome;
  // Anything but an explicit "allow" (reject, or the "cancelled" outcome) is a refusal.
  if (outcome?.outcome !== "selected" || outcome.optionId !== "allow") {
    await sendChunk(client, sessionId, "rejected");
    return { stopReason: "end_turn" };
  }
  const read = await client.request(methods.client.fs.readTextFile, {
    sessionId,
    path: "/interop/input.txt",
  });
  await client.request(methods.client.fs.writeTextFile, {
    sessionId,
    path: "/interop/output.txt",
    content: read.content.toUpperCase(),
  });
  await sendUpdate(client, sessionId, {
    sessionUpdate: "tool_call_update",
    toolCallId: "call-1",
    status: "completed",
  });
  await sendChunk(client, sessionId, "done");
  return { stopReason: "end_turn" };
}

// "wait": park until session/cancel for this session. The v1 SDK does not link
// session/cancel to any AbortSignal, so we wire it up ourselves. A
// $/cancel_request aimed at the prompt itself (or the connection closing) also
// ends the wait; either way the answer is a normal "cancelled" result, never an error.
async function promptWait(client, sessionId, session, signal) {
  const cancelled = new Promise((resolve) => {
    session.onCancel = resolve; // registered before "waiting" goes out: no race
  });
  try {
    await sendChunk(client, sessionId, "waiting");
    await Promise.race([cancelled, aborted(signal)]);
  } finally {
    session.onCancel = null;
  }
  return { stopReason: "cancelled" };
}

// "big": read a large file from the client and report its length.
async function promptBig(client, sessionId) {
  const read = await client.request(methods.client.fs.readTextFile, {
    sessionId,
    path: "/interop/big.txt",
  });
  await sendChunk(client, sessionId, `len=${read.content.length}`);
  return { stopReason: "end_turn" };
}

const app = acp
  .agent({ name: "interop-ts-agent" })
  // Registering initialize also turns on the SDK's gate that answers -32600 to
  // any other request sent before initialize.
  .onRequest(methods.agent.initialize, () => ({
    protocolVersion: 1,
    agentCapabilities: {},
    agentInfo: { name: "interop-ts-agent", title: "Interop TS agent", version: "2.4.0" },
  }))
  .onRequest(methods.agent.session.new, () => {
    const sessionId = `ts-${randomUUID()}`;
    sessions.set(sessionId, { onCancel: null });
    return { sessionId };
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client, signal }) => {
    const session = requireSession(params.sessionId);
    const first = params.prompt.find((block) => block.type === "text");
    switch (first?.text) {
      case "hello":
        return promptHello(client, params.sessionId);
      case "wait":
        return promptWait(client, params.sessionId, session, signal);
      case "big":
        return promptBig(client, params.sessionId);
      default:
        throw RequestError.invalidParams({ text: first?.text ?? null }, "unknown interop prompt");
    }
  })
  .onNotification(methods.agent.session.cancel, ({ params }) => {
    sessions.get(params.sessionId)?.onCancel?.();
  })
  // Extension methods need an explicit params parser; the wire name is used
  // verbatim (no prefix is added or stripped, unlike the Python SDK).
  .onRequest(
    "_test/slow",
    (params) => params ?? {},
    async ({ signal, requestId }) => {
      // Never answer on our own: wait for $/cancel_request (or connection
      // close) to abort the signal. throwIfAborted() rethrows the abort reason,
      // which the SDK set to RequestError -32800 {requestId}; the SDK turns it
      // into the -32800 error response.
      await aborted(signal);
      log(`_test/slow ${JSON.stringify(requestId)} cancelled`);
      signal.throwIfAborted();
      throw RequestError.requestCancelled(); // unreachable: the signal is aborted
    },
  )
  .onRequest(
    "_test/echo",
    (params) => {
      if (typeof params?.text !== "string") {
        throw RequestError.invalidParams(params ?? null, "_test/echo needs {text: string}");
      }
      return params;
    },
    ({ params }) => ({ text: params.text }),
  );

if (process.argv[2] === "--serve") {
  await serveRemotely(app);
} else {
  const connection = app.connect(
    acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)),
  );
  log("ready");
  connection.closed.then(() => {
    log("connection closed");
    // Once stdin hit EOF nothing useful can happen; don't let a parked handler
    // keep the process alive. Let stdout drain first.
    process.stdout.end(() => process.exit(0));
  });
}

// --serve: the SDK's AcpServer over node:http (Streamable HTTP at any path,
// WebSocket upgrades through `ws`), on 127.0.0.1 and an ephemeral port. One
// line of JSON, {"port": N}, on stdout once listening; exits on SIGTERM.
async function serveRemotely(agentApp) {
  const { createServer } = await import("node:http");
  const { WebSocketServer } = await import("ws");
  const { AcpServer } = await import("@agentclientprotocol/sdk/experimental/server");
  const { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } = await import(
    "@agentclientprotocol/sdk/experimental/node"
  );
  const server = new AcpServer({ agent: agentApp });
  const httpServer = createServer(createNodeHttpHandler(server));
  const sockets = new WebSocketServer({ noServer: true });
  httpServer.on("upgrade", createNodeWebSocketUpgradeHandler(server, sockets));
  httpServer.listen(0, "127.0.0.1", () => {
    log("serving");
    process.stdout.write(JSON.stringify({ port: httpServer.address().port }) + "\n");
  });
  process.on("SIGTERM", () => {
    server.close().finally(() => process.exit(0));
  });
}
