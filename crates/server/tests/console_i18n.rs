//! Issue 26: both console languages are complete. Every console module is
//! loaded under node (`console_i18n.mjs`); the English and Chinese tables
//! must hold the same keys, every literal `t('…')` a page calls must be in
//! both, and every state a badge shows must have a translation.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

#[test]
fn every_console_string_is_in_english_and_chinese() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("node")
        .arg(here.join("tests/console_i18n.mjs"))
        .arg(here.join("console"))
        .output()
        .expect("node runs (the console's string check needs Node.js, which .ci/run installs)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "node failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("the report");
    for (field, what) in [
        ("onlyEn", "keys with no Chinese"),
        ("onlyZh", "keys with no English"),
        ("untranslatedUse", "keys used but missing from a table"),
        ("statesWithout", "badge states without a translation"),
    ] {
        assert_eq!(report[field], serde_json::json!([]), "{what}: {report}");
    }
    // The check saw the pages: hundreds of strings, most of them used.
    assert!(report["keys"].as_u64() > Some(300) && report["used"].as_u64() > Some(250), "{report}");
}
