//! Caps on open WebSocket connections, in total and per API key: each socket holds a
//! [`SocketSlot`] for its whole life, so a client cannot hold thousands of idle sockets.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::auth::KeyId;
use crate::errors::{ErrorCode, Failure};

/// Counts open sockets against `limits.max_ws_connections` and
/// `limits.max_ws_connections_per_key` (0: no cap).
#[derive(Debug, Default)]
pub struct SocketRegistry {
    max_total: usize,
    max_per_key: usize,
    open: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_key: HashMap<KeyId, usize>,
}

impl SocketRegistry {
    pub fn new(max_total: usize, max_per_key: usize) -> Self {
        SocketRegistry { max_total, max_per_key, open: Mutex::new(Counts::default()) }
    }

    /// Open sockets now.
    pub fn open(&self) -> usize {
        self.counts().total
    }

    /// Takes a place for one socket, or refuses it (503 `too_many_connections` or 429
    /// `key_too_many_connections`).
    pub fn acquire(self: &Arc<Self>, key: Option<KeyId>) -> Result<SocketSlot, Failure> {
        let mut counts = self.counts();
        if self.max_total > 0 && counts.total >= self.max_total {
            return Err(Failure::new(
                ErrorCode::TooManyConnections,
                format!(
                    "the server already has {} WebSocket connections open; retry shortly",
                    self.max_total
                ),
            ));
        }
        if let Some(k) = key.filter(|_| self.max_per_key > 0) {
            if counts.per_key.get(&k).copied().unwrap_or(0) >= self.max_per_key {
                return Err(Failure::new(
                    ErrorCode::KeyTooManyConnections,
                    format!("this API key already has {} WebSocket connections open", self.max_per_key),
                ));
            }
            *counts.per_key.entry(k).or_insert(0) += 1;
        }
        counts.total += 1;
        Ok(SocketSlot { registry: self.clone(), key: key.filter(|_| self.max_per_key > 0) })
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Held by an open socket; gives its place back when dropped.
#[derive(Debug)]
pub struct SocketSlot {
    registry: Arc<SocketRegistry>,
    key: Option<KeyId>,
}

impl Drop for SocketSlot {
    fn drop(&mut self) {
        let mut counts = self.registry.counts();
        counts.total -= 1;
        if let Some(k) = self.key {
            if let Some(n) = counts.per_key.get_mut(&k) {
                *n -= 1;
                if *n == 0 {
                    counts.per_key.remove(&k);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_apply_in_total_and_per_key_and_free_on_drop() {
        let reg = Arc::new(SocketRegistry::new(3, 2));
        let a1 = reg.acquire(Some(KeyId(0))).unwrap();
        let _a2 = reg.acquire(Some(KeyId(0))).unwrap();
        assert_eq!(reg.acquire(Some(KeyId(0))).unwrap_err().code, "key_too_many_connections");
        let _b = reg.acquire(Some(KeyId(1))).unwrap();
        let err = reg.acquire(Some(KeyId(2))).unwrap_err();
        assert_eq!((err.status(), err.code), (503, ErrorCode::TooManyConnections));
        assert_eq!(reg.open(), 3);
        drop(a1);
        assert_eq!(reg.open(), 2);
        let _a3 = reg.acquire(Some(KeyId(0))).unwrap();
        assert_eq!(reg.open(), 3);
    }

    #[test]
    fn zero_means_no_cap_and_anonymous_sockets_count_only_in_total() {
        let reg = Arc::new(SocketRegistry::new(0, 1));
        let slots: Vec<_> = (0..100).map(|_| reg.acquire(None).unwrap()).collect();
        assert_eq!(reg.open(), 100);
        drop(slots);
        assert_eq!(reg.open(), 0);
    }
}
