// A scripted client built on the official MCP TypeScript SDK. toolhub's
// interop tests run it against /mcp and /mcp/vendors/{vendor}.
//
//   node mcp-client.mjs '{"url": "...", "calls": [{"name": "...", "arguments": {}}], "waitListChanged": true}'
//
// It prints one JSON line per event: {"event":"tools",...}, {"event":"call",...},
// {"event":"ready"}, {"event":"list_changed",...}, {"event":"done"}, or
// {"event":"fatal","message":...} (and exits 1).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const emit = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const spec = JSON.parse(process.argv[2]);

try {
  const client = new Client({ name: "toolhub-interop", version: "1.0.0" });
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
