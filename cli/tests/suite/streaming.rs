//! Streamed Nodes give the same fits as the same rows in memory, bit for bit.

use std::sync::Arc;

use privlogit::protocols::rows::{DesignRows, MemoryRows, RowSource};
use privlogit::protocols::{FitOptions, Optimizer, PartyData, PlaintextAggregation};
use privlogit::synthetic::Simulation;

/// Three simulated parts, regenerated block by block on every pass (the random-access path),
/// against the same rows collected into memory (the chunked path): every optimiser's
/// coefficients and iteration counts are identical (`assert_eq!` on f64: no tolerance, because
/// both paths group every floating-point operation by the same fixed row blocks).
#[test]
fn streamed_and_in_memory_fits_are_identical() {
    let sim = Simulation::new(10_000, 12, 3).expect("valid size");
    let parts = sim.parts(3).expect("three parts");
    let streamed: Vec<PartyData> = parts
        .iter()
        .map(|part| {
            let raw: Arc<dyn RowSource> = Arc::new(part.clone());
            PartyData::from_source(Arc::new(DesignRows::new(raw, true)))
        })
        .collect();
    let in_memory: Vec<PartyData> = streamed
        .iter()
        .map(|party| {
            let (x, y) = party.collect().expect("generates");
            PartyData::from_source(Arc::new(MemoryRows::new(x, y)))
        })
        .collect();
    assert!(streamed.iter().all(|p| p.source().random_access()));
    assert!(in_memory.iter().all(|p| !p.source().random_access()));
    for optimizer in [
        Optimizer::Newton,
        Optimizer::PrivLogit,
        Optimizer::AcceleratedPrivLogit { memory: 5 },
    ] {
        let options = FitOptions::new().lambda(1.0);
        let fit = |parties: &[PartyData]| {
            optimizer
                .fit(
                    &mut PlaintextAggregation::new(parties),
                    &options,
                    &mut |_| {},
                )
                .expect("fits")
        };
        let (a, b) = (fit(&streamed), fit(&in_memory));
        assert_eq!(a.iterations, b.iterations, "{optimizer}");
        assert_eq!(a.beta, b.beta, "{optimizer}");
    }
}

/// A part's rows read at random (any block on its own) equal the same rows read in order.
#[test]
fn random_access_reads_match_the_scan() {
    let part = Simulation::new(5_000, 7, 9)
        .expect("valid size")
        .parts(2)
        .expect("two parts")
        .remove(1);
    let (x, y) = PartyData::from_source(Arc::new(part.clone()))
        .collect()
        .expect("scan");
    for (start, len) in [(0, 10), (1000, 1024), (1500, 1000), (2490, 10)] {
        let mut xb = vec![0.0; len * 7];
        let mut yb = vec![0.0; len];
        part.read_rows(start, &mut xb, &mut yb).expect("in range");
        let rows = ndarray::s![start..start + len, ..];
        assert_eq!(xb, x.slice(rows).iter().copied().collect::<Vec<_>>());
        assert_eq!(yb, y.slice(ndarray::s![start..start + len]).to_vec());
    }
    let mut too_far = vec![0.0; 7];
    assert!(part.read_rows(2500, &mut too_far, &mut [0.0]).is_err());
}

fn demo(name: &str) -> std::path::PathBuf {
    std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/..")).join(name)
}

/// The Parquet fixture (written by pyarrow 26.0.1 from `data/demo/hospital_a.csv`, doubles and an
/// int64 label, row groups of 64 rows, snappy; the command is in `tests/fixtures/README.md`)
/// streams exactly the rows the CSV loads.
#[test]
fn parquet_written_by_pyarrow_streams_the_csv_rows() {
    use privlogit::data::{self, LoadOptions, stream};
    let options = LoadOptions::new("label");
    let csv = data::load(&demo("data/demo/hospital_a.csv"), &options)
        .expect("loads")
        .data;
    let parquet =
        stream::open(&demo("tests/fixtures/hospital_a.parquet"), &options).expect("opens");
    assert_eq!(parquet.names(), csv.names);
    assert_eq!(parquet.rows(), 190);
    let (x, y) = PartyData::from_source(parquet).collect().expect("reads");
    assert_eq!(x, csv.x);
    assert_eq!(y, csv.y);

    let missing = stream::open(&demo("tests/fixtures/hospital_a_missing.parquet"), &options)
        .expect_err("a null is refused");
    let message = missing.to_string();
    assert!(
        message.contains("hospital_a_missing.parquet")
            && message.contains("row 70")
            && message.contains("mean_radius")
            && message.contains("missing"),
        "{message}"
    );
}

/// A binary table and a CSV file streamed by a Node give the coefficients of the same rows
/// loaded whole, bit for bit; a bad cell in a streamed CSV is reported with file, line and
/// column when the file is opened.
#[test]
fn streamed_files_fit_like_loaded_ones() {
    use privlogit::data::{self, LoadOptions, binary, stream};
    let dir = std::env::temp_dir().join(format!("privlogit-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let sim = Simulation::new(3_000, 6, 5).expect("valid size");
    let whole = sim.dataset();
    let table = dir.join("sim.plb");
    binary::write_dataset(&table, &whole, "y").expect("writes");
    let csv = dir.join("sim.csv");
    let mut text = format!("{},y\n", whole.names.join(","));
    for (row, label) in whole.x.outer_iter().zip(whole.y.iter()) {
        let cells: Vec<String> = row.iter().map(|v| format!("{v}")).collect();
        text += &format!("{},{label}\n", cells.join(","));
    }
    std::fs::write(&csv, text).expect("writes");
    let options = LoadOptions::new("y");
    let loaded = data::load(&csv, &options).expect("loads").data;
    let in_memory = PartyData::from_source(Arc::new(DesignRows::new(
        Arc::new(MemoryRows::new(loaded.x, loaded.y)),
        true,
    )));
    let options_fit = FitOptions::new().lambda(1.0);
    let fit = |party: PartyData| {
        Optimizer::PrivLogit
            .fit(
                &mut PlaintextAggregation::new(&[party]),
                &options_fit,
                &mut |_| {},
            )
            .expect("fits")
            .beta
    };
    let reference = fit(in_memory);
    for path in [&table, &csv] {
        let source = stream::open(path, &options).expect("opens");
        let party = PartyData::from_source(Arc::new(DesignRows::new(source, true)));
        assert_eq!(fit(party), reference, "{}", path.display());
    }
    std::fs::write(&csv, "a,b,y\n1,2,0\n3,x,1\n").expect("writes");
    let err = stream::open(&csv, &options)
        .expect_err("bad cell")
        .to_string();
    assert!(
        err.contains("sim.csv:3:2") && err.contains("column \"b\""),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Parquet loads whole as it streams (`fit`, `dp fit`, `load` and Python go through
/// `data::load`, which read only CSV and binary tables before): the same rows as the CSV, with
/// snappy, zstd (Polars' default), gzip and lz4; a codec not built in (brotli) is named.
#[test]
fn parquet_loads_with_the_common_codecs() {
    use privlogit::data::{self, LoadOptions};
    let options = LoadOptions::new("label");
    let csv = data::load(&demo("data/demo/hospital_a.csv"), &options)
        .expect("loads")
        .data;
    for codec in ["", "_zstd", "_gzip", "_lz4"] {
        let path = demo(&format!("tests/fixtures/hospital_a{codec}.parquet"));
        let parquet = data::load(&path, &options).expect("loads").data;
        assert_eq!(parquet.names, csv.names, "{codec}");
        assert_eq!(parquet.x, csv.x, "{codec}");
        assert_eq!(parquet.y, csv.y, "{codec}");
    }
    let e = data::load(&demo("tests/fixtures/hospital_a_brotli.parquet"), &options)
        .expect_err("brotli is not built in");
    let message = e.to_string();
    assert!(
        message.contains("hospital_a_brotli.parquet")
            && message.contains("not a readable Parquet file")
            && message.to_lowercase().contains("brotli"),
        "{message}"
    );
}
