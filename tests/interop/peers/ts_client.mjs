// Interop peer: an ACP v1 *client* built with the reference TypeScript SDK
// (@agentclientprotocol/sdk 2.4.0, app-builder API).
//
//   node ts_client.mjs <agent command...>
//   node ts_client.mjs http://HOST:PORT/acp | ws://HOST:PORT/acp
//
// Spawns the agent command with stdio pipes (or connects to a remote agent
// with the SDK's createHttpStream / createWebSocketStream), runs the client script from
// README.md against it and prints ONE line of JSON (the report) on stdout.
// Logs go to stderr (the agent's stderr is passed through). Exit code 0 if
// every expectation held, 1 otherwise, 2 on bad usage.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { isDeepStrictEqual } from "node:util";

import * as acp from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket } from "ws";

const { methods, RequestError } = acp;
const log = (...args) => console.error("[ts_client]", ...args);

const STEP_TIMEOUT_MS = 5000; // per step; a broken peer fails the step, never hangs it
const OVERALL_TIMEOUT_MS = 30000; // last-resort guard for the whole run
const INPUT_TEXT = "interop input\n";
const BIG_LENGTH = 10_000_000;

const agentCommand = process.argv.slice(2);
if (agentCommand.length === 0) {
  console.error("usage: node ts_client.mjs <agent command...>");
  process.exit(2);
}

// ---------------------------------------------------------------- report --

const report = {
  client: "ts",
  agentCommand,
  initialize: null,
  sessionNew: null,
  hello: null,
  cancelRequest: null,
  echo: null,
  wait: null,
  big: null,
  agentExit: null,
  ok: false,
};

let reported = false;
function finish({ timedOut = false } = {}) {
  if (reported) return;
  reported = true;
  const steps = ["initialize", "sessionNew", "hello", "cancelRequest", "echo", "wait", "big"];
  if (timedOut) report.timedOut = true;
  report.ok = !timedOut && steps.every((name) => report[name]?.ok === true);
  process.stdout.write(JSON.stringify(report) + "\n", () => process.exit(report.ok ? 0 : 1));
}

// Plain-JSON view of a thrown value, so the report says exactly what came back.
function errorObject(error) {
  if (error instanceof RequestError) {
    const out = { code: error.code, message: error.message };
    if (error.data !== undefined) out.data = error.data;
    return out;
  }
  return { code: null, message: String(error?.message ?? error) };
}

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timeout after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Notification handlers run asynchronously after dispatch, while a response
// resolves its promise synchronously, so a prompt's result can overtake the
// last session/update handler. One macrotask lets in-flight handlers finish.
const settle = () => new Promise((resolve) => setImmediate(resolve));

// ----------------------------------------------------- per-step recording --

// Each step installs a fresh recorder; handlers below append to the current one.
let current = newRecorder();
function newRecorder() {
  return {
    chunks: [],
    toolUpdates: [],
    permissions: [],
    reads: [],
    writes: [],
    chunkWaiters: [], // [{text, resolve}]
  };
}
function waitForChunk(text) {
  if (current.chunks.includes(text)) return Promise.resolve();
  return new Promise((resolve) => current.chunkWaiters.push({ text, resolve }));
}

let bigContent = null; // built lazily: 10 MB

const app = acp
  .client({ name: "interop-ts-client" })
  .onNotification(methods.client.session.update, ({ params }) => {
    const update = params.update;
    if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
      current.chunks.push(update.content.text);
      for (const waiter of current.chunkWaiters) {
        if (waiter.text === update.content.text) waiter.resolve();
      }
    } else if (["tool_call", "tool_call_update"].includes(update.sessionUpdate)) {
      const { sessionUpdate, toolCallId, title, kind, status } = update;
      // Absent optional fields become null so both clients report the same keys.
      current.toolUpdates.push({
        sessionUpdate,
        toolCallId,
        title: title ?? null,
        kind: kind ?? null,
        status: status ?? null,
      });
    }
  })
  .onRequest(methods.client.session.requestPermission, ({ params }) => {
    current.permissions.push({
      toolCallId: params.toolCall.toolCallId,
      options: params.options.map(({ optionId, kind }) => ({ optionId, kind })),
    });
    return { outcome: { outcome: "selected", optionId: "allow" } };
  })
  .onRequest(methods.client.fs.readTextFile, ({ params }) => {
    current.reads.push(params.path);
    if (params.path === "/interop/input.txt") return { content: INPUT_TEXT };
    if (params.path === "/interop/big.txt") {
      bigContent ??= "x".repeat(BIG_LENGTH);
      return { content: bigContent };
    }
    throw RequestError.resourceNotFound(params.path);
  })
  .onRequest(methods.client.fs.writeTextFile, ({ params }) => {
    current.writes.push({ path: params.path, content: params.content });
    return {};
  });

// ------------------------------------------------------------------ steps --

async function stepInitialize(agent) {
  const response = await agent.request(methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
    clientInfo: { name: "interop-ts-client", version: "2.4.0" },
  });
  return {
    protocolVersion: response.protocolVersion,
    agentInfo: response.agentInfo ?? null,
    ok: response.protocolVersion === 1,
  };
}

async function stepSessionNew(agent) {
  const response = await agent.request(methods.agent.session.new, {
    cwd: "/interop",
    mcpServers: [],
  });
  return { sessionId: response.sessionId, ok: typeof response.sessionId === "string" };
}

function prompt(agent, sessionId, text) {
  return agent.request(methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: "text", text }],
  });
}

async function stepHello(agent, sessionId) {
  const response = await prompt(agent, sessionId, "hello");
  await settle();
  const rec = current;
  const expectedWrite = { path: "/interop/output.txt", content: INPUT_TEXT.toUpperCase() };
  const expectedPermission = {
    toolCallId: "call-1",
    options: [
      { optionId: "allow", kind: "allow_once" },
      { optionId: "reject", kind: "reject_once" },
    ],
  };
  const toolCall = rec.toolUpdates.find((u) => u.sessionUpdate === "tool_call");
  const toolDone = rec.toolUpdates.find((u) => u.sessionUpdate === "tool_call_update");
  return {
    stopReason: response.stopReason,
    chunks: rec.chunks,
    permissionSeen: rec.permissions.length > 0,
    permissions: rec.permissions,
    toolUpdates: rec.toolUpdates,
    reads: rec.reads,
    writes: rec.writes,
    ok:
      response.stopReason === "end_turn" &&
      isDeepStrictEqual(rec.chunks, ["Hello", " world", "done"]) &&
      isDeepStrictEqual(rec.permissions, [expectedPermission]) &&
      isDeepStrictEqual(rec.writes, [expectedWrite]) &&
      toolCall?.toolCallId === "call-1" &&
      toolCall.title === "Write file" &&
      toolCall.kind === "edit" &&
      toolCall.status === "pending" &&
      toolDone?.toolCallId === "call-1" &&
      toolDone.status === "completed",
  };
}

// Send _test/slow, then cancel it with the SDK's AbortSignal support, which
// sends $/cancel_request. We keep waiting for the peer's real answer (no
// stopWaitingOnCancel), so the report shows what the agent actually sent:
// -32800 from a cancellation-aware agent, {"finished": true} from one that
// ignores $/cancel_request (the official Python SDK). Both are acceptable.
const CANCEL_STEP = {
  mechanism: "$/cancel_request",
  timeoutSeconds: null, // only the Python client uses a local timeout
  expected: [
    { outcome: "error", code: -32800 },
    { outcome: "result", result: { finished: true } },
  ],
};

async function stepCancelRequest(agent) {
  const controller = new AbortController();
  const pending = agent.request("_test/slow", {}, { cancellationSignal: controller.signal });
  await settle(); // the request line is written before the cancel goes out
  controller.abort();
  try {
    const result = await pending;
    const ok = isDeepStrictEqual(result, { finished: true });
    return { ...CANCEL_STEP, outcome: "result", result, error: null, ok };
  } catch (error) {
    const err = errorObject(error);
    return { ...CANCEL_STEP, outcome: "error", result: null, error: err, ok: err.code === -32800 };
  }
}

// A round trip that proves the connection still works after the cancellation.
async function stepEcho(agent) {
  const result = await agent.request("_test/echo", { text: "barrier" });
  return { sent: "barrier", result, ok: isDeepStrictEqual(result, { text: "barrier" }) };
}

async function stepWait(agent, sessionId) {
  const response = prompt(agent, sessionId, "wait");
  await waitForChunk("waiting");
  await agent.notify(methods.agent.session.cancel, { sessionId });
  const result = await response;
  await settle();
  return {
    chunks: current.chunks,
    cancelSent: true,
    stopReason: result.stopReason,
    ok: result.stopReason === "cancelled" && isDeepStrictEqual(current.chunks, ["waiting"]),
  };
}

async function stepBig(agent, sessionId) {
  const response = await prompt(agent, sessionId, "big");
  await settle();
  return {
    chunks: current.chunks,
    reads: current.reads,
    stopReason: response.stopReason,
    ok:
      response.stopReason === "end_turn" &&
      isDeepStrictEqual(current.chunks, [`len=${BIG_LENGTH}`]) &&
      isDeepStrictEqual(current.reads, ["/interop/big.txt"]),
  };
}

// Runs one step with a fresh recorder and a timeout; a failure is recorded in
// the report (ok: false) instead of ending the run.
async function runStep(name, fn, timeoutMs = STEP_TIMEOUT_MS) {
  current = newRecorder();
  const started = performance.now();
  try {
    report[name] = await withTimeout(Promise.resolve().then(fn), timeoutMs, name);
  } catch (error) {
    log(`step ${name} failed:`, error?.message ?? error);
    report[name] = { ok: false, error: errorObject(error), chunks: current.chunks };
  }
  report[name].ms = Math.round(performance.now() - started);
  log(`step ${name}: ok=${report[name].ok} (${report[name].ms} ms)`);
  return report[name].ok;
}

// ------------------------------------------------------------------- main --

const remoteUrl = /^(https?|wss?):\/\//.test(agentCommand[0]) ? agentCommand[0] : null;
let child = null;
let childExited = Promise.resolve(null);
let stream;
if (remoteUrl !== null) {
  stream = remoteUrl.startsWith("ws")
    ? createWebSocketStream(remoteUrl, { WebSocket })
    : createHttpStream(remoteUrl);
} else {
  child = spawn(agentCommand[0], agentCommand.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  childExited = new Promise((resolve) => {
    child.on("exit", (code, signal) => resolve({ code, signal }));
    child.on("error", (error) => {
      log("could not start agent:", error.message);
      resolve({ code: null, signal: null, error: error.message });
    });
  });
  // Writing to an agent that already died must not crash the client.
  child.stdin.on("error", (error) => log("agent stdin:", error.message));
  stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
}
// Deliberately not unref()'d: it also keeps Node from exiting with "unsettled
// top-level await" (and no report) should every other handle go away.
setTimeout(() => {
  log(`overall timeout after ${OVERALL_TIMEOUT_MS} ms`);
  child?.kill("SIGKILL");
  finish({ timedOut: true });
}, OVERALL_TIMEOUT_MS);

async function runScript(agent) {
  if (!(await runStep("initialize", () => stepInitialize(agent)))) return;
  if (!(await runStep("sessionNew", () => stepSessionNew(agent)))) return;
  const { sessionId } = report.sessionNew;
  await runStep("hello", () => stepHello(agent, sessionId));
  await runStep("cancelRequest", () => stepCancelRequest(agent));
  await runStep("echo", () => stepEcho(agent));
  await runStep("wait", () => stepWait(agent, sessionId));
  await runStep("big", () => stepBig(agent, sessionId), 2 * STEP_TIMEOUT_MS);
}

let script;
try {
  await app.connectWith(stream, (agent) => (script = runScript(agent)));
} catch (error) {
  // connectWith rejects as soon as the connection closes under us (agent
  // died); pending requests fail too, so the script finishes quickly.
  log("connection failed:", error?.message ?? error);
}
await script; // runStep never throws; this just lets failed steps be recorded

// connectWith closed our side; close the agent's stdin so it sees EOF and
// exits on its own, then escalate if it does not.
if (child !== null) {
  child.stdin.end();
  const killTimer = setTimeout(() => child.kill("SIGTERM"), 2000);
  report.agentExit = await childExited;
  clearTimeout(killTimer);
}
finish();
