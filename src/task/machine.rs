//! The task state machine: which status changes are legal. Pure: no I/O.
//!
//! ```text
//!            ┌────────────── working ◀─────────────┐
//!  create ──▶│                  │                  │
//!            │                  ▼                  │
//!            │           input_required ───────────┘
//!            ▼                  │
//!   completed | failed | cancelled   ◀── terminal, sticky
//! ```
//!
//! Legal: `working ⇄ input_required`, and either → any terminal status. A
//! status the client does not know (`unknown`) counts as not final: it may
//! come from and go to any status that is not terminal, and to any terminal
//! one; it never replaces a terminal status.
//! The first *detailed* terminal snapshot (one that carries its result or
//! error, from a poll or a push) is final; every later snapshot is ignored.
//! A creation result is not detailed: a terminal status there only says
//! "read the task", so it does not seal the machine.

use crate::input::Ledger;
use crate::protocol::TaskStatus;

/// What observing a snapshot did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transition {
    /// The status changed from `from` to `to`.
    Moved {
        /// The status before.
        from: TaskStatus,
        /// The status after.
        to: TaskStatus,
    },
    /// The status is unchanged.
    Same,
    /// The snapshot breaks the table (or comes after the final one) and was
    /// ignored.
    Rejected {
        /// The status kept.
        current: TaskStatus,
        /// The status the snapshot claimed.
        claimed: TaskStatus,
    },
}

/// What the client knows of a task besides its last snapshot: whether its
/// status is final, and the input keys it has answered.
///
/// The status itself is the snapshot's ([`TaskInfo::status`](crate::protocol::TaskInfo::status)):
/// the machine is handed it to judge each new claim, and the caller
/// applies the claims it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Machine {
    sealed: bool,
    ledger: Ledger,
    rejected: u32,
}

/// Whether `from → to` is a legal change of status.
pub(crate) fn is_legal(from: TaskStatus, to: TaskStatus) -> bool {
    use TaskStatus::*;
    match (from, to) {
        _ if from == to => true,
        (Working | InputRequired | Unknown, Working | InputRequired | Unknown) => true,
        (Working | InputRequired | Unknown, t) => t.is_terminal(),
        // Terminal statuses never change.
        _ => false,
    }
}

impl Machine {
    /// A machine for a task seen in a creation result (or about to be read).
    pub(crate) fn new() -> Self {
        Machine {
            sealed: false,
            ledger: Ledger::new(),
            rejected: 0,
        }
    }

    /// A machine for a task already known to be finished.
    pub(crate) fn finished() -> Self {
        Machine {
            sealed: true,
            ..Machine::new()
        }
    }

    /// Whether a detailed terminal snapshot has been applied: nothing will
    /// change any more.
    pub(crate) fn is_final(&self) -> bool {
        self.sealed
    }

    /// How many snapshots were rejected.
    #[cfg(test)]
    pub(crate) fn rejected(&self) -> u32 {
        self.rejected
    }

    /// The answered-keys ledger.
    pub(crate) fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The answered-keys ledger, to record answers.
    pub(crate) fn ledger_mut(&mut self) -> &mut Ledger {
        &mut self.ledger
    }

    /// Judges a detailed snapshot's status (from `tasks/get` or a push),
    /// `claimed`, against the task's status so far, `from`. Unless the
    /// claim is rejected, the task's status is `claimed` from now on.
    pub(crate) fn observe(&mut self, from: TaskStatus, claimed: TaskStatus) -> Transition {
        if self.sealed {
            if claimed == from {
                return Transition::Same;
            }
            self.rejected += 1;
            return Transition::Rejected {
                current: from,
                claimed,
            };
        }
        // Unsealed, every change is legal: from `working` or
        // `input_required` by the table, and from an undetailed terminal
        // seed because only a read tells how the task stands.
        debug_assert!(from.is_terminal() || is_legal(from, claimed));
        if claimed.is_terminal() {
            self.sealed = true;
        }
        if from == claimed {
            Transition::Same
        } else {
            Transition::Moved { from, to: claimed }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TaskStatus::*;

    /// A status and its machine, the status applied as a task's core
    /// applies it: every claim the machine does not reject.
    struct Seen {
        machine: Machine,
        status: TaskStatus,
    }

    impl Seen {
        fn new(seed: TaskStatus) -> Seen {
            Seen {
                machine: Machine::new(),
                status: seed,
            }
        }

        fn observe(&mut self, claimed: TaskStatus) -> Transition {
            let t = self.machine.observe(self.status, claimed);
            if !matches!(t, Transition::Rejected { .. }) {
                self.status = claimed;
            }
            t
        }

        fn status(&self) -> TaskStatus {
            self.status
        }

        fn is_final(&self) -> bool {
            self.machine.is_final()
        }

        fn rejected(&self) -> u32 {
            self.machine.rejected()
        }
    }

    const ALL: [TaskStatus; 6] = [
        Working,
        InputRequired,
        Completed,
        Failed,
        Cancelled,
        Unknown,
    ];

    #[test]
    fn the_transition_table() {
        // Rows: from; columns: to, in the order of ALL.
        #[rustfmt::skip]
        const TABLE: [[bool; 6]; 6] = [
            //           work   input  done   failed cancel unknown
            /* work   */ [true, true,  true,  true,  true,  true],
            /* input  */ [true, true,  true,  true,  true,  true],
            /* done   */ [false, false, true, false, false, false],
            /* failed */ [false, false, false, true, false, false],
            /* cancel */ [false, false, false, false, true, false],
            /* unknown*/ [true, true,  true,  true,  true,  true],
        ];
        for (i, from) in ALL.into_iter().enumerate() {
            for (j, to) in ALL.into_iter().enumerate() {
                assert_eq!(is_legal(from, to), TABLE[i][j], "{from} -> {to}");
            }
        }
    }

    #[test]
    fn terminal_is_sticky_and_first_wins() {
        let mut m = Seen::new(Working);
        assert_eq!(
            m.observe(Completed),
            Transition::Moved {
                from: Working,
                to: Completed
            }
        );
        assert!(m.is_final());
        assert_eq!(
            m.observe(Working),
            Transition::Rejected {
                current: Completed,
                claimed: Working
            }
        );
        assert_eq!(
            m.observe(Failed),
            Transition::Rejected {
                current: Completed,
                claimed: Failed
            }
        );
        assert_eq!(m.status(), Completed);
        assert_eq!(m.rejected(), 2);
    }

    #[test]
    fn an_undetailed_terminal_seed_does_not_seal() {
        let mut m = Seen::new(Completed);
        assert!(!m.is_final());
        assert_eq!(
            m.observe(Failed),
            Transition::Moved {
                from: Completed,
                to: Failed
            }
        );
        assert!(m.is_final());
        let mut m = Seen::new(Cancelled);
        assert_eq!(
            m.observe(Working),
            Transition::Moved {
                from: Cancelled,
                to: Working
            }
        );
        assert!(!m.is_final());
    }

    #[test]
    fn input_round_trips() {
        let mut m = Seen::new(Working);
        assert!(matches!(m.observe(InputRequired), Transition::Moved { .. }));
        assert_eq!(m.observe(InputRequired), Transition::Same);
        assert!(matches!(m.observe(Working), Transition::Moved { .. }));
        assert!(!m.is_final());
    }

    mod properties {
        use super::super::*;
        use super::Seen;
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
                let mut machine = Seen::new(seed);
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
        }
    }
}
