//! The VenusSim config fields a plan carries without modelling them (`venussim` items).
//!
//! Input: a `venussim "SECTION.FIELD" "JSON"` item's two strings. Output: a checked
//! [`VenusSimField`] (plain data in [`super::spec::PlanSpec`]), or the [`FieldProblem`] that
//! E0629 reports.
//! Invariants: a kept field never changes a prediction; a field `--emit venussim` writes from
//! the scenario (a model or plan value, or a path it chooses) cannot be kept, so the emitted
//! config and the simulated scenario cannot disagree; the value is one JSON value, written back
//! exactly as it parses (`serde_json`, so `1` stays `1` and `"x"` stays `"x"`).

use serde_json::Value;

/// The three sections of VenusSim's `llm-sim-config.json` (`trace-generator/llm_sim.py`,
/// `parse_json_args`), and `system`: the fields of `sim-config/system.json`. Any other
/// top-level name is a whole section of `llm-sim-config.json` of its own.
pub const SECTIONS: [&str; 4] = [
    "trace_generator_config",
    "simulator_config",
    "time_line_visualizer_config",
    "system",
];

/// Fields `--emit venussim` writes from the scenario, with what they are written from. A kept
/// value for one of them would contradict the simulated plan.
const WRITTEN: &[(&str, &str, &str)] = &[
    ("trace_generator_config", "mlp-worker-num", "the world size"),
    ("trace_generator_config", "world-size", "the cluster's dims"),
    (
        "trace_generator_config",
        "pipeline-model-parallel-size",
        "`pp`",
    ),
    ("trace_generator_config", "context-parallel-size", "`cp`"),
    (
        "trace_generator_config",
        "tensor-model-parallel-size",
        "`tp`",
    ),
    ("trace_generator_config", "sequence-parallel", "`sp`"),
    ("trace_generator_config", "vpp-enable", "`vpp`"),
    (
        "trace_generator_config",
        "num-layers-per-virtual-pipeline-stage",
        "`vpp`",
    ),
    (
        "trace_generator_config",
        "global-batch-size-mlp-multiplier",
        "`global_batch`",
    ),
    (
        "trace_generator_config",
        "global-batch-size",
        "`global_batch`",
    ),
    (
        "trace_generator_config",
        "micro-batch-size",
        "`micro_batch`",
    ),
    (
        "trace_generator_config",
        "no-overlap-p2p-communication",
        "`overlap_p2p`",
    ),
    (
        "trace_generator_config",
        "use-distributed-optimizer",
        "`distributed_optimizer`",
    ),
    (
        "trace_generator_config",
        "overlap-grad-reduce",
        "`overlap_grad_reduce`",
    ),
    (
        "trace_generator_config",
        "no-delay-grad-reduce",
        "`delay_grad_reduce`",
    ),
    (
        "trace_generator_config",
        "overlap-param-gather",
        "`overlap_param_gather`",
    ),
    (
        "trace_generator_config",
        "delay-param-gather",
        "`delay_param_gather`",
    ),
    ("trace_generator_config", "train-iters", "`iterations`"),
    ("trace_generator_config", "seq-length", "`seq`"),
    ("trace_generator_config", "decoder-seq-length", "`seq`"),
    ("trace_generator_config", "hidden-size", "`hidden`"),
    ("trace_generator_config", "ffn-hidden-size", "`ffn`"),
    ("trace_generator_config", "num-attention-heads", "`heads`"),
    ("trace_generator_config", "num-query-groups", "`kv_groups`"),
    ("trace_generator_config", "num-layers", "`layers`"),
    ("trace_generator_config", "vocab-size", "`vocab`"),
    ("trace_generator_config", "swiglu", "`swiglu`"),
    (
        "trace_generator_config",
        "untie-embeddings-and-output-weights",
        "`untied_embeddings`",
    ),
    ("trace_generator_config", "use_step_snapshot", "`measured`"),
    ("trace_generator_config", "step_snapshot_data", "`measured`"),
    (
        "trace_generator_config",
        "output_filepath",
        "the emitted directory",
    ),
    (
        "trace_generator_config",
        "output_filename",
        "the scenario's name",
    ),
    (
        "trace_generator_config",
        "log_filename",
        "the scenario's name",
    ),
    ("simulator_config", "binary", "`--venussim-root`"),
    ("simulator_config", "system", "the emitted directory"),
    ("simulator_config", "network", "the emitted directory"),
    ("simulator_config", "remote_memory", "the emitted directory"),
    ("simulator_config", "comm_group", "the emitted directory"),
    ("simulator_config", "trace_output", "the emitted directory"),
    (
        "time_line_visualizer_config",
        "output_filename",
        "the emitted directory",
    ),
    ("system", "peak-perf", "the gpu's `peak`"),
    ("system", "mfu", "`mfu`"),
    (
        "system",
        "scheduling-policy",
        "venusc's FIFO (LIFO can deadlock in VenusSim)",
    ),
    (
        "system",
        "align-with-nccl",
        "venusc's 0 (1 makes template and simplified traces disagree)",
    ),
    (
        "system",
        "template-trace",
        "`trace_generator_config.use_simplified_template_trace`",
    ),
    (
        "system",
        "all-reduce-implementation",
        "the cluster's dims (a ring each)",
    ),
    (
        "system",
        "all-gather-implementation",
        "the cluster's dims (a ring each)",
    ),
    (
        "system",
        "reduce-scatter-implementation",
        "the cluster's dims (a ring each)",
    ),
    (
        "system",
        "all-to-all-implementation",
        "the cluster's dims (a ring each)",
    ),
];

/// One kept field: where it goes and its value.
#[derive(Clone, Debug, PartialEq)]
pub struct VenusSimField {
    /// One of [`SECTIONS`], or a top-level name of its own.
    pub section: String,
    /// The field inside `section`; `None` for a whole top-level section.
    pub field: Option<String>,
    /// The value, as `serde_json` parsed it.
    pub value: Value,
}

impl VenusSimField {
    /// The item's first string, as written (`time_line_visualizer_config.single_pp_group`).
    pub fn path(&self) -> String {
        match &self.field {
            Some(f) => format!("{}.{f}", self.section),
            None => self.section.clone(),
        }
    }
}

/// Why a `venussim` item cannot be kept (E0629).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldProblem {
    /// The path is empty, has an empty part or more than one `.`.
    Path,
    /// One of the three sections named without a field.
    SectionOnly { section: &'static str },
    /// A field of a section VenusSim's config does not have.
    UnknownSection,
    /// A field venusc writes from the scenario: the key (or choice) it is written from.
    Written { from: &'static str },
    /// The value is not one JSON value: serde_json's message.
    Json { message: String },
}

/// Checks one item's two strings.
pub fn field(path: &str, json: &str) -> Result<VenusSimField, FieldProblem> {
    let (section, field) = split_path(path)?;
    if let Some((_, _, from)) = WRITTEN
        .iter()
        .find(|(s, f, _)| *s == section && Some(*f) == field)
    {
        return Err(FieldProblem::Written { from });
    }
    let value: Value = serde_json::from_str(json).map_err(|e| FieldProblem::Json {
        message: e.to_string(),
    })?;
    Ok(VenusSimField {
        section: section.to_string(),
        field: field.map(str::to_string),
        value,
    })
}

fn split_path(path: &str) -> Result<(&str, Option<&str>), FieldProblem> {
    let mut parts = path.split('.');
    let section = parts.next().unwrap_or("");
    let field = parts.next();
    if section.is_empty() || field == Some("") || parts.next().is_some() {
        return Err(FieldProblem::Path);
    }
    let known = SECTIONS.iter().find(|s| **s == section);
    match (known, field) {
        (Some(s), None) => Err(FieldProblem::SectionOnly { section: s }),
        (None, Some(_)) => Err(FieldProblem::UnknownSection),
        _ => Ok((section, field)),
    }
}

/// `value` as the text of a `venussim` item's second string: compact JSON, which reads back as
/// the same value.
pub fn json_text(value: &Value) -> String {
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tooling_field_is_kept_with_its_json_value() {
        let f = field("time_line_visualizer_config.single_pp_group", "1").unwrap();
        assert_eq!(f.section, "time_line_visualizer_config");
        assert_eq!(f.field.as_deref(), Some("single_pp_group"));
        assert_eq!(f.value, serde_json::json!(1));
        assert_eq!(f.path(), "time_line_visualizer_config.single_pp_group");
    }

    #[test]
    fn an_unknown_top_level_section_is_kept_whole() {
        let f = field("extra", r#"{"a": [1, 2]}"#).unwrap();
        assert_eq!(f.field, None);
        assert_eq!(json_text(&f.value), r#"{"a":[1,2]}"#);
    }

    #[test]
    fn a_field_written_from_the_scenario_cannot_be_kept() {
        assert_eq!(
            field("trace_generator_config.hidden-size", "4096"),
            Err(FieldProblem::Written { from: "`hidden`" })
        );
        assert_eq!(
            field("simulator_config.binary", "\"x\""),
            Err(FieldProblem::Written {
                from: "`--venussim-root`"
            })
        );
    }

    #[test]
    fn malformed_paths_and_values_are_problems() {
        assert_eq!(field("", "1"), Err(FieldProblem::Path));
        assert_eq!(field("a.", "1"), Err(FieldProblem::Path));
        assert_eq!(field("a.b.c", "1"), Err(FieldProblem::Path));
        assert_eq!(field("extra.a", "1"), Err(FieldProblem::UnknownSection));
        assert_eq!(
            field("system.mfu", "0.5"),
            Err(FieldProblem::Written { from: "`mfu`" })
        );
        assert_eq!(
            field("system.endpoint-delay", "20").unwrap().value,
            serde_json::json!(20)
        );
        assert_eq!(
            field("simulator_config", "{}"),
            Err(FieldProblem::SectionOnly {
                section: "simulator_config"
            })
        );
        assert!(matches!(
            field("trace_generator_config.stable-embedding", "tru"),
            Err(FieldProblem::Json { .. })
        ));
    }
}
