// A real A2A agent built with @a2a-js/sdk, for toolhub's A2A tests.
//
//   node agent.mjs            listens on 127.0.0.1, a random port
//
// It prints one JSON line {"event":"listening","url":"http://127.0.0.1:PORT"}
// on stdout, then serves:
//
//   GET  /.well-known/agent-card.json          card with streaming: true
//   GET  /nostream/.well-known/agent-card.json the same agent, streaming: false
//   GET  /v03/.well-known/agent-card.json      the same agent as an A2A 0.3 card (v0.3 compat layer)
//   POST /a2a                                  A2A 1.0 JSON-RPC
//   POST /_control {"mode":"ok"|"429"}         fault knob: answer /a2a with 429
//   GET  /_control                             {"mode", "canceled": [task ids]}
//
// Skills (chosen by message metadata.skill):
//   echo   text → text artifact "echo: …"; data → data artifact {echo: data}
//   count  streams n (data.n, default 3) artifact chunks "1", "2", … then completes
//   fail   fails the task with the message "the agent failed on purpose"
//   draw   a raw image/png artifact and a file URL part
//   slow   works until canceled (for cancellation tests)
import express from 'express';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { jsonRpcHandler, agentCardHandler, UserBuilder } from '@a2a-js/sdk/server/express';

const skills = [
  { id: 'echo', name: 'Echo', description: 'Echoes text and data back.', tags: ['test'], examples: ['hello'],
    inputModes: ['text/plain', 'application/json'], outputModes: ['text/plain', 'application/json'], securityRequirements: [] },
  { id: 'count', name: 'Count', description: 'Streams numbers 1..n as artifact chunks.', tags: ['test'], examples: [],
    inputModes: ['application/json'], outputModes: ['text/plain'], securityRequirements: [] },
  { id: 'fail', name: 'Fail', description: 'Always fails.', tags: ['test'], examples: [],
    inputModes: ['text/plain'], outputModes: ['text/plain'], securityRequirements: [] },
  { id: 'draw', name: 'Draw', description: 'Returns a tiny PNG.', tags: ['test'], examples: [],
    inputModes: ['text/plain'], outputModes: ['image/png'], securityRequirements: [] },
  { id: 'slow', name: 'Slow', description: 'Works until canceled.', tags: ['test'], examples: [],
    inputModes: ['text/plain'], outputModes: ['text/plain'], securityRequirements: [] },
];

function card(base, streaming) {
  return {
    name: 'Test Agent',
    description: 'An @a2a-js/sdk agent for toolhub tests.',
    supportedInterfaces: [
      { url: base + '/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: '' },
      { url: base + '/a2a', protocolBinding: 'JSONRPC', protocolVersion: '0.3', tenant: '' }, // legacyCompat below
    ],
    provider: { organization: 'toolhub tests', url: 'https://example.invalid' },
    version: '1.0.0',
    capabilities: { streaming, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills,
    signatures: [],
  };
}

// cardV03 is the same agent described by an A2A 0.3 card: calls to it
// take the SDK's v0.3 compatibility layer.
function cardV03(base) {
  return {
    name: 'Test Agent (0.3)', description: 'The test agent, as an A2A 0.3 card.', version: '1.0.0',
    protocolVersion: '0.3.0', url: base + '/a2a', preferredTransport: 'JSONRPC',
    capabilities: { streaming: true, pushNotifications: false },
    defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
    skills: skills.map(({ securityRequirements, ...s }) => s),
  };
}

const textPart = (text) => ({ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' });
const dataPart = (value) => ({ content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const canceled = new Set();
const contexts = new Map(); // task id → context id

function status(ctx, state, text) {
  return AgentEvent.statusUpdate({
    taskId: ctx.taskId, contextId: ctx.contextId, metadata: undefined,
    status: {
      state, timestamp: new Date().toISOString(),
      message: text === undefined ? undefined : {
        messageId: crypto.randomUUID(), contextId: ctx.contextId, taskId: ctx.taskId, role: 2,
        parts: [textPart(text)], metadata: undefined, extensions: [], referenceTaskIds: [],
      },
    },
  });
}

function artifact(ctx, id, parts, append = false, lastChunk = true) {
  return AgentEvent.artifactUpdate({
    taskId: ctx.taskId, contextId: ctx.contextId, append, lastChunk, metadata: undefined,
    artifact: { artifactId: id, name: 'result', description: '', parts, metadata: undefined, extensions: [] },
  });
}

class TestExecutor {
  async execute(ctx, bus) {
    const msg = ctx.userMessage;
    const skill = msg.metadata?.skill ?? 'echo';
    let text = '', data;
    for (const p of msg.parts) {
      if (p.content?.$case === 'text') text += p.content.value;
      if (p.content?.$case === 'data' && data === undefined) data = p.content.value;
    }
    contexts.set(ctx.taskId, ctx.contextId);
    if (!ctx.task) {
      bus.publish(AgentEvent.task({
        id: ctx.taskId, contextId: ctx.contextId, artifacts: [], history: [msg], metadata: undefined,
        status: { state: 1, message: undefined, timestamp: new Date().toISOString() },
      }));
    }
    bus.publish(status(ctx, 2));
    switch (skill) {
      case 'echo': {
        const parts = [];
        if (text) parts.push(textPart('echo: ' + text));
        if (data !== undefined) parts.push(dataPart({ echo: data }));
        bus.publish(artifact(ctx, 'echo', parts));
        bus.publish(status(ctx, 3));
        break;
      }
      case 'count': {
        const n = Number(data?.n ?? 3);
        for (let i = 1; i <= n; i++) {
          await sleep(5);
          bus.publish(artifact(ctx, 'count', [textPart(String(i))], i > 1, i === n));
        }
        bus.publish(status(ctx, 3));
        break;
      }
      case 'fail':
        bus.publish(status(ctx, 4, 'the agent failed on purpose'));
        break;
      case 'draw': {
        const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
        bus.publish(artifact(ctx, 'img', [
          { content: { $case: 'raw', value: png }, metadata: undefined, filename: 'dot.png', mediaType: 'image/png' },
          { content: { $case: 'url', value: 'https://example.invalid/dot.png' }, metadata: undefined, filename: 'dot.png', mediaType: 'image/png' },
        ]));
        bus.publish(status(ctx, 3));
        break;
      }
      case 'slow':
        for (let i = 0; i < 600 && !canceled.has(ctx.taskId); i++) await sleep(50);
        if (!canceled.has(ctx.taskId)) bus.publish(status(ctx, 3));
        break;
      default:
        bus.publish(status(ctx, 7, 'no skill ' + skill));
    }
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    canceled.add(taskId);
    bus.publish(status({ taskId, contextId: contexts.get(taskId) ?? '' }, 5, 'canceled'));
    bus.finished();
  }
}

const store = new InMemoryTaskStore();
let mode = 'ok';
const app = express();
app.post('/_control', express.json(), (req, res) => { mode = req.body.mode; res.json({ mode }); });
app.get('/_control', (req, res) => res.json({ mode, canceled: [...canceled] }));
app.use('/a2a', (req, res, next) => {
  if (mode === '429') return res.status(429).set('Retry-After', '2').json({ error: 'slow down' });
  next();
});

const server = app.listen(0, '127.0.0.1', () => {
  const base = 'http://127.0.0.1:' + server.address().port;
  const handler = new DefaultRequestHandler(card(base, true), store, new TestExecutor());
  const nostream = new DefaultRequestHandler(card(base, false), store, new TestExecutor());
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/nostream/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: nostream }));
  app.get('/v03/.well-known/agent-card.json', (req, res) => res.json(cardV03(base)));
  app.use('/a2a', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
  console.log(JSON.stringify({ event: 'listening', url: base }));
});
process.stdin.on('end', () => process.exit(0)); // the test closes stdin to stop us
process.stdin.resume();
