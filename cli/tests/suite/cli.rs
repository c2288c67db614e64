//! The `privlogit` command line: malformed input is refused with file, line and column and no
//! output; good input gives the documented JSON and table.

use crate::common;
use common::largest_difference;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch directory unique to one test, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("privlogit-cli-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.0.join(name);
        fs::write(&path, contents).expect("write scratch file");
        path
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn privlogit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_privlogit"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `privlogit fit` on breast_cancer split into three parties, standardised, with `extra`.
fn fit_breast_cancer_in_three(extra: &[&str]) -> Output {
    let data = common::shared_data("breast_cancer.csv");
    let mut args = vec![
        "fit",
        "--data",
        s(&data),
        "--split",
        "3",
        "--label",
        "label",
        "--standardize",
    ];
    args.extend(extra);
    privlogit(&args)
}

/// Each malformed file fails with exit status 1, a message starting `file:line:column:` (or
/// `file:line:` where there is no column), nothing on standard output and no --out file.
#[test]
fn malformed_csv_is_refused_with_position_and_no_output() {
    let dir = Scratch::new("malformed");
    let cases: &[(&str, &str, &str, &str)] = &[
        ("empty", "", "y", ":1:1: file is empty"),
        (
            "ragged",
            "a,b,y\n1,2,0\n3,1\n",
            "y",
            ":3:3: expected 3 fields as in the header, found 2",
        ),
        (
            "too_long",
            "a,b,y\n1,2,0\n3,1,1,9\n",
            "y",
            ":3:4: expected 3 fields as in the header, found 4",
        ),
        (
            "non_numeric",
            "a,b,y\n1,2,0\n3,abc,1\n",
            "y",
            ":3:2: \"abc\" in column \"b\" is not a finite number",
        ),
        (
            "infinite",
            "a,b,y\n1,inf,0\n",
            "y",
            ":2:2: \"inf\" in column \"b\" is not a finite number",
        ),
        (
            "missing_empty",
            "a,b,y\n1,2,0\n,4,1\n",
            "y",
            ":3:1: missing value \"\" in column \"a\"",
        ),
        (
            "missing_na",
            "a,b,y\n1,2,0\n5,NA,1\n",
            "y",
            ":3:2: missing value \"NA\" in column \"b\"",
        ),
        (
            "bad_label",
            "a,b,y\n1,2,0\n3,4,2\n",
            "y",
            ":3:3: label \"2\" in column \"y\" is not 0 or 1",
        ),
        (
            "text_label",
            "a,b,y\n1,2,yes\n",
            "y",
            ":2:3: \"yes\" in column \"y\" is not a finite number",
        ),
        (
            "unknown_label",
            "a,b,y\n1,2,0\n",
            "outcome",
            ":1: label column \"outcome\" not found; the columns are a, b, y",
        ),
        (
            "semicolons",
            "a;b;y\n1;2;0\n",
            "y",
            ":1: label column \"y\" not found; the columns are a;b;y (one column: the file looks delimited by ';'",
        ),
        (
            "duplicate",
            "a,b,a,y\n1,2,3,0\n",
            "y",
            ":1:3: duplicate column name \"a\" (also column 1)",
        ),
        (
            "header_only",
            "a,b,y\n",
            "y",
            ":2:1: no data rows after the header",
        ),
        (
            "crlf",
            "a,b,y\r\n1,2,0\r\n3,abc,1\r\n",
            "y",
            ":3:2: \"abc\" in column \"b\"",
        ),
        (
            "blank_lines",
            "a,b,y\n1,2,0\n\n\n3,abc,1\n",
            "y",
            ":5:2: \"abc\" in column \"b\"",
        ),
        (
            "blank_before_header",
            "\n\na,a,y\n1,2,0\n",
            "y",
            ":3:2: duplicate column name \"a\"",
        ),
        (
            "missing_n_a",
            "a,b,y\n1,N/A,0\n",
            "y",
            ":2:2: missing value \"N/A\"",
        ),
        (
            "missing_nan",
            "a,b,y\n1,NaN,0\n",
            "y",
            ":2:2: missing value \"NaN\"",
        ),
        (
            "missing_null",
            "a,b,y\n1,null,0\n",
            "y",
            ":2:2: missing value \"null\"",
        ),
        (
            "missing_question",
            "a,b,y\n1,2,0\n1,?,0\n",
            "y",
            ":3:2: missing value \"?\"",
        ),
        (
            "missing_label",
            "a,b,y\n1,2,\n",
            "y",
            ":2:3: missing value \"\" in column \"y\"",
        ),
    ];
    for (name, contents, label, expected) in cases {
        let file = dir.file(&format!("{name}.csv"), contents);
        let out_file = dir.path(&format!("{name}.json"));
        for extra in [vec![], vec!["--out", s(&out_file)]] {
            let mut args = vec!["fit", "--party", s(&file), "--label", label, "--json"];
            args.extend(extra.iter().copied());
            let out = privlogit(&args);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(1), "{name}: {err}");
            assert!(
                out.stdout.is_empty(),
                "{name}: printed {:?}",
                String::from_utf8_lossy(&out.stdout)
            );
            let want = format!("{}{expected}", file.display());
            assert!(err.contains(&want), "{name}: expected {want:?} in {err:?}");
            assert!(!out_file.exists(), "{name}: left {}", out_file.display());
        }
    }
    // Only the scratch inputs remain: no partial files anywhere.
    let left: Vec<_> = fs::read_dir(&dir.0)
        .expect("readable")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left.len(), cases.len(), "{left:?}");
}

/// Parties whose columns differ are refused, naming the party, the column and the reference.
#[test]
fn parties_must_agree_on_features() {
    let dir = Scratch::new("agree");
    let a = dir.file("a.csv", "age,bmi,y\n1,2,0\n3,4,1\n");
    let b = dir.file("b.csv", "age,weight,y\n1,2,0\n3,5,1\n");
    let c = dir.file("c.csv", "age,y\n1,0\n3,1\n");
    let out = privlogit(&["fit", "--party", s(&a), "--party", s(&b), "--label", "y"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        err.contains(&format!("{}: its features differ from those of {}: feature 2 is \"weight\" here but \"bmi\" there", b.display(), a.display())),
        "{err}"
    );
    let out = privlogit(&["fit", "--party", s(&a), "--party", s(&c), "--label", "y"]);
    assert!(
        stderr(&out).contains("1 features here, 2 there (missing here: \"bmi\")"),
        "{}",
        stderr(&out)
    );
}

/// One file named for two parties (a copied flag) would count its rows twice: the fit and the
/// study refuse it, naming the file, whichever way the path is spelt.
#[test]
fn one_file_for_two_parties_is_refused() {
    let dir = Scratch::new("twice");
    let a = dir.file("a.csv", "x,y\n1,0\n2,1\n3,0\n4,1\n");
    let b = dir.file("b.csv", "x,y\n5,0\n6,1\n7,0\n8,1\n");
    let again = dir.path("./a.csv");
    for command in ["fit", "study"] {
        let out = privlogit(&[
            command,
            "--party",
            s(&a),
            "--party",
            s(&b),
            "--party",
            s(&again),
            "--label",
            "y",
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{command}: {err}");
        assert!(
            err.contains("is given twice (each file is one party's rows"),
            "{command}: {err}"
        );
        assert!(err.contains("a.csv"), "{command}: {err}");
    }
}

/// Every key of a study file that is no setting is named in one error, in the file's order,
/// each at its line with the closest setting; the first at its line and column.
#[test]
fn a_study_files_unknown_keys_are_named_together_with_their_lines() {
    let dir = Scratch::new("typos");
    let file = dir.file(
        "study.toml",
        "label = \"y\"\n  standardise = true\nlamda = 2.0\n[[node]]\nname = \"a\"\n",
    );
    let out = privlogit(&["study", "--study", s(&file)]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let expected = format!(
        "{}:2:3: 2 keys are not settings of any study command: line 2: standardise (did you \
         mean `standardize`?), line 3: lamda (did you mean `lambda`?)",
        file.display()
    );
    assert!(err.contains(&expected), "{err}");
}

/// A plan's refusal of a value names where the value came from: the study file's key when
/// the file set it, the flag when the command line did.
#[test]
fn a_refused_value_is_named_where_it_was_given() {
    let dir = Scratch::new("origin");
    let a = dir.file("a.csv", "x,y\n1,0\n2,1\n3,0\n4,1\n");
    let file = dir.file(
        "study.toml",
        &format!("label = \"y\"\nkey_bits = 1024\nparty = [{:?}]\n", s(&a)),
    );
    let out = privlogit(&["study", "--study", s(&file)]);
    let err = stderr(&out);
    let in_file = format!("{}: key_bits 1024 is below 2048", file.display());
    assert!(err.contains(&in_file), "{err}");
    let out = privlogit(&["study", "--study", s(&file), "--key-bits", "1000"]);
    let err = stderr(&out);
    assert!(err.contains("--key-bits 1000 is below 2048"), "{err}");
}

/// A setting nothing would read in the run asked for is refused by name before any work, not
/// ignored: `--id` without `--vertical`, PLR's `--dp-lambda` without `--dp-epsilon`, `--eta`
/// without `--transfer-from`, a vertical study's `--drop` and `--site-intercepts`; with two
/// Nodes the likelihood-ratio test (`--drop`) and the held-out rows are refused under the
/// two-Node rule, naming the setting given (it blamed `--reveal`, and `--evaluate`); an offset
/// or weight column that is the label or excluded is named so (it was "not found").
#[test]
fn settings_the_run_would_ignore_are_refused_by_name() {
    let demo = |f: &str| format!("{}/../data/{f}", env!("CARGO_MANIFEST_DIR"));
    let (a, b, c) = (
        demo("demo/hospital_a.csv"),
        demo("demo/hospital_b.csv"),
        demo("demo/hospital_c.csv"),
    );
    let (outcomes, imaging) = (demo("vertical/outcomes.csv"), demo("vertical/imaging.csv"));
    let horizontal = ["study", "--label", "label", "--party", &a, "--party", &b];
    let vertical = [
        "study",
        "--vertical",
        "--id",
        "id",
        "--label",
        "label",
        "--party",
        &outcomes,
        "--party",
        &imaging,
    ];
    let wine = format!(
        "{}/../tests/references/wine_glm.csv",
        env!("CARGO_MANIFEST_DIR")
    );
    let gaussian = [
        "fit", "--data", &wine, "--label", "alcohol", "--family", "gaussian",
    ];
    let cases: [(&[&str], &[&str], &str); 10] = [
        (
            &gaussian,
            &["--offset", "alcohol"],
            "--offset names the label column",
        ),
        (
            &gaussian,
            &["--weights", "pH", "--exclude", "pH"],
            "--weights names a column --exclude leaves out",
        ),
        (&horizontal, &["--id", "label"], "--id needs --vertical"),
        (
            &horizontal,
            &["--dp-lambda", "0.5"],
            "--dp-lambda needs --dp-epsilon",
        ),
        (
            &horizontal,
            &["--eta", "0.9"],
            "--eta needs --transfer-from",
        ),
        (
            &vertical,
            &["--drop", "mean_radius", "--lambda", "0"],
            "--drop is refused",
        ),
        (
            &vertical,
            &["--site-intercepts"],
            "--site-intercepts is refused",
        ),
        (
            &horizontal,
            &["--drop", "mean_radius", "--lambda", "0"],
            "--drop with two Nodes",
        ),
        (
            &horizontal,
            &["--test-party", &c, "--test-party", &a],
            "--test-party with two Nodes",
        ),
        (
            &["fit", "--label", "label", "--party", &a],
            &["--id", "label"],
            "--id needs --vertical",
        ),
    ];
    for (base, extra, expected) in cases {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        let out = privlogit(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
        assert!(!err.contains("key pair"), "refused before any work: {err}");
    }
}

/// A Poisson offset whose exp overflows is refused naming its file, row and column, by `fit`
/// and by a study's Node (the fit used to "diverge" with no cause, the study to report a
/// Node's NaN with advice to standardise).
#[test]
fn an_overflowing_poisson_offset_is_named() {
    let dir = Scratch::new("offset");
    let rows: String = (0..12)
        .map(|i| format!("{},{}.5,{}\n", i % 4, i % 3, if i == 3 { 800 } else { 0 }))
        .collect();
    let a = dir.file("a.csv", &format!("y,x,off\n{rows}"));
    let b = dir.file(
        "b.csv",
        &format!("y,x,off\n{}", rows.replace(",800\n", ",0\n")),
    );
    let poisson = [
        "--label", "y", "--family", "poisson", "--offset", "off", "--lambda", "0",
    ];
    let fit: Vec<&str> = ["fit", "--party", s(&a), "--party", s(&b)]
        .into_iter()
        .chain(poisson)
        .collect();
    let study: Vec<&str> = [
        "study",
        "--party",
        s(&a),
        "--party",
        s(&b),
        "--two-node-disclosure",
    ]
    .into_iter()
    .chain(poisson)
    .collect();
    for args in [fit, study] {
        let out = privlogit(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("row 4, offset 800 in column \"off\" is past 700"),
            "{args:?}: {err}"
        );
    }
}

/// A small CSV table with a 0/1 label `y` and features `x1`, `x2` (not separated), `n` rows.
fn two_feature_rows(n: usize) -> String {
    let rows: String = (0..n)
        .map(|i| format!("{},{}.5,{}\n", (i * 7 % 5) % 2, i % 7, i % 3))
        .collect();
    format!("y,x1,x2\n{rows}")
}

/// A likelihood-ratio test whose nested model has no coefficient (`--no-intercept`, every
/// feature dropped) is refused: its log-likelihood read 0 and the statistic came out negative;
/// a secure study that drops every feature is refused by name before it runs (its nested study
/// failed with a protocol error about 0 fractional bits).
#[test]
fn a_nested_model_without_columns_is_refused() {
    let dir = Scratch::new("empty-nested");
    let rows = two_feature_rows(40);
    let a = dir.file("a.csv", &rows);
    let b = dir.file("b.csv", &rows);
    let c = dir.file("c.csv", &rows);
    let drop = [
        "--drop", "x1", "--drop", "x2", "--lambda", "0", "--label", "y",
    ];
    let fit: Vec<&str> = ["fit", "--party", s(&a), "--no-intercept"]
        .into_iter()
        .chain(drop)
        .collect();
    let out = privlogit(&fit);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("leaves the nested model without a coefficient"),
        "{err}"
    );
    let study: Vec<&str> = [
        "study",
        "--party",
        s(&a),
        "--party",
        s(&b),
        "--party",
        s(&c),
    ]
    .into_iter()
    .chain(drop)
    .collect();
    let out = privlogit(&study);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("drops every feature"), "{err}");
    assert!(!err.contains("key pair"), "refused before the study: {err}");
}

/// `predict` reads only the model's columns (and the label): a text id or an empty cell in
/// another column of a CSV file is left out, as its help says (both were refused); it warns
/// when the model's fit diverged; and it refuses an `--out` that is its own `--data`.
#[test]
fn predict_reads_the_models_columns_only() {
    let dir = Scratch::new("predict-columns");
    let train = dir.file("train.csv", &two_feature_rows(30));
    let model = dir.path("model.json");
    let out = privlogit(&[
        "fit",
        "--party",
        s(&train),
        "--label",
        "y",
        "--json",
        "--out",
        s(&model),
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let data = dir.file("data.csv", "site,x2,note,x1\nA-1,1,,2.5\nB-2,0,NA,3.5\n");
    let out = privlogit(&["predict", "--model", s(&model), "--data", s(&data)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 3);
    let out = privlogit(&[
        "predict",
        "--model",
        s(&model),
        "--data",
        s(&data),
        "--out",
        s(&data),
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is the --data file"),
        "{}",
        stderr(&out)
    );
    assert!(
        fs::read_to_string(&data)
            .expect("data")
            .starts_with("site,")
    );
    let text = fs::read_to_string(&model).expect("model");
    let diverged = dir.file(
        "diverged.json",
        &text.replacen("\"status\": \"converged\"", "\"status\": \"diverged\"", 1),
    );
    let out = privlogit(&["predict", "--model", s(&diverged), "--data", s(&data)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("the model's fit diverged"),
        "{}",
        stderr(&out)
    );
}

/// `--latency` and `--bandwidth` shape network connections: a command that opens none
/// (`predict`) neither lists them in its help nor ignores them on its command line (a usage
/// error naming the flag), while a command that does (`study`) lists both.
#[test]
fn network_flags_are_refused_where_nothing_goes_over_a_network() {
    let help = String::from_utf8_lossy(&privlogit(&["predict", "--help"]).stdout).into_owned();
    assert!(
        help.contains("--model") && !help.contains("--latency"),
        "{help}"
    );
    assert!(!help.contains("--bandwidth"), "{help}");
    let help = String::from_utf8_lossy(&privlogit(&["study", "--help"]).stdout).into_owned();
    assert!(
        help.contains("--latency") && help.contains("--bandwidth"),
        "{help}"
    );
    for flag in ["--latency", "--bandwidth"] {
        let value = if flag == "--latency" { "25ms" } else { "1gbit" };
        let out = privlogit(&[
            "predict", flag, value, "--model", "m.json", "--data", "d.csv",
        ]);
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let err = stderr(&out);
        let expected =
            format!("{flag} shapes network connections, and `privlogit predict` opens none");
        assert!(err.contains(&expected), "{err}");
    }
}

/// `--circuit-block` trades round trips for garbled tables and nothing else: blocks of 1, 2
/// and 4 give the same coefficients (the block circuit computes the masked recursion's integers,
/// up to its rounding: 1e-9), 1 waits for more round trips between the servers than 4, and a
/// side the key holder does not serve is refused by name.
#[test]
fn circuit_blocks_change_round_trips_not_the_model() {
    let dir = Scratch::new("blocks");
    let mut parties = Vec::new();
    for k in 0..3u32 {
        let mut text = String::from("x1,x2,x3,y\n");
        for i in 0..40u32 {
            let (a, b, c) = (
                f64::from((i * 7 + k) % 13) / 6.0 - 1.0,
                f64::from((i * 5 + 2 * k) % 11) / 5.0 - 1.0,
                f64::from(i % 3),
            );
            let y = u8::from(a - b + 0.2 * c + f64::from((i * 3 + k) % 5) / 4.0 > 1.0);
            text.push_str(&format!("{a},{b},{c},{y}\n"));
        }
        parties.push(dir.file(&format!("p{k}.csv"), &text));
    }
    let run = |block: &str| {
        let mut args = vec![
            "study",
            "--label",
            "y",
            "--json",
            "--quiet",
            "--circuit-block",
            block,
        ];
        for p in &parties {
            args.extend(["--party", s(p)]);
        }
        privlogit(&args)
    };
    let outcome = |block: &str| {
        let out = run(block);
        assert_eq!(out.status.code(), Some(0), "{block}: {}", stderr(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let coefficients: Vec<f64> = json["coefficients"]
            .as_array()
            .expect("coefficients")
            .iter()
            .map(|v| v.as_f64().expect("number"))
            .collect();
        let servers = json["round_trips"]["total"][0]
            .as_u64()
            .expect("round trips");
        (coefficients, servers)
    };
    let (four, trips_four) = outcome("4");
    for block in ["1", "2"] {
        let (other, trips) = outcome(block);
        let diff = largest_difference(&four, &other);
        assert!(diff <= 1e-9, "block {block}: {diff:e}");
        if block == "1" {
            assert!(trips > trips_four, "{trips} against {trips_four}");
        }
    }
    let refused = run("9");
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    assert!(
        stderr(&refused).contains("--circuit-block 9 is outside [1, 8]"),
        "{}",
        stderr(&refused)
    );
}

/// `--json` prints one object with the documented fields, intercept first; progress goes to
/// standard error.
#[test]
fn json_output_has_the_documented_fields() {
    let out =
        fit_breast_cancer_in_three(&["--lambda", "1", "--optimizer", "privlogit-accel", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    for field in [
        "names",
        "coefficients",
        "iterations",
        "rounds",
        "converged",
        "log_likelihood",
        "optimizer",
    ] {
        assert!(json.get(field).is_some(), "missing {field}");
    }
    assert_eq!(json["names"][0], "intercept");
    assert_eq!(json["names"].as_array().expect("array").len(), 31);
    assert_eq!(json["coefficients"].as_array().expect("array").len(), 31);
    assert_eq!(json["optimizer"], "privlogit-accel");
    assert_eq!(json["converged"], true);
    assert_eq!(json["n"], 569);
    assert_eq!(json["parties"].as_array().expect("array").len(), 3);
    assert!(json["rounds"].as_u64() >= json["iterations"].as_u64());
    let err = stderr(&out);
    assert!(err.contains("iteration    1  objective"), "{err}");
    assert!(err.contains("relative change"), "{err}");
}

/// `--free-intercept` frees the intercept only: without one (`--no-intercept`) the first
/// feature stays penalised, so the fit equals the one without the flag exactly.
#[test]
fn free_intercept_without_an_intercept_changes_nothing() {
    let run = |extra: &[&str]| {
        let mut args = vec!["--no-intercept", "--json", "--quiet"];
        args.extend(extra);
        let out = fit_breast_cancer_in_three(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        json["coefficients"].clone()
    };
    assert_eq!(run(&[]), run(&["--free-intercept"]));
}

/// The readable table names every coefficient; --quiet silences progress.
#[test]
fn table_output_lists_coefficients() {
    let data = common::shared_data("winequality_red.csv");
    let out = privlogit(&[
        "fit",
        "--data",
        s(&data),
        "--label",
        "good",
        "--standardize",
        "--optimizer",
        "newton",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout.clone()).expect("utf-8");
    assert!(
        text.contains("optimizer       newton (converged)"),
        "{text}"
    );
    for name in ["intercept", "fixed_acidity", "alcohol"] {
        assert!(
            text.lines().any(|l| l.starts_with(name)),
            "{name} missing in {text}"
        );
    }
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

/// Splitting by a group column makes one party per value, and the fit equals the one on
/// separate files with the same rows.
#[test]
fn group_column_partitions_like_separate_files() {
    let dir = Scratch::new("groups");
    let rows = [
        ("h1", "0.5,1.2,1"),
        ("h2", "-1.0,0.3,0"),
        ("h1", "2.0,-0.7,1"),
        ("h2", "0.1,0.1,0"),
        ("h1", "-0.3,2.2,0"),
        ("h2", "1.5,-1.1,1"),
        ("h1", "0.9,0.4,1"),
        ("h2", "-2.0,0.8,0"),
    ];
    let mut all = String::from("site,a,b,y\n");
    let mut h1 = String::from("a,b,y\n");
    let mut h2 = String::from("a,b,y\n");
    for (site, rest) in rows {
        all.push_str(&format!("{site},{rest}\n"));
        if site == "h1" {
            h1.push_str(&format!("{rest}\n"))
        } else {
            h2.push_str(&format!("{rest}\n"))
        }
    }
    let all = dir.file("all.csv", &all);
    let h1 = dir.file("h1.csv", &h1);
    let h2 = dir.file("h2.csv", &h2);
    let grouped = privlogit(&[
        "fit",
        "--data",
        s(&all),
        "--group-by",
        "site",
        "--label",
        "y",
        "--json",
        "--quiet",
    ]);
    let files = privlogit(&[
        "fit",
        "--party",
        s(&h1),
        "--party",
        s(&h2),
        "--label",
        "y",
        "--json",
        "--quiet",
    ]);
    let g: serde_json::Value = serde_json::from_slice(&grouped.stdout).expect("json");
    let f: serde_json::Value = serde_json::from_slice(&files.stdout).expect("json");
    assert_eq!(g["parties"].as_array().expect("array").len(), 2);
    assert_eq!(g["coefficients"], f["coefficients"]);
    assert_eq!(g["names"], serde_json::json!(["intercept", "a", "b"]));
}

/// `simulate` writes CSV and binary tables holding the same data; fitting either gives the
/// same coefficients; an unwritable target fails without leaving a file.
#[test]
fn simulate_csv_and_binary_agree() {
    let dir = Scratch::new("simulate");
    let csv = dir.path("sim.csv");
    let plb = dir.path("sim.plb");
    for out in [&csv, &plb] {
        let run = privlogit(&[
            "simulate",
            "--rows",
            "3000",
            "--features",
            "4",
            "--seed",
            "11",
            "--out",
            s(out),
        ]);
        assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    }
    let header = fs::read_to_string(&csv).expect("csv written");
    assert!(header.starts_with("x1,x2,x3,x4,y\n"));
    assert_eq!(header.lines().count(), 3001);
    let fits: Vec<serde_json::Value> = [&csv, &plb]
        .iter()
        .map(|f| {
            let out = privlogit(&[
                "fit",
                "--data",
                s(f),
                "--split",
                "3",
                "--label",
                "y",
                "--json",
                "--quiet",
            ]);
            assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
            serde_json::from_slice(&out.stdout).expect("json")
        })
        .collect();
    assert_eq!(fits[0]["coefficients"], fits[1]["coefficients"]);

    let missing_dir = dir.path("no/such/dir/sim.csv");
    let run = privlogit(&[
        "simulate",
        "--rows",
        "10",
        "--features",
        "2",
        "--seed",
        "1",
        "--out",
        s(&missing_dir),
    ]);
    assert_eq!(run.status.code(), Some(1));
    assert!(stderr(&run).contains("cannot write"), "{}", stderr(&run));

    // A failing --truth leaves no data file either.
    let data = dir.path("with_truth.csv");
    let truth = dir.path("no/such/dir/truth.json");
    let run = privlogit(&[
        "simulate",
        "--rows",
        "10",
        "--features",
        "2",
        "--seed",
        "1",
        "--out",
        s(&data),
        "--truth",
        s(&truth),
    ]);
    assert_eq!(run.status.code(), Some(1));
    assert!(!data.exists(), "data file left behind");

    // More features than the binary format holds are refused up front.
    let wide = dir.path("wide.plb");
    let run = privlogit(&[
        "simulate",
        "--rows",
        "1",
        "--features",
        "100001",
        "--seed",
        "1",
        "--out",
        s(&wide),
    ]);
    assert_eq!(run.status.code(), Some(1));
    assert!(
        stderr(&run).contains("binary tables hold 1 to 100000 features"),
        "{}",
        stderr(&run)
    );
    assert!(!wide.exists());
    let left: Vec<_> = fs::read_dir(&dir.0)
        .expect("readable")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left.len(), 2, "only sim.csv and sim.plb remain: {left:?}");
}

/// A diverging Newton run prints its result, says so on standard error and exits with 3.
#[test]
fn divergence_is_reported_with_its_own_exit_status() {
    let dir = Scratch::new("diverge");
    let sim = dir.path("sim.plb");
    let run = privlogit(&[
        "simulate",
        "--rows",
        "2000",
        "--features",
        "50",
        "--seed",
        "7",
        "--out",
        s(&sim),
    ]);
    assert_eq!(run.status.code(), Some(0));
    let out = privlogit(&[
        "fit",
        "--data",
        s(&sim),
        "--label",
        "y",
        "--optimizer",
        "newton",
        "--init",
        "2",
        "--json",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(json["status"], "diverged");
    assert_eq!(json["converged"], false);
    assert!(
        stderr(&out).contains("newton diverged at iteration 1"),
        "{}",
        stderr(&out)
    );
}

/// The documented exit statuses (docs/src/deployment.md): 1 bad input, 2 usage, 4 a ledger's
/// refusal (3, divergence, and 5, a party lost, have their own tests); the
/// library names settings as ``setting `key` ``, the command line as flags.
#[test]
fn exit_statuses_tell_the_kind_of_failure() {
    let dir = Scratch::new("statuses");
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/demo/hospital_a.csv");
    let missing = privlogit(&[
        "fit",
        "--party",
        s(&dir.path("nope.csv")),
        "--label",
        "label",
    ]);
    assert_eq!(missing.status.code(), Some(1), "{}", stderr(&missing));
    let usage = privlogit(&["fit", "--no-such-flag"]);
    assert_eq!(usage.status.code(), Some(2), "{}", stderr(&usage));

    let ledger = dir.path("ledger.json");
    let dp = |epsilon: &str| {
        privlogit(&[
            "dp",
            "fit",
            "--method",
            "plr",
            "--data",
            s(&demo),
            "--label",
            "label",
            "--epsilon",
            epsilon,
            "--ledger",
            s(&ledger),
            "--budget",
            "1",
            "--out",
            s(&dir.path("model.json")),
        ])
    };
    assert_eq!(dp("0.75").status.code(), Some(0));
    let over = dp("0.5");
    assert_eq!(over.status.code(), Some(4), "{}", stderr(&over));

    // 5 (a party lost) is checked where a party is lost: study_cli.rs, `lose_a_party`.

    // The library's "setting `label`" reaches the command line as its flag.
    let no_label = privlogit(&["fit", "--party", s(&demo)]);
    assert_eq!(no_label.status.code(), Some(1));
    assert!(
        stderr(&no_label).contains("--label COLUMN is needed"),
        "{}",
        stderr(&no_label)
    );
}

/// Unknown or conflicting column options are refused before any work, naming the column.
#[test]
fn column_options_are_checked() {
    let dir = Scratch::new("columns");
    let file = dir.file("t.csv", "site,a,b,y\nh1,1,2,0\nh2,3,4,1\n");
    let f = s(&file);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--party", f, "--exclude", "site", "--exclude", "c"],
            ":1: excluded column \"c\" not found; the columns are site, a, b, y",
        ),
        (
            vec!["--data", f, "--group-by", "hospital"],
            ":1: group column \"hospital\" not found",
        ),
        (
            vec!["--data", f, "--group-by", "y"],
            ":1:4: column \"y\" cannot be both the label and the group column",
        ),
        (
            vec!["--party", f, "--exclude", "y"],
            ":1:4: column \"y\" cannot be both the label and excluded",
        ),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["fit", "--label", "y"];
        args.extend(extra);
        let out = privlogit(&args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(out.stdout.is_empty());
        assert!(err.contains(&format!("{f}{expected}")), "{args:?}: {err}");
    }
    let out = privlogit(&[
        "fit",
        "--party",
        f,
        "--label",
        "y",
        "--exclude",
        "site",
        "--optimizer",
        "privlogit-accel",
        "--memory",
        "0",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("invalid memory = 0: must be at least 1"),
        "{err}"
    );
    assert!(!err.contains("fitting"), "validated before any work: {err}");
}

/// The CLI reports PrivLogit's iteration count under the paper's rule, the same as the library.
#[test]
fn cli_reports_the_library_iteration_count() {
    let out = fit_breast_cancer_in_three(&["--json", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    // The command line's defaults are the library's settings (privlogit::settings::Spec).
    let spec = privlogit::settings::Spec::new(privlogit::settings::Reader::Fit);
    let (_, optimizer) = spec.resolved_optimizer(false).expect("defaults");
    let library = privlogit::fit::fit(
        &common::prepared("breast_cancer.csv", 3),
        optimizer,
        &spec.fit_options(false).expect("defaults"),
        &mut |_| {},
    )
    .expect("fits");
    assert_eq!(json["optimizer"], "privlogit-accel");
    assert_eq!(json["gradient_tolerance"], 1e-6);
    assert_eq!(json["iterations"], library.report.iterations);
    assert_eq!(json["rounds"], library.report.rounds);
    assert_eq!(json["objective"], library.report.objective.expect("shown"));
}

/// `fit --penalty-centre FILE` fits `lambda/2 ||beta - c||^2`: Newton run tight gives the numpy
/// reference (tests/reference/centred_reference.json, c_j = 0.5 (-1)^j) to 1e-12 (observed
/// 5e-15), reports the centre in its JSON, and a bad centre file is refused by position.
#[test]
fn fit_with_a_centred_penalty() {
    let scratch = Scratch::new("centre");
    let data = common::shared_data("breast_cancer.csv");
    let json: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(
            Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
                .join("tests/reference/centred_reference.json"),
        )
        .expect("reference"),
    )
    .expect("json");
    let expected: Vec<f64> = json["datasets"]["breast_cancer.csv"]["coefficients"]
        .as_array()
        .expect("coefficients")
        .iter()
        .map(|v| v.as_f64().expect("number"))
        .collect();
    let lines: Vec<String> = (0..expected.len())
        .map(|j| format!("{}  # coefficient {j}", if j % 2 == 0 { 0.5 } else { -0.5 }))
        .collect();
    let centre = scratch.file("centre.txt", &format!("# centre\n{}\n", lines.join("\n")));
    let out = privlogit(&[
        "fit",
        "--party",
        s(&data),
        "--label",
        "label",
        "--standardize",
        "--optimizer",
        "newton",
        "--tol",
        "0",
        "--gradient-tol",
        "1e-10",
        "--penalty-centre",
        s(&centre),
        "--json",
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let beta: Vec<f64> = report["coefficients"]
        .as_array()
        .expect("coefficients")
        .iter()
        .map(|v| v.as_f64().expect("number"))
        .collect();
    let diff = largest_difference(&beta, &expected);
    assert!(diff <= 1e-12, "{diff:e}");
    assert_eq!(report["penalty_centre"][1], -0.5);
    // A bad file is refused by position, a centre of the wrong length by its count.
    for (file, contents, want) in [
        (
            "bad.txt",
            "0.5\n  x1\n",
            "bad.txt:2:3: `x1` is not a finite number",
        ),
        ("short.txt", "0.5\n", "the penalty centre has 1 entries"),
    ] {
        let centre = scratch.file(file, contents);
        let out = privlogit(&[
            "fit",
            "--party",
            s(&data),
            "--label",
            "label",
            "--penalty-centre",
            s(&centre),
        ]);
        assert!(!out.status.success());
        assert!(stderr(&out).contains(want), "{}", stderr(&out));
    }
}

/// A negative number is a value, not a flag, in every command: `study --lambda -1` reaches the
/// penalty's check (it was "unexpected argument '-1'" while `fit` checked it).
#[test]
fn negative_numbers_reach_their_checks() {
    let demo =
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join("data/demo/hospital_a.csv");
    for command in ["fit", "study"] {
        let out = privlogit(&[
            command,
            "--party",
            s(&demo),
            "--label",
            "label",
            "--lambda",
            "-1",
        ]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{command}: {err}");
        assert!(!err.contains("unexpected argument"), "{command}: {err}");
        assert!(err.contains("lambda"), "{command}: {err}");
    }
}

/// A standardised secure study's JSON carries the pooled statistics and the model in raw units
/// (`raw_model`), so that it applies to raw rows: its predictions on the demo's raw rows equal
/// the plaintext `fit`'s (both to a gradient norm of 1e-8) and the hand-standardised
/// computation from its own `standardization`. The demo's first eight features (scales from
/// 0.1 to 1,000: area beside smoothness) keep the 1e-8 study short; the conversion does not
/// depend on the width.
#[test]
fn a_standardised_secure_model_applies_to_raw_rows() {
    use privlogit::data::{self, LoadOptions};
    use privlogit::model::Model;
    let scratch = Scratch::new("raw-rows");
    let [a, b, c] = common::deployment::narrow_hospitals(&scratch.0, 8).map(PathBuf::from);
    let stop = [
        "--standardize",
        "--tol",
        "0",
        "--gradient-tol",
        "1e-8",
        "--json",
        "--quiet",
    ];
    let mut study = vec![
        "study",
        "--party",
        s(&a),
        "--party",
        s(&b),
        "--party",
        s(&c),
        "--label",
        "label",
        "--accelerate",
    ];
    study.extend(stop);
    let mut fit = vec![
        "fit",
        "--party",
        s(&a),
        s(&b),
        s(&c),
        "--label",
        "label",
        "--optimizer",
        "privlogit-accel",
    ];
    fit.extend(stop);
    let (study, fit) = (privlogit(&study), privlogit(&fit));
    assert!(study.status.success(), "{}", stderr(&study));
    assert!(fit.status.success(), "{}", stderr(&fit));
    assert!(
        !stderr(&study).contains("stopped after"),
        "{}",
        stderr(&study)
    );
    let study: serde_json::Value = serde_json::from_slice(&study.stdout).expect("json");
    let fit: serde_json::Value = serde_json::from_slice(&fit.stdout).expect("json");
    let secure = Model::from_output(&study).expect("a model");
    let reported: Model = serde_json::from_value(study["raw_model"].clone()).expect("raw_model");
    // Equal up to JSON's float round trip (serde_json may read the last bit differently).
    assert_eq!(secure.features, reported.features);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-14 * a.abs().max(1.0);
    assert!(close(secure.intercept, reported.intercept));
    assert!(
        secure
            .weights
            .iter()
            .zip(&reported.weights)
            .all(|(a, b)| close(*a, *b))
    );
    let plain = Model::from_output(&fit).expect("a model");
    let rows = data::load(&a, &LoadOptions::new("label"))
        .expect("loads")
        .data;
    let (p, q) = (
        secure.predict_proba(rows.x.view()).expect("scores"),
        plain.predict_proba(rows.x.view()).expect("scores"),
    );
    let gap = (&p - &q).mapv(f64::abs).fold(0.0, |m: f64, v| m.max(*v));
    assert!(gap < 1e-6, "{gap:e}");
    let st = &study["standardization"];
    let means: Vec<f64> = serde_json::from_value(st["means"].clone()).expect("means");
    let scales: Vec<f64> = serde_json::from_value(st["scales"].clone()).expect("scales");
    let beta: Vec<f64> =
        serde_json::from_value(study["coefficients"].clone()).expect("coefficients");
    for (row, got) in rows.x.rows().into_iter().zip(&p) {
        let logit = beta[0]
            + row
                .iter()
                .enumerate()
                .map(|(j, x)| beta[j + 1] * (x - means[j]) / scales[j])
                .sum::<f64>();
        assert!((got - 1.0 / (1.0 + (-logit).exp())).abs() < 1e-12);
    }
    // `privlogit predict` applies the secure study's model file to raw rows: the same
    // probabilities as the plaintext model's (within the 1e-6 the models agree to), and read
    // unlabelled from a CSV file without the label column.
    let model = scratch.path("model.json");
    std::fs::write(&model, serde_json::to_string(&study).expect("json")).expect("write");
    let unlabelled = scratch.path("rows.csv");
    let text = std::fs::read_to_string(&a).expect("demo");
    let label = text
        .lines()
        .next()
        .expect("header")
        .split(',')
        .position(|c| c == "label")
        .expect("label column");
    let stripped: Vec<String> = text
        .lines()
        .map(|l| {
            l.split(',')
                .enumerate()
                .filter(|(i, _)| *i != label)
                .map(|(_, v)| v)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    std::fs::write(&unlabelled, stripped.join("\n") + "\n").expect("write");
    for (data, extra) in [(s(&unlabelled), vec![]), (s(&a), vec!["--label", "label"])] {
        let mut args = vec!["predict", "--model", s(&model), "--data", data];
        args.extend(extra);
        let out = privlogit(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let predicted: Vec<f64> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .skip(1)
            .map(|l| l.split(',').next().expect("p").parse().expect("number"))
            .collect();
        assert_eq!(predicted.len(), q.len());
        let gap = predicted
            .iter()
            .zip(q.iter())
            .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
        assert!(gap < 1e-6, "{gap:e}");
    }
    let out = privlogit(&[
        "predict",
        "--model",
        s(&model),
        "--data",
        s(&scratch.path("missing.csv")),
    ]);
    assert!(
        !out.status.success() && stderr(&out).contains("missing.csv"),
        "{}",
        stderr(&out)
    );
}

/// `fit` and `dp fit` read Parquet (they could not before: "CSV parse error ... invalid
/// utf-8"), and a study whose files' columns differ is refused naming the files, not "Node 2".
#[test]
fn parquet_in_every_command_and_columns_named_by_file() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let parquet = root.join("tests/fixtures/hospital_a_zstd.parquet");
    let csv = root.join("data/demo/hospital_a.csv");
    let from = |file: &Path| {
        let out = privlogit(&["fit", "--party", s(file), "--label", "label", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        v["coefficients"].clone()
    };
    assert_eq!(from(&parquet), from(&csv));
    let out = privlogit(&[
        "dp",
        "fit",
        "--method",
        "plr",
        "--data",
        s(&parquet),
        "--label",
        "label",
        "--epsilon",
        "1",
        "--seed",
        "1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));

    let dir = Scratch::new("columns-differ");
    let one = dir.file("one.csv", "a,b,y\n1,2,0\n3,4,1\n5,1,0\n2,2,1\n");
    let two = dir.file("two.csv", "a,c,y\n1,2,0\n3,4,1\n5,1,0\n2,2,1\n");
    let out = privlogit(&[
        "study",
        "--party",
        s(&one),
        "--party",
        s(&two),
        "--label",
        "y",
        "--quiet",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("two.csv") && err.contains("one.csv") && err.contains("\"c\""),
        "{err}"
    );
}

/// A seeded study repeats itself exactly in one process: `--seed` seeds the aggregator's masks
/// and the dealer of masked products alike, so two runs round alike (the narrowed demo with
/// eight features keeps it short).
#[test]
fn a_seeded_study_in_one_process_repeats_exactly() {
    let scratch = Scratch::new("seeded");
    let [a, b, c] = common::deployment::narrow_hospitals(&scratch.0, 8);
    let run = || {
        let out = privlogit(&[
            "study",
            "--party",
            &a,
            "--party",
            &b,
            "--party",
            &c,
            "--label",
            "label",
            "--standardize",
            "--seed",
            "7",
            "--json",
            "--quiet",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        (v["coefficients"].clone(), v["standard_errors"].clone())
    };
    assert_eq!(run(), run());
}
