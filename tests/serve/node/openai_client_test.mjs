// The official OpenAI Node client (the `openai` package pinned in
// package.json / package-lock.json) against a real `loom serve`:
// chat and completion, streamed and not; greedy text equal to `loom run`'s
// for the same prompt and token count; 8 concurrent streams each equal to
// its own solo answer; usage counts; the key check and a too-long prompt as
// the client's error classes; SIGTERM ends the server with exit status 0.
//
// Usage: node openai_client_test.mjs LOOM_BINARY MODEL.gguf
//   (or LOOM_BIN and LOOM_TEST_MODEL in the environment). Run by ctest as
//   serve.openai_node_client through run_node_test.sh after `npm ci` here.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import path from 'node:path';
import OpenAI from 'openai';

const loom = process.argv[2] ?? process.env.LOOM_BIN;
const modelFile = process.argv[3] ?? process.env.LOOM_TEST_MODEL;
if (!loom || !modelFile) {
  console.error('usage: node openai_client_test.mjs LOOM_BINARY MODEL.gguf');
  process.exit(2);
}
const modelId = path.basename(modelFile);
const apiKey = 'loom-test-key';
// A promise resolving to `value` after ms; its timer does not keep node alive.
const after_ms = (ms, value) => new Promise((r) => setTimeout(() => r(value), ms).unref());
const PARALLEL = 8;

// `loom serve` on a free loopback port; resolves to {proc, url} once the
// "listening" line is printed and /health answers 200.
async function startServer() {
  const proc = spawn(loom, ['serve', '-m', modelFile, '--port', '0', '--parallel', String(PARALLEL),
                            '--api-key', apiKey], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no 'listening' line in 60 s; stderr:\n${stderr}`)), 60000).unref();
    proc.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/loom serve: listening on (http:\/\/\S+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`loom serve exited (code ${code}, signal ${signal}) before listening; stderr:\n${stderr}`));
    });
  });
  const deadline = Date.now() + 120000;
  for (;;) {
    const early = await Promise.race([exited, after_ms(100, null)]);
    if (early) throw new Error(`loom serve exited (code ${early.code}) while loading; stderr:\n${stderr}`);
    try {
      const r = await fetch(`${url}/health`);
      if (r.status === 200) break;
      assert.equal(r.status, 503, 'GET /health answers 503 while the model loads');
    } catch (e) {
      if (e instanceof assert.AssertionError) throw e;
    }
    if (Date.now() > deadline) throw new Error(`/health not 200 after 120 s; stderr:\n${stderr}`);
  }
  return { proc, url, exited, stderr: () => stderr };
}

// `loom run`'s greedy continuation: {text, promptTokens, generatedTokens}.
function loomRun(prompt, n) {
  const out = execFileSync(loom, ['run', '-m', modelFile, '-p', prompt, '-n', String(n), '--temp', '0', '--json'],
                           { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const j = JSON.parse(out);
  return { text: j.text, promptTokens: j.prompt_tokens.length, generatedTokens: j.generated_tokens.length };
}

async function collectStream(stream) {
  let text = '';
  let finish = null;
  let usage = null;
  let first = null;
  for await (const chunk of stream) {
    if (first === null) first = chunk;
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.delta ? (c.delta.content ?? '') : (c.text ?? '');
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish, usage, first };
}

const server = await startServer();
const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0, timeout: 120000 });
after(() => { if (server.proc.exitCode === null) server.proc.kill('SIGKILL'); });

const PROMPT = 'Once upon a time';
const N = 40;

test('GET /v1/models lists the model', async () => {
  const list = await client.models.list();
  assert.deepEqual(list.data.map((m) => m.id), [modelId]);
});

test('a greedy completion is loom run\'s text, with its usage', async () => {
  const want = loomRun(PROMPT, N);
  const r = await client.completions.create({ model: modelId, prompt: PROMPT, max_tokens: N, temperature: 0 });
  assert.equal(r.object, 'text_completion');
  assert.match(r.id, /^cmpl-[0-9a-f]+$/);
  assert.equal(r.choices[0].text, want.text);
  assert.equal(r.choices[0].finish_reason, want.generatedTokens === N ? 'length' : 'stop');
  assert.equal(r.usage.prompt_tokens, want.promptTokens);
  assert.equal(r.usage.completion_tokens, want.generatedTokens);
  assert.equal(r.usage.total_tokens, want.promptTokens + want.generatedTokens);
});

test('a streamed completion is the same text, usage in the last chunk', async () => {
  const want = loomRun(PROMPT, N);
  const stream = await client.completions.create({ model: modelId, prompt: PROMPT, max_tokens: N, temperature: 0,
                                                   stream: true, stream_options: { include_usage: true } });
  const got = await collectStream(stream);
  assert.equal(got.text, want.text);
  assert.equal(got.finish, want.generatedTokens === N ? 'length' : 'stop');
  assert.ok(got.usage, 'a usage chunk');
  assert.equal(got.usage.prompt_tokens, want.promptTokens);
  assert.equal(got.usage.completion_tokens, want.generatedTokens);
  assert.equal(got.usage.total_tokens, want.promptTokens + want.generatedTokens);
});

test('chat: the plain-format prompt as loom chat renders it, greedy text as loom run gives it', async () => {
  // stories260K has no chat template: loom's plain layout "User: ...\nAssistant:".
  const rendered = 'User: Tell me a story.\nAssistant:';
  const want = loomRun(rendered, 24);
  const messages = [{ role: 'user', content: 'Tell me a story.' }];
  const r = await client.chat.completions.create({ model: modelId, messages, max_tokens: 24, temperature: 0 });
  assert.equal(r.object, 'chat.completion');
  assert.match(r.id, /^chatcmpl-[0-9a-f]+$/);
  assert.equal(r.model, modelId);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(r.choices[0].message.content, want.text);
  assert.equal(r.usage.prompt_tokens, want.promptTokens);
  assert.equal(r.usage.completion_tokens, want.generatedTokens);
  assert.equal(r.usage.total_tokens, want.promptTokens + want.generatedTokens);

  const stream = await client.chat.completions.create({ model: modelId, messages, max_tokens: 24, temperature: 0,
                                                        stream: true });
  const got = await collectStream(stream);
  assert.equal(got.first.object, 'chat.completion.chunk');
  assert.equal(got.first.choices[0].delta.role, 'assistant');
  assert.equal(got.text, want.text);
  assert.equal(got.finish, r.choices[0].finish_reason);
  assert.equal(got.usage, null, 'no usage chunk unless asked for');
});

test('chat logprobs: one entry per generated token, the greedy token the most likely, its bytes its text', async () => {
  const messages = [{ role: 'user', content: 'Tell me a story.' }];
  const r = await client.chat.completions.create({ model: modelId, messages, max_tokens: 12, temperature: 0,
                                                   logprobs: true, top_logprobs: 3 });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  let text = Buffer.alloc(0);
  for (const t of content) {
    assert.ok(t.logprob <= 0, `logprob ${t.logprob}`);
    assert.equal(t.top_logprobs.length, 3);
    assert.equal(t.top_logprobs[0].token, t.token);
    assert.equal(t.top_logprobs[0].logprob, t.logprob);
    assert.ok(t.top_logprobs[1].logprob <= t.top_logprobs[0].logprob);
    text = Buffer.concat([text, Buffer.from(t.bytes)]);
  }
  assert.equal(text.toString('utf8'), r.choices[0].message.content);
  const plain = await client.chat.completions.create({ model: modelId, messages, max_tokens: 2, temperature: 0 });
  assert.equal(plain.choices[0].logprobs, null);
});

test(`${PARALLEL} concurrent streams each equal their solo answer`, async () => {
  const prompts = ['Once upon a time', 'Lily wanted to', 'The dog ran', 'One day, Tom', 'The sun was', 'A little bird',
                   'There was a big', 'Sam and Sue'];
  assert.equal(prompts.length, PARALLEL);
  const ask = (prompt, stream) => client.completions.create({ model: modelId, prompt, max_tokens: 48, temperature: 0,
                                                              stream, stream_options: stream ? { include_usage: true } : undefined });
  const solo = [];
  for (const p of prompts) solo.push(await ask(p, false));
  const together = await Promise.all(prompts.map(async (p) => collectStream(await ask(p, true))));
  for (let i = 0; i < prompts.length; ++i) {
    assert.equal(together[i].text, solo[i].choices[0].text, `stream ${i} (${prompts[i]})`);
    assert.equal(together[i].finish, solo[i].choices[0].finish_reason);
    assert.equal(together[i].usage.completion_tokens, solo[i].usage.completion_tokens);
    assert.equal(together[i].usage.prompt_tokens, solo[i].usage.prompt_tokens);
  }
  // And the first is loom run's.
  assert.equal(solo[0].choices[0].text, loomRun(prompts[0], 48).text);
});

test('errors come back as the client\'s error classes', async () => {
  const stranger = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-the-key', maxRetries: 0 });
  await assert.rejects(stranger.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  const long = 'Once upon a time there was a little girl. '.repeat(400);
  await assert.rejects(client.completions.create({ model: modelId, prompt: long, max_tokens: 4 }), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.status, 400);
    assert.match(e.message, /\d+ tokens.*\d+/, 'the message names both numbers');
    return true;
  });
  await assert.rejects(client.completions.create({ model: modelId, prompt: 'x', n: 2 }),
                       (e) => e instanceof OpenAI.BadRequestError && e.param === 'n');
});

test('SIGTERM: the server exits 0', async () => {
  server.proc.kill('SIGTERM');
  const { code, signal } = await Promise.race([server.exited, after_ms(30000, { code: 'no exit in 30 s', signal: null })]);
  assert.equal(signal, null, server.stderr());
  assert.equal(code, 0, server.stderr());
});
