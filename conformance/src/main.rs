//! A client for the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`), over the HTTP transport.
//!
//! The suite starts a mock server per scenario and runs this program with
//! the server's URL as the last argument, naming the scenario in
//! `MCP_CONFORMANCE_SCENARIO` (and, for some, passing data in
//! `MCP_CONFORMANCE_CONTEXT`). The program does what the scenario expects
//! of a client and exits non-zero on any error; the suite checks the wire.
//! `scripts/conformance.sh` installs the suite and runs every scenario:
//!
//! ```sh
//! bash scripts/conformance.sh
//! ```
//!
//! The `auth/*` scenarios put an OAuth authorization server in front of the
//! mock server. Their authorization server is headless: the client's [`Authorizer`] fetches the authorization URL and
//! returns the redirect it answers with, as a browser would.

use std::process::ExitCode;

use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{ElicitResult, PROTOCOL_VERSION, Tool};
use mcp_tasks::transport::Http;
use mcp_tasks::transport::auth::{Authorizer, BoxFuture, OAuth};
use mcp_tasks::{BoxError, Client};
use serde_json::{Map, Value, json};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: conformance_client <server-url>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    match run(&scenario, &url).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(scenario: &str, url: &str) -> Result<(), BoxError> {
    let version = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .unwrap_or_else(|_| PROTOCOL_VERSION.to_owned());
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_default();
    // A user who confirms whatever a server asks (the MRTR scenarios ask)
    // and keeps every default the form offers (SEP-1034).
    let handlers = InputHandlers::new().elicitation_form(|form| async move {
        Ok(ElicitResult::accept(answer(&form.requested_schema)))
    });
    let mut http = Http::new(url);
    if scenario.starts_with("auth/") {
        http = with_auth(http, &context);
    }
    let client = Client::builder()
        .client_info("mcp-tasks-conformance", env!("CARGO_PKG_VERSION"))
        .protocol_version(version)
        .input_handlers(handlers)
        .connect(http)
        .await?;

    match scenario {
        "request-metadata" => {
            client.discover().await?;
            client.list_tools().await?;
        }
        "json-schema-ref-no-deref" => {
            // Listing is the test: the schema's network `$ref` must stay a string.
            client.list_tools().await?;
        }
        "json-schema-2020-12-preservation" => {
            let tools = client.list_tools().await?;
            let focal = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .ok_or("the focal tool is not listed")?;
            let schema = focal.input_schema.clone();
            client
                .call_tool("json_schema_echo", json!({ "schema": schema }))
                .await?;
        }
        "http-custom-headers" => {
            client.list_tools().await?;
            for call in context["toolCalls"].as_array().into_iter().flatten() {
                let name = call["name"].as_str().ok_or("a tool call without a name")?;
                client.call_tool(name, &call["arguments"]).await?;
            }
        }
        "http-standard-headers" => {
            call_every_tool(&client).await?;
            let resources = client.request("resources/list", json!({})).await?;
            for r in resources["resources"].as_array().into_iter().flatten() {
                client
                    .request("resources/read", json!({ "uri": r["uri"] }))
                    .await?;
            }
            let prompts = client.request("prompts/list", json!({})).await?;
            for p in prompts["prompts"].as_array().into_iter().flatten() {
                client
                    .request("prompts/get", json!({ "name": p["name"] }))
                    .await?;
            }
        }
        // tools_call, sep-2322-client-request-state, http-invalid-tool-headers
        // and anything new: call every tool the server lists.
        _ => call_every_tool(&client).await?,
    }
    // Ends the connection and waits until it is ended; dropping the
    // client would do it in the background, unawaited.
    client.close().await?;
    Ok(())
}

/// The client ID metadata document URL the suite expects (`auth/basic-cimd`).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// OAuth for the `auth/*` scenarios: the credentials the scenario's context
/// gives (`auth/pre-registration`), else a client ID metadata document URL
/// (used where the server supports them), else dynamic registration.
fn with_auth(http: Http, context: &Value) -> Http {
    let oauth = OAuth::builder()
        .authorizer(Headless)
        .client_name("mcp-tasks-conformance")
        .client_metadata_url(CLIENT_METADATA_URL)
        .maybe_client_id(context["client_id"].as_str())
        .maybe_client_secret(context["client_secret"].as_str())
        .build();
    http.auth(oauth)
}

/// The user of a headless authorization server: fetches the authorization
/// URL and returns where it redirects, without following it.
struct Headless;

impl Authorizer for Headless {
    fn redirect_uri(&self) -> String {
        // Never listened on: the redirect is read from the `Location` header.
        "http://localhost:3000/callback".to_owned()
    }

    fn authorize(&self, url: url::Url) -> BoxFuture<'_, Result<url::Url, BoxError>> {
        Box::pin(async move {
            // Built here, once the transport has set up TLS.
            let http = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()?;
            let response = http.get(url.clone()).send().await?;
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .ok_or_else(|| {
                    format!(
                        "the authorization server answered HTTP {} without a redirect",
                        response.status()
                    )
                })?
                .to_str()?;
            Ok(url.join(location)?)
        })
    }
}

/// The answer to a form: each property's `default`, and `confirmed: true`
/// when the form asks for a confirmation.
fn answer(schema: &Value) -> Value {
    let mut content = Map::new();
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        if let Some(default) = property.get("default") {
            content.insert(name.clone(), default.clone());
        } else if name == "confirmed" {
            content.insert(name.clone(), json!(true));
        }
    }
    Value::Object(content)
}

/// Lists the tools and calls each once, with arguments made up from its schema.
async fn call_every_tool(client: &Client) -> Result<(), BoxError> {
    for tool in client.list_tools().await? {
        let result = client.call_tool(&tool.name, arguments_for(&tool)).await?;
        eprintln!("{}: {}", tool.name, result.joined_text());
    }
    Ok(())
}

/// A value of the right type for each required property.
fn arguments_for(tool: &Tool) -> Value {
    let schema = &tool.input_schema;
    let mut args = Map::new();
    for name in schema["required"].as_array().into_iter().flatten() {
        let Some(name) = name.as_str() else { continue };
        let value = match schema["properties"][name]["type"].as_str() {
            Some("integer") => json!(2),
            Some("number") => json!(3),
            Some("boolean") => json!(true),
            Some("object") => json!({}),
            Some("array") => json!([]),
            _ => json!("example"),
        };
        args.insert(name.to_owned(), value);
    }
    Value::Object(args)
}
