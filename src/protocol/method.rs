//! Method names, and what the client's policy says of each, in one table.
//!
//! Every request the crate sends names its method by one of these
//! constants, and every decision that depends on the method (does it
//! declare the Tasks extension, does it name a task, may its answer be a
//! task, may a lost reply hide work done) reads [`Method`] instead of
//! comparing strings.

/// `initialize` (the initialize era's handshake).
pub(crate) const INITIALIZE: &str = "initialize";
/// `notifications/initialized`.
pub(crate) const NOTIFICATIONS_INITIALIZED: &str = "notifications/initialized";
/// `ping`.
pub(crate) const PING: &str = "ping";
/// `server/discover`.
pub(crate) const SERVER_DISCOVER: &str = "server/discover";
/// `tools/list`.
pub(crate) const TOOLS_LIST: &str = "tools/list";
/// `tools/call`.
pub(crate) const TOOLS_CALL: &str = "tools/call";
/// `resources/list`.
pub(crate) const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`.
pub(crate) const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`.
pub(crate) const RESOURCES_READ: &str = "resources/read";
/// `resources/subscribe` (the initialize era).
pub(crate) const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe` (the initialize era).
pub(crate) const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// `prompts/list`.
pub(crate) const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`.
pub(crate) const PROMPTS_GET: &str = "prompts/get";
/// `completion/complete`.
pub(crate) const COMPLETION_COMPLETE: &str = "completion/complete";
/// `notifications/resources/updated`.
pub(crate) const NOTIFICATIONS_RESOURCES_UPDATED: &str = "notifications/resources/updated";
/// `tasks/get`.
pub(crate) const TASKS_GET: &str = "tasks/get";
/// `tasks/update`.
pub(crate) const TASKS_UPDATE: &str = "tasks/update";
/// `tasks/cancel`.
pub(crate) const TASKS_CANCEL: &str = "tasks/cancel";
/// `tasks/result` (2025-11-25: the payload, and the stream input comes on).
pub(crate) const TASKS_RESULT: &str = "tasks/result";
/// `tasks/list` (2025-11-25).
pub(crate) const TASKS_LIST: &str = "tasks/list";
/// `notifications/tasks/status` (2025-11-25).
pub(crate) const NOTIFICATIONS_TASKS_STATUS: &str = "notifications/tasks/status";
/// `subscriptions/listen`.
pub(crate) const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// `notifications/cancelled`.
pub(crate) const NOTIFICATIONS_CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress`.
pub(crate) const NOTIFICATIONS_PROGRESS: &str = "notifications/progress";
/// `notifications/tasks`.
pub(crate) const NOTIFICATIONS_TASKS: &str = "notifications/tasks";
/// `logging/setLevel` (the initialize era).
pub(crate) const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// `notifications/message`: a server log message.
pub(crate) const NOTIFICATIONS_MESSAGE: &str = "notifications/message";
/// `notifications/tools/list_changed`.
pub(crate) const NOTIFICATIONS_TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";
/// `notifications/prompts/list_changed`.
pub(crate) const NOTIFICATIONS_PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// `notifications/resources/list_changed`.
pub(crate) const NOTIFICATIONS_RESOURCES_LIST_CHANGED: &str =
    "notifications/resources/list_changed";
/// `notifications/elicitation/complete` (2025-11-25): a URL elicitation
/// finished out of band.
pub(crate) const NOTIFICATIONS_ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";
/// `notifications/subscriptions/acknowledged`.
pub(crate) const NOTIFICATIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";

/// What the client's policy says of one method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Method<'a> {
    name: &'a str,
}

impl<'a> Method<'a> {
    /// The method called `name`; any name, known or not.
    pub(crate) fn of(name: &'a str) -> Self {
        Method { name }
    }

    /// The request names one task (`tasks/*`, the legacy `tasks/result`
    /// included): an invalid-params error means the task is unknown.
    pub(crate) fn is_task_scoped(self) -> bool {
        self.name.starts_with("tasks/")
    }

    /// Requests of this method declare the Tasks extension in their
    /// capabilities: everything that creates, reads or watches a task.
    pub(crate) fn declares_tasks(self) -> bool {
        self.name == TOOLS_CALL || self.name == SUBSCRIPTIONS_LISTEN || self.is_task_scoped()
    }

    /// A result of this method may be a task (`resultType: "task"`):
    /// `tools/call`, and `tasks/get` read leniently, since one of the
    /// specification's own examples tags it `task`.
    pub(crate) fn may_answer_with_a_task(self) -> bool {
        self.name == TOOLS_CALL || self.name == TASKS_GET
    }

    /// A lost or late reply leaves the outcome unknown: the server may have
    /// done the work (`tools/call` runs a tool).
    pub(crate) fn loses_outcome_with_its_reply(self) -> bool {
        self.name == TOOLS_CALL
    }

    /// The param that names what a request acts on, which Streamable HTTP
    /// mirrors as `Mcp-Name`: `name` on `tools/call` and `prompts/get`,
    /// `uri` on `resources/read`, `taskId` on `tasks/get`, `tasks/update`
    /// and `tasks/cancel`; `None` for a method that has none.
    pub(crate) fn routing_param(self) -> Option<&'static str> {
        match self.name {
            TOOLS_CALL | PROMPTS_GET => Some("name"),
            RESOURCES_READ => Some("uri"),
            TASKS_GET | TASKS_UPDATE | TASKS_CANCEL => Some("taskId"),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_by_method() {
        let rows = [
            // name, task-scoped, declares tasks, may be a task, loses outcome, routed by
            (SERVER_DISCOVER, false, false, false, false, None),
            (TOOLS_LIST, false, false, false, false, None),
            (TOOLS_CALL, false, true, true, true, Some("name")),
            (TASKS_GET, true, true, true, false, Some("taskId")),
            (TASKS_UPDATE, true, true, false, false, Some("taskId")),
            (TASKS_CANCEL, true, true, false, false, Some("taskId")),
            (TASKS_RESULT, true, true, false, false, None),
            (TASKS_LIST, true, true, false, false, None),
            (SUBSCRIPTIONS_LISTEN, false, true, false, false, None),
            ("prompts/get", false, false, false, false, Some("name")),
            ("resources/read", false, false, false, false, Some("uri")),
        ];
        for (name, scoped, declares, task, loses, routed) in rows {
            let m = Method::of(name);
            assert_eq!(m.routing_param(), routed, "{name}");
            assert_eq!(m.is_task_scoped(), scoped, "{name}");
            assert_eq!(m.declares_tasks(), declares, "{name}");
            assert_eq!(m.may_answer_with_a_task(), task, "{name}");
            assert_eq!(m.loses_outcome_with_its_reply(), loses, "{name}");
        }
    }
}
