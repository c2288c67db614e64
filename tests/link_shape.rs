//! The dialled-in network (`--latency`, `--bandwidth`): every message a connection sends
//! arrives no earlier than the latency after it was sent, a round trip costs twice it, and a
//! large message no faster than the bandwidth. Its own test binary, because the setting is
//! process-wide. Lower bounds only: they are what the setting promises (an upper bound would
//! be a timing assertion on a shared machine).

use std::time::{Duration, Instant};

use privlogit::protocols::transport::loopback_pair;
use privlogit::protocols::transport::shape::{LinkShape, set_link_shape};
use privlogit_circuits::channel::Channel;

#[test]
fn round_trips_pay_twice_the_latency_and_bytes_the_bandwidth() {
    set_link_shape(LinkShape {
        latency: Duration::from_millis(20),
        bandwidth: Some(80_000_000),
    });
    let (mut near, mut far) = loopback_pair().expect("a pair");
    let echo = std::thread::spawn(move || {
        let mut buffer = vec![0u8; 1_000_000];
        for size in [1usize, 1, 1, 1, 1_000_000] {
            far.recv(&mut buffer[..size]).expect("a message");
            far.send(&buffer[..1]).expect("an answer");
            far.flush().expect("flush");
        }
        far.round_trips()
    });
    let start = Instant::now();
    for _ in 0..4 {
        near.send(&[7]).expect("send");
        near.flush().expect("flush");
        let mut answer = [0u8; 1];
        near.recv(&mut answer).expect("answer");
    }
    let pings = start.elapsed();
    assert!(
        pings >= Duration::from_millis(4 * 40),
        "4 round trips in {pings:?}"
    );
    assert_eq!(near.round_trips(), 4);
    // A megabyte at 80 Mbit/s takes 100 ms on the wire, plus the round trip.
    let start = Instant::now();
    near.send(&vec![1u8; 1_000_000]).expect("send");
    near.flush().expect("flush");
    let mut answer = [0u8; 1];
    near.recv(&mut answer).expect("answer");
    let bulk = start.elapsed();
    assert!(bulk >= Duration::from_millis(100 + 40), "1 MB in {bulk:?}");
    // Closed first: each end's close waits for the other's.
    drop(near);
    assert_eq!(echo.join().expect("echo"), 4);
}
