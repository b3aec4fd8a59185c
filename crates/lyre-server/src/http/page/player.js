// Gapless playback of 80 ms PCM frames through the Web Audio API. Each frame is an
// AudioBufferSourceNode started exactly where the previous one ends, on the AudioContext's
// sample clock; a short lead absorbs network jitter. When the stream falls behind (or pauses,
// waiting for text), playback restarts after a fresh lead, longer each time, and the gap is counted.

const LEAD_S = 0.12;
const MAX_LEAD_S = 0.6;
const SAMPLE_RATE = 24000;

export class Player {
  constructor() {
    this.ctx = null;
    this.analyser = null;
    this.output = null;
    this.sources = new Set();
    this.gaps = 0;
    this.lead = LEAD_S;
    this.baseTime = 0;
    this.samplesQueued = 0;
  }

  // Must run inside a user gesture (a click) so that the browser lets the audio start.
  prepare() {
    if (!this.ctx) {
      try {
        this.ctx = new AudioContext({ sampleRate: SAMPLE_RATE, latencyHint: "interactive" });
      } catch {
        this.ctx = new AudioContext(); // the buffers are resampled then
      }
      this.analyser = this.ctx.createAnalyser();
      this.analyser.fftSize = 2048;
      this.analyser.smoothingTimeConstant = 0.2;
      this.analyser.connect(this.ctx.destination);
    }
    return this.ctx.resume();
  }

  // A new utterance: its own gain node, so that stop() silences only it.
  begin() {
    this.stop();
    this.output = this.ctx.createGain();
    this.output.connect(this.analyser);
    this.gaps = 0;
    this.lead = LEAD_S;
    this.samplesQueued = 0;
    this.baseTime = 0;
  }

  // Schedules one frame of s16le samples; returns its start time on the context clock.
  push(bytes, sampleRate = SAMPLE_RATE) {
    const pcm = new Int16Array(bytes);
    const buffer = this.ctx.createBuffer(1, pcm.length, sampleRate);
    const channel = buffer.getChannelData(0);
    for (let i = 0; i < pcm.length; i++) channel[i] = pcm[i] / 32768;

    const now = this.ctx.currentTime;
    let when = this.baseTime + this.samplesQueued / sampleRate;
    if (this.samplesQueued === 0 || when < now + 0.005) {
      if (this.samplesQueued > 0) {
        this.gaps++;
        this.lead = Math.min(MAX_LEAD_S, this.lead + 0.1);
      }
      this.baseTime = now + this.lead;
      this.samplesQueued = 0;
      when = this.baseTime;
    }
    this.samplesQueued += pcm.length;

    const source = this.ctx.createBufferSource();
    source.buffer = buffer;
    source.connect(this.output);
    source.onended = () => this.sources.delete(source);
    source.start(when);
    this.sources.add(source);
    return when;
  }

  // Seconds of audio scheduled but not yet played.
  bufferedAhead() {
    if (!this.ctx || this.samplesQueued === 0) return 0;
    return Math.max(0, this.baseTime + this.samplesQueued / SAMPLE_RATE - this.ctx.currentTime);
  }

  get playing() {
    return this.sources.size > 0;
  }

  // Fades out over 15 ms (no click) and drops everything scheduled.
  stop() {
    if (!this.output) return;
    const t = this.ctx.currentTime;
    this.output.gain.setValueAtTime(this.output.gain.value, t);
    this.output.gain.linearRampToValueAtTime(0, t + 0.015);
    for (const s of this.sources) s.stop(t + 0.02);
    this.sources.clear();
    this.samplesQueued = 0;
    const old = this.output;
    setTimeout(() => old.disconnect(), 50);
    this.output = null;
  }
}
