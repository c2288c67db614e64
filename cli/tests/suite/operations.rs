//! A study between organizations as its operators run it: Nodes started minutes apart, a Node
//! restarted while others join, a flood of idle connections against a server with few open
//! files, a party lost while the aggregator waits for the key holder, key files others can
//! read, two studies with the same parties on one pair of servers, and a refusal by the
//! aggregator told to every peer.

use std::time::{Duration, Instant};

use crate::common;
use common::deployment::{
    Deployment, HOSPITALS, coefficients, demo, free_port, free_ports, json, node_process,
    plaintext_fit,
};
use common::largest_difference;
use common::process::{Role, all_succeed, privlogit};

/// A Node started 20 s (more than three deadlines) before the others stays admitted: the
/// aggregator heartbeats on its connection from admission on, and the study succeeds.
#[test]
fn nodes_started_20_s_apart_all_join() {
    let d = Deployment::new("late");
    let (keyholder, kh) = d.keyholder();
    let (mut aggregator, agg) = d.aggregator(&kh, &[]);
    let early = d.node("hospital-a", 'a', &agg);
    aggregator.wait_for("hospital-a joined", Duration::from_secs(30));
    std::thread::sleep(Duration::from_secs(20));
    let b = d.node("hospital-b", 'b', &agg);
    let c = d.node("hospital-c", 'c', &agg);
    aggregator.wait_for("(3 of 3)", Duration::from_secs(30));
    all_succeed(
        vec![aggregator, keyholder, early, b, c],
        Duration::from_secs(120),
    );
}

/// A Node killed while the others are still joining gives its place up; started again, it
/// takes the place and the study succeeds.
#[test]
fn a_node_restarted_while_others_join_takes_its_place() {
    let d = Deployment::new("restart");
    let (keyholder, kh) = d.keyholder();
    let (mut aggregator, agg) = d.aggregator(&kh, &[]);
    let mut first = d.node("hospital-a", 'a', &agg);
    aggregator.wait_for("hospital-a joined", Duration::from_secs(30));
    first.child.kill().expect("kill");
    let _ = first.child.wait();
    aggregator.wait_for("its place is open again", Duration::from_secs(30));
    let again = d.node("hospital-a", 'a', &agg);
    let b = d.node("hospital-b", 'b', &agg);
    let c = d.node("hospital-c", 'c', &agg);
    all_succeed(
        vec![aggregator, keyholder, again, b, c],
        Duration::from_secs(120),
    );
}

/// With few open files (64: its handshakes alone exhaust them), 150 idle TCP connections to the
/// aggregator's port neither stop it nor keep the Nodes out: it waits out the `accept()`
/// errors, drops idle handshakes, and the study succeeds (the Nodes, started at once, retry
/// their handshakes while the listener is busy).
#[test]
fn idle_connections_do_not_stop_a_server_with_few_open_files() {
    let d = Deployment::new("flood");
    let (keyholder, kh) = d.keyholder();
    let (aggregator, agg) = d.aggregator_with_open_files(&kh, &[], Some(64));
    let idle: Vec<std::net::TcpStream> = (0..150)
        .filter_map(|_| std::net::TcpStream::connect(&agg).ok())
        .collect();
    assert!(idle.len() > 100, "{} connections", idle.len());
    let nodes = d.hospital_nodes(&agg);
    let (ok, log) = aggregator.end(Duration::from_secs(180));
    assert!(ok, "{log}");
    assert!(log.contains("cannot accept a connection"), "{log}");
    assert!(log.contains("refused or dropped connections"), "{log}");
    drop(idle);
    all_succeed(
        nodes.into_iter().chain([keyholder]),
        Duration::from_secs(60),
    );
}

/// A Node lost while the aggregator waits for a key holder that has not started stops the
/// aggregator within the deadline (6 s), naming the Node, instead of the connect wait running
/// on for ten minutes.
#[test]
fn a_node_lost_while_waiting_for_the_key_holder_stops_the_aggregator() {
    let d = Deployment::new("waitkh");
    let nowhere = format!("127.0.0.1:{}", free_port());
    let (mut aggregator, agg) = d.aggregator(&nowhere, &[]);
    let mut nodes = d.hospital_nodes(&agg);
    aggregator.wait_for("(3 of 3)", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    let lost = nodes.remove(0);
    let mut lost = lost;
    lost.child.kill().expect("kill");
    let _ = lost.child.wait();
    let killed = Instant::now();
    let (ok, log) = aggregator.end(Duration::from_secs(30));
    let took = killed.elapsed();
    assert!(!ok, "{log}");
    assert!(took < Duration::from_secs(10), "{took:?}: {log}");
    assert!(log.contains("hospital-a"), "{log}");
    for node in nodes {
        let (ok, _) = node.end(Duration::from_secs(30));
        assert!(!ok);
    }
}

/// A private key file that others may read (mode 0644) is refused before anything else
/// happens, naming the file and the command that fixes it.
#[cfg(unix)]
#[test]
fn a_key_file_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt as _;
    let d = Deployment::new("keymode");
    let key = d.dir.join("hospital-a.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let out = privlogit(&[
        "node",
        "--study",
        &d.study,
        "--identity",
        &d.identity("hospital-a"),
        "--party",
        &demo("hospital_a.csv"),
        "--aggregator",
        &format!("127.0.0.1:{}", free_port()),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&key.display().to_string()), "{err}");
    assert!(err.contains("chmod 600"), "{err}");
}

/// Two studies with the same parties and settings but their own addresses (no `study_id`
/// label) get different study ids: one key holder and one aggregator serve both at once, each
/// with its own data; a Node of one that dials the other's aggregator is refused by the study
/// id; the two state directories' files do not collide. A server given the same study twice
/// is refused at start, naming the clash.
#[test]
fn two_studies_with_the_same_roster_stay_apart() {
    let d = Deployment::new("sameroster");
    let base = std::fs::read_to_string(&d.study).expect("study");
    let with_addresses = |kh: u16, agg: u16| {
        base.replace(
            "[keyholder]\n",
            &format!("[keyholder]\naddress = \"127.0.0.1:{kh}\"\n"),
        )
        .replace(
            "[aggregator]\n",
            &format!("[aggregator]\naddress = \"127.0.0.1:{agg}\"\n"),
        )
    };
    let model = |s: &str| d.dir.join(format!("model-{s}.json"));
    let write = |s: &str, text: String| {
        let path = d.dir.join(format!("study-{s}.toml"));
        let out = format!("json = true\nout = \"{}\"\n{text}", model(s).display());
        std::fs::write(&path, out).expect("study file");
        path.display().to_string()
    };
    let [kh_a, agg_a, kh_b, agg_b] = free_ports();
    let study_a = write("a", with_addresses(kh_a, agg_a));
    let study_b = write("b", with_addresses(kh_b, agg_b));
    let same = write("a-again", with_addresses(kh_a, agg_a));

    let server = |role: &str, files: [&str; 2]| {
        Role::spawn(&[
            role,
            "--study",
            files[0],
            "--study",
            files[1],
            "--identity",
            &d.identity(role),
            "--state",
            &d.state(role),
        ])
    };
    let (ok, log) = server("aggregator", [&study_a, &same]).end(Duration::from_secs(30));
    assert!(!ok);
    assert!(log.contains("are one study"), "{log}");

    let mut keyholder = server("keyholder", [&study_a, &study_b]);
    let mut aggregator = server("aggregator", [&study_a, &study_b]);
    keyholder.wait_for_each(
        &[
            "[study-a] key holder listening",
            "[study-b] key holder listening",
        ],
        Duration::from_secs(30),
    );
    aggregator.wait_for_each(
        &[
            "[study-a] aggregator listening",
            "[study-b] aggregator listening",
        ],
        Duration::from_secs(30),
    );
    // hospital-a of study b dials study a's aggregator: same certificate, another study.
    let stray = node_process(
        &study_b,
        &d.identity("hospital-a"),
        &demo("hospital_a.csv"),
        Some(&format!("127.0.0.1:{agg_a}")),
    );
    let (ok, log) = stray.end(Duration::from_secs(30));
    assert!(!ok);
    assert!(log.contains("another study"), "{log}");

    let data_a = d.hospitals.clone();
    // Study b's first two Nodes hold the same rows (a copy: one file for two parties is refused).
    let copy = d.dir.join("hospital_a_copy.csv");
    std::fs::copy(d.hospital('a'), &copy).expect("copy");
    let data_b = [d.hospital('a'), copy.display().to_string(), d.hospital('b')];
    let mut roles = vec![aggregator, keyholder];
    for (study, data) in [(&study_a, &data_a), (&study_b, &data_b)] {
        for (h, file) in HOSPITALS.iter().zip(data) {
            roles.push(node_process(study, &d.identity(h), file, None));
        }
    }
    all_succeed(roles, Duration::from_secs(180));
    for (s, data) in [("a", &data_a), ("b", &data_b)] {
        let got = coefficients(&json(&std::fs::read(model(s)).expect("model")));
        let reference = plaintext_fit(data, "privlogit-accel");
        let diff = largest_difference(&got, &reference);
        assert!(diff <= 1e-6, "study {s}: {diff:e}");
    }
}

/// A study the aggregator itself refuses after the Nodes joined (here unpenalised, with a
/// column that copies another: a pivot of the bound falls below its threshold) stops every
/// other party with the aggregator's reason, not with a bare hang-up: the links are aborted
/// with the error before they are dropped.
#[test]
fn a_refusal_by_the_aggregator_reaches_every_peer_with_its_reason() {
    let d = Deployment::new("refusal-reason");
    let file = std::fs::read_to_string(&d.study).expect("study file");
    std::fs::write(&d.study, format!("lambda = 0.0\n{file}")).expect("study file");
    for h in ['a', 'b', 'c'] {
        let path = d.hospital(h);
        let text = std::fs::read_to_string(&path).expect("hospital");
        let copied: Vec<String> = text
            .lines()
            .enumerate()
            .map(|(i, line)| {
                let first = line.split(',').next().expect("a column");
                let copy = if i == 0 { "radius_copy" } else { first };
                format!("{copy},{line}")
            })
            .collect();
        std::fs::write(&path, copied.join("\n") + "\n").expect("hospital");
    }
    let (keyholder, kh) = d.keyholder();
    let (aggregator, agg) = d.aggregator(&kh, &[]);
    let nodes = d.hospital_nodes(&agg);
    let (ok, aggregator_log) = aggregator.end(Duration::from_secs(120));
    assert!(
        !ok,
        "the aggregator accepted the copied column: {aggregator_log}"
    );
    let reason = aggregator_log
        .lines()
        .find_map(|l| l.strip_prefix("error: "))
        .expect("the aggregator's error");
    assert!(reason.contains("singular"), "{reason}");
    let telling: String = reason.chars().take(60).collect();
    for peer in nodes.into_iter().chain([keyholder]) {
        let (ok, log) = peer.end(Duration::from_secs(60));
        assert!(!ok, "{log}");
        assert!(
            log.contains("the aggregator (aggregator) stopped the study") && log.contains(&telling),
            "the peer was not told {telling:?}: {log}"
        );
    }
}
