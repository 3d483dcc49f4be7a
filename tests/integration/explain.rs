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
        &mut |p: &Path| Err(format!("no such file `{}`", p.display())),
    );
    let checked = session.check(root);
    let mut codes: Vec<Code> = checked.diagnostics.iter().map(|d| d.code).collect();
    if !checked.has_errors() {
        for sc in &checked.scenarios {
            let opts = Default::default();
            let sim = match venusc::simulate::simulate(sc, &opts) {
                Ok(sim) => sim,
                Err(e) => {
                    let at = checked.provenance_of(sc);
                    let d = e.diagnostic(sc, &at, &opts);
                    codes.push(d.unwrap_or_else(|| panic!("uncoded failure: {e}")).code);
                    continue;
                }
            };
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

/// Codes that no `.venus` file triggers on its own: they come from command-line options
/// (`--timeline`), shard files (`sweep --merge`), VenusSim's files (`import`) or a trace
/// directory (`sim --trace`). Their explanations show the command instead; the CLI tests in
/// `hostile.rs` trigger each.
const FROM_THE_COMMAND_LINE: &[Code] = &[Code::E0603, Code::E0604, Code::E0605, Code::E0606];

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
        if FROM_THE_COMMAND_LINE.contains(&code) {
            if blocks.is_empty() && md.contains("```sh\nvenusc ") {
                continue;
            }
            failures.push(format!(
                "{code}: comes from the command line: needs a ```sh example and no ```venus one"
            ));
            continue;
        }
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
