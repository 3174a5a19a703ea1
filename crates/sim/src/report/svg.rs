//! A hand-written SVG of the allocation curves (no plotting dependency).

use std::fmt::Write;

use crate::run::PolicySummary;

const WIDTH: f64 = 790.0;
const HEIGHT: f64 = 460.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 200.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
/// Low loads allocate everything; the plot starts where policies diverge.
const X_FROM: u32 = 50;
const COLORS: [&str; 8] = ["#7f7f7f", "#9467bd", "#8c564b", "#e377c2", "#1f77b4", "#ff7f0e", "#d62728", "#2ca02c"];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// Mean GPU allocation (%) against arrived GPU request (% of capacity), one
/// line per policy, with axes, grid, labels and a legend.
pub fn allocation_svg(summaries: &[PolicySummary], title: &str) -> String {
    let points: Vec<(u32, f64)> =
        summaries.iter().flat_map(|s| s.curve.iter().copied()).filter(|&(x, _)| x >= X_FROM).collect();
    let x_max = points.iter().map(|p| p.0).max().unwrap_or(130).max(X_FROM + 10) as f64;
    let y_min_data = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let y_lo = if y_min_data.is_finite() { ((y_min_data - 1.0) / 5.0).floor() * 5.0 } else { 0.0 }.clamp(0.0, 95.0);
    let y_hi = 100.0;
    let x_lo = f64::from(X_FROM);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let sx = |x: f64| LEFT + (x - x_lo) / (x_max - x_lo) * plot_w;
    let sy = |y: f64| TOP + (y_hi - y) / (y_hi - y_lo) * plot_h;

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        LEFT + plot_w / 2.0,
        escape(title)
    );
    // Grid and ticks.
    let mut x = (x_lo / 10.0).ceil() * 10.0;
    while x <= x_max + 1e-9 {
        let px = sx(x);
        let _ = writeln!(
            out,
            r##"<line x1="{px:.1}" y1="{TOP}" x2="{px:.1}" y2="{:.1}" stroke="#e0e0e0"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{x:.0}</text>"##,
            TOP + plot_h,
            TOP + plot_h + 18.0
        );
        x += 10.0;
    }
    let y_step = if y_hi - y_lo > 30.0 {
        10.0
    } else if y_hi - y_lo > 10.0 {
        5.0
    } else {
        1.0
    };
    let mut y = y_lo;
    while y <= y_hi + 1e-9 {
        let py = sy(y);
        let _ = writeln!(
            out,
            r##"<line x1="{LEFT}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#e0e0e0"/><text x="{:.1}" y="{:.1}" text-anchor="end">{y:.0}</text>"##,
            LEFT + plot_w,
            LEFT - 8.0,
            py + 4.0
        );
        y += y_step;
    }
    let _ =
        writeln!(out, r#"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="black"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">Arrived GPU request (% of cluster GPU capacity)</text>"#,
        LEFT + plot_w / 2.0,
        HEIGHT - 15.0
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate(20 {:.1}) rotate(-90)" text-anchor="middle">GPU allocation (%)</text>"#,
        TOP + plot_h / 2.0
    );
    // Curves and legend.
    for (k, s) in summaries.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let path: Vec<String> = s
            .curve
            .iter()
            .filter(|&&(x, y)| x >= X_FROM && y >= y_lo)
            .map(|&(x, y)| format!("{:.1},{:.1}", sx(f64::from(x)), sy(y)))
            .collect();
        if !path.is_empty() {
            let _ = writeln!(
                out,
                r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
                path.join(" ")
            );
        }
        let ly = TOP + 14.0 + 20.0 * k as f64;
        let lx = LEFT + plot_w + 15.0;
        let last = s.allocation.get(&130).map(|v| format!(" ({:.2}%)", v.mean)).unwrap_or_default();
        let _ = writeln!(
            out,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="3"/><text x="{:.1}" y="{:.1}">{}{}</text>"#,
            lx + 22.0,
            lx + 28.0,
            ly + 4.0,
            escape(s.policy.name()),
            last
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringleader_scheduler::nodeorder::Policy;
    use std::collections::BTreeMap;

    #[test]
    fn draws_one_polyline_per_policy_and_a_legend() {
        let summary = |policy, shift: f64| PolicySummary {
            policy,
            seeds: vec![1],
            allocation: BTreeMap::new(),
            fragmentation: BTreeMap::new(),
            curve: (0..=130).map(|x| (x, (f64::from(x) - shift).min(90.0 + shift))).collect(),
            seconds_per_seed: 0.0,
            micros_per_pod: 0.0,
        };
        let svg = allocation_svg(&[summary(Policy::Fgd, 1.0), summary(Policy::BestFit, 0.0)], "t <1>");
        assert!(svg.starts_with("<svg"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains(">fgd<") && svg.contains(">bestfit<"));
        assert!(svg.contains("t &lt;1&gt;"));
        assert!(svg.trim_end().ends_with("</svg>"));
    }
}
