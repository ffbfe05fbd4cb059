// Drives @livekit/agents-plugin-openai's LLM the way a LiveKit agent's pipeline does:
// llm.chat({chatCtx}) gives an LLMStream, iterated chunk by chunk. No LiveKit server.
import { readRequest, finish, errorOf, clock } from './common.mjs';

const req = readRequest();
const { llm: agentsLLM, initializeLogger } = await import('@livekit/agents');
const { LLM } = await import('@livekit/agents-plugin-openai');

// The framework refuses to work before its logger is set up (a worker does it at start).
// Its lines go to stderr (see common.mjs).
initializeLogger({ pretty: false, level: 'warn' });

const model = new LLM({ model: req.model, apiKey: req.token, baseURL: req.baseURL, user: req.user || undefined });
// The stream reports failures as 'error' events on the LLM, not by throwing from the
// iterator; an EventEmitter without an 'error' listener would crash node instead.
const errors = [];
model.on('error', (ev) => errors.push(ev.error));

const chatCtx = new agentsLLM.ChatContext();
for (const m of req.messages) chatCtx.addMessage({ role: m.role, content: m.content });

// The plugin sends extraKwargs as body fields, except extra_headers (request headers).
const extraKwargs = { ...req.extra };
if (Object.keys(req.headers).length) extraKwargs.extra_headers = req.headers;

const since = clock();
const result = { text: '', deltas: [], finishReason: '', aborted: false };
try {
  // maxRetry 0: the plugin's own OpenAI client already has maxRetries 0; this turns off
  // the agents framework's retry loop around it, so a failure is seen once.
  const stream = model.chat({
    chatCtx,
    extraKwargs,
    connOptions: { maxRetry: 0, retryIntervalMs: 0, timeoutMs: req.timeoutMS },
  });
  for await (const chunk of stream) {
    if (chunk.usage) {
      const u = chunk.usage;
      result.usage = { prompt_tokens: u.promptTokens, completion_tokens: u.completionTokens, total_tokens: u.totalTokens };
    }
    const delta = chunk.delta?.content;
    if (!delta) continue;
    result.firstTokenMS ??= since();
    result.deltas.push(delta);
    if (req.abortAfterFirstToken) {
      // close() aborts the stream's AbortController, which cancels the HTTP request.
      stream.close();
      result.aborted = true;
      break;
    }
  }
} catch (e) {
  errors.push(e);
}
// Let a pending 'error' event land before reporting.
await new Promise((resolve) => setImmediate(resolve));
if (errors.length) result.error = errorOf(errors[0]);
result.text = result.deltas.join('');
result.totalMS = since();
finish(result);
