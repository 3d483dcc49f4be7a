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
            let opts = Default::default();
            let sim = match venusc::simulate::simulate(sc, &opts) {
                Ok(sim) => sim,
                Err(e) => {
                    let at = checked.provenance_of(sc);
                    let d = e.diagnostic(sc, &at, &opts);
                    codes.push(d.code);
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
const FROM_THE_COMMAND_LINE: &[Code] = &[
    Code::E0603,
    Code::E0604,
    Code::E0605,
    Code::E0606,
    Code::E0607,
    Code::E0608,
    Code::E0609,
    Code::E0610,
    Code::E0620,
    Code::E0621,
    Code::E0622,
    Code::E0626,
    Code::W0012,
    Code::W0013,
];

/// Codes that no input of this release raises: W0007 fires for a GPU arch without a
/// calibration of its own, and every arch has one now. Their explanations keep the right
/// example (it must check clean) and say why there is no wrong one.
const RAISED_BY_NO_ARCH_OF_THIS_RELEASE: &[Code] = &[Code::W0007];

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
        if RAISED_BY_NO_ARCH_OF_THIS_RELEASE.contains(&code) {
            let right = blocks.first().map(|b| codes_of(b, &root_dir));
            if right.as_ref().is_none_or(|r| !r.is_empty()) || !md.contains("## Right") {
                failures.push(format!(
                    "{code}: needs a `## Right` example that checks clean"
                ));
            }
            continue;
        }
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
