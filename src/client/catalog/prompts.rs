//! The server's prompts (listing and rendering them) and argument
//! completion, on both eras.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::value::RawValue;

use crate::client::catalog::capabilities::Needs;
use crate::client::catalog::pages::Pages;
use crate::client::{Client, decode};
use crate::error::Result;
use crate::protocol::method;
use crate::protocol::{
    CompleteParams, CompleteResult, Completion, CompletionArgument, CompletionContext,
    CompletionRef, GetPromptParams, GetPromptResult, Prompt,
};

impl Client {
    /// Lists every prompt (`prompts/list`), following `nextCursor` across
    /// pages within the same bounds as [`Client::list_tools`];
    /// [`Client::prompt_pages`] reads one page at a time. A prompt counts
    /// 152 bytes and what it holds against
    /// [`max_listed_memory`](crate::ClientBuilder::max_listed_memory)
    /// (64 MiB by default): its strings, and each argument as the JSON
    /// object it is sent as (640 bytes and its strings).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcp_tasks::Result<()> {
    /// use mcp_tasks::Client;
    /// use mcp_tasks::protocol::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
    /// use mcp_tasks::testing::TestServer;
    ///
    /// let server = TestServer::new().prompt(
    ///     Prompt::new("review").argument(PromptArgument::new("file", true)),
    ///     GetPromptResult::new([PromptMessage::text(Role::User, "Review {file}")]),
    /// );
    /// let client = Client::connect(server.connect()).await?;
    /// assert_eq!(client.list_prompts().await?[0].name, "review");
    /// let prompt = client.get_prompt("review", [("file", "lib.rs")]).await?;
    /// assert_eq!(prompt.messages[0].role, Role::User);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::is_missing_capability`](crate::Error::is_missing_capability)
    /// when the server did not advertise `prompts` (nothing is sent);
    /// otherwise as [`Client::list_tools`].
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>> {
        self.list_all::<Prompt>().await
    }

    /// The prompts one `prompts/list` page at a time; see [`Pages`].
    pub fn prompt_pages(&self) -> Pages<Prompt> {
        Pages::new(self.clone())
    }

    /// Renders one prompt with its arguments (`prompts/get`). Arguments
    /// are strings, as the protocol has them; pass `[] as [(&str, &str); 0]`
    /// or an empty map for none.
    ///
    /// The messages carry the same
    /// [`ContentBlock`](crate::protocol::ContentBlock)s as tool results; a
    /// block or a role this crate does not know is kept as sent.
    ///
    /// # Errors
    ///
    /// [`Error::is_missing_capability`](crate::Error::is_missing_capability)
    /// when the server did not advertise `prompts`;
    /// [`Error::is_input_required`](crate::Error::is_input_required) when
    /// a 2026-07-28 server asks for input that no installed handler
    /// answers (input it can answer is answered, as for
    /// [`Client::call_tool`], within `max_input_rounds` rounds);
    /// [`Error::is_protocol`](crate::Error::is_protocol) for a malformed
    /// result, or a server still asking after those rounds; any request
    /// error (an unknown prompt or a missing argument is usually
    /// `-32602`).
    pub async fn get_prompt<I, K, V>(&self, name: &str, arguments: I) -> Result<GetPromptResult>
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.require(Needs::Prompts, method::PROMPTS_GET).await?;
        let params = GetPromptParams {
            name: name.to_owned(),
            arguments: arguments
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect::<BTreeMap<_, _>>(),
        };
        let raw = self
            .send_answering(method::PROMPTS_GET, name, &params)
            .await?;
        decode(&raw, method::PROMPTS_GET)
    }

    /// Asks the server to complete one argument of a prompt or one variable
    /// of a resource template (`completion/complete`), given what was typed
    /// so far and, optionally, the other arguments already chosen.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcp_tasks::Result<()> {
    /// use mcp_tasks::Client;
    /// use mcp_tasks::protocol::{Completion, CompletionArgument, CompletionRef};
    /// use mcp_tasks::testing::TestServer;
    ///
    /// let server = TestServer::new().completion(
    ///     CompletionRef::prompt("review"),
    ///     "file",
    ///     Completion::new(["lib.rs", "main.rs"]),
    /// );
    /// let client = Client::connect(server.connect()).await?;
    /// let found = client
    ///     .complete(CompletionRef::prompt("review"), CompletionArgument::new("file", "li"), None)
    ///     .await?;
    /// assert_eq!(found.values, ["lib.rs"]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::is_missing_capability`](crate::Error::is_missing_capability)
    /// when the server did not advertise `completions` (nothing is sent);
    /// [`Error::is_protocol`](crate::Error::is_protocol) for a malformed
    /// result; any request error.
    pub async fn complete(
        &self,
        reference: CompletionRef,
        argument: CompletionArgument,
        context: Option<CompletionContext>,
    ) -> Result<Completion> {
        self.require(Needs::Completions, method::COMPLETION_COMPLETE)
            .await?;
        let params = CompleteParams {
            reference,
            argument,
            context,
        };
        let raw = self
            .wire()
            .send(method::COMPLETION_COMPLETE, &params, None)
            .await?;
        decode::<CompleteResult>(&raw, method::COMPLETION_COMPLETE).map(|r| r.completion)
    }

    /// Sends a request that may ask for input first (`prompts/get`,
    /// `resources/read`), naming what it acts on, with the installed
    /// handlers answering (see [`Wire::send_answering`](crate::client::Wire::send_answering)).
    pub(crate) async fn send_answering<P: Serialize>(
        &self,
        method: &'static str,
        name: &str,
        params: &P,
    ) -> Result<Box<RawValue>> {
        self.wire()
            .send_answering(
                method,
                name,
                params,
                self.handlers(),
                self.max_input_rounds(),
            )
            .await
    }
}
