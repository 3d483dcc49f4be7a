//! Every code's explanation has a wrong and a right `.venus` example; the wrong one must
//! trigger that code and the right one must check clean.

use std::path::Path;

use venusc::diag::Code;

/// The bodies of the ```venus fenced blocks of a Markdown text, in order.
fn venus_blocks(md: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in md.lines() {
        match (&mut current, line.trim_start().starts_with("```")) {
            (None, true) if line.trim() == "```venus" => current = Some(String::new()),
            (Some(body), true) => {
                blocks.push(std::mem::take(body));
                current = None;
            }
            (Some(body), false) => {
                body.push_str(line);
                body.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

/// The codes `venusc check` reports, plus E0501 from simulating each valid scenario (as
/// `venusc sim` does).
fn codes_of(text: &str) -> Vec<Code> {
    let mut session = venusc::Session::new();
    let root = session.load(
        Path::new("example.venus"),
        text.as_bytes(),
        &mut |p: &Path| Err(format!("no such file `{}`", p.display()).into()),
    );
    let checked = session.check(root);
    let mut codes: Vec<Code> = checked.diagnostics.iter().map(|d| d.code).collect();
    if !checked.has_errors() {
        for sc in &checked.scenarios {
            let sim = venusc::simulate::simulate(sc, &Default::default())
                .expect("valid scenarios simulate");
            codes.extend(
                venusc::report::check_expect(
                    &sc.expect,
                    &checked.provenance_of(sc).expect,
                    &sim.report,
                )
                .iter()
                .map(|d| d.code),
            );
        }
    }
    codes
}

#[test]
fn every_explanation_has_a_wrong_example_that_triggers_its_code_and_a_clean_right_one() {
    let mut failures = Vec::new();
    for &code in Code::ALL {
        let md = code.explanation();
        assert!(
            md.starts_with(&format!("# {code}")),
            "{code}.md must start with its heading"
        );
        let blocks = venus_blocks(md);
        if blocks.len() < 2 {
            failures.push(format!(
                "{code}: needs a wrong and a right example, found {}",
                blocks.len()
            ));
            continue;
        }
        let wrong = codes_of(&blocks[0]);
        if !wrong.contains(&code) {
            failures.push(format!("{code}: wrong example gives {wrong:?}"));
        }
        let right = codes_of(&blocks[1]);
        if !right.is_empty() {
            failures.push(format!("{code}: right example gives {right:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
