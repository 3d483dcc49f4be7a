//! The terminal pipeline picture of the Megatron papers: one row per pipeline rank, compute
//! placed on a time axis by the zero-communication-cost evaluation, idle time as dots, and a
//! summary line with the bubble fraction.

use super::eval::{evaluate, OpCost, Semantics, Slot};
use super::{Kind, Op, ScheduleIr};
use std::fmt::Write as _;

const RESET: &str = "\x1b[0m";
const IDLE_COLOR: &str = "\x1b[2m";

/// Draws `ir` at most `width` columns wide. Plain mode writes `F3--`/`B3==` boxes (`W3==` for
/// a weight gradient; `F3.1` with chunks; `f3`/`b3` for an odd chunk when the box is too narrow
/// for the chunk) and `.` for idle; `color` drops the letter and paints forwards blue/cyan,
/// backwards green/yellow (even/odd chunk) and weight gradients magenta with ANSI escapes. A
/// schedule that splits the backward ends with a legend line.
pub fn picture(ir: &ScheduleIr, cost: OpCost, width: usize, color: bool) -> String {
    let width = width.max(1);
    let times = match evaluate(ir, cost, Semantics::Eager) {
        Ok(t) => t,
        Err(d) => return format!("{d}\n"),
    };
    let chunks = ir.shape.kind == Kind::Interleaved || ir.shape.kind.has_two_chunks();
    let label_width = format!("pp{}", ir.ranks().len().saturating_sub(1)).len();
    let mut out = String::new();
    for (r, rank) in times.ranks.iter().enumerate() {
        let cells = place(&rank.compute, times.makespan, width);
        let _ = write!(out, "{:<label_width$} |", format!("pp{r}"));
        out.push_str(&render_row(&rank.compute, &cells, chunks, color));
        out.push_str("|\n");
    }
    let (idle, total) = times.bubble();
    let _ = writeln!(
        out,
        "makespan {} (t_f {}, t_b {} per chunk), bubble {:.1}% ({idle} of {total} rank-ticks idle)",
        times.makespan,
        cost.forward,
        cost.backward,
        times.bubble_fraction().percent(),
    );
    if ir.splits_backward() {
        out.push_str(&legend(cost, color));
    }
    out
}

/// What the letters (or colours) of a schedule that splits the backward stand for, with the
/// ticks B and W take (the evaluator's split of `t_b`).
fn legend(cost: OpCost, color: bool) -> String {
    let w = cost.backward / 2;
    let b = cost.backward - w;
    let key = |bg: u8, letter: &str| {
        if color {
            format!("\x1b[30;{bg}m {letter} {RESET}")
        } else {
            letter.to_string()
        }
    };
    format!(
        "legend: {} forward ({} ticks), {} input gradient ({b}), {} weight gradient ({w}), . idle\n",
        key(FORWARD_BG, "F"),
        cost.forward,
        key(BACKWARD_BG, "B"),
        key(WEIGHT_BG, "W"),
    )
}

/// ANSI background colours: forward blue, backward green, weight gradient magenta (the odd
/// chunks of an interleaved schedule one shade over: cyan, yellow).
const FORWARD_BG: u8 = 44;
const BACKWARD_BG: u8 = 42;
const WEIGHT_BG: u8 = 45;

/// Which slot (index into `slots`) covers each column. With room for at least one column
/// per tick the scale is a whole number of columns per tick, so equal ops draw equally wide
/// (the row may then be narrower than `width`); otherwise time is scaled proportionally.
fn place(slots: &[Slot], makespan: u64, width: usize) -> Vec<Option<usize>> {
    if makespan == 0 {
        return Vec::new();
    }
    let width = width as u128;
    let span = u128::from(makespan);
    let column = |t: u64| -> usize {
        let t = u128::from(t);
        let c = if width >= span {
            t * (width / span)
        } else {
            t * width / span
        };
        c as usize
    };
    let columns = column(makespan);
    let mut cells = vec![None; columns];
    for (i, s) in slots.iter().enumerate() {
        let (c0, c1) = (column(s.start).min(columns), column(s.end).min(columns));
        if c1 > c0 {
            for cell in &mut cells[c0..c1] {
                *cell = Some(i);
            }
        } else if let Some(cell @ None) = cells.get_mut(c0) {
            // Narrower than a column: show it if the column is otherwise idle.
            *cell = Some(i);
        }
    }
    cells
}

fn render_row(slots: &[Slot], cells: &[Option<usize>], chunks: bool, color: bool) -> String {
    let mut out = String::new();
    let mut c = 0;
    while c < cells.len() {
        let run = cells[c..].iter().take_while(|&&x| x == cells[c]).count();
        match cells[c] {
            Some(i) => out.push_str(&render_box(&slots[i].op, run, chunks, color)),
            None if color => {
                let _ = write!(out, "{IDLE_COLOR}{}{RESET}", ".".repeat(run));
            }
            None => out.push_str(&".".repeat(run)),
        }
        c += run;
    }
    out
}

/// One op's box of `len` columns: the longest label that fits, then fill.
fn render_box(op: &Op, len: usize, chunks: bool, color: bool) -> String {
    // A weight-gradient op is drawn like a backward, lettered `W` (magenta with colour).
    let (forward, m, letter) = match op {
        Op::Forward(m) => (true, m, "F"),
        Op::Backward(m) => (false, m, "B"),
        Op::Weight(m) => (false, m, "W"),
        _ => return " ".repeat(len),
    };
    let weight = matches!(op, Op::Weight(_));
    // Too narrow for `F5.1`: odd chunks fall back to a lowercase letter (`f5`).
    let short_letter = if chunks && m.chunk % 2 == 1 {
        letter.to_lowercase()
    } else {
        letter.to_string()
    };
    let full = if chunks {
        format!("{}.{}", m.mb, m.chunk)
    } else {
        m.mb.to_string()
    };
    let short = m.mb.to_string();
    let candidates: [String; 3] = if color {
        [full, short, String::new()]
    } else {
        [
            format!("{letter}{full}"),
            format!("{short_letter}{short}"),
            short_letter,
        ]
    };
    let label = candidates
        .into_iter()
        .find(|l| l.chars().count() <= len)
        .unwrap_or_default();
    let fill = match (color, forward) {
        (true, _) => ' ',
        (false, true) => '-',
        (false, false) => '=',
    };
    let mut text = label;
    while text.chars().count() < len {
        text.push(fill);
    }
    if color {
        // Forward blue/cyan, backward green/yellow, alternating by chunk, weight gradient
        // magenta; black text.
        let bg = match (forward, m.chunk % 2) {
            _ if weight => WEIGHT_BG,
            (true, 0) => FORWARD_BG,
            (true, _) => 46,
            (false, 0) => BACKWARD_BG,
            (false, _) => 43,
        };
        format!("\x1b[30;{bg}m{text}{RESET}")
    } else {
        text
    }
}
