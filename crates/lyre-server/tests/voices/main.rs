//! The voice store and cloned voices through the server: `/v1/voices`, stored voices by name in
//! every endpoint, tenants, aliases, WebSocket one-off cloning, and VoiceDesign's instruct-only
//! voices.
//!
//! `encoders` needs the real speaker and speech encoders (it fails until they are merged);
//! everything else uses the fixtures' stored encoder outputs.

mod support;

mod aliases;
mod encoders;
mod store_api;
mod synthesis;
mod tenants;
mod voice_design;
