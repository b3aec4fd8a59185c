//! The table "What runs when" in `docs/kernels.md` against the selection module: every row's
//! kernel is what [`KernelChoice`] answers for that adapter, shape and row count with the default
//! tuning, and every key the row names is a key of [`EngineTuning`]. On a mismatch the test
//! prints the table as the module sees it. No GPU is needed.

use std::path::Path;

use lyre_engine::kernels::select::{Adapter, KernelChoice};
use lyre_engine::EngineTuning;

const DOC: &str = "../../docs/kernels.md";
const BEGIN: &str = "<!-- kernel choice: begin -->";
const END: &str = "<!-- kernel choice: end -->";

fn adapter(name: &str) -> Adapter {
    let gpu =
        Adapter { cpu: false, subgroup_size: Some(32), coop_f16: true, max_invocations_per_workgroup: 1024 };
    match name {
        "GPU" => gpu,
        "GPU without cooperative matrices" => Adapter { coop_f16: false, ..gpu },
        "CPU (lavapipe)" => Adapter { cpu: true, subgroup_size: Some(8), coop_f16: false, ..gpu },
        other => panic!("unknown adapter `{other}` in {DOC}"),
    }
}

/// `"4096 × 1024"` as (n, k), `"160 × 768"` as (rows, columns) (a codec conv's shape is
/// followed by its chunks of K: `"32 × 768, 168 chunks"`).
fn pair(shape: &str) -> (u32, u32) {
    let (a, b) = shape.split_once('×').unwrap_or_else(|| panic!("`{shape}` is not A × B"));
    (a.trim().parse().unwrap(), b.trim().parse().unwrap())
}

fn number(s: &str) -> u32 {
    s.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("`{s}`: no count"))
}

/// `"32 × 768, 168 chunks"` as (rows per session, columns, chunks of K).
fn conv_shape(shape: &str) -> (u32, u32, u32) {
    let (size, chunks) = shape.split_once(',').unwrap_or_else(|| panic!("`{shape}`: no chunks"));
    let (rows_in, cols) = pair(size);
    (rows_in, cols, number(chunks))
}

/// What runs for one row of the table.
fn runs(choice: &KernelChoice, what: &str, shape: &str, rows: &str) -> String {
    match what {
        "matmul" | "matmul, SwiGLU input" => {
            let (n, k) = pair(shape);
            let plan = choice.matmul_plan(n, k, what.contains("SwiGLU"), choice.partials_bytes());
            plan.at(number(rows)).to_string()
        }
        "attention" => {
            let head_dim = number(shape.trim_start_matches("head_dim"));
            match (rows, choice.fused_attention(head_dim)) {
                ("decode", Some(_)) => "fused q/k-norm + RoPE + attention".to_string(),
                _ => format!("{} RoPE, {} attention", choice.rope(head_dim), choice.attention(head_dim)),
            }
        }
        "decoder layer" => match choice.persistent_grid() {
            0 => "separate dispatches".to_string(),
            n => format!("persistent, {n} workgroups"),
        },
        "sampler" => choice.sampler().to_string(),
        "codec conv" => {
            let (rows_in, cols, chunks) = conv_shape(shape);
            choice.conv(rows_in, cols, chunks, number(rows)).to_string()
        }
        "codec residual unit" => {
            let (rows_in, cols, chunks) = conv_shape(shape);
            let from = choice.conv_unit_fused_from(rows_in, cols, chunks, choice.partials_bytes());
            match from {
                Some((from, _)) if number(rows) >= from => {
                    format!("one dispatch, {}", choice.conv(rows_in, cols, chunks, number(rows)))
                }
                _ => "two convs".to_string(),
            }
        }
        other => panic!("unknown kind `{other}` in {DOC}"),
    }
}

#[test]
fn the_docs_table_is_what_the_selection_module_chooses() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(DOC);
    let text = std::fs::read_to_string(&path).unwrap();
    let table =
        &text[text.find(BEGIN).expect("begin marker") + BEGIN.len()..text.find(END).expect("end marker")];
    let keys: Vec<String> =
        serde_json::to_value(EngineTuning::default()).unwrap().as_object().unwrap().keys().cloned().collect();
    let tuning = EngineTuning::default();
    let (mut rows, mut wrong, mut computed) = (0, Vec::new(), Vec::new());
    for line in table.lines().filter(|l| l.starts_with('|')).skip(2) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let [who, what, shape, count, documented, key_list] = cells[..] else {
            panic!("row `{line}`: six cells")
        };
        let want = runs(&KernelChoice::for_adapter(adapter(who), &tuning), what, shape, count);
        if documented != want {
            wrong.push(format!(
                "{who} / {what} / {shape} / {count}: the docs say `{documented}`, the module `{want}`"
            ));
        }
        for key in key_list.split(',').map(|k| k.trim().trim_matches('`')).filter(|k| !k.is_empty()) {
            assert!(keys.iter().any(|k| k == key), "row `{line}`: `{key}` is no tuning key");
        }
        computed.push(format!("| {who} | {what} | {shape} | {count} | {want} | {key_list} |"));
        rows += 1;
    }
    assert!(wrong.is_empty(), "{}\n\nthe table as chosen:\n{}", wrong.join("\n"), computed.join("\n"));
    assert!(rows >= 30, "{rows} rows");
}
