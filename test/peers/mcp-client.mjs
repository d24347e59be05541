// A scripted client built on the official MCP TypeScript SDK. toolhub's
// interop tests run it against /mcp and /mcp/vendors/{vendor}.
//
//   node mcp-client.mjs '{"url": "...", "calls": [{"name": "...", "arguments": {}}], "waitListChanged": true}'
//
// It prints one JSON line per event: {"event":"tools",...}, {"event":"call",...},
// {"event":"ready"}, {"event":"list_changed",...}, {"event":"done"}, or
// {"event":"fatal","message":...} (and exits 1).
//
// With "capabilities": true the client declares sampling and elicitation
// and answers them ({"event":"sampling"|"elicitation",...} is printed
// for each); "steps" run after the calls, one {"event":"step",...} each:
//   {"op":"listResources"} {"op":"readResource","uri":...}
//   {"op":"listPrompts"} {"op":"getPrompt","name":...,"arguments":{}}
//   {"op":"complete","ref":{...},"argument":{...},"context":{...}}
//   {"op":"call","name":...,"arguments":{},"progress":true,"cancelAfterProgress":n}
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  ToolListChangedNotificationSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const spec = JSON.parse(process.argv[2]);

try {
  const client = new Client(
    { name: "toolhub-interop", version: "1.0.0" },
    spec.capabilities ? { capabilities: { sampling: {}, elicitation: {} } } : undefined,
  );
  if (spec.capabilities) {
    client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
      emit({ event: "sampling", params: req.params });
      return { role: "assistant", model: "interop-model", content: { type: "text", text: "sampled by the TypeScript client" } };
    });
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      emit({ event: "elicitation", params: req.params });
      return { action: "accept", content: spec.elicitAnswer ?? {} };
    });
  }
  let changed;
  const listChanged = new Promise((resolve) => (changed = resolve));
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());
  await client.connect(new StreamableHTTPClientTransport(new URL(spec.url)));
  emit({ event: "connected", protocol: client.transport.protocolVersion ?? null });

  const names = async () => (await client.listTools()).tools.map((t) => t.name);
  emit({ event: "tools", names: await names(), tools: (await client.listTools()).tools });

  for (const c of spec.calls ?? []) {
    try {
      const result = await client.callTool({ name: c.name, arguments: c.arguments ?? {} });
      emit({ event: "call", name: c.name, result });
    } catch (err) {
      emit({ event: "call", name: c.name, error: { code: err.code ?? null, message: String(err.message ?? err), data: err.data ?? null } });
    }
  }
  for (const st of spec.steps ?? []) {
    const progress = [];
    try {
      let result;
      switch (st.op) {
        case "listResources": result = await client.listResources(); break;
        case "listResourceTemplates": result = await client.listResourceTemplates(); break;
        case "readResource": result = await client.readResource({ uri: st.uri }); break;
        case "listPrompts": result = await client.listPrompts(); break;
        case "getPrompt": result = await client.getPrompt({ name: st.name, arguments: st.arguments ?? {} }); break;
        case "complete": result = await client.complete({ ref: st.ref, argument: st.argument, context: st.context }); break;
        case "setLevel": result = await client.setLoggingLevel(st.level); break;
        case "subscribe": result = await client.subscribeResource({ uri: st.uri }); break;
        case "unsubscribe": result = await client.unsubscribeResource({ uri: st.uri }); break;
        case "call": {
          const ac = new AbortController();
          const opts = { signal: ac.signal, timeout: 120000 };
          if (st.progress) {
            opts.onprogress = (p) => {
              progress.push(p);
              if (st.cancelAfterProgress && progress.length >= st.cancelAfterProgress) ac.abort("cancelled by the interop client");
            };
          }
          result = await client.callTool({ name: st.name, arguments: st.arguments ?? {} }, undefined, opts);
          break;
        }
        default: throw new Error(`unknown step ${st.op}`);
      }
      emit({ event: "step", op: st.op, name: st.name ?? st.uri ?? null, result, progress });
    } catch (err) {
      emit({ event: "step", op: st.op, name: st.name ?? st.uri ?? null, error: { code: err.code ?? null, message: String(err.message ?? err) }, progress });
    }
  }
  if (spec.waitListChanged) {
    emit({ event: "ready" });
    const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error("no notifications/tools/list_changed within 60s")), 60000));
    await Promise.race([listChanged, timeout]);
    emit({ event: "list_changed", names: await names() });
  }
  await client.close();
  emit({ event: "done" });
  process.exit(0);
} catch (err) {
  emit({ event: "fatal", message: String(err?.stack ?? err) });
  process.exit(1);
}
