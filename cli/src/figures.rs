//! Figures as SVG and PNG through the `plotters` crate: line charts (with optional error bars and
//! a log axis), scatter plots with the identity line, and grouped bar charts. Each figure is
//! drawn once per backend from the same description, so the SVG and the PNG always agree.
//!
//! The PNG backend rasterises text with DejaVu Sans, shipped in `assets/fonts` and compiled in,
//! so figures render the same on a machine without any fonts installed.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

/// Pixel size of every figure.
const SIZE: (u32, u32) = (900, 560);

/// Line and bar colours (the matplotlib "tab10" order), cycled.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// A figure could not be drawn or written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}")]
#[non_exhaustive]
pub struct FigureError {
    /// The file being written.
    pub path: PathBuf,
    /// What failed.
    pub reason: String,
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Joined by lines, with a dot at each point.
    Line,
    /// Dots only.
    Points,
}

/// One series: `(x, y)` points, optional symmetric error bars (`+- errors[i]` around point `i`).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
    /// Half-widths of error bars, one per point.
    pub errors: Option<Vec<f64>>,
    /// Line or dots.
    pub mark: Mark,
}

/// An x-y chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Caption.
    pub title: String,
    /// Axis titles.
    pub x_title: String,
    /// Axis titles.
    pub y_title: String,
    /// Tick labels at x = 0, 1, 2, ... instead of numbers (categorical x).
    pub x_labels: Option<Vec<String>>,
    /// Logarithmic y axis (non-positive values are left out).
    pub log_y: bool,
    /// Clamp the y axis (and error bars) to this range.
    pub y_limits: Option<(f64, f64)>,
    /// Draw the line y = x (for "estimate against reference" scatters).
    pub identity_line: bool,
    /// Where the legend goes.
    pub legend: Corner,
    /// The series.
    pub series: Vec<Series>,
}

/// A grouped bar chart: one group of bars per category, one bar per series.
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    /// Caption.
    pub title: String,
    /// Axis title.
    pub y_title: String,
    /// Category names along x.
    pub categories: Vec<String>,
    /// `(legend, value per category)`; `None` leaves a gap.
    pub series: Vec<(String, Vec<Option<f64>>)>,
    /// A horizontal reference line (e.g. y = 1 for speed-ups).
    pub reference: Option<f64>,
    /// Logarithmic y axis.
    pub log_y: bool,
}

fn register_font() {
    static FONT: Once = Once::new();
    FONT.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");
        for style in [FontStyle::Normal, FontStyle::Bold] {
            // The font is compiled in and known to parse; a failure would only lose PNG text.
            let _ = plotters::style::register_font("sans-serif", style, bytes);
        }
    });
}

/// Something that draws itself on any backend.
trait Draw {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

/// A y axis both figures draw on, linear or logarithmic.
trait YAxis: AsRangedCoord<Value = f64, CoordDescType: ValueFormatter<f64>> {}

impl<Y: AsRangedCoord<Value = f64, CoordDescType: ValueFormatter<f64>>> YAxis for Y {}

fn failed<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

/// Writes `stem.svg` and `stem.png` (each through a temporary file renamed into place, so a
/// failure leaves no half-written figure); returns both paths.
fn save<D: Draw>(figure: &D, stem: &Path) -> Result<[PathBuf; 2], FigureError> {
    register_font();
    let fail = |path: &Path, reason: String| FigureError {
        path: path.to_path_buf(),
        reason,
    };
    if let Some(dir) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| fail(dir, e.to_string()))?;
    }
    let name = |ext: &str| {
        let mut s = stem.as_os_str().to_owned();
        s.push(ext);
        PathBuf::from(s)
    };
    let (svg, png) = (name(".svg"), name(".png"));
    let (svg_tmp, png_tmp) = (name(".svg.tmp"), name(".tmp.png"));
    {
        let root = SVGBackend::new(&svg_tmp, SIZE).into_drawing_area();
        figure.draw_on(&root).map_err(|e| fail(&svg, e))?;
        root.present().map_err(|e| fail(&svg, failed(e)))?;
    }
    {
        // Drawn into an RGB buffer and encoded by the png crate (plotters' own encoder would
        // bring the whole image crate, JPEG and BMP included, into the build).
        let mut rgb = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
        let drawn = {
            let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
            figure
                .draw_on(&root)
                .and_then(|()| root.present().map_err(failed))
        };
        let written = drawn.and_then(|()| write_png(&png_tmp, &rgb).map_err(|e| e.to_string()));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&svg_tmp);
            let _ = std::fs::remove_file(&png_tmp);
            return Err(fail(&png, e));
        }
    }
    std::fs::rename(&svg_tmp, &svg).map_err(|e| fail(&svg, e.to_string()))?;
    std::fs::rename(&png_tmp, &png).map_err(|e| fail(&png, e.to_string()))?;
    Ok([svg, png])
}

/// `rgb` (SIZE pixels, 8-bit RGB) as a PNG file at `path`.
fn write_png(path: &Path, rgb: &[u8]) -> std::io::Result<()> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut encoder = png::Encoder::new(file, SIZE.0, SIZE.1);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
    writer
        .write_image_data(rgb)
        .map_err(std::io::Error::other)?;
    writer.finish().map_err(std::io::Error::other)
}

/// The smallest and largest finite value, widened a little (and to a unit range if flat).
fn padded(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && (!log || *v > 0.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if lo > hi {
        return if log { (0.1, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        return (lo / 1.5, hi * 1.5);
    }
    let pad = if hi > lo {
        0.05 * (hi - lo)
    } else {
        0.5 * lo.abs().max(1.0)
    };
    (lo - pad, hi + pad)
}

/// Where a chart's legend goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corner {
    /// Top left.
    UpperLeft,
    /// Top right.
    UpperRight,
    /// Bottom right.
    LowerRight,
}

/// The caption and label areas every figure shares.
fn builder<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    title: &'b str,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, ("sans-serif", 19))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(78);
    b
}

/// The legend, boxed, in `corner`.
fn legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    corner: Corner,
) -> Result<(), String> {
    let position = match corner {
        Corner::UpperLeft => SeriesLabelPosition::UpperLeft,
        Corner::UpperRight => SeriesLabelPosition::UpperRight,
        Corner::LowerRight => SeriesLabelPosition::LowerRight,
    };
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(failed)
}

fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

fn category_label(labels: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
        labels[i as usize].clone()
    } else {
        String::new()
    }
}

impl Chart {
    /// Writes the chart as `stem.svg` and `stem.png`.
    pub fn save(&self, stem: &Path) -> Result<[PathBuf; 2], FigureError> {
        save(self, stem)
    }

    fn y_values(&self) -> impl Iterator<Item = f64> + '_ {
        self.series.iter().flat_map(|s| {
            s.points.iter().enumerate().flat_map(move |(i, &(_, y))| {
                let e = s.errors.as_ref().map_or(0.0, |e| e[i]);
                [y - e, y + e]
            })
        })
    }

    fn draw_with<DB: DrawingBackend, Y: YAxis>(
        &self,
        root: &DrawingArea<DB, Shift>,
        x: std::ops::Range<f64>,
        y: Y,
        (y_lo, y_hi): (f64, f64),
    ) -> Result<(), String> {
        let mut chart = builder(root, &self.title)
            .build_cartesian_2d(x.clone(), y)
            .map_err(failed)?;
        let labels = self.x_labels.clone().unwrap_or_default();
        let formatter = |v: &f64| category_label(&labels, *v);
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(&self.x_title)
            .y_desc(&self.y_title)
            .label_style(("sans-serif", 13));
        if self.x_labels.is_some() {
            mesh.x_labels(labels.len().max(2) * 2 + 1)
                .x_label_formatter(&formatter);
        }
        mesh.draw().map_err(failed)?;
        let clamp = |v: f64| v.clamp(y_lo, y_hi);
        if self.identity_line {
            let (a, b) = (x.start.max(y_lo), x.end.min(y_hi));
            chart
                .draw_series(LineSeries::new([(a, a), (b, b)], BLACK.mix(0.35)))
                .map_err(failed)?;
        }
        for (k, s) in self.series.iter().enumerate() {
            let c = colour(k);
            let visible: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|(_, y)| y.is_finite() && (!self.log_y || *y > 0.0))
                .map(|(x, y)| (x, clamp(y)))
                .collect();
            let legend = match s.mark {
                Mark::Line => chart
                    .draw_series(LineSeries::new(visible.iter().copied(), c.stroke_width(2)))
                    .map_err(failed)?,
                Mark::Points => chart
                    .draw_series(visible.iter().map(|&p| Circle::new(p, 3, c.filled())))
                    .map_err(failed)?,
            };
            legend
                .label(s.name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 4), (x + 16, y + 4)], c.filled()));
            if s.mark == Mark::Line {
                chart
                    .draw_series(visible.iter().map(|&p| Circle::new(p, 3, c.filled())))
                    .map_err(failed)?;
            }
            if let Some(errors) = &s.errors {
                chart
                    .draw_series(
                        s.points
                            .iter()
                            .zip(errors)
                            .filter(|((_, y), _)| y.is_finite())
                            .map(|(&(x, y), &e)| {
                                ErrorBar::new_vertical(
                                    x,
                                    clamp(y - e),
                                    clamp(y),
                                    clamp(y + e),
                                    c,
                                    8,
                                )
                            }),
                    )
                    .map_err(failed)?;
            }
        }
        legend(&mut chart, self.legend)
    }
}

impl Draw for Chart {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(failed)?;
        let x = match &self.x_labels {
            Some(labels) => (-0.5, labels.len() as f64 - 0.5),
            None => padded(
                self.series
                    .iter()
                    .flat_map(|s| s.points.iter().map(|p| p.0)),
                false,
            ),
        };
        let (mut lo, mut hi) = padded(self.y_values(), self.log_y);
        if self.identity_line {
            lo = lo.min(x.0);
            hi = hi.max(x.1);
        }
        if let Some((a, b)) = self.y_limits {
            lo = lo.max(a);
            hi = hi.min(b);
        }
        if self.log_y {
            self.draw_with(root, x.0..x.1, (lo..hi).log_scale(), (lo, hi))
        } else {
            self.draw_with(root, x.0..x.1, lo..hi, (lo, hi))
        }
    }
}

impl Bars {
    /// Writes the chart as `stem.svg` and `stem.png`.
    pub fn save(&self, stem: &Path) -> Result<[PathBuf; 2], FigureError> {
        save(self, stem)
    }

    fn draw_with<DB: DrawingBackend, Y: YAxis>(
        &self,
        root: &DrawingArea<DB, Shift>,
        y: Y,
        base: f64,
        x_end: f64,
    ) -> Result<(), String> {
        let mut chart = builder(root, &self.title)
            .build_cartesian_2d(-0.5..x_end, y)
            .map_err(failed)?;
        let formatter = |v: &f64| category_label(&self.categories, *v);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc(&self.y_title)
            .x_labels(self.categories.len().max(2) * 2 + 1)
            .x_label_formatter(&formatter)
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(failed)?;
        let groups = self.series.len().max(1) as f64;
        let width = 0.8 / groups;
        for (k, (name, values)) in self.series.iter().enumerate() {
            let c = colour(k);
            let bars = values.iter().enumerate().filter_map(|(i, v)| {
                let v = (*v)?;
                let left = i as f64 - 0.4 + k as f64 * width;
                Some(Rectangle::new(
                    [(left, base), (left + width * 0.92, v)],
                    c.filled(),
                ))
            });
            chart
                .draw_series(bars)
                .map_err(failed)?
                .label(name.as_str())
                .legend(move |(x, y)| Rectangle::new([(x, y - 4), (x + 16, y + 4)], c.filled()));
        }
        if let Some(r) = self.reference {
            chart
                .draw_series(LineSeries::new(
                    [(-0.5, r), (x_end, r)],
                    BLACK.stroke_width(1),
                ))
                .map_err(failed)?;
        }
        legend(&mut chart, Corner::UpperLeft)
    }
}

impl Draw for Bars {
    fn draw_on<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        root.fill(&WHITE).map_err(failed)?;
        let values = self
            .series
            .iter()
            .flat_map(|(_, v)| v.iter().flatten().copied())
            .chain(self.reference);
        let x_end = self.categories.len() as f64 - 0.5;
        if self.log_y {
            let (lo, hi) = padded(values, true);
            self.draw_with(root, (lo..hi).log_scale(), lo, x_end)
        } else {
            let (_, hi) = padded(values.chain([0.0]), false);
            self.draw_with(root, 0.0..hi, 0.0, x_end)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both files are written, the SVG holds the title and legend text, and the PNG is a PNG of
    /// the stated size with more than one colour in it.
    #[test]
    fn writes_svg_and_png() {
        let dir = std::env::temp_dir().join(format!("privlogit-figures-{}", std::process::id()));
        let chart = Chart {
            title: "test chart".into(),
            x_title: "x".into(),
            y_title: "y".into(),
            x_labels: Some(vec!["a".into(), "b".into(), "c".into()]),
            log_y: true,
            y_limits: None,
            identity_line: false,
            legend: Corner::UpperRight,
            series: vec![Series {
                name: "series one".into(),
                points: vec![(0.0, 1.0), (1.0, 10.0), (2.0, 100.0)],
                errors: Some(vec![0.1, 1.0, 10.0]),
                mark: Mark::Line,
            }],
        };
        let [svg, png] = chart.save(&dir.join("chart")).expect("draws");
        let text = std::fs::read_to_string(&svg).expect("svg");
        assert!(text.contains("test chart") && text.contains("series one"));
        let bytes = std::fs::read(&png).expect("png");
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        let width = u32::from_be_bytes(bytes[16..20].try_into().expect("4 bytes"));
        assert_eq!(width, SIZE.0);
        let bars = Bars {
            title: "bars".into(),
            y_title: "speed-up".into(),
            categories: vec!["one".into(), "two".into()],
            series: vec![("ours".into(), vec![Some(2.0), None])],
            reference: Some(1.0),
            log_y: false,
        };
        bars.save(&dir.join("bars")).expect("draws");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
