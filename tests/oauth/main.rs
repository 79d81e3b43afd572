//! OAuth authorization of the HTTP transport against a loopback resource
//! and authorization server (127.0.0.1 only; every test bounded in time):
//! the flow, refresh, the token store, and the failures a user meets.

#[path = "../support/time.rs"]
#[allow(
    dead_code,
    reason = "shared by every test binary; this one uses part of it"
)]
mod time;

mod helpers;
mod server;

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use helpers::{Headless, assert_mentions, connect, start};
use mcp_tasks::TaskState;
use mcp_tasks::transport::Http;
use mcp_tasks::transport::auth::{
    Authorizer, Credentials, FileTokenStore, LoopbackRedirect, OAuth, TokenStore,
};
use server::{AuthServer, Iss, Knobs};
use time::bounded;

#[tokio::test]
async fn the_flow_authorizes_once_and_every_request_carries_the_token() {
    bounded(async {
        let (server, client) = start(Knobs::default()).await;
        client.list_tools().await.expect("authorized");
        client.list_tools().await.expect("the same token");
        let (authorizations, registrations, mcp, resources) = server.seen(|s| {
            (
                s.authorizations,
                s.registrations,
                s.mcp.clone(),
                s.resources.clone(),
            )
        });
        assert_eq!((authorizations, registrations), (1, 1));
        // The first request went without a token, the others with it.
        assert_eq!(mcp.len(), 3, "{mcp:?}");
        assert!(mcp[0].is_none());
        assert!(
            mcp[1]
                .as_deref()
                .is_some_and(|h| h.starts_with("Bearer access-secret-"))
        );
        assert_eq!(mcp[1], mcp[2]);
        // The resource indicator, as the metadata publishes it, on both requests.
        assert_eq!(resources, [server.endpoint(), server.endpoint()]);
    })
    .await;
}

#[tokio::test]
async fn a_task_wait_goes_on_while_its_token_is_refreshed() {
    bounded(async {
        let (server, client) = start(Knobs {
            expires_in: 1, // refreshed about every second of the wait
            ..Knobs::default()
        })
        .await;
        let state = client
            .task()
            .call_tool("export", serde_json::json!({}))
            .await
            .expect("a task");
        let TaskState::Pending(task) = state else {
            panic!("expected a running task");
        };
        let done = task.await.expect("the wait ends with the task");
        assert_eq!(done.into_result().expect("completed").joined_text(), "done");
        let (authorizations, refreshes, unauthorized, polls) =
            server.seen(|s| (s.authorizations, s.refresh_grants, s.unauthorized, s.polls));
        assert_eq!(authorizations, 1);
        assert!(refreshes >= 1, "no refresh during the wait");
        // Only the first request went without a token; no poll was refused.
        assert_eq!(unauthorized, 1);
        assert_eq!(polls, 8);
    })
    .await;
}

#[tokio::test]
async fn a_403_insufficient_scope_steps_up_to_the_union_of_the_scopes() {
    bounded(async {
        let (server, client) = start(Knobs {
            call_scope: Some("write"),
            ..Knobs::default()
        })
        .await;
        client.list_tools().await.expect("authorized");
        let state = client
            .task()
            .call_tool("export", serde_json::json!({}))
            .await
            .expect("stepped up, then sent again");
        assert!(matches!(state, TaskState::Pending(_)));
        let scopes = server.seen(|s| s.scopes.clone());
        assert_eq!(scopes, ["mcp offline_access", "mcp offline_access write"]);
    })
    .await;
}

#[tokio::test]
async fn step_up_stops_when_the_token_already_has_the_scope_asked_for() {
    bounded(async {
        let (server, client) = start(Knobs {
            call_scope: Some("write"),
            never_enough: true,
            ..Knobs::default()
        })
        .await;
        let err = client
            .call_tool("export", serde_json::json!({}))
            .await
            .unwrap_err();
        assert_eq!(err.http_status(), Some(403));
        assert_mentions(&err, &["insufficient_scope", "already"]);
        // The first authorization, one step-up, then no more.
        assert_eq!(server.seen(|s| s.authorizations), 2);
    })
    .await;
}

#[tokio::test]
async fn the_loopback_redirect_receives_the_browser_in_a_full_flow() {
    bounded(async {
        let server = AuthServer::start(Knobs::default()).await;
        // The "browser": follows the authorization server's redirect to the
        // loopback listener, as a user's browser would.
        let redirect = LoopbackRedirect::bind(0).await.unwrap().on_url(|url| {
            let url = url.clone();
            tokio::spawn(async move {
                let page = reqwest::get(url).await.expect("the browser's visit");
                assert!(page.status().is_success());
                assert!(
                    page.text()
                        .await
                        .unwrap()
                        .contains("You may close this page")
                );
            });
        });
        let port = redirect.local_addr().port();
        assert!(redirect.local_addr().ip().is_loopback());
        assert_eq!(
            redirect.redirect_uri(),
            format!("http://127.0.0.1:{port}/callback")
        );
        let client = connect(&server, OAuth::builder().authorizer(redirect).build()).await;
        client
            .list_tools()
            .await
            .expect("authorized through the loopback redirect");
        assert_eq!(server.seen(|s| s.code_grants), 1);
    })
    .await;
}

#[tokio::test]
async fn the_loopback_redirect_ignores_other_paths_and_times_out() {
    bounded(async {
        let redirect = LoopbackRedirect::bind(0)
            .await
            .unwrap()
            .on_url(|_| {})
            .timeout(Duration::from_millis(500));
        let base = format!("http://{}", redirect.local_addr());
        let stray = tokio::spawn(async move {
            reqwest::get(format!("{base}/favicon.ico"))
                .await
                .unwrap()
                .status()
        });
        let err = redirect
            .authorize(url::Url::parse("https://as.example.com/authorize").unwrap())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("no redirect came"), "{err}");
        assert_eq!(stray.await.unwrap(), 404);
    })
    .await;
}

#[tokio::test]
async fn a_server_without_s256_is_refused_before_the_user_is_asked() {
    bounded(async {
        let (server, client) = start(Knobs {
            s256: false,
            ..Knobs::default()
        })
        .await;
        let err = client.list_tools().await.unwrap_err();
        assert_eq!(err.http_status(), Some(401));
        assert_mentions(&err, &["OAuth authorization failed", "S256"]);
        assert_eq!(server.seen(|s| s.authorizations), 0);
    })
    .await;
}

#[tokio::test]
async fn a_resource_that_is_not_this_server_is_refused() {
    bounded(async {
        let (server, client) = start(Knobs {
            resource: Some("https://evil.example.com/mcp".into()),
            ..Knobs::default()
        })
        .await;
        let err = client.list_tools().await.unwrap_err();
        assert_mentions(&err, &["OAuth discovery failed", "evil.example.com"]);
        assert_eq!(server.seen(|s| (s.registrations, s.authorizations)), (0, 0));
    })
    .await;
}

#[tokio::test]
async fn a_redirect_with_the_wrong_iss_is_refused_before_the_code_is_sent() {
    bounded(async {
        let (server, client) = start(Knobs {
            iss: Iss::Wrong,
            ..Knobs::default()
        })
        .await;
        let err = client.list_tools().await.unwrap_err();
        assert_mentions(&err, &["OAuth authorization failed", "iss"]);
        assert_eq!(server.seen(|s| (s.authorizations, s.code_grants)), (1, 0));
    })
    .await;
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_it_is_sent() {
    bounded(async {
        let (server, client) = start(Knobs {
            expires_in: 1,
            ..Knobs::default()
        })
        .await;
        client.list_tools().await.expect("authorized");
        tokio::time::sleep(Duration::from_millis(1100)).await;
        client.list_tools().await.expect("refreshed");
        let (authorizations, refreshes, mcp) =
            server.seen(|s| (s.authorizations, s.refresh_grants, s.mcp.clone()));
        assert_eq!((authorizations, refreshes), (1, 1));
        assert_ne!(mcp[1], mcp[2], "the second request carries the new token");
    })
    .await;
}

#[tokio::test]
async fn a_401_is_answered_with_a_refresh_and_the_request_sent_again() {
    bounded(async {
        let (server, client) = start(Knobs::default()).await;
        client.list_tools().await.expect("authorized");
        server.revoke_access_tokens();
        client.list_tools().await.expect("refreshed and sent again");
        assert_eq!(
            server.seen(|s| (s.authorizations, s.refresh_grants)),
            (1, 1)
        );
    })
    .await;
}

#[tokio::test]
async fn a_refused_refresh_token_fails_clearly_and_the_next_request_authorizes_again() {
    bounded(async {
        let (server, client) = start(Knobs::default()).await;
        client.list_tools().await.expect("authorized");
        server.knobs().refresh_ok = false;
        server.revoke_access_tokens();
        let err = client.list_tools().await.unwrap_err();
        assert_eq!(err.http_status(), Some(401));
        assert_mentions(
            &err,
            &[
                "OAuth token failed",
                "the refresh token was refused",
                "invalid_grant",
                "next request starts a new authorization",
            ],
        );
        assert_eq!(server.seen(|s| s.authorizations), 1);
        client.list_tools().await.expect("a new authorization");
        assert_eq!(server.seen(|s| s.authorizations), 2);
    })
    .await;
}

#[tokio::test]
async fn a_token_store_that_cannot_be_written_fails_the_request_naming_the_store() {
    bounded(async {
        let server = AuthServer::start(Knobs::default()).await;
        let path = std::env::temp_dir()
            .join(format!("mcp-tasks-no-such-dir-{}", std::process::id()))
            .join("tokens.json");
        let oauth = OAuth::builder()
            .authorizer(Headless)
            .store(FileTokenStore::new(&path))
            .build();
        let client = connect(&server, oauth).await;
        let err = client.list_tools().await.unwrap_err();
        assert_mentions(&err, &["OAuth token store failed"]);
        assert!(!path.exists());
        // The connection keeps the tokens it could not save.
        client.list_tools().await.expect("the token in memory");
        assert_eq!(server.seen(|s| s.authorizations), 1);
    })
    .await;
}

#[tokio::test]
async fn a_file_store_lets_a_new_connection_reuse_the_tokens() {
    bounded(async {
        let server = AuthServer::start(Knobs::default()).await;
        let dir =
            std::env::temp_dir().join(format!("mcp-tasks-oauth-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens.json");
        let build = || {
            OAuth::builder()
                .authorizer(Headless)
                .store(FileTokenStore::new(&path))
                .build()
        };
        let first = connect(&server, build()).await;
        first.list_tools().await.expect("authorized");
        drop(first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let second = connect(&server, build()).await;
        second.list_tools().await.expect("the stored token");
        assert_eq!(server.seen(|s| (s.authorizations, s.registrations)), (1, 1));
        let stored = FileTokenStore::new(&path).load(&server.endpoint()).unwrap();
        let stored: Credentials = stored.expect("kept");
        assert!(!format!("{stored:?}").contains("secret-"));
        std::fs::remove_dir_all(&dir).unwrap();
    })
    .await;
}

/// Captures everything logged, at every level, by every test of this binary.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn no_token_code_verifier_or_secret_reaches_the_log_or_debug_output() {
    bounded(async {
        let log = Capture::default();
        let writer = log.clone();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .try_init()
            .expect("the only subscriber of this binary");
        let server = AuthServer::start(Knobs {
            client_secret: Some("client-secret-shh"),
            expires_in: 1,
            ..Knobs::default()
        })
        .await;
        let oauth = OAuth::builder()
            .authorizer(Headless)
            .client_id("preregistered-id")
            .client_secret("configured-secret-shh")
            .client_issuer("https://another.example.com")
            .build();
        let debug = format!(
            "{oauth:?} {:?}",
            Http::new(server.endpoint()).auth(oauth.clone())
        );
        assert!(!debug.contains("configured-secret-shh"), "{debug}");
        let client = connect(&server, oauth).await;
        client.list_tools().await.expect("authorized");
        tokio::time::sleep(Duration::from_millis(1100)).await;
        client.list_tools().await.expect("refreshed");
        server.revoke_access_tokens();
        server.knobs().refresh_ok = false;
        let err = client.list_tools().await.unwrap_err();
        client.list_tools().await.expect("authorized again");
        let secrets = server.seen(|s| s.secrets.clone());
        assert!(
            secrets.iter().any(|s| s.starts_with("code-secret"))
                && secrets.iter().any(|s| s.starts_with("refresh-secret"))
                && secrets.contains(&"client-secret-shh".to_owned())
                && secrets.len() >= 8,
            "the flow ran: {secrets:?}"
        );
        let text = String::from_utf8(log.0.lock().unwrap().clone()).unwrap();
        assert!(
            text.contains("asking the user to authorize"),
            "the log was captured"
        );
        let shown = format!("{text}\n{err}\n{err:?}\n{client:?}");
        for secret in &secrets {
            assert!(
                !shown.contains(secret.as_str()),
                "{secret} was logged:\n{shown}"
            );
        }
    })
    .await;
}
