//! The operator's console: server-rendered HTML pages over every tenant's coordination state
//! (barriers, batch jobs, rendezvous barriers, timers, dead letters, recent invocations), with
//! the actions an operator needs (ack a member, cancel a barrier, redrive dead letters). Served
//! under [`ROOT`] by `native serve` beside the API, and by `native console --aws` over a
//! deployment's table, queues and buckets from an operator's machine.
//!
//! - Pages are linkable and stable: tenant, then kind, then id
//!   (`/console/tenants/{tenant}/barriers/{id}`); lists page with a cursor, filter by state,
//!   and refresh themselves while open (a little JavaScript polls the page; without it every
//!   page still reads, and every action is a plain form).
//! - Access is the operator token's alone ([`auth`]); actions are POSTs with the CSRF token of
//!   their sign-in's session.
//! - Everything a tenant wrote is escaped by construction ([`html`]); the pages also forbid
//!   inline script and framing (`Content-Security-Policy`), and send no referrer.
//! - Reads and actions go through the primitives (the same calls the CLI's verbs make), on a
//!   thread of their own, at most [`MAX_RENDERS`] at once so that the console never takes the
//!   serving process's threads from tenants.
//! - Assets (one stylesheet, one script) are compiled into the binary.

mod auth;
mod form;
pub mod html;
mod pages;

use std::future::Future;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

pub use auth::{new_token, token_in, TOKEN_FILE};
pub use form::Form;
use html::{Href, Html};

use crate::runtime::Runtime;

/// Where the console is served.
pub const ROOT: &str = "/console/";
/// Pages rendered at once; more wait.
pub const MAX_RENDERS: usize = 4;
/// The largest form body an action takes.
const MAX_FORM_BYTES: usize = 64 * 1024;

tokio::task_local! {
    /// The session of the request being answered ([`auth::session`]).
    static SESSION: String;
}

/// What the console serves: a runtime's backends and tenants, and how to reach it.
#[derive(Debug)]
pub struct Console {
    rt: Arc<Runtime>,
    token: String,
    /// The secret each session's CSRF token is made from ([`auth::csrf_of`]).
    csrf: String,
    /// What the pages look at, for their header ("project /path", "AWS: table t, ...").
    source: String,
    /// Whether this process runs the scripts (native serve): its recent invocations and parked
    /// rendezvous waiters are the deployment's. Not so for a console of a deployment on AWS.
    runs_scripts: bool,
    renders: tokio::sync::Semaphore,
    /// Wrong tokens of the current second ([`auth::MAX_FAILED_TOKENS_PER_S`]).
    failures: auth::Failures,
}

impl Console {
    /// A console over `rt`, opened by `token`. `source` names what it looks at; `runs_scripts`
    /// says whether `rt` is the process that runs the scripts.
    pub fn new(rt: Arc<Runtime>, token: String, source: String, runs_scripts: bool) -> Arc<Self> {
        Arc::new(Console {
            rt,
            token,
            csrf: new_token(),
            source,
            runs_scripts,
            renders: tokio::sync::Semaphore::new(MAX_RENDERS),
            failures: auth::Failures::default(),
        })
    }

    /// The URL that opens the console at `base` (`http://HOST:PORT`), token included: what
    /// `native serve` prints.
    pub fn url(&self, base: &str) -> String {
        format!("{base}{ROOT}?token={}", self.token)
    }
}

/// The console's routes, behind the token.
pub fn router(console: Arc<Console>) -> Router {
    use pages::*;
    Router::new()
        .route("/console/", get(overview::page))
        .route("/console/dlq", get(dlq::all))
        .route("/console/tenants/{tenant}", get(overview::tenant))
        .route("/console/tenants/{tenant}/barriers", get(barriers::list))
        .route(
            "/console/tenants/{tenant}/barriers/{id}",
            get(barriers::one),
        )
        .route(
            "/console/tenants/{tenant}/barriers/{id}/ack",
            post(barriers::ack),
        )
        .route(
            "/console/tenants/{tenant}/barriers/{id}/cancel",
            post(barriers::cancel),
        )
        .route("/console/tenants/{tenant}/jobs", get(jobs::list))
        .route("/console/tenants/{tenant}/jobs/{id}", get(jobs::one))
        .route(
            "/console/tenants/{tenant}/rendezvous",
            get(rendezvous::namespaces),
        )
        .route(
            "/console/tenants/{tenant}/rendezvous/{ns}",
            get(rendezvous::barriers),
        )
        .route(
            "/console/tenants/{tenant}/rendezvous/{ns}/{barrier}",
            get(rendezvous::one),
        )
        .route("/console/tenants/{tenant}/timers", get(timers::list))
        .route("/console/tenants/{tenant}/schedules", get(schedules::list))
        .route(
            "/console/tenants/{tenant}/schedules/act",
            post(schedules::act),
        )
        .route("/console/tenants/{tenant}/dlq", get(dlq::tenant))
        .route("/console/tenants/{tenant}/dlq/redrive", post(dlq::redrive))
        .route(
            "/console/tenants/{tenant}/invocations",
            get(invocations::list),
        )
        .route(
            "/console/tenants/{tenant}/invocations/{seq}",
            get(invocations::one),
        )
        .route("/console/tenants/{tenant}/chains/{id}", get(chains::one))
        .route("/console/{*rest}", get(missing).post(missing))
        .layer(middleware::from_fn_with_state(console.clone(), guard))
        // The cookie's path is /console/: the bare /console gets there first, token or not.
        .route("/console", get(|| async { see_other(ROOT) }))
        // Assets hold nothing of anyone's: served without the token (the 401 page uses them).
        .route("/console/assets/console.css", get(css))
        .route("/console/assets/console.js", get(js))
        .route("/console/assets/favicon.svg", get(icon))
        .with_state(console)
}

/// Lets through requests that carry the operator token (cookie), turns `?token=` into the
/// cookie, answers everything else 401.
async fn guard(State(c): State<Arc<Console>>, req: Request, next: Next) -> Response {
    let query = Form::parse(req.uri().query().unwrap_or(""));
    let now_s = crate::ports::now_ms().max(0) as u64 / 1000;
    let given = query.get("token").or(auth::from_cookie(req.headers()));
    if given.is_some() && !c.failures.open(now_s) {
        let mut r = unauthorized(&format!(
            "more than {} wrong console tokens this second: wait a second",
            auth::MAX_FAILED_TOKENS_PER_S
        ));
        *r.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return r;
    }
    if given.is_some_and(|t| !auth::same(t, &c.token)) {
        c.failures.failed(now_s);
    }
    if let Some(given) = query.get("token") {
        if !auth::same(given, &c.token) {
            return unauthorized("this console URL's token is not this console's");
        }
        // The same page without the token in its address, however it was spelled.
        let path = req.uri().path().to_string();
        let rest = Form::without(req.uri().query().unwrap_or(""), "token");
        let to = if rest.is_empty() {
            path
        } else {
            format!("{path}?{rest}")
        };
        let mut r = see_other(&to);
        for cookie in [auth::set_cookie(&c.token), auth::set_session(&new_token())] {
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                r.headers_mut().append(header::SET_COOKIE, v);
            }
        }
        return r;
    }
    match auth::from_cookie(req.headers()) {
        Some(t) if auth::same(t, &c.token) => {
            let session = auth::session(req.headers()).unwrap_or("").to_string();
            SESSION.scope(session, next.run(req)).await
        }
        Some(_) => unauthorized(
            "the console's token has changed; open the URL that native printed at start",
        ),
        None => unauthorized(
            "open the console with the URL that native printed at start (it carries ?token=...)",
        ),
    }
}

fn unauthorized(why: &str) -> Response {
    let mut h = Html::new();
    head(&mut h, "Not signed in", false);
    h.open("main", &[]);
    h.el_text("h1", &[], "Not signed in");
    h.el_text("p", &[], why);
    h.el_text(
        "p",
        &[],
        "The console takes the operator token that `native serve` (or `native console --aws`) prints with its URL; a tenant's API key does not open it.",
    );
    h.close("main").raw("</body></html>");
    html_response(StatusCode::UNAUTHORIZED, h.finish())
}

/// A 303 to a path of this console.
fn see_other(to: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

async fn missing(uri: axum::http::Uri) -> Response {
    Problem::new(
        StatusCode::NOT_FOUND,
        format!("no console page {}", crate::text::echo(uri.path())),
    )
    .into_response()
}

async fn css() -> Response {
    asset("text/css", include_str!("assets/console.css"))
}

async fn js() -> Response {
    asset("text/javascript", include_str!("assets/console.js"))
}

async fn icon() -> Response {
    asset("image/svg+xml", include_str!("assets/favicon.svg"))
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "max-age=300"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
        .into_response()
}

/// Why a page cannot be shown.
#[derive(Debug)]
pub(crate) struct Problem {
    status: StatusCode,
    message: String,
}

impl Problem {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Problem {
            status,
            message: message.into(),
        }
    }

    fn bad(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }
}

impl From<crate::Error> for Problem {
    fn from(e: crate::Error) -> Self {
        use crate::Error as E;
        let status = match &e {
            E::NotFound { .. } => StatusCode::NOT_FOUND,
            E::InvalidInput(_) | E::Config { .. } | E::Precondition { .. } => {
                StatusCode::BAD_REQUEST
            }
            E::LimitExceeded { .. } => StatusCode::TOO_MANY_REQUESTS,
            _ => StatusCode::BAD_GATEWAY,
        };
        Problem::new(status, crate::text::cut_text(e.to_string(), 4096))
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let title = self.status.canonical_reason().unwrap_or("Error");
        let mut h = Html::new();
        head(&mut h, title, false);
        h.open("main", &[]);
        h.el_text("h1", &[], title);
        h.el_text("p", &[("class", "error")], &self.message);
        h.el("p", &[], |h| {
            h.link(&Href::to(&[]), "Back to the console");
        });
        h.close("main").raw("</body></html>");
        html_response(self.status, h.finish())
    }
}

/// What a page handler gives back.
pub(crate) type PageResult = Result<Response, Problem>;

/// Runs a page's work on a thread of its own (the primitives' calls hold budgets that are not
/// `Send`, as in the other inbound handlers), at most [`MAX_RENDERS`] at once.
pub(crate) async fn render<F, Fut>(c: Arc<Console>, work: F) -> Response
where
    F: FnOnce(Arc<Console>) -> Fut + Send + 'static,
    Fut: Future<Output = PageResult>,
{
    let Ok(_permit) = c.renders.acquire().await else {
        return Problem::new(StatusCode::SERVICE_UNAVAILABLE, "the console is stopping")
            .into_response();
    };
    let handle = tokio::runtime::Handle::current();
    let c2 = c.clone();
    // The page is made on a thread of its own: the session goes with it, for its forms.
    let session = SESSION.try_with(String::clone).unwrap_or_default();
    match tokio::task::spawn_blocking(move || handle.block_on(SESSION.scope(session, work(c2))))
        .await
    {
        Ok(Ok(r)) => r,
        Ok(Err(p)) => p.into_response(),
        Err(e) => Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the page failed: {e}"),
        )
        .into_response(),
    }
}

/// An action on a tenant's things (a POST): reads its form ([`action_form`]: bounded, its CSRF
/// token checked), then does `work` with the tenant `tenant` names and the form, as a page is
/// made ([`render`]). What every action handler does before its own work, said once.
pub(crate) async fn action<F, Fut>(c: Arc<Console>, body: Body, tenant: String, work: F) -> Response
where
    F: FnOnce(Arc<Console>, Arc<crate::config::Tenant>, Form) -> Fut + Send + 'static,
    Fut: Future<Output = PageResult>,
{
    let form = match action_form(&c, body).await {
        Ok(f) => f,
        Err(p) => return p.into_response(),
    };
    render(c, move |c| async move {
        let t = pages::load_tenant(&c, &tenant).await?;
        work(c, t, form).await
    })
    .await
}

/// Reads a form body (an action's), at most [`MAX_FORM_BYTES`], and checks its CSRF token.
async fn action_form(c: &Console, body: Body) -> Result<Form, Problem> {
    let bytes = axum::body::to_bytes(body, MAX_FORM_BYTES)
        .await
        .map_err(|_| {
            Problem::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("a console form is at most {} KB", MAX_FORM_BYTES / 1024),
            )
        })?;
    let form = Form::parse(&String::from_utf8_lossy(&bytes));
    if !auth::same(form.str("csrf"), &c.csrf()) {
        return Err(Problem::new(
            StatusCode::FORBIDDEN,
            "this form is not from this console's pages (or the console restarted since the page was loaded): reload the page and try again",
        ));
    }
    Ok(form)
}

/// The HTML response with the console's headers.
fn html_response(status: StatusCode, body: String) -> Response {
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::X_FRAME_OPTIONS, "DENY"),
            (header::REFERRER_POLICY, "no-referrer"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            ),
        ],
        body,
    )
        .into_response()
}

/// The document's head and the start of its body.
fn head(h: &mut Html, title: &str, live: bool) {
    h.raw("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">")
        .raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        .raw("<link rel=\"stylesheet\" href=\"/console/assets/console.css\">")
        .raw("<link rel=\"icon\" href=\"/console/assets/favicon.svg\">")
        .raw("<script src=\"/console/assets/console.js\" defer></script>")
        .el("title", &[], |h| {
            h.text(title).raw(" · native console");
        })
        .raw("</head>");
    h.open("body", &[("data-live", if live { "2000" } else { "" })]);
}

/// A tenant page's tabs.
const TABS: [(&str, &str); 7] = [
    ("barriers", "Barriers"),
    ("jobs", "Jobs"),
    ("rendezvous", "Rendezvous"),
    ("timers", "Timers"),
    ("schedules", "Schedules"),
    ("dlq", "Dead letters"),
    ("invocations", "Invocations"),
];

/// A whole page: header with the source, the tenant's tabs (when `tenant`), breadcrumbs, a
/// notice (what the last action did), and `body`.
pub(crate) struct Layout<'a> {
    pub title: &'a str,
    pub tenant: Option<&'a str>,
    pub tab: &'a str,
    pub crumbs: Vec<(Href, String)>,
    pub live: bool,
    pub notice: Option<&'a str>,
}

impl Layout<'_> {
    pub(crate) fn render(self, c: &Console, body: impl FnOnce(&mut Html)) -> Response {
        let mut h = Html::new();
        head(&mut h, self.title, self.live);
        h.el("header", &[], |h| {
            h.el("a", &[("href", ROOT), ("class", "brand")], |h| {
                h.raw("native console");
            });
            h.el_text("span", &[("class", "source")], &c.source);
            if self.live {
                h.el("label", &[("class", "live")], |h| {
                    h.raw("<input type=\"checkbox\" id=\"live\" checked> live");
                });
            }
        });
        if let Some(t) = self.tenant {
            h.el("nav", &[("class", "tabs")], |h| {
                h.el(
                    "a",
                    &[
                        ("href", Href::to(&["tenants", t]).as_str()),
                        ("class", "tenant"),
                    ],
                    |h| {
                        h.text(t);
                    },
                );
                for (slug, name) in TABS {
                    let href = Href::to(&["tenants", t, slug]);
                    let class = if slug == self.tab { "on" } else { "" };
                    h.el_text("a", &[("href", href.as_str()), ("class", class)], name);
                }
            });
        }
        h.open("main", &[]);
        if !self.crumbs.is_empty() {
            h.el("p", &[("class", "crumbs")], |h| {
                for (i, (href, name)) in self.crumbs.iter().enumerate() {
                    if i > 0 {
                        h.raw(" / ");
                    }
                    h.link(href, name);
                }
            });
        }
        h.el_text("h1", &[], self.title);
        if let Some(n) = self.notice.filter(|n| !n.is_empty()) {
            let n = crate::text::cut_text(n.to_string(), 300);
            h.el_text("p", &[("class", "notice"), ("role", "status")], &n);
        }
        body(&mut h);
        h.close("main");
        h.raw("</body></html>");
        html_response(StatusCode::OK, h.finish())
    }
}

/// The console's handle on a request, for pages.
impl Console {
    pub(crate) fn rt(&self) -> &Runtime {
        &self.rt
    }

    /// The CSRF token of the session of the request being answered.
    pub(crate) fn csrf(&self) -> String {
        auth::csrf_of(
            &self.csrf,
            &SESSION.try_with(String::clone).unwrap_or_default(),
        )
    }

    pub(crate) fn runs_scripts(&self) -> bool {
        self.runs_scripts
    }
}

/// The 303 an action answers with: back to `to`, with what it did as the page's notice.
pub(crate) fn done(to: Href, notice: &str) -> Response {
    let notice = crate::text::cut_text(notice.to_string(), 300);
    see_other(to.query(&[("notice", &notice)]).as_str())
}
