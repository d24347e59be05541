// A real A2A client built with @a2a-js/sdk, for toolhub's A2A tests.
//
//   node client.mjs BASE_URL SKILL ARGS_JSON SLOW_SKILL
//
// It discovers the agent card at BASE_URL, then prints one JSON line per
// step on stdout:
//   {"step":"card","name","skills":[ids],"streaming"}
//   {"step":"send","state","taskId","data","text"}      SendMessage SKILL with ARGS_JSON as a data part
//   {"step":"stream","kinds":[…],"states":[…],"data"}   SendStreamingMessage, the same call
//   {"step":"get","state"}                              GetTask of the "send" task
//   {"step":"list","count"}                             ListTasks
//   {"step":"cancel","state","taskId"}                  SendMessage SLOW_SKILL returnImmediately, then CancelTask
//   {"step":"unknown","error"}                          SendMessage to a skill that does not exist
//   {"step":"hello","state","text","error"}             SendMessage of a plain text "hello", no skill
//   {"step":"done"}
import { ClientFactory } from '@a2a-js/sdk/client';

const [base, skill, argsJSON, slow] = process.argv.slice(2);
const args = JSON.parse(argsJSON);
const out = (o) => console.log(JSON.stringify(o));
const stateName = (s) => ['UNSPECIFIED', 'SUBMITTED', 'WORKING', 'COMPLETED', 'FAILED', 'CANCELED', 'INPUT_REQUIRED', 'REJECTED', 'AUTH_REQUIRED'][s] ?? String(s);

function message(skillId, data) {
  return {
    messageId: crypto.randomUUID(), contextId: '', taskId: '', role: 1, extensions: [], referenceTaskIds: [],
    metadata: { skill: skillId },
    parts: [{ content: { $case: 'data', value: data }, metadata: undefined, filename: '', mediaType: 'application/json' }],
  };
}

function partsOf(task) {
  let data, text = '';
  for (const a of task.artifacts ?? []) {
    for (const p of a.parts) {
      if (p.content?.$case === 'data' && data === undefined) data = p.content.value;
      if (p.content?.$case === 'text') text += p.content.value;
    }
  }
  return { data, text };
}

function taskOf(res) {
  // sendMessage answers a Task or a Message.
  return res?.status !== undefined ? res : undefined;
}

try {
  const client = await new ClientFactory().createFromUrl(base);
  const card = await client.getAgentCard();
  out({ step: 'card', name: card.name, skills: card.skills.map((s) => s.id), streaming: !!card.capabilities?.streaming });

  const res = await client.sendMessage({ tenant: '', message: message(skill, args), configuration: undefined, metadata: undefined });
  const task = taskOf(res);
  out({ step: 'send', state: stateName(task?.status?.state), taskId: task?.id, ...partsOf(task ?? {}) });

  const kinds = [], states = [];
  let data;
  for await (const ev of client.sendMessageStream({ tenant: '', message: message(skill, args), configuration: undefined, metadata: undefined })) {
    const c = ev.payload?.$case;
    kinds.push(c);
    if (c === 'task') states.push(stateName(ev.payload.value.status?.state));
    if (c === 'statusUpdate') states.push(stateName(ev.payload.value.status?.state));
    if (c === 'artifactUpdate') {
      for (const p of ev.payload.value.artifact?.parts ?? []) if (p.content?.$case === 'data') data = p.content.value;
    }
  }
  out({ step: 'stream', kinds, states, data });

  const got = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
  out({ step: 'get', state: stateName(got.status?.state) });

  const list = await client.listTasks({ tenant: '', contextId: '', status: 0, pageSize: 50, pageToken: '', historyLength: undefined, statusTimestampAfter: undefined, includeArtifacts: false });
  out({ step: 'list', count: list.tasks.length });

  const started = taskOf(await client.sendMessage({
    tenant: '', message: message(slow, {}), metadata: undefined,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, historyLength: undefined, returnImmediately: true },
  }));
  const canceled = await client.cancelTask({ tenant: '', id: started.id, metadata: undefined });
  out({ step: 'cancel', state: stateName(canceled.status?.state), taskId: started.id });

  try {
    await client.sendMessage({ tenant: '', message: message('no.such.capability', {}), configuration: undefined, metadata: undefined });
    out({ step: 'unknown', error: null });
  } catch (e) {
    out({ step: 'unknown', error: String(e?.message ?? e) });
  }
  try {
    const hello = {
      messageId: crypto.randomUUID(), contextId: '', taskId: '', role: 1, extensions: [], referenceTaskIds: [], metadata: undefined,
      parts: [{ content: { $case: 'text', value: 'hello' }, metadata: undefined, filename: '', mediaType: 'text/plain' }],
    };
    const t = taskOf(await client.sendMessage({ tenant: '', message: hello, configuration: undefined, metadata: undefined }));
    let text = partsOf(t ?? {}).text;
    for (const p of t?.status?.message?.parts ?? []) if (p.content?.$case === 'text') text += p.content.value;
    out({ step: 'hello', state: stateName(t?.status?.state), text, error: null });
  } catch (e) {
    out({ step: 'hello', error: String(e?.message ?? e) });
  }
  out({ step: 'done' });
} catch (e) {
  out({ step: 'error', message: String(e?.stack ?? e) });
  process.exitCode = 1;
}
