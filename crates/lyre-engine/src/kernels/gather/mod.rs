//! Kernels that move rows and descriptors: embedding lookups, the talker's input assembly, row
//! copies, the codec's RVQ dequantisation, and the redirect of an ended utterance's decoder
//! steps to a spare slot.

mod codec_gather;
mod combine_input;
mod copy_rows;
mod decoder_redirect;
mod embed_text;
mod frame_rows;
mod rvq_dequant;

pub use codec_gather::{Accumulate, CodecGather};
pub use combine_input::{CombineInput, EXTRA, FROM_ACC, NONE};
pub use copy_rows::{CopyRows, Source};
pub use decoder_redirect::DecoderRedirect;
pub use embed_text::{EmbedText, MAX_CHUNKS};
pub use frame_rows::FrameRows;
pub use rvq_dequant::RvqDequant;

pub(super) const SOURCES: [crate::gpu::KernelSource; 7] = [
    codec_gather::SOURCE,
    combine_input::SOURCE,
    copy_rows::SOURCE,
    decoder_redirect::SOURCE,
    embed_text::SOURCE,
    frame_rows::SOURCE,
    rvq_dequant::SOURCE,
];
