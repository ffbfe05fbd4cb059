// Shared by the client scripts: the request comes as JSON on stdin, and stdout carries
// exactly one JSON result line. Anything else a library prints goes to stderr.
import { readFileSync } from 'node:fs';

const writeStdout = process.stdout.write.bind(process.stdout);
// LiveKit's logger (pino) and any console.log write to process.stdout: reroute them so
// they cannot be mistaken for the result.
process.stdout.write = (chunk, encoding, callback) => process.stderr.write(chunk, encoding, callback);

export function readRequest() {
  const req = JSON.parse(readFileSync(0, 'utf8'));
  req.timeoutMS ||= 30000;
  req.messages ??= [];
  req.headers ??= {};
  req.extra ??= {};
  return req;
}

// finish prints the result and exits: a client may leave timers or sockets open that
// would otherwise keep node running, and an aborted stream must not linger.
export function finish(result) {
  writeStdout(JSON.stringify(result) + '\n', () => process.exit(0));
}

// errorOf describes an error the way the SDKs expose it. The openai SDK's APIError has
// status, type, code and the body's error object; LiveKit's APIStatusError has statusCode
// and body (the same error object), with -1 for no status.
export function errorOf(e) {
  if (e === null || typeof e !== 'object') {
    return { name: typeof e, message: String(e) };
  }
  const body = e.error && typeof e.error === 'object' ? e.error : e.body && typeof e.body === 'object' ? e.body : {};
  let status = e.status ?? e.statusCode ?? 0;
  if (typeof status !== 'number' || status < 0) status = 0;
  const out = {
    name: e.constructor?.name || e.name || 'Error',
    status,
    type: e.type ?? body.type ?? '',
    code: e.code ?? body.code ?? '',
    message: String(e.message ?? ''),
  };
  if (typeof out.code !== 'string') out.code = String(out.code ?? '');
  if (typeof out.type !== 'string') out.type = String(out.type ?? '');
  if (e.cause) out.cause = String(e.cause?.message ?? e.cause);
  return out;
}

// clock gives milliseconds since the request started, to a microsecond.
export function clock() {
  const start = process.hrtime.bigint();
  return () => Math.round(Number(process.hrtime.bigint() - start) / 1e3) / 1e3;
}

// body is the request body: model and messages, user when set, then the extra fields.
export function body(req) {
  const b = { model: req.model, messages: req.messages };
  if (req.user) b.user = req.user;
  return { ...b, ...req.extra };
}
