//! The dissertation's Table 5.1 (section 5.4.3): its data sets, their sizes, and its published
//! iteration counts and seconds, which our runs are set beside.

/// Where a row's data comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Source {
    /// A SimuX-style simulation of this many rows and features (section 5.4.1).
    Simulated { rows: usize, features: usize },
    /// A real data set (`FILE` in `--data DIR`, label column `label`), standardised with
    /// the pooled statistics.
    Shared {
        file: &'static str,
        label: &'static str,
    },
    /// A real data set of the paper's that we do not have.
    Unavailable,
}

/// The paper's figures for one row: iterations (Newton, PrivLogit) and seconds (Newton,
/// PrivLogit-Hessian, PrivLogit-Local; `None` where the paper has N/A).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Published {
    pub newton_iterations: usize,
    pub privlogit_iterations: usize,
    pub newton_seconds: Option<f64>,
    pub hessian_seconds: Option<f64>,
    pub local_seconds: Option<f64>,
}

/// One row of Table 5.1 as we run it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// Our name for the row (the paper's, or the substitute's).
    pub name: &'static str,
    /// The paper's row it stands beside, and its numbers (`None`: no paper row).
    pub paper: Option<(&'static str, Published)>,
    pub source: Source,
    /// Why this row differs from the paper's, for the table's notes.
    pub note: Option<&'static str>,
}

const fn published(
    newton_iterations: usize,
    privlogit_iterations: usize,
    newton: Option<f64>,
    hessian: Option<f64>,
    local: f64,
) -> Published {
    Published {
        newton_iterations,
        privlogit_iterations,
        newton_seconds: newton,
        hessian_seconds: hessian,
        local_seconds: Some(local),
    }
}

/// Table 5.1 in the paper's order, real-data rows first.
pub const TABLE_5_1: [Row; 12] = [
    Row {
        name: "Wine*",
        paper: Some(("Wine", published(5, 13, Some(32.0), Some(24.0), 17.0))),
        source: Source::Shared {
            file: "winequality_red.csv",
            label: "good",
        },
        note: Some(
            "substitute: the red-wine subset (1,599 x 11, label quality >= 6) of the paper's Wine (6,497 x 12)",
        ),
    },
    Row {
        name: "Loans",
        paper: Some(("Loans", published(6, 17, Some(492.0), Some(260.0), 104.0))),
        source: Source::Unavailable,
        note: Some("Lending Club data, not available to us"),
    },
    Row {
        name: "Insurance",
        paper: Some((
            "Insurance",
            published(7, 28, Some(843.0), Some(520.0), 144.0),
        )),
        source: Source::Unavailable,
        note: Some("caravan insurance data, not available to us"),
    },
    Row {
        name: "News",
        paper: Some(("News", published(5, 13, Some(1442.0), Some(621.0), 313.0))),
        source: Source::Unavailable,
        note: Some("Mashable news data, not available to us"),
    },
    Row {
        name: "breast_cancer*",
        paper: None,
        source: Source::Shared {
            file: "breast_cancer.csv",
            label: "label",
        },
        note: Some("substitute real-data row (569 x 30), no paper counterpart"),
    },
    simulated(
        "SimuX10",
        50_000,
        10,
        published(6, 20, Some(26.0), Some(24.0), 13.0),
    ),
    simulated(
        "SimuX12",
        1_000_000,
        12,
        published(6, 22, Some(38.0), Some(37.0), 17.0),
    ),
    simulated(
        "SimuX50",
        1_000_000,
        50,
        published(6, 32, Some(1550.0), Some(1052.0), 383.0),
    ),
    simulated(
        "SimuX100",
        3_000_000,
        100,
        published(7, 59, Some(13138.0), Some(7817.0), 1807.0),
    ),
    simulated(
        "SimuX150",
        4_000_000,
        150,
        published(7, 83, Some(42951.0), Some(25030.0), 6055.0),
    ),
    simulated(
        "SimuX200",
        5_000_000,
        200,
        published(8, 105, Some(114522.0), Some(56917.0), 14105.0),
    ),
    simulated(
        "SimuX400",
        50_000_000,
        400,
        published(8, 206, None, None, 110598.0),
    ),
];

const fn simulated(name: &'static str, rows: usize, features: usize, p: Published) -> Row {
    Row {
        name,
        paper: Some((name, p)),
        source: Source::Simulated { rows, features },
        note: None,
    }
}
