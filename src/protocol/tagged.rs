//! `resultType`, which tags a result `complete`, `input_required` or
//! `task`, and reading it in the same pass as the result itself.
//!
//! The tag may come anywhere in the object. Probing for it first
//! ([`ResultType::of`]) and then decoding the result read every reply
//! twice; [`decode_once`] hands the result's decoder every member but
//! `resultType`, which it takes aside as it goes by. The rules are the
//! probe's: absent or `null` is `complete`, an unknown value and a second
//! `resultType` are errors.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, Visitor};

use super::decode_error::DecodeError;

/// The kind of a result, from its `resultType` member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ResultType {
    /// A final result (also when `resultType` is absent, as legacy servers send).
    Complete,
    /// The server needs input first (MRTR).
    InputRequired,
    /// The call became a task (Tasks extension).
    Task,
}

impl ResultType {
    /// Reads the `resultType` of a JSON result object.
    ///
    /// # Errors
    ///
    /// Fails on invalid JSON and on a `resultType` this crate does not know.
    pub fn of(json: &str) -> Result<ResultType, DecodeError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Probe<'a> {
            #[serde(default, borrow)]
            result_type: Option<Cow<'a, str>>,
        }
        let probe: Probe<'_> = serde_json::from_str(json).map_err(DecodeError::json)?;
        ResultType::of_member(probe.result_type.as_deref()).ok_or_else(|| {
            DecodeError::invalid(format!(
                "unknown resultType {:?}",
                probe.result_type.unwrap_or_default()
            ))
        })
    }

    /// The kind a `resultType` member names (`None`: absent or `null`,
    /// which is `complete`); `None` for a value this crate does not know.
    fn of_member(value: Option<&str>) -> Option<ResultType> {
        match value {
            None | Some("complete") => Some(ResultType::Complete),
            Some("input_required") => Some(ResultType::InputRequired),
            Some("task") => Some(ResultType::Task),
            Some(_) => None,
        }
    }
}

const KEY: &str = "resultType";

/// Decodes `json`, a JSON object, as a `T` and reads its `resultType` on
/// the way; `None` when anything is wrong with either.
///
/// Callers fall back to probing first and decoding after when this gives
/// `None`, so that every error (and its order: an unknown `resultType`
/// before a bad body) is the probe's, and only a valid result is read
/// once. `T` is a struct read from an object; anything else (an array, a
/// number) is left to the fallback.
pub(crate) fn decode_once<T: DeserializeOwned>(json: &str) -> Option<(ResultType, T)> {
    let mut seen = Seen::default();
    let mut de = serde_json::Deserializer::from_str(json);
    let body = T::deserialize(Tagged {
        inner: &mut de,
        seen: &mut seen,
    })
    .ok()?;
    de.end().ok()?;
    seen.object
        .then(|| (seen.kind.unwrap_or(ResultType::Complete), body))
}

/// What the pass saw: an object, and its `resultType` (`null` is
/// `complete`).
#[derive(Default)]
struct Seen {
    object: bool,
    kind: Option<ResultType>,
}

/// The `resultType` when it is the result's first member and written
/// plainly (`{"resultType":"task", …`), as servers write it; `None` when
/// it is elsewhere, absent or escaped, and a full probe must find it.
pub(crate) fn leading_result_type(json: &str) -> Option<ResultType> {
    let rest = json.trim_start().strip_prefix('{')?.trim_start();
    let rest = rest.strip_prefix("\"resultType\"")?.trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let (value, rest) = rest.strip_prefix('"')?.split_once('"')?;
    if value.contains('\\') {
        return None;
    }
    let kind = ResultType::of_member(Some(value))?;
    matches!(rest.trim_start().chars().next(), Some(',' | '}')).then_some(kind)
}

/// A deserializer that hands its map's members on, `resultType` excepted.
struct Tagged<'s, D> {
    inner: D,
    seen: &'s mut Seen,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Tagged<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_any(Taking {
            visitor,
            seen: self.seen,
        })
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_map(Taking {
            visitor,
            seen: self.seen,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_struct(
            name,
            fields,
            Taking {
                visitor,
                seen: self.seen,
            },
        )
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct enum identifier ignored_any
    }
}

/// The result's visitor, given a map that leaves `resultType` out.
struct Taking<'s, V> {
    visitor: V,
    seen: &'s mut Seen,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Taking<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.seen.object = true;
        self.visitor.visit_map(Members {
            map,
            seen: self.seen,
        })
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<V::Value, A::Error> {
        // A result is an object; the probe says what else is wrong.
        Err(de::Error::invalid_type(de::Unexpected::Seq, &self))
    }
}

/// The result's members, `resultType` taken aside.
struct Members<'s, A> {
    map: A,
    seen: &'s mut Seen,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Members<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        loop {
            let Some(Key(key)) = self.map.next_key::<Key<'de>>()? else {
                return Ok(None);
            };
            if key != KEY {
                return match key {
                    Cow::Borrowed(key) => seed.deserialize(BorrowedStrDeserializer::new(key)),
                    Cow::Owned(key) => seed.deserialize(StringDeserializer::new(key)),
                }
                .map(Some);
            }
            if self.seen.kind.is_some() {
                return Err(de::Error::duplicate_field(KEY));
            }
            let value: Option<Key<'de>> = self.map.next_value()?;
            // An unknown value: the fallback's probe names it.
            let kind = ResultType::of_member(value.as_ref().map(|Key(v)| v.as_ref()))
                .ok_or_else(|| de::Error::custom("unknown resultType"))?;
            self.seen.kind = Some(kind);
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// A string, borrowed from the input where it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::DetailedTask;

    #[test]
    fn the_result_never_sees_its_result_type() {
        let json = r#"{"resultType":"complete","taskId":"t-1","status":"working","ttlMs":null}"#;
        let (kind, task) = decode_once::<DetailedTask>(json).unwrap();
        assert_eq!(kind, ResultType::Complete);
        assert_eq!(task.task_id.expose(), "t-1");
        // A body that keeps unknown members (a JSON object) does not get it.
        let (_, value) = decode_once::<serde_json::Map<String, serde_json::Value>>(
            r#"{"a":1,"resultType":"task","b":{"resultType":"x"}}"#,
        )
        .unwrap();
        assert_eq!(value.len(), 2);
        assert!(!value.contains_key("resultType"));
        // Nested objects keep theirs.
        assert_eq!(value["b"]["resultType"], "x");
        // Not an object: left to the probe.
        assert!(decode_once::<serde_json::Value>("7").is_none());
        assert!(decode_once::<DetailedTask>(r#"["t-1","working"]"#).is_none());
    }

    #[test]
    fn the_leading_result_type_is_read_only_when_written_plainly() {
        assert_eq!(
            leading_result_type(r#" { "resultType" : "task" , "taskId":"t"}"#),
            Some(ResultType::Task)
        );
        assert_eq!(
            leading_result_type(r#"{"resultType":"input_required"}"#),
            Some(ResultType::InputRequired)
        );
        assert_eq!(
            leading_result_type(r#"{"resultType":"complete","content":[]}"#),
            Some(ResultType::Complete)
        );
        for elsewhere in [
            r#"{"content":[],"resultType":"task"}"#,
            r#"{"resultType":"tasks"}"#,
            r#"{"resultType":"task"x}"#,
            r#"{"resultType":"t\u0061sk"}"#,
            r#"{"resultType":null}"#,
            r#"{"resultType":"task""#,
            "",
            "{",
        ] {
            assert_eq!(leading_result_type(elsewhere), None, "{elsewhere}");
        }
    }
}
