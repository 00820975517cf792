//! `sift stats --png FILE`: the period's figures as one PNG, drawn with plotters into a buffer
//! (labels in DejaVu Sans, embedded, so no system font library is needed) and encoded with the
//! `png` crate. Three panels: records per day; what became of the agent's runs; per review rule,
//! findings dismissed, fixed and ignored, stacked (the rules most shown first).

use std::io::BufWriter;
use std::path::Path;
use std::sync::Once;

use anyhow::{Context as _, Result, anyhow};
use plotters::coord::Shift;
use plotters::prelude::*;
use sift_engine::fates::stats::Stats;

/// The picture's size in pixels.
pub const SIZE: (u32, u32) = (1000, 900);

/// The most rules the last panel shows.
const RULES: usize = 10;

const FONT: &str = "sans-serif";

/// Writes the chart of `stats` (titled with `period`) to `path` as a PNG: to a temporary file
/// beside it first, then renamed, so a failed run leaves any earlier chart whole.
pub fn write_png(path: &Path, stats: &Stats, period: &str) -> Result<()> {
    let pixels = draw(stats, period)?;
    let file_name = path.file_name().ok_or_else(|| anyhow!("--png needs a file name"))?;
    let tmp = path.with_file_name(format!(".{}.tmp", file_name.to_string_lossy()));
    let file = std::fs::File::create(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
    let mut encoder = png::Encoder::new(BufWriter::new(file), SIZE.0, SIZE.1);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let written = encoder
        .write_header()
        .and_then(|mut writer| writer.write_image_data(&pixels).and_then(|()| writer.finish()));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow!("encoding {}: {e}", path.display()));
    }
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

/// The chart as RGB pixels, row by row.
pub fn draw(stats: &Stats, period: &str) -> Result<Vec<u8>> {
    static FONTS: Once = Once::new();
    FONTS.call_once(|| {
        // DejaVu Sans is a valid font; should it ever fail to parse, plotters reports the
        // missing font when the first label is drawn, which `draw` turns into an error.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
    });
    let mut pixels = vec![255u8; (SIZE.0 * SIZE.1 * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, SIZE).into_drawing_area();
        panels(&root, stats, period).map_err(|e| anyhow!("drawing the chart: {e}"))?;
        root.present().map_err(|e| anyhow!("drawing the chart: {e}"))?;
    }
    Ok(pixels)
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;
type Drawn = std::result::Result<(), Box<dyn std::error::Error>>;

fn panels(root: &Area<'_>, stats: &Stats, period: &str) -> Drawn {
    root.fill(&WHITE)?;
    let root = root.titled(&format!("sift stats, {period}"), (FONT, 26))?;
    let [daily, agent, rules]: [Area<'_>; 3] =
        root.split_evenly((3, 1)).try_into().map_err(|_| "three panels")?;
    daily_panel(&daily, &stats.daily)?;
    let a = &stats.agent;
    let decisions = [
        ("shown", a.shown),
        ("taken", a.accepted),
        ("edited", a.edited),
        ("refused", a.rejected),
        ("undecided", a.undecided),
    ];
    let title = match a.acceptance {
        Some(rate) => format!("agent runs ({:.0} % of those shown taken)", rate * 100.0),
        None => "agent runs".to_owned(),
    };
    bars(&agent, &title, &decisions.map(|(l, n)| (l.to_owned(), vec![n])), &[BLUE])?;
    let mut shown: Vec<_> = stats.rules.iter().collect();
    shown.sort_by(|a, b| b.1.shown.cmp(&a.1.shown).then(a.0.cmp(b.0)));
    let groups: Vec<(String, Vec<usize>)> = shown
        .into_iter()
        .take(RULES)
        .map(|(rule, r)| {
            (rule.clone(), vec![r.dismissed_wrong + r.dismissed_noise, r.fixed, r.ignored])
        })
        .collect();
    bars(
        &rules,
        "review findings by rule, stacked: dismissed (red), fixed (green), ignored (grey)",
        &groups,
        &[RED, GREEN, RGBColor(150, 150, 150)],
    )
}

fn daily_panel(area: &Area<'_>, daily: &[usize]) -> Drawn {
    let days = daily.len().max(1) as u32;
    let top = daily.iter().copied().max().unwrap_or(0).max(1) as u32;
    let mut chart = ChartBuilder::on(area)
        .caption("records per day", (FONT, 18))
        .margin(12)
        .x_label_area_size(28)
        .y_label_area_size(44)
        .build_cartesian_2d(0u32..days, 0u32..top + top / 10 + 1)?;
    chart.configure_mesh().x_desc("day of the period").label_style((FONT, 13)).draw()?;
    chart.draw_series(LineSeries::new(
        daily.iter().enumerate().map(|(day, n)| (day as u32, *n as u32)),
        BLUE.stroke_width(2),
    ))?;
    Ok(())
}

/// Bars: one per label, its series stacked (coloured by `colors`).
fn bars(
    area: &Area<'_>,
    title: &str,
    groups: &[(String, Vec<usize>)],
    colors: &[RGBColor],
) -> Drawn {
    let n = groups.len().max(1) as u32;
    let top = groups.iter().map(|(_, v)| v.iter().sum::<usize>()).max().unwrap_or(0).max(1) as u32;
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT, 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(44)
        .build_cartesian_2d((0u32..n).into_segmented(), 0u32..top + top / 10 + 1)?;
    let names: Vec<&str> = groups.iter().map(|(l, _)| l.as_str()).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .label_style((FONT, 13))
        .x_labels(names.len().max(1))
        .x_label_formatter(&|x| match x {
            SegmentValue::CenterOf(i) => names.get(*i as usize).map_or(String::new(), |s| short(s)),
            _ => String::new(),
        })
        .draw()?;
    if groups.is_empty() {
        area.draw_text("(none recorded)", &(FONT, 16).into_text_style(area), (60, 70))?;
        return Ok(());
    }
    // Each group's one bar (plotters' segmented `0..n` has n + 1 segments, the last one left
    // empty): a tenth of its segment empty either side, the series stacked in it.
    let segment = chart.plotting_area().dim_in_pixel().0 / (n + 1);
    let margin = segment / 10;
    for (i, (_, values)) in groups.iter().enumerate() {
        let mut base = 0u32;
        for (s, value) in values.iter().enumerate() {
            let top = base + *value as u32;
            let mut bar = Rectangle::new(
                [(SegmentValue::Exact(i as u32), base), (SegmentValue::Exact(i as u32 + 1), top)],
                colors[s % colors.len().max(1)].filled(),
            );
            bar.set_margin(0, 0, margin, margin);
            chart.draw_series(std::iter::once(bar))?;
            base = top;
        }
    }
    Ok(())
}

/// A label short enough to sit under its bar.
fn short(label: &str) -> String {
    const MAX: usize = 16;
    let name = label.rsplit(['/', ':']).next().unwrap_or(label);
    match name.chars().count() > MAX {
        true => format!("{}…", name.chars().take(MAX - 1).collect::<String>()),
        false => name.to_owned(),
    }
}
