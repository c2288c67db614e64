//! `privlogit circuit run` gives the reference circuits' known answers, in plaintext and garbled.

use std::process::Command;

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_privlogit"))
        .args(args)
        .output()
        .expect("binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn shared(name: &str) -> String {
    format!(
        "{}/../shared/circuits/{name}",
        concat!(env!("CARGO_MANIFEST_DIR"), "/..")
    )
}

#[test]
fn known_answers_plaintext_and_garbled() {
    let minus = format!("{:#x}", (-1000000007i64) as u64);
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            "mult2_64.txt",
            vec!["0x0123456789abcdef", "0xfedcba9876543210"],
            "0x121fa00ad77d742\n0x2236d88fe5618cf0\n",
        ),
        (
            "divide64.txt",
            vec![minus.as_str(), "0x3039"],
            "0xfffffffffffec394\n",
        ),
        ("adder64.txt", vec!["0xffffffffffffffff", "0x2"], "0x1\n"),
        ("zero_equal.txt", vec!["0x0"], "0x1\n"),
        ("zero_equal.txt", vec!["0x10"], "0x0\n"),
    ];
    for (file, inputs, expected) in cases {
        for garbled in [false, true] {
            let path = shared(file);
            let mut args = vec!["circuit", "run", path.as_str()];
            for i in &inputs {
                args.extend(["--input", i]);
            }
            if garbled {
                args.extend(["--garbled", "--stats"]);
            }
            let (code, stdout, stderr) = run(&args);
            assert_eq!(code, Some(0), "{file}: {stderr}");
            assert_eq!(stdout, expected, "{file} garbled={garbled}");
            if garbled {
                assert!(
                    stderr.contains("AND gates/s") && stderr.contains("bytes sent"),
                    "{stderr}"
                );
            }
        }
    }
}

#[test]
fn bad_inputs_are_refused() {
    let path = shared("adder64.txt");
    let (code, _, stderr) = run(&["circuit", "run", &path, "--input", "0x1"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("has 2 input groups"), "{stderr}");
    let (code, _, stderr) = run(&["circuit", "run", &path, "--input", "0xzz", "--input", "1"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("not a hexadecimal number"), "{stderr}");
    let (code, _, stderr) = run(&[
        "circuit",
        "run",
        &path,
        "--input",
        "0x1ffffffffffffffff",
        "--input",
        "1",
    ]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("needs 65 bits, the group has 64"),
        "{stderr}"
    );
    let dir = std::env::temp_dir().join(format!("privlogit-bristol-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "1 3\n1 2\n1 1\n\n2 1 0 1 2 NAND\n").expect("write");
    let (code, _, stderr) = run(&[
        "circuit",
        "run",
        bad.to_str().expect("utf-8"),
        "--input",
        "0",
    ]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("bad.txt: line 5: unknown gate type \"NAND\""),
        "{stderr}"
    );
    std::fs::remove_dir_all(dir).expect("cleanup");
}
