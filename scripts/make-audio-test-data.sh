#!/usr/bin/env bash
# Regenerates the small compressed reference clips that lyre-engine's audio_input tests decode
# (crates/lyre-engine/tests/data/). WAV cases are generated inside the tests themselves.
# Needs: sox with MP3 and Vorbis support (Debian: apt-get install sox libsox-fmt-mp3 libsox-fmt-all).
set -euo pipefail
out="$(cd "$(dirname "$0")/.." && pwd)/crates/lyre-engine/tests/data"
mkdir -p "$out"
# sox writes no dither noise (-D), no timestamps or comments, so reruns give the same files.
# WAV: 16 kHz mono 16-bit PCM, 440 Hz at -6 dBFS, 0.6 s (long enough for load_reference).
sox -D -n -r 16000 -b 16 -e signed-integer -c 1 "$out/tone-440hz-16000-s16.wav" synth 0.6 sine 440 gain -6
# WAV: 44.1 kHz mono 32-bit float, 880 Hz at -6 dBFS, 0.2 s (kept short: 4 bytes a sample).
sox -D -n -r 44100 -b 32 -e floating-point -c 1 "$out/tone-880hz-44100-f32.wav" synth 0.2 sine 880 gain -6
# FLAC: 44.1 kHz stereo 16-bit, 440 Hz at -6 dBFS in both channels, 1.0 s.
sox -D -n -r 44100 -b 16 -c 2 "$out/tone-440hz-44100-stereo.flac" synth 1.0 sine 440 gain -6
# MP3: 48 kHz mono, 1 kHz at -6 dBFS, 1.0 s, 64 kbit/s CBR.
sox -D -n -r 48000 -c 1 -C 64 "$out/tone-1000hz-48000.mp3" synth 1.0 sine 1000 gain -6
# Ogg Vorbis: 22.05 kHz mono, 660 Hz at -6 dBFS, 1.0 s, quality 3.
sox -D -n -r 22050 -c 1 -C 3 "$out/tone-660hz-22050.ogg" synth 1.0 sine 660 gain -6
ls -l "$out"
du -cb "$out"/* | tail -1  # keep the total under 100 KB
