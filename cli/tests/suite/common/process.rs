//! Running `privlogit` as child processes: to the end, or as a long-lived role whose standard
//! error is read line by line.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// `privlogit ARGS`, run to the end.
pub fn privlogit(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_privlogit"))
        .args(args)
        .output()
        .expect("runs")
}

/// `privlogit ARGS`, which must succeed; its standard output.
pub fn privlogit_ok(args: &[&str]) -> Vec<u8> {
    let out = privlogit(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// An empty directory for one test's files, under the system's temporary directory.
pub fn fresh_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("privlogit-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

/// A spawned role whose standard error is read line by line on a thread.
pub struct Role {
    pub child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Role {
    pub fn spawn(args: &[&str]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_privlogit"));
        command.args(args);
        Self::spawn_command(command)
    }

    /// `privlogit ARGS` under a limit on open files (`ulimit -n files`, through `sh`).
    pub fn spawn_with_open_files(files: u32, args: &[&str]) -> Self {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!("ulimit -n {files} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_privlogit"))
            .args(args);
        Self::spawn_command(command)
    }

    fn spawn_command(mut command: Command) -> Self {
        // The tests compare deployed studies with one-process runs bit for bit: the roles take
        // `--seed` and `--noise-seed` on their command lines only under this variable.
        command.env("PRIVLOGIT_INSECURE_TEST_SEEDS", "1");
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawns");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Role {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a line containing `needle`, returning it.
    pub fn wait_for(&mut self, needle: &str, patience: Duration) -> String {
        let deadline = Instant::now() + patience;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(_) => panic!("no line with {needle:?}; saw {:?}", self.seen),
            }
        }
    }

    /// Waits for a line containing each of `needles`, in whatever order the process prints
    /// them (two studies served at once announce themselves in either order); returns the
    /// lines in the order of `needles`.
    pub fn wait_for_each(&mut self, needles: &[&str], patience: Duration) -> Vec<String> {
        let deadline = Instant::now() + patience;
        let mut found: Vec<Option<String>> = vec![None; needles.len()];
        while found.iter().any(Option::is_none) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if let Some(slot) = needles
                        .iter()
                        .zip(found.iter_mut())
                        .find(|(needle, slot)| slot.is_none() && line.contains(**needle))
                        .map(|(_, slot)| slot)
                    {
                        *slot = Some(line);
                    }
                }
                Err(_) => panic!("no lines with all of {needles:?}; saw {:?}", self.seen),
            }
        }
        found.into_iter().flatten().collect()
    }

    /// Waits for the process to end, at most `patience`; returns success and all stderr, then
    /// what it printed on stdout.
    pub fn end(self, patience: Duration) -> (bool, String) {
        let (status, log) = self.end_with_status(patience);
        (status.success(), log)
    }

    /// Like [`Role::end`], with the exit status itself.
    pub fn end_with_status(mut self, patience: Duration) -> (std::process::ExitStatus, String) {
        let deadline = Instant::now() + patience;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the process did not end; saw {:?}", self.seen);
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(500)) {
            self.seen.push(line);
        }
        if let Some(mut out) = self.child.stdout.take() {
            let mut printed = String::new();
            let _ = std::io::Read::read_to_string(&mut out, &mut printed);
            self.seen.extend(printed.lines().map(str::to_string));
        }
        (status, self.seen.join("\n"))
    }
}

pub fn address(line: &str) -> String {
    line.split_whitespace()
        .find(|w| w.contains(':') && w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .expect("an address")
        .trim_end_matches(',')
        .to_string()
}

/// `privlogit identity new --name NAME --out DIR`: a key pair and certificate for `name` in
/// `dir`; returns its fingerprint.
pub fn new_identity(dir: &std::path::Path, name: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_privlogit"))
        .args(["identity", "new", "--name", name, "--out"])
        .arg(dir)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fp = String::from_utf8(out.stdout)
        .expect("utf8")
        .trim()
        .to_string();
    assert!(fp.starts_with("sha256:") && fp.len() == 71, "{fp}");
    fp
}

/// Every role ends with success within `patience` (its log in the failure otherwise).
pub fn all_succeed(roles: impl IntoIterator<Item = Role>, patience: Duration) {
    for role in roles {
        let (ok, log) = role.end(patience);
        assert!(ok, "{log}");
    }
}
