// Drives the official openai SDK: req.op is "complete", "stream" or "models".
import { readRequest, finish, errorOf, clock, body } from './common.mjs';

const req = readRequest();
const { default: OpenAI } = await import('openai');

// maxRetries 0: a failure must reach the test once, not be retried away.
const client = new OpenAI({ apiKey: req.token, baseURL: req.baseURL, maxRetries: 0, timeout: req.timeoutMS });
const options = { headers: req.headers, timeout: req.timeoutMS };
const since = clock();
const result = { text: '', deltas: [], finishReason: '', aborted: false };

try {
  switch (req.op) {
    case 'complete': {
      const c = await client.chat.completions.create(body(req), options);
      const choice = c.choices?.[0];
      result.text = choice?.message?.content ?? '';
      result.finishReason = choice?.finish_reason ?? '';
      if (c.usage) result.usage = c.usage;
      result.firstTokenMS = since();
      break;
    }
    case 'stream': {
      const abort = new AbortController();
      const stream = await client.chat.completions.create({ ...body(req), stream: true }, { ...options, signal: abort.signal });
      for await (const chunk of stream) {
        if (chunk.usage) result.usage = chunk.usage;
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        if (choice.finish_reason) result.finishReason = choice.finish_reason;
        const delta = choice.delta?.content;
        if (!delta) continue;
        result.firstTokenMS ??= since();
        result.deltas.push(delta);
        if (req.abortAfterFirstToken) {
          // A caller hanging up mid-answer: cancel the request, which closes the connection.
          abort.abort();
          result.aborted = true;
          break;
        }
      }
      result.text = result.deltas.join('');
      break;
    }
    case 'models': {
      result.models = [];
      for await (const m of client.models.list(options)) result.models.push(m.id);
      break;
    }
    default:
      throw new Error(`unknown op ${req.op}`);
  }
} catch (e) {
  result.error = errorOf(e);
  result.text = result.deltas.join('') || result.text;
}
result.totalMS = since();
finish(result);
