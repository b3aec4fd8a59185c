//! Writing a stream of frames to a seekable file (`lyre synth --out`): each frame is encoded and
//! written as it comes, so memory does not grow with the clip, and at the end the WAV and FLAC
//! headers get the real sizes (and FLAC its MD5) that [`super::encode_clip`] gives a clip, so
//! the file equals that clip byte for byte.

use std::io::{self, Seek, SeekFrom, Write};

use super::{stream_encoder, wav, AudioError, AudioFormat, FlacStream, FrameEncoder};

/// Bytes of the file kept to patch its header at the end.
const HEAD_BYTES: usize = 64;

enum Encoder {
    Flac(Box<FlacStream>),
    Other(Box<dyn FrameEncoder>),
}

impl Encoder {
    fn get(&mut self) -> &mut dyn FrameEncoder {
        match self {
            Encoder::Flac(e) => e.as_mut(),
            Encoder::Other(e) => e.as_mut(),
        }
    }
}

pub struct FileWriter<W: Write + Seek> {
    out: W,
    format: AudioFormat,
    encoder: Encoder,
    /// The first bytes written: the header that [`FileWriter::finish`] patches.
    head: Vec<u8>,
    written: u64,
}

impl<W: Write + Seek> FileWriter<W> {
    pub fn new(format: AudioFormat, sample_rate: u32, out: W) -> Result<Self, AudioError> {
        let encoder = match format {
            AudioFormat::Flac => Encoder::Flac(Box::new(FlacStream::new(sample_rate)?)),
            other => Encoder::Other(stream_encoder(other, sample_rate)?),
        };
        Ok(FileWriter { out, format, encoder, head: Vec::with_capacity(HEAD_BYTES), written: 0 })
    }

    /// Encodes and writes one chunk of samples (an 80 ms frame).
    pub fn push(&mut self, samples: &[f32]) -> io::Result<()> {
        let bytes = self.encoder.get().push(samples).map_err(io::Error::other)?;
        self.write(&bytes)
    }

    /// Ends the stream, patches the header where the format has sizes in it, and returns the
    /// output (flushed).
    pub fn finish(mut self) -> io::Result<W> {
        let tail = self.encoder.get().finish().map_err(io::Error::other)?;
        self.write(&tail)?;
        let patched = match (&self.encoder, self.format) {
            (_, AudioFormat::Wav) => {
                let data = self.written.saturating_sub(wav::HEADER_LEN as u64);
                wav::patch_header_sizes(&mut self.head, data).map_err(io::Error::other)?;
                true
            }
            (Encoder::Flac(flac), _) => {
                flac.patch_clip_header(&mut self.head).map_err(io::Error::other)?;
                true
            }
            _ => false,
        };
        if patched {
            self.out.seek(SeekFrom::Start(0))?;
            self.out.write_all(&self.head)?;
            self.out.seek(SeekFrom::End(0))?;
        }
        self.out.flush()?;
        Ok(self.out)
    }

    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        let keep = (HEAD_BYTES - self.head.len()).min(bytes.len());
        self.head.extend_from_slice(&bytes[..keep]);
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::super::test_util::sweep;
    use super::super::{encode_clip, OutputSpec, FRAME_SAMPLES};
    use super::*;

    #[test]
    fn a_file_written_frame_by_frame_equals_the_clip() {
        let samples = sweep(FRAME_SAMPLES * 9 + 100);
        for format in AudioFormat::ALL.into_iter().filter(|f| f.is_built()) {
            let rate = OutputSpec::plain(format).sample_rate;
            let mut w = FileWriter::new(format, rate, Cursor::new(Vec::new())).unwrap();
            for frame in samples.chunks(FRAME_SAMPLES) {
                w.push(frame).unwrap();
            }
            let file = w.finish().unwrap().into_inner();
            assert_eq!(file, encode_clip(format, &samples, rate).unwrap(), "{format}");
        }
    }
}
