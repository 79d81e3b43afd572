use super::form::{MAX_FIELDS, MAX_TEXT, QUOTED};
use super::*;
use crate::protocol::{CreateMessageResult, ElicitResult, ListRootsResult, Root};
use serde_json::json;

fn form() -> InputRequest {
    InputRequest::form(
        "Confirm?",
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
    )
}

#[test]
fn form_answers() {
    assert!(validate(&form(), &ElicitResult::accept(json!({"ok": true})).into()).is_ok());
    assert!(validate(&form(), &ElicitResult::decline().into()).is_ok());
    assert!(validate(&form(), &ElicitResult::cancel().into()).is_ok());
    let missing = validate(&form(), &ElicitResult::accept(json!({})).into());
    assert!(missing.unwrap_err().reason().contains("\"ok\""));
    let nested = validate(
        &form(),
        &ElicitResult::accept(json!({"ok": {"x": 1}})).into(),
    );
    assert!(nested.is_err());
    let mut decline = ElicitResult::decline();
    decline.content = Some(serde_json::Map::new());
    assert!(validate(&form(), &decline.into()).is_err());
}

/// The reason an accepted `content` is refused for `schema`, if it is.
fn answer(schema: Value, content: Value) -> Result<(), String> {
    let request = InputRequest::form("?", schema);
    validate(&request, &ElicitResult::accept(content).into()).map_err(|e| e.reason().to_owned())
}

/// The answer `{"f": value}` to a form whose one field `f` is `property`.
fn field(property: Value, value: Value) -> Result<(), String> {
    answer(
        json!({"type": "object", "properties": {"f": property}}),
        json!({ "f": value }),
    )
}

#[test]
fn schema_that_is_not_an_object_is_refused() {
    for schema in [json!("string"), json!(["a"]), json!(null), json!(7)] {
        let request = InputRequest::form("?", schema.clone());
        let why = validate(&request, &ElicitResult::accept_empty().into()).unwrap_err();
        assert_eq!(
            why.reason(),
            "the requested schema is not an object",
            "{schema}"
        );
        let why = answer(schema, json!({"a": "b"})).unwrap_err();
        assert_eq!(why, "the requested schema is not an object");
    }
    let why = answer(json!({"type": "string"}), json!({})).unwrap_err();
    assert!(why.contains("not an object"), "{why}");
    let why = answer(json!({"type": "object", "properties": "a"}), json!({})).unwrap_err();
    assert!(why.contains("properties are not an object"), "{why}");
    let why = answer(json!({"properties": []}), json!({"a": 1})).unwrap_err();
    assert!(why.contains("properties are not an object"), "{why}");
    // Declining never looks at the schema.
    let request = InputRequest::form("?", json!("string"));
    assert!(validate(&request, &ElicitResult::decline().into()).is_ok());
}

#[test]
fn property_schema_that_is_not_an_object_is_refused() {
    let why = field(json!(true), json!("x")).unwrap_err();
    assert!(why.starts_with("field \"f\": "), "{why}");
    assert!(why.contains("not an object"), "{why}");
}

#[test]
fn accept_without_content() {
    let request = |schema| InputRequest::form("?", schema);
    let empty = || ElicitResult::accept_empty().into();
    assert!(validate(&request(json!({"type": "object"})), &empty()).is_ok());
    assert!(validate(&request(json!({})), &empty()).is_ok());
    let optional = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    assert!(validate(&request(optional), &empty()).is_ok());
    let required = json!({"type": "object", "properties": {"a": {"type": "string"}},
        "required": ["a"]});
    let why = validate(&request(required), &empty()).unwrap_err();
    assert_eq!(why.reason(), "required field \"a\" is missing");
}

#[test]
fn fields_outside_the_form_are_refused() {
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    assert!(answer(schema.clone(), json!({"a": "x"})).is_ok());
    assert_eq!(
        answer(schema, json!({"a": "x", "x": 1})).unwrap_err(),
        "field \"x\" is not in the form"
    );
    let none = json!({"type": "object", "properties": {}});
    assert_eq!(
        answer(none, json!({"x": true})).unwrap_err(),
        "field \"x\" is not in the form"
    );
}

#[test]
fn without_properties_any_primitive_is_taken() {
    let schema = json!({"type": "object"});
    let ok = json!({"s": "x", "n": 1.5, "b": false, "l": ["a", "b"]});
    assert!(answer(schema.clone(), ok).is_ok());
    for bad in [
        json!({"o": {"x": 1}}),
        json!({"o": null}),
        json!({"o": [1]}),
    ] {
        let why = answer(schema.clone(), bad).unwrap_err();
        assert!(why.starts_with("field \"o\""), "{why}");
    }
    let required = json!({"required": ["a"]});
    assert!(answer(required.clone(), json!({"a": 1})).is_ok());
    assert!(answer(required, json!({"b": 1})).is_err());
}

#[test]
fn too_many_fields_are_refused() {
    let content =
        |n: usize| Value::Object((0..n).map(|i| (format!("f{i}"), Value::from(i))).collect());
    assert!(answer(json!({"type": "object"}), content(MAX_FIELDS)).is_ok());
    let why = answer(json!({"type": "object"}), content(MAX_FIELDS + 1)).unwrap_err();
    assert_eq!(
        why,
        "the answer has 1001 fields, more than the 1000 accepted"
    );
    let why = answer(json!({"properties": {}}), content(100_000)).unwrap_err();
    assert!(why.contains("more than the 1000 accepted"), "{why}");
}

#[test]
fn huge_strings_are_refused() {
    let most = "a".repeat(MAX_TEXT);
    let over = "a".repeat(MAX_TEXT + 1);
    let text = json!({"type": "string"});
    assert!(field(text.clone(), json!(most)).is_ok());
    let why = field(text, json!(over)).unwrap_err();
    assert!(why.starts_with("field \"f\": the text is"), "{why}");
    assert!(why.contains("1 MiB"), "{why}");
    assert!(why.len() < 200, "the message is short");
    let list = json!({"type": "array", "items": {"type": "string"}});
    assert!(
        field(list, json!(["a", over]))
            .unwrap_err()
            .contains("1 MiB")
    );
    assert!(
        answer(json!({}), json!({ "f": over }))
            .unwrap_err()
            .contains("1 MiB")
    );
    let why = field(json!({"type": "string", "format": "email"}), json!(over)).unwrap_err();
    assert!(why.contains("1 MiB"), "{why}");
}

#[test]
fn messages_quote_long_values_short() {
    let long = "x".repeat(10_000);
    let why = field(json!({"type": "string", "format": "email"}), json!(long)).unwrap_err();
    assert!(why.len() < 200, "{why}");
    let quoted = format!("\"{}\"… is not an email address", "x".repeat(QUOTED));
    assert!(why.ends_with(&quoted), "{why}");
}

#[test]
fn strings_and_their_lengths() {
    let text = json!({"type": "string", "minLength": 2, "maxLength": 3});
    assert!(field(text.clone(), json!("ab")).is_ok());
    assert!(field(text.clone(), json!("abc")).is_ok());
    // Characters, not bytes: "héé" is 3 characters in 5 bytes.
    assert!(field(text.clone(), json!("héé")).is_ok());
    assert_eq!(
        field(text.clone(), json!("a")).unwrap_err(),
        "field \"f\": \"a\" is 1 character long, shorter than the minimum 2"
    );
    assert_eq!(
        field(text.clone(), json!("abcd")).unwrap_err(),
        "field \"f\": \"abcd\" is 4 characters long, longer than the maximum 3"
    );
    assert_eq!(
        field(text.clone(), json!(12)).unwrap_err(),
        "field \"f\": expected a string, got a number"
    );
    assert!(field(text.clone(), json!(["ab"])).is_err());
    assert!(field(text, json!(null)).is_err());
}

#[test]
fn email_format() {
    let email = json!({"type": "string", "format": "email"});
    for ok in [
        "ada@example.com",
        "a.b+tag@sub.example.co.uk",
        "x@localhost",
        "\"a b\"@example.com",
        "josé@exämple.de",
        "a@[192.0.2.1]",
    ] {
        assert!(field(email.clone(), json!(ok)).is_ok(), "{ok}");
    }
    for bad in [
        "x",
        "@example.com",
        "ada@",
        "ada@@example.com",
        "a b@example.com",
        "ada@exa mple.com",
        ".ada@example.com",
        "a..b@example.com",
        "ada@example..com",
        "ada@-example.com",
        "ada@example.com.",
    ] {
        let why = field(email.clone(), json!(bad)).unwrap_err();
        assert_eq!(why, format!("field \"f\": {bad:?} is not an email address"));
    }
}

#[test]
fn uri_format() {
    let uri = json!({"type": "string", "format": "uri"});
    for ok in [
        "https://example.com/a?b=c#d",
        "mailto:ada@example.com",
        "urn:isbn:0451450523",
        "file:///tmp/a%20b",
        "git+ssh://host/repo",
    ] {
        assert!(field(uri.clone(), json!(ok)).is_ok(), "{ok}");
    }
    for bad in [
        "example.com",
        "/relative/path",
        "1http://x",
        "https://exa mple.com",
        "https://x/%zz",
        "https://x/%2",
        "https://x/é",
        ":nothing",
    ] {
        let why = field(uri.clone(), json!(bad)).unwrap_err();
        assert_eq!(why, format!("field \"f\": {bad:?} is not a URI"));
    }
}

#[test]
fn date_format() {
    let date = json!({"type": "string", "format": "date"});
    for ok in [
        "2024-02-29",
        "2000-02-29",
        "2026-01-31",
        "2026-04-30",
        "2026-12-31",
    ] {
        assert!(field(date.clone(), json!(ok)).is_ok(), "{ok}");
    }
    for bad in [
        "2026-02-30",
        "2023-02-29",
        "1900-02-29",
        "2026-04-31",
        "2026-13-01",
        "2026-00-10",
        "2026-01-00",
        "2026-4-01",
        "2026/04/01",
        "26-04-01",
        "2026-04-01T00:00:00Z",
        "２０２６-04-01",
        "",
    ] {
        let why = field(date.clone(), json!(bad)).unwrap_err();
        assert_eq!(
            why,
            format!("field \"f\": {bad:?} is not a date (YYYY-MM-DD)")
        );
    }
}

#[test]
fn date_time_format() {
    let at = json!({"type": "string", "format": "date-time"});
    for ok in [
        "2026-08-01T09:00:00Z",
        "2026-08-01t09:00:00z",
        "2026-08-01T09:00:00+02:00",
        "2026-08-01T09:00:00-05:30",
        "2026-08-01T09:00:00.123Z",
        "2026-08-01T23:59:60.5+00:00",
        "2024-02-29T00:00:00.000000001-12:00",
    ] {
        assert!(field(at.clone(), json!(ok)).is_ok(), "{ok}");
    }
    for bad in [
        "2026-08-01",
        "2026-08-01T09:00:00",
        "2026-08-01 09:00:00Z",
        "2026-08-01T24:00:00Z",
        "2026-08-01T09:60:00Z",
        "2026-08-01T09:00:61Z",
        "2026-08-01T9:00:00Z",
        "2026-08-01T09:00:00.Z",
        "2026-08-01T09:00:00+0200",
        "2026-08-01T09:00:00+24:00",
        "2026-08-01T09:00:00Z ",
        "2026-02-30T09:00:00Z",
        "2026-08-01é09:00:00Z",
        "2026-08-01T09:00:00é",
    ] {
        let why = field(at.clone(), json!(bad)).unwrap_err();
        assert_eq!(
            why,
            format!("field \"f\": {bad:?} is not a date-time (RFC 3339)")
        );
    }
}

#[test]
fn unknown_formats_are_not_checked() {
    let odd = json!({"type": "string", "format": "hostname-ish"});
    assert!(field(odd, json!("anything at all")).is_ok());
}

#[test]
fn single_choice_from_enum() {
    let color = json!({"type": "object", "properties":
        {"color": {"type": "string", "enum": ["red", "green"]}}});
    assert!(answer(color.clone(), json!({"color": "green"})).is_ok());
    assert_eq!(
        answer(color, json!({"color": "pink"})).unwrap_err(),
        "field \"color\": \"pink\" is not one of \"red\", \"green\""
    );
}

#[test]
fn single_choice_with_titles_via_one_of() {
    let size = json!({"type": "string", "oneOf": [
        {"const": "s", "title": "Small"},
        {"const": "m", "title": "Medium"}
    ]});
    assert!(field(size.clone(), json!("m")).is_ok());
    assert_eq!(
        field(size.clone(), json!("Small")).unwrap_err(),
        "field \"f\": \"Small\" is not one of \"s\", \"m\""
    );
    assert!(field(size, json!(1)).is_err());
    let any = json!({"type": "string", "anyOf": [{"const": "a", "title": "A"}]});
    assert!(field(any.clone(), json!("a")).is_ok());
    assert!(field(any, json!("b")).is_err());
}

#[test]
fn long_choice_lists_are_cut_after_ten() {
    let choices: Vec<String> = (0..25).map(|i| format!("c{i}")).collect();
    let why = field(json!({"type": "string", "enum": choices}), json!("x")).unwrap_err();
    assert_eq!(
        why,
        "field \"f\": \"x\" is not one of \"c0\", \"c1\", \"c2\", \"c3\", \"c4\", \
         \"c5\", \"c6\", \"c7\", \"c8\", \"c9\", …"
    );
}

#[test]
fn numbers_and_their_bounds() {
    let n = json!({"type": "number", "minimum": 0.5, "maximum": 10});
    for ok in [json!(0.5), json!(1), json!(9.99), json!(10), json!(10.0)] {
        assert!(field(n.clone(), ok.clone()).is_ok(), "{ok}");
    }
    assert_eq!(
        field(n.clone(), json!(0.25)).unwrap_err(),
        "field \"f\": 0.25 is below the minimum 0.5"
    );
    assert_eq!(
        field(n.clone(), json!(11)).unwrap_err(),
        "field \"f\": 11 is above the maximum 10"
    );
    assert_eq!(
        field(n, json!("5")).unwrap_err(),
        "field \"f\": expected a number, got a string"
    );
}

#[test]
fn integers_and_their_bounds() {
    let schema = json!({"type": "object", "properties":
        {"age": {"type": "integer", "minimum": 18, "maximum": 130}}});
    let age = |v: Value| answer(schema.clone(), json!({ "age": v }));
    for ok in [json!(18), json!(40), json!(130), json!(40.0)] {
        assert!(age(ok.clone()).is_ok(), "{ok}");
    }
    assert_eq!(
        age(json!(7)).unwrap_err(),
        "field \"age\": 7 is below the minimum 18"
    );
    assert_eq!(
        age(json!(131)).unwrap_err(),
        "field \"age\": 131 is above the maximum 130"
    );
    assert_eq!(
        age(json!(-1)).unwrap_err(),
        "field \"age\": -1 is below the minimum 18"
    );
    assert_eq!(
        age(json!(40.5)).unwrap_err(),
        "field \"age\": 40.5 is not an integer"
    );
    let n = json!({"type": "integer"});
    assert_eq!(
        answer(json!({"properties": {"n": n}}), json!({"n": "3"})).unwrap_err(),
        "field \"n\": expected an integer, got a string"
    );
    // Whole numbers are compared exactly, beyond what an f64 holds.
    let big = json!({"type": "integer", "maximum": 9_007_199_254_740_992_u64});
    assert!(field(big.clone(), json!(9_007_199_254_740_992_u64)).is_ok());
    assert!(field(big.clone(), json!(9_007_199_254_740_993_u64)).is_err());
    assert!(field(big, json!(u64::MAX)).is_err());
    let low = json!({"type": "integer", "minimum": -5});
    assert!(field(low.clone(), json!(-5)).is_ok());
    assert!(field(low, json!(-6)).is_err());
}

#[test]
fn booleans() {
    let b = json!({"type": "boolean"});
    assert!(field(b.clone(), json!(true)).is_ok());
    assert!(field(b.clone(), json!(false)).is_ok());
    assert_eq!(
        field(b.clone(), json!("true")).unwrap_err(),
        "field \"f\": expected a boolean, got a string"
    );
    assert_eq!(
        field(b, json!(1)).unwrap_err(),
        "field \"f\": expected a boolean, got a number"
    );
}

#[test]
fn multiple_choice() {
    let colors = json!({"type": "array", "minItems": 1, "maxItems": 2,
        "items": {"type": "string", "enum": ["red", "green", "blue"]}});
    assert!(field(colors.clone(), json!(["red"])).is_ok());
    assert!(field(colors.clone(), json!(["blue", "red"])).is_ok());
    assert_eq!(
        field(colors.clone(), json!(["red", "pink"])).unwrap_err(),
        "field \"f\": \"pink\" is not one of \"red\", \"green\", \"blue\""
    );
    assert_eq!(
        field(colors.clone(), json!([])).unwrap_err(),
        "field \"f\": 0 items chosen, fewer than the minimum 1"
    );
    assert_eq!(
        field(colors.clone(), json!(["red", "green", "blue"])).unwrap_err(),
        "field \"f\": 3 items chosen, more than the maximum 2"
    );
    assert_eq!(
        field(colors.clone(), json!("red")).unwrap_err(),
        "field \"f\": expected a list of strings, got a string"
    );
    assert_eq!(
        field(colors, json!(["red", 1])).unwrap_err(),
        "field \"f\": expected a list of strings, but item 2 is a number"
    );
}

#[test]
fn multiple_choice_refuses_duplicates() {
    let tags = json!({"type": "array", "items": {"type": "string"}});
    assert!(field(tags.clone(), json!(["a", "b"])).is_ok());
    assert_eq!(
        field(tags, json!(["a", "b", "a"])).unwrap_err(),
        "field \"f\": \"a\" is chosen more than once"
    );
}

#[test]
fn multiple_choice_with_titles() {
    for key in ["anyOf", "oneOf"] {
        let sizes = json!({"type": "array", "items": {key: [
            {"const": "s", "title": "Small"},
            {"const": "l", "title": "Large"}
        ]}});
        assert!(field(sizes.clone(), json!(["l", "s"])).is_ok());
        assert_eq!(
            field(sizes, json!(["Large"])).unwrap_err(),
            "field \"f\": \"Large\" is not one of \"s\", \"l\""
        );
    }
    // Many choices and many items: a set, not a search per item.
    let choices: Vec<String> = (0..50_000).map(|i| format!("c{i}")).collect();
    let many = json!({"type": "array", "items": {"enum": choices.clone()}});
    assert!(field(many, json!(choices)).is_ok());
}

#[test]
fn property_without_type_checks_what_fits() {
    let free = json!({});
    for ok in [json!("x"), json!(1), json!(true), json!(["a"])] {
        assert!(field(free.clone(), ok.clone()).is_ok(), "{ok}");
    }
    for bad in [json!({"a": 1}), json!(null), json!([1])] {
        assert!(field(free.clone(), bad.clone()).is_err(), "{bad}");
    }
    let choice = json!({"enum": ["a", "b"]});
    assert!(field(choice.clone(), json!("a")).is_ok());
    assert!(field(choice, json!("c")).is_err());
    let bounded = json!({"maximum": 3, "maxLength": 1});
    assert!(field(bounded.clone(), json!(4)).is_err());
    assert!(field(bounded.clone(), json!("ab")).is_err());
    assert!(field(bounded, json!(true)).is_ok());
    let odd = json!({"type": "object"});
    assert!(field(odd.clone(), json!("x")).is_ok());
    assert!(field(odd, json!({"a": 1})).is_err());
}

#[test]
fn a_full_form() {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 50},
            "email": {"type": "string", "format": "email"},
            "age": {"type": "integer", "minimum": 18},
            "score": {"type": "number", "maximum": 1},
            "subscribe": {"type": "boolean", "default": false},
            "plan": {"type": "string", "oneOf": [
                {"const": "free", "title": "Free"}, {"const": "pro", "title": "Pro"}]},
            "topics": {"type": "array", "maxItems": 2,
                "items": {"type": "string", "enum": ["rust", "mcp", "web"]}},
            "born": {"type": "string", "format": "date"}
        },
        "required": ["name", "email"]
    });
    let good = json!({"name": "Ada", "email": "ada@example.com", "age": 36,
        "score": 0.5, "subscribe": true, "plan": "pro", "topics": ["rust", "mcp"],
        "born": "1815-12-10"});
    assert!(answer(schema.clone(), good).is_ok());
    assert!(answer(schema.clone(), json!({"name": "Ada", "email": "a@b.c"})).is_ok());
    assert_eq!(
        answer(schema.clone(), json!({"name": "Ada"})).unwrap_err(),
        "required field \"email\" is missing"
    );
    assert_eq!(
        answer(schema, json!({"name": "Ada", "email": "x"})).unwrap_err(),
        "field \"email\": \"x\" is not an email address"
    );
}

#[test]
fn url_answers_carry_no_content() {
    let url = InputRequest::url("Sign in", "https://example.com/auth");
    assert!(validate(&url, &ElicitResult::accept_empty().into()).is_ok());
    assert!(validate(&url, &ElicitResult::accept(json!({"a": "b"})).into()).is_err());
}

#[test]
fn kinds_must_match() {
    let roots = ListRootsResult { roots: vec![] };
    assert!(validate(&form(), &roots.clone().into()).is_err());
    let req = InputRequest::Roots(Default::default());
    assert!(validate(&req, &roots.into()).is_ok());
    let bad = ListRootsResult {
        roots: vec![Root {
            uri: "/tmp".into(),
            name: None,
        }],
    };
    assert!(validate(&req, &bad.into()).is_err());
}

#[test]
fn sampling_answers() {
    let req: InputRequest = serde_json::from_value(json!({
        "method": "sampling/createMessage",
        "params": {"messages": [], "maxTokens": 10}
    }))
    .unwrap();
    let good = CreateMessageResult {
        role: "assistant".into(),
        content: json!({"type": "text", "text": "hi"}),
        model: "m".into(),
        stop_reason: None,
    };
    assert!(validate(&req, &good.clone().into()).is_ok());
    let no_model = CreateMessageResult {
        model: String::new(),
        ..good.clone()
    };
    assert!(validate(&req, &no_model.into()).is_err());
    let bad_role = CreateMessageResult {
        role: "system".into(),
        ..good
    };
    assert!(validate(&req, &bad_role.into()).is_err());
}
