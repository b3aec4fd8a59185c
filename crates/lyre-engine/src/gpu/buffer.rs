//! Buffer creation and blocking readback.

use bytemuck::Pod;
use wgpu::util::DeviceExt;

use super::GpuContext;
use crate::error::{EngineError, Result};

const STORAGE: wgpu::BufferUsages =
    wgpu::BufferUsages::STORAGE.union(wgpu::BufferUsages::COPY_DST).union(wgpu::BufferUsages::COPY_SRC);

impl GpuContext {
    /// A storage buffer holding `bytes` (padded to a multiple of 4).
    pub fn storage_from_bytes(&self, label: &str, bytes: &[u8]) -> Result<wgpu::Buffer> {
        self.check_size(label, bytes.len() as u64)?;
        let buffer = if bytes.len().is_multiple_of(4) && !bytes.is_empty() {
            self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytes,
                usage: STORAGE,
            })
        } else {
            let mut padded = bytes.to_vec();
            padded.resize(bytes.len().div_ceil(4).max(1) * 4, 0);
            self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: &padded,
                usage: STORAGE,
            })
        };
        self.name_buffer(&buffer, label, Some(bytes), false);
        Ok(buffer)
    }

    /// A storage buffer holding a slice of plain values.
    pub fn storage_from<T: Pod>(&self, label: &str, data: &[T]) -> Result<wgpu::Buffer> {
        self.storage_from_bytes(label, bytemuck::cast_slice(data))
    }

    /// A zero-filled storage buffer of `size` bytes (rounded up to 16).
    pub fn storage_zeroed(&self, label: &str, size: u64) -> Result<wgpu::Buffer> {
        let size = size.div_ceil(16).max(1) * 16;
        self.check_size(label, size)?;
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: STORAGE,
            mapped_at_creation: false,
        });
        self.name_buffer(&buffer, label, None, false);
        Ok(buffer)
    }

    /// A uniform buffer holding one parameter struct.
    pub fn uniform<T: Pod>(&self, label: &str, value: &T) -> wgpu::Buffer {
        let buffer = self.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: bytemuck::bytes_of(value),
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        });
        self.name_buffer(&buffer, label, Some(bytemuck::bytes_of(value)), true);
        buffer
    }

    fn check_size(&self, label: &str, size: u64) -> Result<()> {
        if size > self.max_binding() {
            return Err(EngineError::Capacity(format!(
                "buffer `{label}` needs {size} bytes, more than this adapter's largest storage \
                 binding ({} bytes); lower max_sessions / max_positions or use a larger GPU",
                self.max_binding()
            )));
        }
        Ok(())
    }
}

/// A reusable host-visible buffer for reading results back.
pub struct Readback {
    staging: wgpu::Buffer,
}

impl Readback {
    pub fn new(ctx: &GpuContext, label: &str, size: u64) -> Self {
        let staging = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: size.div_ceil(4).max(1) * 4,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Readback { staging }
    }

    pub fn size(&self) -> u64 {
        self.staging.size()
    }

    /// Records a copy of `size` bytes of `src` into the staging buffer.
    pub fn copy_from(&self, encoder: &mut wgpu::CommandEncoder, src: &wgpu::Buffer, size: u64) {
        self.copy_from_at(encoder, src, 0, size);
    }

    /// Records a copy of the first `size` bytes of `src` to `offset` in the staging buffer
    /// (several results, one readback).
    pub fn copy_from_at(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        src: &wgpu::Buffer,
        offset: u64,
        size: u64,
    ) {
        if size > 0 {
            encoder.copy_buffer_to_buffer(src, 0, &self.staging, offset, size);
        }
    }

    /// Waits for the GPU, then copies the first `size` bytes out (after the submit that
    /// carried [`Readback::copy_from`]).
    pub fn read(&self, ctx: &GpuContext, size: u64) -> Result<Vec<u8>> {
        self.read_after(ctx, size, None)
    }

    /// As [`Readback::read`], but waits only for `submission` (the one that carried the copy),
    /// not for work submitted after it.
    pub fn read_after(
        &self,
        ctx: &GpuContext,
        size: u64,
        submission: Option<wgpu::SubmissionIndex>,
    ) -> Result<Vec<u8>> {
        let slice = self.staging.slice(..size);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        ctx.wait_for(submission)?;
        rx.recv()
            .map_err(|_| EngineError::Gpu("readback callback dropped".into()))?
            .map_err(|e| EngineError::Gpu(format!("map_async: {e}")))?;
        let bytes = slice
            .get_mapped_range()
            .map_err(|e| EngineError::Gpu(format!("get_mapped_range: {e}")))?
            .to_vec();
        self.staging.unmap();
        Ok(bytes)
    }
}

/// Reads a whole buffer back as values of type `T` (blocking; for tests and tools).
pub fn read_buffer<T: Pod>(ctx: &GpuContext, buffer: &wgpu::Buffer) -> Result<Vec<T>> {
    let size = buffer.size();
    let rb = Readback::new(ctx, "read_buffer", size);
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    rb.copy_from(&mut encoder, buffer, size);
    ctx.queue.submit(Some(encoder.finish()));
    let bytes = rb.read(ctx, size)?;
    Ok(bytemuck::pod_collect_to_vec(&bytes))
}
