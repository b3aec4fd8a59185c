// What is playing, drawn from an AnalyserNode: the waveform on top, a scrolling spectrogram
// (0–12 kHz, newest on the right) below.

const WAVE_SHARE = 0.4;
const COLUMN_PX = 2;

export class Scope {
  constructor(canvas, onPeak) {
    this.canvas = canvas;
    this.g = canvas.getContext("2d");
    this.onPeak = onPeak;
    this.analyser = null;
    this.g.fillStyle = "#0d0f14";
    this.g.fillRect(0, 0, canvas.width, canvas.height);
  }

  attach(analyser) {
    if (this.analyser) return;
    this.analyser = analyser;
    this.wave = new Float32Array(analyser.fftSize);
    this.spectrum = new Uint8Array(analyser.frequencyBinCount);
    const frame = () => {
      this.draw();
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
  }

  draw() {
    const { canvas, g } = this;
    const w = canvas.width;
    const waveH = Math.round(canvas.height * WAVE_SHARE);
    const specH = canvas.height - waveH;

    this.analyser.getFloatTimeDomainData(this.wave);
    let peak = 0;
    for (const v of this.wave) peak = Math.max(peak, Math.abs(v));
    this.onPeak?.(peak);

    g.fillStyle = "#0d0f14";
    g.fillRect(0, 0, w, waveH);
    g.strokeStyle = "#7c97ff";
    g.lineWidth = 1.5;
    g.beginPath();
    const step = this.wave.length / w;
    for (let x = 0; x < w; x++) {
      const y = waveH / 2 - this.wave[Math.floor(x * step)] * (waveH / 2 - 4);
      if (x === 0) g.moveTo(x, y);
      else g.lineTo(x, y);
    }
    g.stroke();

    // Scroll the spectrogram left and paint the newest column.
    g.drawImage(canvas, COLUMN_PX, waveH, w - COLUMN_PX, specH, 0, waveH, w - COLUMN_PX, specH);
    this.analyser.getByteFrequencyData(this.spectrum);
    const bins = this.spectrum.length;
    for (let y = 0; y < specH; y++) {
      const v = this.spectrum[Math.floor(((specH - 1 - y) / specH) * bins)] / 255;
      g.fillStyle = `hsl(${250 - v * 200}, 80%, ${v * 60}%)`;
      g.fillRect(w - COLUMN_PX, waveH + y, COLUMN_PX, 1);
    }
  }
}
