//! The one integration-test binary (one link step for every integration test).

mod integration {
    pub mod budget;
    pub mod budget_props;
    pub mod calibrate;
    pub mod cli;
    pub mod explain;
    pub mod fmt;
    pub mod golden_emit;
    pub mod golden_schedule;
    pub mod goodput;
    pub mod guard;
    pub mod hf_import;
    pub mod hostile;
    pub mod input_files;
    pub mod lsp;
    pub mod megatron;
    pub mod reference;
    pub mod report;
    pub mod sim;
    pub mod straggler;
    pub mod sweep;
    pub mod syntax_props;
    pub mod tidy;
    pub mod ui;
    pub mod venussim_generator;
}
