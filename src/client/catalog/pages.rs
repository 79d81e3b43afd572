//! Listing what the server offers: tools, resources, resource templates
//! and prompts, with one pager. Every page at once, within the client's
//! bounds on what a listing keeps and how long it runs
//! ([`Client::list_tools`] and its siblings), or one page at a time
//! ([`Pages`]).

use std::collections::HashSet;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::marker::PhantomData;
use std::time::Duration;

use serde::de::DeserializeOwned;

use crate::client::catalog::capabilities::Needs;
use crate::client::catalog::footprint::{self, Item, Unmeasured};
use crate::client::{Client, decode};
use crate::error::{Error, Kind, Result, Waited};
use crate::human;
use crate::protocol::method;
use crate::protocol::{
    ListParams, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, Prompt, Resource, ResourceTemplate, Tool,
};

/// The default bound on the JSON one listing reads: 16 MiB.
pub(crate) const DEFAULT_MAX_LISTED_BYTES: usize = 16 << 20;
/// The default bound on what one listing's items take in memory: 64 MiB.
pub(crate) const DEFAULT_MAX_LISTED_MEMORY: usize = 64 << 20;
/// The default bound on one whole listing: 5 minutes.
pub(crate) const DEFAULT_LIST_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// Most pages a listing follows before deciding the server loops (pages
/// can be nearly empty, so the byte bound alone is not enough).
const MAX_PAGES: usize = 1000;

mod sealed {
    use serde_json::value::RawValue;

    use crate::client::catalog::capabilities::Needs;
    use crate::client::catalog::footprint::Item;
    use crate::error::Result;

    /// How one kind of listing is asked for and read.
    pub trait Sealed: Sized + Send + 'static {
        /// The listing method (`tools/list`, …).
        const METHOD: &'static str;
        /// How a page's items are measured before it is decoded.
        const ITEM: Item;
        /// The page's items and its next cursor.
        fn split(raw: &RawValue) -> Result<(Vec<Self>, Option<String>)>;
        /// The capability the server must advertise first, if any.
        fn needs() -> Option<Needs>;
    }
}

use sealed::Sealed;

/// What can be listed page by page: [`Tool`], [`Resource`],
/// [`ResourceTemplate`] and [`Prompt`]. Sealed: the crate lists these four.
pub trait Listed: Sealed {}

impl<T: Sealed> Listed for T {}

/// Decodes one page.
fn page<P: DeserializeOwned>(raw: &serde_json::value::RawValue, method: &'static str) -> Result<P> {
    decode(raw, method)
}

impl Sealed for Tool {
    const METHOD: &'static str = method::TOOLS_LIST;
    const ITEM: Item = Item {
        member: "tools",
        size: size_of::<Tool>(),
        filled: Some(("inputSchema", footprint::DEFAULT_SCHEMA)),
    };
    fn split(raw: &serde_json::value::RawValue) -> Result<(Vec<Self>, Option<String>)> {
        let p: ListToolsResult = page(raw, Self::METHOD)?;
        Ok((p.tools, p.next_cursor))
    }
    fn needs() -> Option<Needs> {
        // Listed whatever the server declared, as before resources and
        // prompts were typed: many servers leave `tools` out.
        None
    }
}

impl Sealed for Resource {
    const METHOD: &'static str = method::RESOURCES_LIST;
    const ITEM: Item = Item {
        member: "resources",
        size: size_of::<Resource>(),
        filled: None,
    };
    fn split(raw: &serde_json::value::RawValue) -> Result<(Vec<Self>, Option<String>)> {
        let p: ListResourcesResult = page(raw, Self::METHOD)?;
        Ok((p.resources, p.next_cursor))
    }
    fn needs() -> Option<Needs> {
        Some(Needs::Resources)
    }
}

impl Sealed for ResourceTemplate {
    const METHOD: &'static str = method::RESOURCES_TEMPLATES_LIST;
    const ITEM: Item = Item {
        member: "resourceTemplates",
        size: size_of::<ResourceTemplate>(),
        filled: None,
    };
    fn split(raw: &serde_json::value::RawValue) -> Result<(Vec<Self>, Option<String>)> {
        let p: ListResourceTemplatesResult = page(raw, Self::METHOD)?;
        Ok((p.resource_templates, p.next_cursor))
    }
    fn needs() -> Option<Needs> {
        Some(Needs::Resources)
    }
}

impl Sealed for Prompt {
    const METHOD: &'static str = method::PROMPTS_LIST;
    const ITEM: Item = Item {
        member: "prompts",
        size: size_of::<Prompt>(),
        filled: None,
    };
    fn split(raw: &serde_json::value::RawValue) -> Result<(Vec<Self>, Option<String>)> {
        let p: ListPromptsResult = page(raw, Self::METHOD)?;
        Ok((p.prompts, p.next_cursor))
    }
    fn needs() -> Option<Needs> {
        Some(Needs::Prompts)
    }
}

/// One page: its items, the size of its JSON and what its items take in
/// memory.
struct Page<T> {
    items: Vec<T>,
    bytes: usize,
    memory: usize,
}

/// How much memory a page's items may take, and what passing it means.
#[derive(Clone, Copy)]
enum Room {
    /// A page read alone: up to `max_listed_memory`.
    Page,
    /// A page of a whole listing: what the listing has left of
    /// `max_listed_memory`.
    Left(usize),
}

/// What the server offers, one page at a time: from [`Client::tool_pages`],
/// [`Client::resource_pages`], [`Client::resource_template_pages`] or
/// [`Client::prompt_pages`].
///
/// Only the page being read is held, so the whole listing's bounds on
/// bytes and time do not apply: each page is one reply (bounded by the
/// transport's `max_message_size`) and one request (bounded by the
/// client's request timeout), and its items take at most
/// [`max_listed_memory`](crate::ClientBuilder::max_listed_memory) (64 MiB
/// by default, measured before the page is decoded, as for
/// [`Client::list_tools`]), else [`Error::is_over_limit`]. Its bound on
/// pages applies too: at most 1,000 pages, as [`Client::list_tools`]
/// follows, then [`Error::is_protocol`]. To tell a server that loops, the reader keeps
/// a 64-bit keyed digest of each cursor (8 bytes a page), never the
/// cursors: a server that sends a cursor it sent before fails the
/// listing. Reading tool pages does not change what the client
/// remembers of the tools' 2025-11-25 task support; only
/// [`Client::list_tools`] does.
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
pub struct Pages<T> {
    client: Client,
    /// The cursor of the next page, once the first came.
    cursor: Option<String>,
    /// A digest of every cursor the server sent so far (keyed per reader,
    /// so a server cannot make two cursors collide on purpose).
    seen: HashSet<u64>,
    /// The key of the digests.
    key: RandomState,
    /// Pages asked for so far.
    pages: usize,
    /// Set once the last page came, or a page failed.
    done: bool,
    _items: std::marker::PhantomData<fn() -> T>,
}

/// The tools of the server, one `tools/list` page at a time; see [`Pages`].
pub type ToolPages = Pages<Tool>;

impl<T: Listed> Pages<T> {
    pub(crate) fn new(client: Client) -> Self {
        Pages {
            client,
            cursor: None,
            seen: HashSet::new(),
            key: RandomState::new(),
            pages: 0,
            done: false,
            _items: PhantomData,
        }
    }

    /// The next page; `None` after the last page, or after an error.
    ///
    /// # Errors
    ///
    /// Any request error; [`Error::is_missing_capability`] when the server
    /// did not advertise what is listed (resources, prompts), without a
    /// request; [`Error::is_over_limit`] for a page whose items take more
    /// than [`max_listed_memory`](crate::ClientBuilder::max_listed_memory)
    /// (64 MiB by default); [`Error::is_protocol`] for a malformed page, a
    /// server that sends a cursor it sent before (it loops), or a listing
    /// that goes on past 1,000 pages.
    pub async fn next(&mut self) -> Option<Result<Vec<T>>> {
        self.next_within(Room::Page)
            .await
            .map(|page| page.map(|p| p.items))
    }

    async fn next_within(&mut self, room: Room) -> Option<Result<Page<T>>> {
        if self.done {
            return None;
        }
        let page = self.fetch(room).await;
        if page.is_err() {
            self.done = true;
        }
        Some(page)
    }

    async fn fetch(&mut self, room: Room) -> Result<Page<T>> {
        if self.cursor.is_none()
            && let Some(needs) = T::needs()
        {
            self.client.require(needs, T::METHOD).await?;
        }
        self.pages += 1;
        if self.pages > MAX_PAGES {
            return Err(too_many_pages(T::METHOD));
        }
        let params = ListParams {
            cursor: self.cursor.clone(),
        };
        let raw = self.client.wire().send(T::METHOD, &params, None).await?;
        let bound = self.client.inner.max_listed_memory;
        let left = match room {
            Room::Page => bound,
            Room::Left(left) => left,
        };
        let memory = match footprint::page(raw.get(), T::ITEM, left) {
            Ok(memory) => memory,
            Err(Unmeasured::Over) => return Err(over_memory::<T>(room, bound, self.pages)),
            Err(Unmeasured::Malformed(e)) => {
                return Err(
                    Error::protocol(format!("malformed {} result: {e}", T::METHOD))
                        .with_method(T::METHOD),
                );
            }
        };
        let bytes = raw.get().len();
        let (items, next) = T::split(&raw)?;
        drop(raw);
        let page = Page {
            items,
            bytes,
            memory,
        };
        match next {
            Some(c) if !self.seen.insert(self.key.hash_one(&c)) => Err(Error::protocol(format!(
                "{} sent the same cursor twice (the server loops)",
                T::METHOD
            ))
            .with_method(T::METHOD)),
            Some(_) if self.pages == MAX_PAGES => Err(too_many_pages(T::METHOD)),
            Some(c) => {
                self.cursor = Some(c);
                Ok(page)
            }
            None => {
                self.done = true;
                Ok(page)
            }
        }
    }
}

impl Client {
    /// Lists every tool, following `nextCursor` across pages.
    ///
    /// The listing is bounded, however many pages the server sends:
    ///
    /// - its tools take at most
    ///   [`max_listed_memory`](crate::ClientBuilder::max_listed_memory) in
    ///   memory (default 64 MiB). Each page is measured before it is
    ///   decoded: a tool counts its own size (248 bytes on 64-bit targets),
    ///   its strings as allocated, and 640 bytes per JSON object in its
    ///   schemas, its default schema included (see the setting). A tool
    ///   sent as `{"name":"t"}` counts 984 bytes: the default holds 68,000
    ///   of those, or 16,000 tools that count 4 KB each;
    /// - it reads at most
    ///   [`max_listed_bytes`](crate::ClientBuilder::max_listed_bytes) of
    ///   the pages' JSON (default 16 MiB);
    /// - it ends within [`list_timeout`](crate::ClientBuilder::list_timeout)
    ///   (default 5 minutes).
    ///
    /// To read a listing larger than that, take it page by page with
    /// [`Client::tool_pages`] (each page within `max_listed_memory`).
    ///
    /// The client also keeps what the listing says of each tool's
    /// 2025-11-25 `execution.taskSupport`, replacing what an earlier
    /// listing said (a listing that fails leaves it as it was). Calls made
    /// afterwards to a tool listed as `optional` or `required` carry the
    /// legacy `task` opt-in, which servers still on that model need; see
    /// [`TaskOptIn`](crate::protocol::TaskOptIn). The one listing made
    /// without being asked is for that memory: a call to an
    /// initialize-era server that runs tasks, when nothing is remembered,
    /// lists first (once per client; see
    /// [`TaskBuilder::call_tool`](crate::task::TaskBuilder::call_tool)).
    /// The raw [`Client::request`] neither fills nor reads this memory. A `notifications/tools/list_changed`
    /// from the server forgets it (a listing under way when it comes is
    /// not kept either): list again to know the tools.
    ///
    /// # Errors
    ///
    /// - [`Error::is_over_limit`]: the items passed `max_listed_memory`, or
    ///   the pages `max_listed_bytes` (the message names the bound); no
    ///   further page is asked for, and nothing is kept;
    /// - [`Error::is_deadline`]: the listing did not end within `list_timeout`;
    /// - [`Error::is_protocol`]: a malformed page, a cursor sent twice,
    ///   or more than 1,000 pages (the server is looping);
    /// - any request error.
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        let generation = self.tools_generation();
        let tools = self.list_all::<Tool>().await?;
        self.remember_tools(generation, &tools);
        Ok(tools)
    }

    /// The tools of the server one `tools/list` page at a time, for a
    /// listing too large to hold at once; see [`Pages`].
    pub fn tool_pages(&self) -> ToolPages {
        Pages::new(self.clone())
    }

    /// Every page of a listing, within the client's bounds on memory,
    /// bytes read and time taken.
    pub(crate) async fn list_all<T: Listed>(&self) -> Result<Vec<T>> {
        let limit = self.inner.list_timeout;
        match tokio::time::timeout(limit, self.list_every_page::<T>()).await {
            Ok(listed) => listed,
            Err(_) => Err(Error::new(Kind::Deadline {
                after: limit,
                what: Waited::Listing,
            })
            .with_method(T::METHOD)),
        }
    }

    async fn list_every_page<T: Listed>(&self) -> Result<Vec<T>> {
        let max = self.inner.max_listed_bytes;
        let mut pages = Pages::<T>::new(self.clone());
        let mut items = Vec::new();
        let mut kept = 0usize;
        let mut memory = 0usize;
        for n in 1..=MAX_PAGES {
            let room = Room::Left(self.inner.max_listed_memory.saturating_sub(memory));
            let Some(page) = pages.next_within(room).await else {
                break;
            };
            let page = page?;
            memory = memory.saturating_add(page.memory);
            kept = kept.saturating_add(page.bytes);
            if kept > max {
                return Err(Error::new(Kind::OverLimit(format!(
                    "the listing passed the client's bound of {} (max_listed_bytes) on page {n}; \
                     read it page by page, or raise the bound",
                    human::bytes(max)
                )))
                .with_method(T::METHOD));
            }
            items.extend(page.items);
            if pages.done {
                return Ok(items);
            }
        }
        Err(too_many_pages(T::METHOD))
    }
}

/// The error of a page whose items would pass the room they had: the
/// bound itself for a page read alone, what a listing had left of it.
fn over_memory<T: Listed>(room: Room, bound: usize, page: usize) -> Error {
    let bound = human::bytes(bound);
    let text = match room {
        Room::Page => format!(
            "page {page} of the listing holds items past the client's bound of {bound} \
             in memory (max_listed_memory); raise the bound to read it"
        ),
        Room::Left(_) => format!(
            "the listing passed the client's bound of {bound} in memory \
             (max_listed_memory) on page {page}; read it page by page, or raise the bound"
        ),
    };
    Error::new(Kind::OverLimit(text)).with_method(T::METHOD)
}

/// The error of a listing that did not end within [`MAX_PAGES`].
fn too_many_pages(method: &'static str) -> Error {
    Error::protocol(format!("{method} did not end after {MAX_PAGES} pages")).with_method(method)
}
