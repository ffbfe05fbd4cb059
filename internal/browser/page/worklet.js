// Audio worklets for the call page. They run on the audio thread: no allocation per block
// beyond what the message port needs.

const FRAME = 320; // 20 ms at 16 kHz

// capture turns microphone blocks (128 float samples) into 20 ms Int16 frames.
class Capture extends AudioWorkletProcessor {
  constructor() {
    super();
    this.frame = new Int16Array(FRAME);
    this.n = 0;
  }
  process(inputs) {
    const ch = inputs[0] && inputs[0][0];
    if (!ch) return true;
    for (let i = 0; i < ch.length; i++) {
      const v = Math.max(-1, Math.min(1, ch[i]));
      this.frame[this.n++] = v < 0 ? v * 0x8000 : v * 0x7fff;
      if (this.n === FRAME) {
        this.port.postMessage(this.frame.buffer, [this.frame.buffer]);
        this.frame = new Int16Array(FRAME);
        this.n = 0;
      }
    }
    return true;
  }
}

// player plays agent audio from a queue and reports how many samples it has played, so
// the page can echo marks when the audio before them has really been heard.
class Player extends AudioWorkletProcessor {
  constructor() {
    super();
    this.chunks = []; // Float32Arrays waiting to play
    this.offset = 0;  // read position in chunks[0]
    this.played = 0;  // samples played since the call began
    this.queued = 0;  // samples ever queued
    this.sinceReport = 0;
    this.port.onmessage = (e) => {
      if (e.data === "clear") {
        this.chunks = [];
        this.offset = 0;
        this.queued = this.played;
        this.port.postMessage({ played: this.played, cleared: true });
        return;
      }
      const pcm = new Int16Array(e.data);
      const f = new Float32Array(pcm.length);
      for (let i = 0; i < pcm.length; i++) f[i] = pcm[i] / 0x8000;
      this.chunks.push(f);
      this.queued += f.length;
    };
  }
  process(_inputs, outputs) {
    const out = outputs[0][0];
    let i = 0;
    while (i < out.length && this.chunks.length > 0) {
      const c = this.chunks[0];
      const n = Math.min(out.length - i, c.length - this.offset);
      out.set(c.subarray(this.offset, this.offset + n), i);
      i += n;
      this.offset += n;
      this.played += n;
      if (this.offset === c.length) {
        this.chunks.shift();
        this.offset = 0;
      }
    }
    out.fill(0, i);
    this.sinceReport += out.length;
    if (this.sinceReport >= FRAME) { // about every 20 ms
      this.sinceReport = 0;
      this.port.postMessage({ played: this.played, idle: this.chunks.length === 0 });
    }
    return true;
  }
}

registerProcessor("capture", Capture);
registerProcessor("player", Player);
