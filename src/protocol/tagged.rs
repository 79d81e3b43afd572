//! Reading a result's `resultType` in the same pass as the result itself.
//!
//! A result is tagged by its `resultType` member, which may come anywhere
//! in the object. Probing for it first and then decoding the result read
//! every reply twice; here the decoder of the result sees every member but
//! `resultType`, which is taken aside as it goes by. The rules are those of
//! [`ResultType::of`]: absent or `null` is `complete`, an unknown value
//! and a second `resultType` are errors.
//!
//! [`ResultType::of`]: super::ResultType::of

use std::borrow::Cow;
use std::fmt;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, Visitor};

use super::result::{DecodeError, ResultType};

const KEY: &str = "resultType";

/// Decodes `json` as a `T` and reads its `resultType` on the way.
///
/// `allowed` judges the `resultType`. When the body does not decode, the
/// result is probed again as a whole, so that the errors are those of
/// probing first and decoding after ([`ResultType::of`], then `allowed`,
/// then the body): an unknown or repeated `resultType` is reported as
/// such wherever it stands. Only the error path reads twice.
pub(crate) fn decode_tagged<T: DeserializeOwned>(
    json: &str,
    allowed: impl FnOnce(ResultType) -> Result<(), DecodeError>,
) -> Result<T, DecodeError> {
    let mut seen = None;
    let mut de = serde_json::Deserializer::from_str(json);
    let body = T::deserialize(Tagged {
        inner: &mut de,
        seen: &mut seen,
    })
    .and_then(|body| de.end().map(|()| body));
    match body {
        Ok(body) => {
            allowed(seen.unwrap_or(ResultType::Complete))?;
            Ok(body)
        }
        Err(e) if e.is_syntax() || e.is_eof() => Err(DecodeError::json(e)),
        Err(e) => {
            allowed(ResultType::of(json)?)?;
            Err(DecodeError::json(e))
        }
    }
}

/// The `resultType` when it is the result's first member and written
/// plainly (`{"resultType":"task", …`), as servers write it; `None` when
/// it is elsewhere, absent or escaped, and a full probe must find it.
pub(crate) fn leading_result_type(json: &str) -> Option<ResultType> {
    let rest = json.trim_start().strip_prefix('{')?.trim_start();
    let rest = rest.strip_prefix("\"resultType\"")?.trim_start();
    let rest = rest.strip_prefix(':')?.trim_start();
    let (kind, rest) = if let Some(rest) = rest.strip_prefix("\"task\"") {
        (ResultType::Task, rest)
    } else if let Some(rest) = rest.strip_prefix("\"complete\"") {
        (ResultType::Complete, rest)
    } else if let Some(rest) = rest.strip_prefix("\"input_required\"") {
        (ResultType::InputRequired, rest)
    } else {
        return None;
    };
    matches!(rest.trim_start().chars().next(), Some(',' | '}')).then_some(kind)
}

/// A deserializer that hands its map's members on, `resultType` excepted.
struct Tagged<'s, D> {
    inner: D,
    seen: &'s mut Option<ResultType>,
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
    seen: &'s mut Option<ResultType>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Taking<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(Members {
            map,
            seen: self.seen,
        })
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_seq(seq)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<V::Value, E> {
        self.visitor.visit_bool(v)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<V::Value, E> {
        self.visitor.visit_i64(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<V::Value, E> {
        self.visitor.visit_u64(v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<V::Value, E> {
        self.visitor.visit_f64(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<V::Value, E> {
        self.visitor.visit_str(v)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<V::Value, E> {
        self.visitor.visit_borrowed_str(v)
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<V::Value, E> {
        self.visitor.visit_string(v)
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_unit()
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_none()
    }
}

/// The result's members, `resultType` taken aside.
struct Members<'s, A> {
    map: A,
    seen: &'s mut Option<ResultType>,
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
            if self.seen.is_some() {
                return Err(de::Error::duplicate_field(KEY));
            }
            let value: Option<Key<'de>> = self.map.next_value()?;
            *self.seen = Some(match value.as_ref().map(|Key(v)| v.as_ref()) {
                None | Some("complete") => ResultType::Complete,
                Some("input_required") => ResultType::InputRequired,
                Some("task") => ResultType::Task,
                // Named by the probe that runs on the error path.
                Some(_) => return Err(de::Error::custom("unknown resultType")),
            });
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
    use crate::protocol::{CallToolResult, DetailedTask};

    fn any(_: ResultType) -> Result<(), DecodeError> {
        Ok(())
    }

    fn only_complete(kind: ResultType) -> Result<(), DecodeError> {
        match kind {
            ResultType::Complete => Ok(()),
            other => Err(DecodeError::invalid(format!("not allowed: {other:?}"))),
        }
    }

    /// The single pass agrees with probing first, then decoding, on every
    /// placement and spelling of `resultType`, and on the errors.
    #[test]
    fn agrees_with_probing_first() {
        let cases = [
            r#"{"content":[]}"#,
            r#"{"resultType":"complete","content":[]}"#,
            r#"{"content":[],"resultType":"complete"}"#,
            r#"{"resultType":null,"content":[]}"#,
            r#"{"content":[{"type":"text","text":"x"}],"resultType":"complete","isError":true}"#,
            r#"{"re\u0073ultType":"complete","content":[]}"#,
            r#"{"resultType":"compl\u0065te","content":[]}"#,
            r#"{"resultType":"task","content":[]}"#,
            r#"{"content":[],"resultType":"later"}"#,
            r#"{"content":7,"resultType":"later"}"#,
            r#"{"resultType":"complete","content":7,"resultType":"x"}"#,
            r#"{"content":7,"resultType":"task"}"#,
            r#"{"resultType":"later","content":7}"#,
            r#"{"resultType":"complete","content":[],"resultType":"complete"}"#,
            r#"{"resultType":"complete","content":[],"resultType":"task"}"#,
            r#"{"resultType":1,"content":[]}"#,
            r#"{"resultType":"complete","content":7}"#,
            r#"{"resultType":"task","content":7}"#,
            r#"{"resultType":"complete","content":[]"#,
            r#"{"resultType":"complete","content":[]} x"#,
            r#"["complete"]"#,
            "7",
            "",
        ];
        for json in cases {
            let probed = ResultType::of(json).and_then(|kind| {
                only_complete(kind)?;
                serde_json::from_str::<CallToolResult>(json).map_err(DecodeError::json)
            });
            let single = decode_tagged::<CallToolResult>(json, only_complete);
            match (&probed, &single) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{json}"),
                (Err(a), Err(b)) => {
                    let (a, b) = (a.to_string(), b.to_string());
                    // The same complaint; serde_json's position may differ.
                    let head = |s: &str| s.split(" at line").next().unwrap().to_owned();
                    assert_eq!(head(&a), head(&b), "{json}");
                }
                _ => panic!("{json}: probing gave {probed:?}, one pass {single:?}"),
            }
        }
    }

    #[test]
    fn the_result_never_sees_its_result_type() {
        let json = r#"{"resultType":"complete","taskId":"t-1","status":"working","ttlMs":null}"#;
        let task: DetailedTask = decode_tagged(json, any).unwrap();
        assert_eq!(task.task_id.expose(), "t-1");
        // A body that keeps unknown members (a JSON object) does not get it.
        let value: serde_json::Map<String, serde_json::Value> =
            decode_tagged(r#"{"a":1,"resultType":"complete","b":2}"#, any).unwrap();
        assert_eq!(value.len(), 2);
        assert!(!value.contains_key("resultType"));
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
