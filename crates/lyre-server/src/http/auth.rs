//! Optional API keys. HTTP clients send `Authorization: Bearer KEY`; browsers opening a
//! WebSocket may send `?token=KEY` or the subprotocol `lyre.token.KEY`. Keys are compared in
//! constant time and never logged; each key may hold a bounded number of sessions. Each key
//! belongs to a tenant (see `tenants`), which owns the voices it uploads: every `/v1` request
//! carries its [`Caller`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::error::ApiError;
use super::AppState;
use crate::config::AuthSection;
use crate::errors::{ErrorCode, Failure};
use crate::tenants::Tenant;

/// Which configured key a request presented (its index, never the key itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyId(pub usize);

/// Who sent a request: the key (none when the server has no keys) and its tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub key: Option<KeyId>,
    pub tenant: Tenant,
}

impl Caller {
    /// The caller the middleware attached to a `/v1` request (the single tenant otherwise).
    pub fn of(req: &Request) -> Caller {
        req.extensions().get::<Caller>().cloned().unwrap_or_else(Caller::anonymous)
    }

    /// The caller of a server without keys: the one tenant.
    pub fn anonymous() -> Caller {
        Caller { key: None, tenant: Tenant::default_tenant() }
    }
}

#[derive(Debug, Default)]
pub struct KeyRegistry {
    keys: Vec<(Vec<u8>, Tenant)>,
    max_sessions_per_key: usize,
    active: Mutex<HashMap<KeyId, usize>>,
}

impl KeyRegistry {
    /// Keys that are each a tenant of their own (as `auth.api_keys`; not checked here).
    pub fn new(keys: &[String], max_sessions_per_key: usize) -> Self {
        KeyRegistry {
            keys: keys.iter().map(|k| (k.as_bytes().to_vec(), Tenant::of_solo_key(k))).collect(),
            max_sessions_per_key,
            active: Mutex::new(HashMap::new()),
        }
    }

    /// Every key of `[auth]`, each with its tenant.
    pub fn from_config(auth: &AuthSection) -> Result<Self, String> {
        let keys = auth.keys_and_tenants()?;
        Ok(KeyRegistry {
            keys: keys.into_iter().map(|(k, t)| (k.into_bytes(), t)).collect(),
            max_sessions_per_key: auth.max_sessions_per_key,
            active: Mutex::new(HashMap::new()),
        })
    }

    pub fn enabled(&self) -> bool {
        !self.keys.is_empty()
    }

    /// The key `presented` matches, checking every key so the time does not depend on which.
    pub fn identify(&self, presented: &[u8]) -> Option<KeyId> {
        let mut found = None;
        for (i, (key, _)) in self.keys.iter().enumerate() {
            if bool::from(key.as_slice().ct_eq(presented)) && found.is_none() {
                found = Some(KeyId(i));
            }
        }
        found
    }

    /// The caller presenting key `id`.
    pub fn caller(&self, id: KeyId) -> Caller {
        Caller { key: Some(id), tenant: self.keys[id.0].1.clone() }
    }

    /// Takes one of the key's session slots, or refuses with 429.
    pub fn acquire(self: &Arc<Self>, key: Option<KeyId>) -> Result<KeySlot, Failure> {
        let Some(key) = key.filter(|_| self.max_sessions_per_key > 0) else {
            return Ok(KeySlot { registry: None, key: KeyId(0) });
        };
        let mut active = self.active.lock().unwrap_or_else(|p| p.into_inner());
        let n = active.entry(key).or_insert(0);
        if *n >= self.max_sessions_per_key {
            return Err(Failure::new(
                ErrorCode::KeyBusy,
                format!("this API key already has {} sessions open", self.max_sessions_per_key),
            ));
        }
        *n += 1;
        Ok(KeySlot { registry: Some(self.clone()), key })
    }
}

/// Held while a session runs; releases the key's slot when dropped.
#[derive(Debug)]
pub struct KeySlot {
    registry: Option<Arc<KeyRegistry>>,
    key: KeyId,
}

impl Drop for KeySlot {
    fn drop(&mut self) {
        if let Some(r) = &self.registry {
            let mut active = r.active.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(n) = active.get_mut(&self.key) {
                *n = n.saturating_sub(1);
            }
        }
    }
}

/// Middleware on every `/v1` route.
pub async fn require_key(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    if !state.keys.enabled() {
        req.extensions_mut().insert(Caller::anonymous());
        return next.run(req).await;
    }
    match presented_key(&req).and_then(|k| state.keys.identify(&k)) {
        Some(id) => {
            let caller = state.keys.caller(id);
            if let Some(access) = super::access_log::AccessRecord::of(&req) {
                access.set_caller(format!("{}/key#{}", caller.tenant, id.0));
            }
            req.extensions_mut().insert(id);
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        None => {
            let mut resp = ApiError(Failure::new(ErrorCode::Unauthorized, "a valid API key is required"))
                .into_response();
            resp.headers_mut().insert("www-authenticate", HeaderValue::from_static("Bearer"));
            resp
        }
    }
}

fn presented_key(req: &Request) -> Option<Vec<u8>> {
    let headers = req.headers();
    if let Some(v) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
        if let Some(k) = v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")) {
            return Some(k.trim().as_bytes().to_vec());
        }
    }
    if let Some(protocols) = headers.get("sec-websocket-protocol").and_then(|v| v.to_str().ok()) {
        if let Some(k) = protocols.split(',').map(str::trim).find_map(|p| p.strip_prefix("lyre.token.")) {
            return Some(k.as_bytes().to_vec());
        }
    }
    let query = req.uri().query()?;
    query.split('&').find_map(|kv| kv.strip_prefix("token=")).map(|k| percent_decode(k).into_bytes())
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let hex = |c: u8| (c as char).to_digit(16);
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_matched_exactly() {
        let r = KeyRegistry::new(&["secret-one".into(), "secret-two".into()], 0);
        assert_eq!(r.identify(b"secret-two"), Some(KeyId(1)));
        assert_eq!(r.identify(b"secret-tw"), None);
        assert_eq!(r.identify(b"secret-two "), None);
        assert_eq!(r.identify(b""), None);
    }

    /// A plain `==` stops at the first differing byte: over 64 KiB keys that is a thousandfold
    /// difference between a first-byte and a last-byte mismatch. Constant time shows none.
    #[test]
    fn keys_are_compared_in_constant_time() {
        let key = vec![b'k'; 1 << 16];
        let r = KeyRegistry::new(&[String::from_utf8(key.clone()).unwrap()], 0);
        let mut first = key.clone();
        first[0] = b'x';
        let mut last = key.clone();
        *last.last_mut().unwrap() = b'x';
        let time = |probe: &[u8]| {
            let t = std::time::Instant::now();
            for _ in 0..20 {
                assert_eq!(r.identify(std::hint::black_box(probe)), None);
            }
            t.elapsed()
        };
        // The two probes take turns and each keeps its fastest round, so a busy machine slows
        // both alike instead of whichever happened to run during a burst of other work.
        let (mut a, mut b) = (std::time::Duration::MAX, std::time::Duration::MAX);
        for _ in 0..30 {
            a = a.min(time(&first));
            b = b.min(time(&last));
        }
        let (a, b) = (a.as_secs_f64(), b.as_secs_f64());
        assert!(a / b > 0.25 && a / b < 4.0, "first-byte mismatch {a:.6}s, last-byte {b:.6}s");
    }

    #[test]
    fn keys_name_their_tenants() {
        let auth = AuthSection {
            api_keys: vec!["solo-key-1234".into()],
            tenants: vec![crate::config::TenantSection {
                name: "acme".into(),
                keys: vec!["acme-key-0001".into(), "acme-key-0002".into()],
            }],
            ..Default::default()
        };
        let r = KeyRegistry::from_config(&auth).unwrap();
        let tenant = |k: &[u8]| r.caller(r.identify(k).unwrap()).tenant.to_string();
        assert_eq!(tenant(b"acme-key-0001"), "acme");
        assert_eq!(tenant(b"acme-key-0002"), "acme");
        assert_eq!(tenant(b"solo-key-1234"), Tenant::of_solo_key("solo-key-1234").to_string());
        assert_eq!(r.identify(b"acme-key-0003"), None);
    }

    #[test]
    fn per_key_sessions_are_bounded_and_released() {
        let r = Arc::new(KeyRegistry::new(&["secret-one".into()], 2));
        let a = r.acquire(Some(KeyId(0))).unwrap();
        let _b = r.acquire(Some(KeyId(0))).unwrap();
        assert_eq!(r.acquire(Some(KeyId(0))).unwrap_err().status(), 429);
        drop(a);
        r.acquire(Some(KeyId(0))).unwrap();
    }

    #[test]
    fn query_tokens_are_percent_decoded() {
        assert_eq!(percent_decode("a%2Fb%3d+c"), "a/b= c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
    }
}
