//! An operator of the console served in-process (the console's router, or the API and the
//! console as `native serve` serves them): signed in with the operator token once, then GETs
//! pages and POSTs actions' forms with the CSRF token of the page they are on, as a browser
//! would. What each console test used to spell out for itself.

use axum::body::Body;
use axum::http::{HeaderMap, Request};
use http_body_util::BodyExt;

/// A service that answers requests (an axum router, `native_core::inbound::App`).
pub trait Serves:
    tower::Service<
        Request<Body>,
        Response = axum::response::Response,
        Error = std::convert::Infallible,
        Future: Send,
    > + Clone
    + Send
{
}

impl<S> Serves for S where
    S: tower::Service<
            Request<Body>,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
            Future: Send,
        > + Clone
        + Send
{
}

/// An answer: status, headers, body as text.
pub type Answer = (u16, HeaderMap, String);

/// Sends `req` to `svc` and reads the whole answer.
pub async fn call<S: Serves>(svc: &S, req: Request<Body>) -> Answer {
    let r = tower::ServiceExt::oneshot(svc.clone(), req)
        .await
        .unwrap_or_else(|e| match e {});
    let (parts, body) = r.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (
        parts.status.as_u16(),
        parts.headers,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

/// The CSRF token of the first action form on `page`.
pub fn csrf_of(page: &str) -> String {
    page.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .unwrap_or_else(|| panic!("no action form on the page: {page}"))
        .to_string()
}

/// An operator signed in to the console `svc` serves.
pub struct Operator<S> {
    svc: S,
    /// The cookies the sign-in set (the token's and the session's).
    pub cookie: String,
}

impl<S: Serves> Operator<S> {
    /// Opens the console's URL with `token`, as `native serve` prints it, and keeps its cookies.
    pub async fn sign_in(svc: S, token: &str) -> Self {
        let (status, headers, body) = call(
            &svc,
            Request::get(format!("/console/?token={token}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
        assert_eq!(status, 303, "the sign-in: {body}");
        let cookie = headers
            .get_all("set-cookie")
            .iter()
            .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_string())
            .collect::<Vec<_>>()
            .join("; ");
        Operator { svc, cookie }
    }

    /// GETs `path` (a path and query).
    pub async fn get(&self, path: &str) -> Answer {
        call(
            &self.svc,
            Request::get(path)
                .header("cookie", &self.cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await
    }

    /// POSTs `form` (urlencoded, without the CSRF token) to `action` with `csrf`.
    pub async fn post(&self, action: &str, form: &str, csrf: &str) -> Answer {
        let sep = if form.is_empty() { "" } else { "&" };
        call(
            &self.svc,
            Request::post(action)
                .header("cookie", &self.cookie)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(Body::from(format!("{form}{sep}csrf={csrf}")))
                .unwrap(),
        )
        .await
    }

    /// Acts as from the page `page`: GETs it, then POSTs `form` to `action` with the CSRF
    /// token of the page's forms.
    pub async fn act(&self, page: &str, action: &str, form: &str) -> Answer {
        let (status, _, html) = self.get(page).await;
        assert_eq!(status, 200, "{page}: {html}");
        self.post(action, form, &csrf_of(&html)).await
    }
}
