//! Listing the server's tools: every page at once, within the client's
//! bounds on what a listing keeps and how long it runs
//! ([`Client::list_tools`]), or one page at a time ([`ToolPages`]).

use std::time::Duration;

use super::{Client, decode};
use crate::error::{Error, Kind, Result, Waited};
use crate::human;
use crate::protocol::method;
use crate::protocol::{ListToolsParams, ListToolsResult, Tool};

/// The default bound on the JSON one [`Client::list_tools`] keeps: 16 MiB.
pub(crate) const DEFAULT_MAX_LISTED_BYTES: usize = 16 << 20;
/// The default bound on one whole [`Client::list_tools`]: 5 minutes.
pub(crate) const DEFAULT_LIST_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// Most pages [`Client::list_tools`] follows before deciding the server
/// loops (pages can be nearly empty, so the byte bound alone is not enough).
const MAX_PAGES: usize = 1000;

/// The tools of the server, one `tools/list` page at a time, from
/// [`Client::tool_pages`].
///
/// Only the page being read is held, so no bound on the whole listing
/// applies: each page is one reply (bounded by the transport's
/// `max_message_size`) and one request (bounded by the client's request
/// timeout). Reading pages does not change what the client remembers of
/// the tools' 2025-11-25 task support; only [`Client::list_tools`] does.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcp_tasks::Result<()> {
/// use mcp_tasks::Client;
/// use mcp_tasks::protocol::CallToolResult;
/// use mcp_tasks::testing::{ScriptedTool, TestServer};
///
/// let server = TestServer::new()
///     .page_size(1)
///     .tool(ScriptedTool::immediate("a", CallToolResult::text("a")))
///     .tool(ScriptedTool::immediate("b", CallToolResult::text("b")));
/// let client = Client::connect(server.connect()).await?;
/// let mut pages = client.tool_pages();
/// let mut names = Vec::new();
/// while let Some(page) = pages.next().await {
///     names.extend(page?.into_iter().map(|tool| tool.name));
/// }
/// assert_eq!(names, ["a", "b"]);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ToolPages {
    client: Client,
    /// The cursor of the next page, once the first came.
    cursor: Option<String>,
    /// Set once the last page came, or a page failed.
    done: bool,
}

/// One page and the size of its JSON.
struct Page {
    tools: Vec<Tool>,
    bytes: usize,
}

impl ToolPages {
    pub(crate) fn new(client: Client) -> Self {
        ToolPages {
            client,
            cursor: None,
            done: false,
        }
    }

    /// The next page; `None` after the last page, or after an error.
    ///
    /// # Errors
    ///
    /// Any request error; [`Error::is_protocol`] for a malformed page or a
    /// server that sends the same cursor twice in a row (it loops).
    pub async fn next(&mut self) -> Option<Result<Vec<Tool>>> {
        self.next_sized().await.map(|page| page.map(|p| p.tools))
    }

    async fn next_sized(&mut self) -> Option<Result<Page>> {
        if self.done {
            return None;
        }
        let page = self.fetch().await;
        if page.is_err() {
            self.done = true;
        }
        Some(page)
    }

    async fn fetch(&mut self) -> Result<Page> {
        let params = ListToolsParams {
            cursor: self.cursor.clone(),
        };
        let raw = self
            .client
            .wire()
            .send(method::TOOLS_LIST, &params, None)
            .await?;
        let bytes = raw.get().len();
        let page: ListToolsResult = decode(&raw, method::TOOLS_LIST)?;
        drop(raw);
        match page.next_cursor {
            Some(c) if self.cursor.as_deref() == Some(c.as_str()) => {
                Err(Error::protocol("tools/list returned the same cursor twice")
                    .with_method(method::TOOLS_LIST))
            }
            Some(c) => {
                self.cursor = Some(c);
                Ok(Page {
                    tools: page.tools,
                    bytes,
                })
            }
            None => {
                self.done = true;
                Ok(Page {
                    tools: page.tools,
                    bytes,
                })
            }
        }
    }
}

impl Client {
    /// Lists every tool, following `nextCursor` across pages.
    ///
    /// The listing is bounded: it keeps at most
    /// [`max_listed_bytes`](crate::ClientBuilder::max_listed_bytes) of the
    /// pages' JSON (default 16 MiB; the tools take some times that in
    /// memory) and ends within
    /// [`list_timeout`](crate::ClientBuilder::list_timeout) (default 5
    /// minutes) however many pages the server sends. To read a listing
    /// larger than that, take it page by page with [`Client::tool_pages`].
    ///
    /// The client also keeps what the listing says of each tool's
    /// 2025-11-25 `execution.taskSupport`, replacing what an earlier
    /// listing said (a listing that fails leaves it as it was). Calls made
    /// afterwards to a tool listed as `optional` or `required` carry the
    /// legacy `task` opt-in, which servers still on that model need; see
    /// [`TaskOptIn`](crate::protocol::TaskOptIn). Nothing is ever listed
    /// behind the caller's back, and the raw [`Client::request`] neither
    /// fills nor reads this memory. A `notifications/tools/list_changed`
    /// from the server forgets it (a listing under way when it comes is
    /// not kept either): list again to know the tools.
    ///
    /// # Errors
    ///
    /// - [`Error::is_over_limit`]: the pages passed `max_listed_bytes`;
    /// - [`Error::is_deadline`]: the listing did not end within `list_timeout`;
    /// - [`Error::is_protocol`]: a malformed page, the same cursor twice
    ///   in a row, or more than 1,000 pages (the server is looping);
    /// - any request error.
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        let limit = self.inner.list_timeout;
        match tokio::time::timeout(limit, self.list_every_page()).await {
            Ok(listed) => listed,
            Err(_) => Err(Error::new(Kind::Deadline {
                after: limit,
                what: Waited::Listing,
            })
            .with_method(method::TOOLS_LIST)),
        }
    }

    /// The tools of the server one `tools/list` page at a time, for a
    /// listing too large to hold at once; see [`ToolPages`].
    pub fn tool_pages(&self) -> ToolPages {
        ToolPages::new(self.clone())
    }

    async fn list_every_page(&self) -> Result<Vec<Tool>> {
        let max = self.inner.max_listed_bytes;
        let generation = self.tools_generation();
        let mut pages = self.tool_pages();
        let mut tools = Vec::new();
        let mut kept = 0usize;
        for n in 1..=MAX_PAGES {
            let Some(page) = pages.next_sized().await else {
                break;
            };
            let page = page?;
            kept = kept.saturating_add(page.bytes);
            if kept > max {
                return Err(Error::new(Kind::OverLimit(format!(
                    "the listing passed the client's bound of {} (max_listed_bytes) on page {n}; \
                     read it page by page with tool_pages(), or raise the bound",
                    human::bytes(max)
                )))
                .with_method(method::TOOLS_LIST));
            }
            tools.extend(page.tools);
            if pages.done {
                self.remember_tools(generation, &tools);
                return Ok(tools);
            }
        }
        Err(
            Error::protocol(format!("tools/list did not end after {MAX_PAGES} pages"))
                .with_method(method::TOOLS_LIST),
        )
    }
}
