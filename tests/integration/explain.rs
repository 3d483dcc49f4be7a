//! Every code's explanation has a wrong and a right `.venus` example; the wrong one must
//! trigger that code and the right one must check clean. The I/O codes (E07xx) are raised by
//! files and streams, not by a file's text: theirs are a wrong and a right `sh` command.

use std::path::Path;

use venusc::diag::Code;

/// The bodies of the ```venus fenced blocks of a Markdown text, in order.
fn venus_blocks(md: &str) -> Vec<String> {
    fenced_blocks(md, "venus")
}

/// The bodies of the fenced blocks of one language, in order.
fn fenced_blocks(md: &str, language: &str) -> Vec<String> {
    let opening = format!("```{language}");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in md.lines() {
        match (&mut current, line.trim_start().starts_with("```")) {
            (None, true) if line.trim() == opening => current = Some(String::new()),
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
/// `venusc sim` does). The example sits alone in a directory of its own, the project root, and
/// `use`s go through the CLI's reader (so a `use` that leaves it is E0109).
fn codes_of(text: &str, root_dir: &Path) -> Vec<Code> {
    let mut session = venusc::Session::new();
    let project = venusc::files::Root::at(root_dir, false).expect("the example's directory");
    let root = session.load(
        &root_dir.join("example.venus"),
        text.as_bytes(),
        &mut project.reader(),
    );
    let checked = session.check(root);
    let mut codes: Vec<Code> = checked.diagnostics.iter().map(|d| d.code).collect();
    // A library (definitions, no scenario) checks clean; running it is E0108.
    codes.extend(checked.program.no_scenario.iter().map(|d| d.code));
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
    let dir = std::env::temp_dir().join(format!("venusc-explain-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("project")).unwrap();
    let root_dir = dir.join("project");
    let mut failures = Vec::new();
    for &code in Code::ALL {
        let md = code.explanation();
        assert!(
            md.starts_with(&format!("# {code}")),
            "{code}.md must start with its heading"
        );
        if code.is_io() {
            let commands = fenced_blocks(md, "sh");
            let sections = md.contains("## Wrong") && md.contains("## Right");
            if commands.len() < 2 || !sections || !commands.iter().all(|c| c.contains("venusc")) {
                failures.push(format!(
                    "{code}: needs `## Wrong` and `## Right` with a `sh` block each, running venusc"
                ));
            }
            continue;
        }
        let blocks = venus_blocks(md);
        if blocks.len() < 2 {
            failures.push(format!(
                "{code}: needs a wrong and a right example, found {}",
                blocks.len()
            ));
            continue;
        }
        let wrong = codes_of(&blocks[0], &root_dir);
        if !wrong.contains(&code) {
            failures.push(format!("{code}: wrong example gives {wrong:?}"));
        }
        let right = codes_of(&blocks[1], &root_dir);
        if !right.is_empty() {
            failures.push(format!("{code}: right example gives {right:?}"));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
