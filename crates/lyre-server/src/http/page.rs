//! The demo page at `/`: plain HTML, CSS and JavaScript modules compiled into the binary, no
//! build step. The page learns everything else (voices, languages, the demo-model notice) from
//! the public API, so these handlers need no state.

use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS};
use axum::response::IntoResponse;
use axum::routing::{get, MethodRouter};
use axum::Router;

/// The page's files: URL path, content type, body.
const ASSETS: &[(&str, &str, &str)] = &[
    ("/", "text/html; charset=utf-8", include_str!("page/index.html")),
    ("/static/style.css", "text/css; charset=utf-8", include_str!("page/style.css")),
    ("/static/app.js", JS, include_str!("page/app.js")),
    ("/static/api.js", JS, include_str!("page/api.js")),
    ("/static/session.js", JS, include_str!("page/session.js")),
    ("/static/player.js", JS, include_str!("page/player.js")),
    ("/static/scope.js", JS, include_str!("page/scope.js")),
];

const JS: &str = "text/javascript; charset=utf-8";

/// Same-origin only: the page talks to the server that served it (HTTP and WebSocket).
const CSP: &str = "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; \
                   media-src 'self' blob:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// Routes for `/` and `/static/*`, open to everyone (the page asks for an API key itself).
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    ASSETS.iter().fold(Router::new(), |router, &(path, content_type, body)| {
        router.route(path, asset(content_type, body))
    })
}

fn asset<S: Clone + Send + Sync + 'static>(
    content_type: &'static str,
    body: &'static str,
) -> MethodRouter<S> {
    get(move || async move {
        (
            [
                (CONTENT_TYPE, content_type),
                (CACHE_CONTROL, "no-cache"),
                (X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (CONTENT_SECURITY_POLICY, CSP),
            ],
            body,
        )
            .into_response()
    })
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::{Request, StatusCode};
    use tower::ServiceExt;

    use super::*;

    async fn get_page(path: &str) -> (StatusCode, String, String) {
        let req = Request::get(path).body(Body::empty()).unwrap();
        let resp = routes::<()>().oneshot(req).await.unwrap();
        let status = resp.status();
        let ct = resp.headers()[CONTENT_TYPE].to_str().unwrap().to_string();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        (status, ct, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn root_serves_the_html_page() {
        let (status, ct, body) = get_page("/").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(ct, "text/html; charset=utf-8");
        assert!(body.starts_with("<!doctype html>"), "{body:.40}");
        for id in
            ["id=\"text\"", "id=\"voice\"", "id=\"language\"", "id=\"speak\"", "id=\"stop\"", "id=\"key\""]
        {
            assert!(body.contains(id), "the page lacks {id}");
        }
        assert!(body.contains("<script type=\"module\" src=\"/static/app.js\">"));
    }

    #[tokio::test]
    async fn every_script_and_style_the_page_names_is_served_with_its_type() {
        let (_, _, html) = get_page("/").await;
        assert!(html.contains("href=\"/static/style.css\""));
        assert_eq!(get_page("/static/style.css").await.1, "text/css; charset=utf-8");
        let mut imports = 0;
        for (path, _, body) in ASSETS.iter().filter(|a| a.0.ends_with(".js")) {
            let (status, ct, served) = get_page(path).await;
            assert_eq!((status, ct.as_str()), (StatusCode::OK, JS), "{path}");
            assert_eq!(&served, body);
            // Every module a script imports is served too.
            for import in served.lines().filter_map(|l| l.split("from \"").nth(1)) {
                let target = import.split('"').next().unwrap().replace("./", "/static/");
                assert!(ASSETS.iter().any(|a| a.0 == target), "{path} imports unserved {target}");
                imports += 1;
            }
        }
        assert_eq!(imports, 4, "app.js imports the other four modules");
    }
}
