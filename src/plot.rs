//! A small SVG line chart (mean with +-1 sd bars against epsilon), so experiments can draw
//! their figure without a plotting dependency.

use std::fmt::Write;

/// One line of the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// `(mean, sd)` per x position.
    pub points: Vec<(f64, f64)>,
}

const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

/// An SVG chart: categorical x positions labelled `x_labels`, one line per series. Error bars
/// and the axis stop at `y_cap` when given (an AUC cannot exceed 1).
pub fn line_chart(
    y_cap: Option<f64>,
    title: &str,
    x_title: &str,
    y_title: &str,
    x_labels: &[String],
    series: &[Series],
) -> String {
    let (w, h) = (720.0, 440.0);
    let (left, right, top, bottom) = (70.0, 190.0, 40.0, 60.0);
    let (pw, ph) = (w - left - right, h - top - bottom);
    let values = series
        .iter()
        .flat_map(|s| s.points.iter().flat_map(|(m, sd)| [m - sd, m + sd]))
        .map(|v| y_cap.map_or(v, |cap| v.min(cap)))
        .filter(|v| v.is_finite());
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let (lo, hi) = if lo < hi {
        (lo, hi)
    } else {
        (lo - 0.5, lo + 0.5)
    };
    let step = nice_step((hi - lo) / 6.0);
    let (lo, hi) = ((lo / step).floor() * step, (hi / step).ceil() * step);
    let hi = y_cap.map_or(hi, |cap| hi.min(cap));
    let clip = |v: f64| y_cap.map_or(v, |cap| v.min(cap));
    let nx = x_labels.len().max(1);
    let x = |i: usize| left + pw * (i as f64 + 0.5) / nx as f64;
    let y = |v: f64| top + ph * (1.0 - (v - lo) / (hi - lo));
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="10" y="22" font-size="14">{}</text>"#,
        escape(title)
    );
    let mut t = lo;
    while t <= hi + step / 2.0 {
        let _ = writeln!(
            svg,
            r##"<line x1="{left}" x2="{}" y1="{yy:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{:.2}</text>"##,
            left + pw,
            left - 6.0,
            y(t) + 4.0,
            t,
            yy = y(t)
        );
        t += step;
    }
    for (i, label) in x_labels.iter().enumerate() {
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            x(i),
            top + ph + 18.0,
            escape(label)
        );
    }
    let _ = writeln!(
        svg,
        r#"<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        left + pw / 2.0,
        h - 15.0,
        escape(x_title)
    );
    let _ = writeln!(
        svg,
        r#"<text transform="translate(18 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        top + ph / 2.0,
        escape(y_title)
    );
    for (k, s) in series.iter().enumerate() {
        let colour = COLOURS[k % COLOURS.len()];
        let path: Vec<String> = s
            .points
            .iter()
            .enumerate()
            .map(|(i, (m, _))| format!("{:.1},{:.1}", x(i), y(*m)))
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
            path.join(" ")
        );
        for (i, (m, sd)) in s.points.iter().enumerate() {
            let _ = writeln!(
                svg,
                r#"<line x1="{xi:.1}" x2="{xi:.1}" y1="{:.1}" y2="{:.1}" stroke="{colour}"/><circle cx="{xi:.1}" cy="{:.1}" r="3.5" fill="{colour}"/>"#,
                y(m - sd),
                y(clip(m + sd)),
                y(*m),
                xi = x(i)
            );
        }
        let ly = top + 14.0 + 20.0 * k as f64;
        let _ = writeln!(
            svg,
            r#"<line x1="{}" x2="{}" y1="{ly}" y2="{ly}" stroke="{colour}" stroke-width="3"/><text x="{}" y="{}">{}</text>"#,
            left + pw + 15.0,
            left + pw + 40.0,
            left + pw + 46.0,
            ly + 4.0,
            escape(&s.name)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

/// 1, 2 or 5 times a power of ten, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * p)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_has_one_line_and_legend_per_series() {
        let series = vec![
            Series {
                name: "A<1>".into(),
                points: vec![(0.6, 0.05), (0.7, 0.02)],
            },
            Series {
                name: "B".into(),
                points: vec![(0.8, 0.01), (0.9, 0.0)],
            },
        ];
        let svg = line_chart(
            Some(1.0),
            "t",
            "eps",
            "AUC",
            &["1".into(), "inf".into()],
            &series,
        );
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 4);
        assert!(svg.contains("A&lt;1&gt;"));
        assert_eq!(nice_step(0.037), 0.05);
    }
}
