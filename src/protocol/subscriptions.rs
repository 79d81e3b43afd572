//! `subscriptions/listen`, its acknowledgement, and `notifications/tasks`.

use serde::{Deserialize, Serialize};

use super::TaskId;

/// What a `subscriptions/listen` request asks to hear about.
///
/// The filter of a listen request is fixed for its lifetime.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// `notifications/tasks` for these tasks (Tasks extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<TaskId>>,
}

/// Params of `subscriptions/listen`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ListenParams {
    /// What to listen for.
    pub(crate) notifications: SubscriptionFilter,
}

/// Params of `notifications/subscriptions/acknowledged`: the part of the
/// filter the server agreed to honour.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub struct SubscriptionAcknowledged {
    /// The accepted filter (possibly a subset of the requested one).
    #[serde(default)]
    pub notifications: SubscriptionFilter,
}
