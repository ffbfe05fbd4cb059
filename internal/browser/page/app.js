// The call page: microphone to the media socket, agent audio from it, and a live view of
// the call built from the journal events the server forwards.

const RATE = 16000;
const $ = (id) => document.getElementById(id);

let call = null; // the call in progress, see start()

function setState(s) {
  document.body.dataset.state = s;
  $("state").textContent = s;
}

function notice(text) {
  $("notice").hidden = !text;
  $("notice").textContent = text || "";
}

function line(kind, text) {
  const li = document.createElement("li");
  li.className = kind;
  li.textContent = text;
  $("transcript").append(li);
  li.scrollIntoView({ block: "nearest" });
  return li;
}

async function start() {
  $("call").disabled = true;
  notice("");
  $("transcript").replaceChildren();
  $("interim").textContent = "";
  if (!window.isSecureContext || !navigator.mediaDevices) {
    notice("The microphone needs a secure page: open Handset on localhost or behind HTTPS.");
    $("call").disabled = false;
    return;
  }
  let mic;
  try {
    mic = await navigator.mediaDevices.getUserMedia({
      audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true, autoGainControl: true },
    });
  } catch (err) {
    notice("No microphone: " + err.message);
    $("call").disabled = false;
    return;
  }
  const ctx = new AudioContext({ sampleRate: RATE });
  await ctx.audioWorklet.addModule("/browser/worklet.js");
  const capture = new AudioWorkletNode(ctx, "capture");
  const player = new AudioWorkletNode(ctx, "player", { outputChannelCount: [1] });
  const sink = ctx.createGain();
  sink.gain.value = 0; // the capture node must be pulled by the graph, but is never heard
  ctx.createMediaStreamSource(mic).connect(capture).connect(sink).connect(ctx.destination);
  player.connect(ctx.destination);

  const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/browser/ws");
  ws.binaryType = "arraybuffer";
  call = {
    ws, ctx, mic, player,
    marks: [],          // {name, at}: echo name once `at` samples have played
    base: 0,            // samples played when the player was last cleared
    sinceClear: 0,      // samples queued since then
    played: 0,
    sent: 0,
    agentLines: new Map(), // turn -> <li>
    ready: false,          // the server admitted the call
  };

  capture.port.onmessage = (e) => {
    if (ws.readyState === WebSocket.OPEN) {
      ws.send(e.data);
      call.sent += e.data.byteLength / 2;
      $("sent").textContent = (call.sent / RATE).toFixed(1);
    }
  };
  player.port.onmessage = (e) => onPlayed(e.data);
  ws.onmessage = (e) => (typeof e.data === "string" ? onMessage(JSON.parse(e.data)) : onAudio(e.data));
  ws.onclose = (e) => finish(closedBecause(e));
  ws.onerror = () => notice("The connection to Handset failed.");
  $("hangup").disabled = false;
  setState("connecting");
}

// closedBecause says why the socket closed. Before "ready" it is a refusal: the server's
// reason (a cap, a rate), or, with no reason, a refused connection (no access, another host).
function closedBecause(e) {
  if (call && !call.ready) {
    if (e.reason) return "Handset could not take the call: " + e.reason;
    return "Handset refused the connection. Reload the page; if it has an access link, open that again.";
  }
  return e.reason || "the call ended";
}

function onAudio(buf) {
  if (!call) return;
  call.sinceClear += buf.byteLength / 2;
  call.player.port.postMessage(buf, [buf]);
}

function onPlayed(p) {
  if (!call) return;
  call.played = p.played;
  if (p.cleared) {
    call.base = p.played;
    call.sinceClear = 0;
  }
  $("played").textContent = (p.played / RATE).toFixed(1);
  while (call.marks.length && call.marks[0].at <= p.played) {
    echoMark(call.marks.shift().name);
  }
}

function echoMark(name) {
  if (call.ws.readyState === WebSocket.OPEN) call.ws.send(JSON.stringify({ type: "mark", name }));
}

function onMessage(m) {
  if (!call) return;
  switch (m.type) {
    case "ready":
      call.ready = true;
      $("callid").textContent = m.call;
      setState("listening");
      break;
    case "mark":
      call.marks.push({ name: m.name, at: call.base + call.sinceClear });
      break;
    case "clear":
      // Dropped audio will never play: its marks come back now, as a carrier's would.
      call.player.port.postMessage("clear");
      for (const mk of call.marks) echoMark(mk.name);
      call.marks = [];
      call.base = call.played;
      call.sinceClear = 0;
      break;
    case "event":
      onEvent(m.event);
      break;
  }
}

function agentLine(turn) {
  let li = call.agentLines.get(turn);
  if (!li) {
    li = line("agent", "");
    call.agentLines.set(turn, li);
  }
  return li;
}

function onEvent(e) {
  switch (e.type) {
    case "stt.partial":
      $("interim").textContent = e.text || "";
      break;
    case "turn.commit":
      $("interim").textContent = "";
      line("caller", e.text);
      setState("thinking");
      break;
    case "agent.progress":
      notice("The agent is working" + (e.text ? ": " + e.text : "") + "…");
      break;
    case "tts.request": {
      const li = agentLine(e.turn);
      li.textContent = (li.textContent ? li.textContent + " " : "") + e.text;
      if (e.kind === "error") li.classList.add("error");
      break;
    }
    case "playout.first_audio":
      notice("");
      setState("speaking");
      break;
    case "playout.done":
      setState("listening");
      break;
    case "barge_in":
    case "turn.interrupted":
      if (call.agentLines.has(e.turn)) call.agentLines.get(e.turn).classList.add("interrupted");
      setState("listening");
      break;
    case "agent.error":
      notice("The agent failed: " + (e.message || e.kind || "error"));
      break;
    case "call.end":
      finish("the call ended: " + (e.reason || "done"));
      break;
  }
}

function finish(why) {
  if (!call) return;
  const c = call;
  call = null;
  if (c.ws.readyState === WebSocket.OPEN) {
    c.ws.send(JSON.stringify({ type: "hangup" }));
    c.ws.close(1000, "hang up");
  }
  c.mic.getTracks().forEach((t) => t.stop());
  c.ctx.close();
  setState("ended");
  notice(why);
  $("hangup").disabled = true;
  $("call").disabled = false;
  // Keep the figures of the finished call on screen.
  $("played").textContent = (c.played / RATE).toFixed(1);
}

$("call").addEventListener("click", start);
$("hangup").addEventListener("click", () => finish("you hung up"));
