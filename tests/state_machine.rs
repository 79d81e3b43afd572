//! Properties of the pure parts of task handling, over random histories:
//! the status machine keeps the first terminal snapshot forever, and the
//! answered-keys ledger never lets a key be answered twice.

use std::collections::{BTreeMap, BTreeSet};

use mcp_tasks::input::Ledger;
use mcp_tasks::protocol::{ElicitResult, InputRequest, InputRequests, InputResponses, TaskStatus};
use mcp_tasks::task::machine::{Machine, Transition, is_legal};
use proptest::prelude::*;

fn status() -> impl Strategy<Value = TaskStatus> {
    prop_oneof![
        Just(TaskStatus::Working),
        Just(TaskStatus::InputRequired),
        Just(TaskStatus::Completed),
        Just(TaskStatus::Failed),
        Just(TaskStatus::Cancelled),
        Just(TaskStatus::Unknown),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Whatever the server claims, in whatever order: the first terminal
    /// snapshot seals the machine, the status never changes after it, and
    /// every different later claim is rejected and counted.
    #[test]
    fn terminal_never_changes_once_reached(
        seed in status(),
        claims in prop::collection::vec(status(), 0..40),
    ) {
        let mut machine = Machine::new(seed);
        // A creation result is not a detailed snapshot: even a terminal seed
        // does not seal.
        prop_assert!(!machine.is_final());
        let first_terminal = claims.iter().copied().find(|s| s.is_terminal());
        let mut sealed_at = None;
        let mut expected_rejections = 0;
        for (i, &claim) in claims.iter().enumerate() {
            let before = machine.status();
            let was_final = machine.is_final();
            let transition = machine.observe(claim);
            if was_final {
                prop_assert_eq!(machine.status(), before, "a final status changed");
                if claim == before {
                    prop_assert_eq!(transition, Transition::Same);
                } else {
                    expected_rejections += 1;
                    prop_assert_eq!(
                        transition,
                        Transition::Rejected { current: before, claimed: claim }
                    );
                }
                continue;
            }
            // Not sealed: the claim is taken.
            prop_assert_eq!(machine.status(), claim);
            match transition {
                Transition::Same => prop_assert_eq!(before, claim),
                Transition::Moved { from, to } => {
                    prop_assert_eq!((from, to), (before, claim));
                    prop_assert!(from != to);
                    // From a status the client saw in detail, only legal moves happen.
                    if !from.is_terminal() {
                        prop_assert!(is_legal(from, to), "{} -> {}", from, to);
                    }
                }
                Transition::Rejected { .. } => prop_assert!(false, "rejected before sealing"),
            }
            if claim.is_terminal() {
                prop_assert!(machine.is_final());
                sealed_at = Some(i);
            }
        }
        match first_terminal {
            Some(end) => {
                prop_assert!(machine.is_final());
                prop_assert_eq!(machine.status(), end, "the first terminal snapshot wins");
                prop_assert!(sealed_at.is_some());
            }
            None => {
                prop_assert!(!machine.is_final());
                prop_assert_eq!(machine.status(), claims.last().copied().unwrap_or(seed));
            }
        }
        prop_assert_eq!(machine.rejected(), expected_rejections);
    }

    /// A client that answers each snapshot's unanswered keys, over snapshots
    /// that re-serve, drop and add keys at random (as eventually consistent
    /// servers do), answers every key exactly once: never twice, and none
    /// that it saw is left unanswered.
    #[test]
    fn no_key_is_answered_twice(
        snapshots in prop::collection::vec(
            prop::collection::btree_set(0u8..8, 0..5),
            1..30,
        ),
    ) {
        let mut ledger = Ledger::new();
        let mut answers: BTreeMap<String, usize> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        for keys in &snapshots {
            let requests: InputRequests = keys
                .iter()
                .map(|k| (format!("k{k}"), InputRequest::url("open this", "https://example.com")))
                .collect();
            seen.extend(requests.keys().cloned());
            let open = ledger.unanswered(&requests);
            prop_assert!(open.keys().all(|k| !ledger.is_answered(k)));
            prop_assert!(open.keys().all(|k| requests.contains_key(k)));
            let responses: InputResponses = open
                .keys()
                .map(|k| (k.clone(), ElicitResult::decline().into()))
                .collect();
            prop_assert!(ledger.already_answered(&responses).is_empty());
            for key in responses.keys() {
                *answers.entry(key.clone()).or_default() += 1;
            }
            ledger.record(&responses);
            // Answering the same snapshot again is caught.
            let again: InputResponses = requests
                .keys()
                .map(|k| (k.clone(), ElicitResult::decline().into()))
                .collect();
            prop_assert_eq!(ledger.already_answered(&again).len(), again.len());
            prop_assert!(ledger.unanswered(&requests).is_empty());
        }
        prop_assert!(answers.values().all(|&n| n == 1), "{:?}", answers);
        prop_assert_eq!(answers.keys().cloned().collect::<BTreeSet<_>>(), seen);
        prop_assert_eq!(ledger.len(), answers.len());
    }
}
