//! The voice store on both backends, one suite: SQLite (a file in a temporary directory) and a
//! real PostgreSQL server (see `postgres`). Create, get, list, delete, tenants, name collisions,
//! the per-tenant limit (also under concurrent uploads, and across replicas on PostgreSQL),
//! concurrent uploads of one name, importing voice files, and recovery
//! from a database that was down.

mod postgres;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lyre_server::tenants::Tenant;
use lyre_server::voices::{
    DatabaseUrl, StoreError, StoredVoice, VoiceStore, VoiceSummary, TENANT_INSERT_LOCK,
};
use sqlx::Connection;

const HIDDEN: usize = 64;

fn voice(name: &str, icl: bool) -> StoredVoice {
    let x: Vec<f32> = (0..HIDDEN).map(|i| (i as f32 * 0.37 + name.len() as f32).sin() / 3.0).collect();
    StoredVoice {
        lyre_voice: 1,
        name: name.to_string(),
        model: lyre_server::voices::ModelStamp {
            model_type: "base".into(),
            size: "0b6".into(),
            hidden_size: HIDDEN,
        },
        x_vector: x,
        ref_text: icl.then(|| "Okay. Yeah.".to_string()),
        ref_codes: icl.then(|| vec![[7u16; 16], [2047; 16], [0; 16]]),
        seconds: 1.04,
        created_unix_s: 1_767_225_600,
    }
}

fn tenant(name: &str) -> Tenant {
    Tenant::new(name).unwrap()
}

fn store(url: &DatabaseUrl, max_voices: usize) -> VoiceStore {
    VoiceStore::open(url.clone(), 4, Duration::from_secs(10), max_voices).unwrap()
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "lyre-store-{}-{}-{tag}",
        std::process::id(),
        rand::random::<u32>()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn names(list: &[(Tenant, VoiceSummary)]) -> Vec<String> {
    list.iter().map(|(t, v)| format!("{t}/{}", v.name)).collect()
}

/// Every check, on one database. Tenant names carry `run` so a shared server stays clean.
async fn suite(url: &DatabaseUrl, run: &str) {
    create_get_list_delete(url, run).await;
    tenants_are_separate(url, run).await;
    the_limit_is_per_tenant(url, run).await;
    concurrent_uploads_of_one_name_store_exactly_one(url, run).await;
    concurrent_uploads_never_pass_the_limit(url, run).await;
    voice_files_are_imported_once(url, run).await;
}

async fn create_get_list_delete(url: &DatabaseUrl, run: &str) {
    let s = store(url, 100);
    let t = tenant(&format!("{run}-a"));
    let icl = voice("alice", true);
    let plain = voice("Bob-2", false);
    s.insert(&t, &icl).await.unwrap();
    s.insert(&t, &plain).await.unwrap();
    // Another store on the same database (a restart, or another replica) sees the same rows.
    let other = store(url, 100);
    assert_eq!(other.get(&t, "alice").await.unwrap().unwrap(), icl, "f32 values round-trip exactly");
    assert_eq!(other.get(&t, "Bob-2").await.unwrap().unwrap(), plain);
    assert_eq!(other.get(&t, "ALICE").await.unwrap(), None, "names are case-sensitive");
    let listed = other.list(Some(&t)).await.unwrap();
    assert_eq!(names(&listed), [format!("{t}/Bob-2"), format!("{t}/alice")]);
    let (_, a) = &listed[1];
    assert_eq!(*a, icl.summary(), "the listing's columns match the voice");
    assert!(a.has_transcript && a.reference_frames == 3 && !listed[0].1.has_transcript);
    assert!(other.remove(&t, "alice").await.unwrap());
    assert!(!s.remove(&t, "alice").await.unwrap(), "gone for every store at once");
    assert_eq!(s.get(&t, "alice").await.unwrap(), None);
    s.close().await;
    other.close().await;
}

async fn tenants_are_separate(url: &DatabaseUrl, run: &str) {
    let s = store(url, 100);
    let (a, b) = (tenant(&format!("{run}-ta")), tenant(&format!("{run}-tb")));
    let va = voice("narrator", true);
    let vb = voice("narrator", false);
    s.insert(&a, &va).await.unwrap();
    s.insert(&b, &vb).await.unwrap();
    assert_eq!(s.get(&a, "narrator").await.unwrap().unwrap(), va, "each tenant has its own `narrator`");
    assert_eq!(s.get(&b, "narrator").await.unwrap().unwrap(), vb);
    let again = s.insert(&b, &va).await.unwrap_err();
    assert!(matches!(again, StoreError::Exists(ref n) if n == "narrator"), "{again}");
    assert_eq!(s.get(&b, "narrator").await.unwrap().unwrap(), vb, "never overwritten");
    s.insert(&a, &voice("only-a", false)).await.unwrap();
    assert_eq!(s.get(&b, "only-a").await.unwrap(), None);
    assert!(!s.remove(&b, "only-a").await.unwrap(), "another tenant's voice cannot be deleted");
    assert!(s.get(&a, "only-a").await.unwrap().is_some());
    assert_eq!(names(&s.list(Some(&b)).await.unwrap()), [format!("{b}/narrator")]);
    let all = names(&s.list(None).await.unwrap());
    for want in [format!("{a}/narrator"), format!("{a}/only-a"), format!("{b}/narrator")] {
        assert!(all.contains(&want), "the operator's listing has every tenant: {all:?}");
    }
    s.close().await;
}

async fn the_limit_is_per_tenant(url: &DatabaseUrl, run: &str) {
    let s = store(url, 2);
    let (a, b) = (tenant(&format!("{run}-la")), tenant(&format!("{run}-lb")));
    s.insert(&a, &voice("one", false)).await.unwrap();
    s.insert(&a, &voice("two", false)).await.unwrap();
    let e = s.insert(&a, &voice("three", false)).await.unwrap_err();
    assert!(matches!(e, StoreError::Full(2)), "{e}");
    let e = s.insert(&a, &voice("two", false)).await.unwrap_err();
    assert!(matches!(e, StoreError::Exists(_)), "a taken name is 409 even when full: {e}");
    s.insert(&b, &voice("three", false)).await.unwrap();
    s.close().await;
}

async fn concurrent_uploads_of_one_name_store_exactly_one(url: &DatabaseUrl, run: &str) {
    // Two stores: two replicas racing, each with several connections.
    let stores = [Arc::new(store(url, 100)), Arc::new(store(url, 100))];
    let t = tenant(&format!("{run}-race"));
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (s, t) = (stores[i % 2].clone(), t.clone());
        let mut v = voice("contested", i % 3 == 0);
        v.seconds = i as f32;
        tasks.push(tokio::spawn(async move { s.insert(&t, &v).await.map(|()| i) }));
    }
    let mut won = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            Ok(i) => won.push(i),
            Err(StoreError::Exists(_)) => {}
            Err(e) => panic!("a racing upload failed otherwise: {e}"),
        }
    }
    assert_eq!(won.len(), 1, "exactly one upload wins: {won:?}");
    let stored = stores[0].get(&t, "contested").await.unwrap().unwrap();
    assert_eq!(stored.seconds, won[0] as f32, "the stored voice is the winner's");
    for s in stores {
        s.close().await;
    }
}

async fn concurrent_uploads_never_pass_the_limit(url: &DatabaseUrl, run: &str) {
    // Two replicas, each with several connections, racing to fill a tenant's last places; the
    // race is short, so it runs for several tenants.
    const LIMIT: usize = 3;
    let stores = [Arc::new(store(url, LIMIT)), Arc::new(store(url, LIMIT))];
    for round in 0..4 {
        let t = tenant(&format!("{run}-full{round}"));
        let mut tasks = Vec::new();
        for i in 0..24 {
            let (s, t) = (stores[i % 2].clone(), t.clone());
            tasks.push(tokio::spawn(async move { s.insert(&t, &voice(&format!("v{i}"), false)).await }));
        }
        let mut stored = 0;
        for task in tasks {
            match task.await.unwrap() {
                Ok(()) => stored += 1,
                Err(StoreError::Full(LIMIT)) => {}
                Err(e) => panic!("a racing upload failed otherwise: {e}"),
            }
        }
        let listed = stores[0].list(Some(&t)).await.unwrap();
        assert_eq!(listed.len(), LIMIT, "round {round}: the tenant holds {:?}", names(&listed));
        assert_eq!(stored, LIMIT, "round {round}: exactly the limit's worth of uploads is accepted");
    }
    for s in stores {
        s.close().await;
    }
}

fn write_file(dir: &Path, file: &str, v: &StoredVoice) {
    std::fs::write(dir.join(file), serde_json::to_vec(v).unwrap()).unwrap();
}

async fn voice_files_are_imported_once(url: &DatabaseUrl, run: &str) {
    let dir = temp_dir("import");
    let s = store(url, 1);
    let t = tenant(&format!("{run}-imp"));
    write_file(&dir, "one.json", &voice("one", true));
    write_file(&dir, "two.json", &voice("two", false));
    write_file(&dir, "three.json", &voice("three", false));
    write_file(&dir, "renamed.json", &voice("other", false));
    std::fs::write(dir.join("junk.json"), b"not json").unwrap();
    std::fs::write(dir.join("notes.txt"), b"not a voice").unwrap();
    s.insert(&t, &voice("three", true)).await.unwrap();

    let r = s.import_dir(&dir, &t).await.unwrap();
    assert_eq!(r.added, ["one", "two"], "max_voices does not bound an import");
    assert_eq!(r.name_taken, ["three"], "the database's own voice is kept");
    assert_eq!(r.unreadable.len(), 2, "{:?}", r.unreadable);
    assert_eq!(s.get(&t, "one").await.unwrap().unwrap(), voice("one", true));
    assert!(s.get(&t, "three").await.unwrap().unwrap().has_transcript(), "not replaced by the file");

    // Once: a deleted voice does not come back at the next import, and the files stay.
    assert!(s.remove(&t, "one").await.unwrap());
    let r = s.import_dir(&dir, &t).await.unwrap();
    assert!(r.added.is_empty(), "{:?}", r.added);
    assert_eq!(r.already_imported, ["one", "three", "two"]);
    assert_eq!(s.get(&t, "one").await.unwrap(), None);
    assert!(dir.join("one.json").is_file());
    // A changed file is a new voice file.
    write_file(&dir, "one.json", &voice("one", false));
    assert_eq!(s.import_dir(&dir, &t).await.unwrap().added, ["one"]);
    // Another tenant imports the same files as its own.
    let other = tenant(&format!("{run}-imp2"));
    assert_eq!(s.import_dir(&dir, &other).await.unwrap().added, ["one", "three", "two"]);
    s.close().await;
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn sqlite_passes_the_store_suite() {
    let dir = temp_dir("sqlite");
    let url = DatabaseUrl::parse(&format!("sqlite://{}/nested/voices.db", dir.display())).unwrap();
    suite(&url, "sqlite").await;
    assert!(dir.join("nested/voices.db").is_file(), "the file and its directory are made");
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn postgres_passes_the_store_suite() {
    let pg = postgres::Postgres::start();
    let url = DatabaseUrl::parse(&pg.url).unwrap();
    suite(&url, &format!("pg{}", rand::random::<u32>())).await;
}

/// PostgreSQL reads each statement's snapshot, so a replica could see room for one more voice
/// while another replica's insert of the last one is still uncommitted. Here that other replica
/// is a connection of the test's own, holding the tenant's insert lock in an open transaction
/// with the tenant's third voice inserted: the store's insert must wait for it, then find the
/// tenant full.
#[tokio::test]
async fn postgres_inserts_for_one_tenant_take_turns_across_replicas() {
    let pg = postgres::Postgres::start();
    let url = DatabaseUrl::parse(&pg.url).unwrap();
    let s = Arc::new(store(&url, 3));
    let t = tenant("turns");
    s.insert(&t, &voice("one", false)).await.unwrap();
    s.insert(&t, &voice("two", false)).await.unwrap();

    let mut other = sqlx::PgConnection::connect(&pg.url).await.unwrap();
    let mut tx = other.begin().await.unwrap();
    sqlx::query(TENANT_INSERT_LOCK).bind(t.as_str()).execute(&mut *tx).await.unwrap();
    sqlx::query(
        "INSERT INTO voices (tenant, name, model_type, model_size, hidden_size, has_transcript, \
         reference_frames, seconds, created_unix_s, voice) VALUES ($1, 'three', 'base', '0.6b', 64, \
         false, 0, 3.0, 0, '{}')",
    )
    .bind(t.as_str())
    .execute(&mut *tx)
    .await
    .unwrap();

    let (s2, t2) = (s.clone(), t.clone());
    let mut fourth = tokio::spawn(async move { s2.insert(&t2, &voice("four", false)).await });
    let early = tokio::time::timeout(Duration::from_millis(500), &mut fourth).await;
    assert!(early.is_err(), "the insert went ahead of the other replica's: {early:?}");
    tx.commit().await.unwrap();
    let e = fourth.await.unwrap().unwrap_err();
    assert!(matches!(e, StoreError::Full(3)), "{e}");
    assert_eq!(s.list(Some(&t)).await.unwrap().len(), 3);
    s.close().await;
}

/// Down, then back: operations fail fast with `Unavailable` (the server's 503), and the same
/// store works again once the database returns, without being reopened.
#[tokio::test]
async fn a_store_recovers_when_its_database_returns() {
    let dir = temp_dir("recover");
    let db = dir.join("sub");
    let url = DatabaseUrl::parse(&format!("sqlite://{}/voices.db", db.display())).unwrap();
    let s = VoiceStore::open(url, 2, Duration::from_millis(300), 10).unwrap();
    // The directory disappears under the server: nothing can be opened.
    std::fs::remove_dir_all(&db).unwrap();
    std::fs::write(&db, b"a file where the directory was").unwrap();
    let t = tenant("default");
    let started = std::time::Instant::now();
    let e = s.list(Some(&t)).await.unwrap_err();
    assert!(matches!(e, StoreError::Unavailable(_)), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5), "bounded by the timeout: {:?}", started.elapsed());
    std::fs::remove_file(&db).unwrap();
    std::fs::create_dir_all(&db).unwrap();
    s.insert(&t, &voice("back", false)).await.unwrap();
    assert_eq!(names(&s.list(Some(&t)).await.unwrap()), ["default/back"]);
    s.close().await;
    std::fs::remove_dir_all(dir).unwrap();
}
