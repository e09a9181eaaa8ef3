use super::*;

fn err(text: &str, grader: Option<&str>) -> String {
    format!("{:#}", parse("s.jsonl", text, grader).unwrap_err())
}

#[test]
fn a_suite_renders_its_template_few_shot_examples_and_choices() {
    let text = r#"{"grader": "choice", "template": "Q: {prompt}\n{choices}\nA:", "fewshot": [{"prompt": "2+2?", "answer": "B", "choices": ["3", "4"]}], "stop": ["\n"], "output_tokens": 4}
{"id": 1, "prompt": "1+1?", "answer": "A", "choices": ["2", "3"]}
"#;
    let s = parse("s.jsonl", text, None).unwrap();
    assert_eq!(s.meta.grader, Grader::Choice);
    assert_eq!(
        (s.meta.rows, s.meta.output_tokens, s.meta.stop.clone()),
        (1, 4, vec!["\n".to_string()])
    );
    let item = &s.items[0];
    assert_eq!(item.id, "1");
    assert_eq!(item.choices, Some(2));
    assert_eq!(
        item.prompt,
        "Q: 2+2?\nA. 3\nB. 4\nA: B\n\nQ: 1+1?\nA. 2\nB. 3\nA:"
    );
    assert_eq!(s.meta.sha256, hex::encode(Sha256::digest(text.as_bytes())));
}

#[test]
fn chat_items_are_sent_as_their_messages() {
    let text = r#"{"id": "a", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "2+3?"}], "answer": 5}"#;
    let s = parse("s.jsonl", text, Some("number")).unwrap();
    assert!(s.meta.messages);
    assert_eq!(s.items[0].history, ["hi", "hello"]);
    assert_eq!(s.items[0].prompt, "2+3?");
    assert_eq!(s.items[0].gold, "5");
    let system = r#"{"id": "a", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "2+3?"}], "answer": 5}"#;
    assert!(
        err(system, Some("number")).contains("s.jsonl:1: messages: message 0 has role \"system\"")
    );
}

#[test]
fn bad_suites_name_the_file_the_line_and_the_field() {
    let header = "{\"grader\": \"gsm8k\"}\n";
    let no_answer = format!("{header}{{\"id\": 1, \"prompt\": \"p\"}}\n");
    assert_eq!(err(&no_answer, None), "s.jsonl:2: no answer");
    let malformed = format!("{header}{{\"id\": 1, \"prompt\": \"p\", \"answer\": \"#### 1\"\n");
    assert!(
        err(&malformed, None).starts_with("s.jsonl:2: EOF"),
        "{}",
        err(&malformed, None)
    );
    let typo = format!("{header}{{\"id\": 1, \"promt\": \"p\", \"answer\": \"#### 1\"}}\n");
    assert!(
        err(&typo, None).contains("s.jsonl:2: unknown field `promt`"),
        "{}",
        err(&typo, None)
    );
    assert!(err(
        "{\"grader\": \"bleu\"}\n{\"id\": 1, \"prompt\": \"p\", \"answer\": \"x\"}",
        None
    )
    .contains("unknown grader \"bleu\" (known: gsm8k, exact, choice, number, tool_call)"));
    assert!(err("{\"id\": 1, \"prompt\": \"p\", \"answer\": \"x\"}", None).contains("no grader"));
    let no_number = format!("{header}{{\"id\": 1, \"prompt\": \"p\", \"answer\": \"#### \"}}\n");
    assert!(err(&no_number, None).contains("s.jsonl:2: answer: a GSM8K answer"));
}

#[test]
fn a_subset_is_seeded_in_suite_order_and_no_larger_than_the_suite() {
    let a = load("builtin:arithmetic:20", None, 7).unwrap();
    let b = load("builtin:arithmetic:20", None, 7).unwrap();
    let ids = |s: &Suite| s.items.iter().map(|i| i.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&a), ids(&b));
    assert_eq!(
        (a.meta.rows, a.meta.sampled, a.items.len()),
        (200, Some(20), 20)
    );
    let order: Vec<usize> = a
        .items
        .iter()
        .map(|i| i.id[11..].parse().unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
    assert_ne!(
        ids(&a),
        ids(&load("builtin:arithmetic:20", None, 8).unwrap())
    );
    let too_many = format!("{:#}", load("builtin:arithmetic:201", None, 7).unwrap_err());
    assert!(
        too_many.contains("the suite has 200 items, fewer than 201"),
        "{too_many}"
    );
    assert!(
        format!("{:#}", load("builtin:trivia", None, 7).unwrap_err())
            .contains("builtin:arithmetic")
    );
}
