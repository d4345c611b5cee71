//! The live view of `picket top`: the same tables as `--once`, redrawn every interval.
//! Keys: q, Esc or Ctrl-C quit.

use super::sample::{self, Sources};
use super::table::{self, CPU_HEADER, IFACE_HEADER, WORKER_HEADER};
use super::{unix_now_ns, TopState, TopView, WorkerView};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Row, Table};
use ratatui::Frame;
use std::time::{Duration, Instant};

pub fn run(sources: &Sources, interval: Duration) -> Result<(), String> {
    // Read once before touching the terminal so a bad --proc-root fails with a plain message.
    let mut state = TopState::new(sample::read_sample(sources)?);
    let mut terminal = match ratatui::try_init() {
        Ok(t) => t,
        Err(e) => {
            let _ = ratatui::try_restore();
            return Err(format!("terminal: {e}"));
        }
    };
    let result = event_loop(&mut terminal, sources, interval, &mut state);
    let restored = ratatui::try_restore();
    result?;
    restored.map_err(|e| format!("terminal: {e}"))
}

fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    sources: &Sources,
    interval: Duration,
    state: &mut TopState,
) -> Result<(), String> {
    let mut view: Option<TopView> = None;
    let mut last_sample = Instant::now();
    loop {
        terminal.draw(|frame| render(frame, view.as_ref(), interval)).map_err(|e| format!("terminal: {e}"))?;
        let deadline = last_sample + interval;
        // Wait for a key until the next sample is due.
        loop {
            let timeout = deadline.saturating_duration_since(Instant::now());
            if timeout.is_zero() {
                break;
            }
            if event::poll(timeout).map_err(|e| format!("terminal: {e}"))? {
                match event::read().map_err(|e| format!("terminal: {e}"))? {
                    Event::Key(key) if key.kind == KeyEventKind::Press => {
                        let ctrl_c = key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
                        if ctrl_c || matches!(key.code, KeyCode::Char('q') | KeyCode::Esc) {
                            return Ok(());
                        }
                    }
                    Event::Resize(..) => break, // redraw at the new size now
                    _ => {}
                }
            }
        }
        if Instant::now() >= deadline {
            let now = Instant::now();
            let current = sample::read_sample(sources)?;
            view = Some(state.advance(current, now - last_sample, unix_now_ns()));
            last_sample = now;
        }
    }
}

fn header_row<const N: usize>(cells: [&str; N], widths: &[u16]) -> Row<'static> {
    body_row(cells.map(str::to_string), widths).style(Style::default().add_modifier(Modifier::BOLD))
}

/// Right-aligned cells (all but the first) so digits line up.
fn body_row<const N: usize>(cells: [String; N], widths: &[u16]) -> Row<'static> {
    let aligned: Vec<String> = cells
        .into_iter()
        .enumerate()
        .map(|(i, cell)| match widths.get(i) {
            Some(&w) if i > 0 => format!("{cell:>width$}", width = usize::from(w)),
            _ => cell,
        })
        .collect();
    Row::new(aligned)
}

/// A ten-cell bar of the busy share, coloured by how close the core is to saturation.
fn busy_bar(busy: Option<f64>) -> (String, Style) {
    let Some(busy) = busy else { return ("-".to_string(), Style::default()) };
    let filled = ((busy / 10.0).round() as usize).min(10);
    let color = if busy >= 90.0 {
        Color::Red
    } else if busy >= 60.0 {
        Color::Yellow
    } else {
        Color::Green
    };
    (format!("{}{}", "█".repeat(filled), "·".repeat(10 - filled)), Style::default().fg(color))
}

pub fn render(frame: &mut Frame, view: Option<&TopView>, interval: Duration) {
    let area = frame.area();
    let Some(view) = view else {
        let text = format!("picket top: sampling for {:.1} s... (q quits)", interval.as_secs_f64());
        frame.render_widget(Paragraph::new(text), area);
        return;
    };
    let cpu_rows = view.cpus.len() + usize::from(view.all.is_some());
    let worker_rows = match &view.workers {
        WorkerView::Workers { rows, .. } => rows.len().max(1),
        _ => 1,
    };
    let ips_rows = table::ips_rows(view);
    let xdp_rows = table::xdp_rows(view);
    let height = |rows: usize| u16::try_from(rows + 3).unwrap_or(u16::MAX);
    let [title_area, cpu_area, iface_area, worker_area, ips_area, xdp_area] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(height(cpu_rows)),
        Constraint::Length(height(view.ifaces.len().max(1))),
        Constraint::Length(height(worker_rows)),
        Constraint::Length(if ips_rows.is_empty() { 0 } else { height(ips_rows.len()) }),
        Constraint::Length(if xdp_rows.is_empty() { 0 } else { height(xdp_rows.len()) }),
    ])
    .areas(area);

    let mut title = format!("picket top   every {:.1} s   q: quit", view.interval_secs);
    if let Some(line) = &view.dispatch {
        title.push_str(&format!("   {line}"));
    }
    if view.anomalies > 0 {
        title.push_str(&format!("   ({} unreadable lines/files)", view.anomalies));
    }
    frame.render_widget(
        Paragraph::new(Line::from(title).style(Style::default().add_modifier(Modifier::REVERSED))),
        title_area,
    );
    render_cpus(frame, cpu_area, view);
    render_ifaces(frame, iface_area, view);
    render_workers(frame, worker_area, view);
    if !ips_rows.is_empty() {
        let widths = [8u16, 10, 10, 10, 12, 12, 12, 10, 10];
        let rows = ips_rows.into_iter().map(|cells| body_row(cells, &widths));
        let table = Table::new(rows, widths.map(Constraint::Length))
            .header(header_row(table::IPS_HEADER, &widths))
            .block(Block::bordered().title(" inline verdicts "));
        frame.render_widget(table, ips_area);
    }
    if !xdp_rows.is_empty() {
        let widths = [20u16, 10, 14, 16];
        let rows = xdp_rows.into_iter().map(|cells| body_row(cells, &widths));
        let table = Table::new(rows, widths.map(Constraint::Length))
            .header(header_row(table::XDP_HEADER, &widths))
            .block(Block::bordered().title(" kernel fast path (XDP) "));
        frame.render_widget(table, xdp_area);
    }
}

fn render_cpus(frame: &mut Frame, area: Rect, view: &TopView) {
    let widths = [5u16, 6, 6, 6, 6, 6, 9, 9, 10];
    let rows = view.all.iter().chain(&view.cpus).map(|load| {
        let (bar, style) = busy_bar(load.busy());
        let mut cells: Vec<String> = table::cpu_row(load).to_vec();
        cells.push(bar);
        let cells: [String; 9] = cells.try_into().unwrap_or_default();
        let row = body_row(cells, &widths);
        if load.cpu.is_none() {
            row.style(Style::default().add_modifier(Modifier::BOLD))
        } else {
            row.style(style)
        }
    });
    let mut header: Vec<&str> = CPU_HEADER.to_vec();
    header.push("busy");
    let header: [&str; 9] = header.try_into().unwrap_or_default();
    let table = Table::new(rows, widths.map(Constraint::Length))
        .header(header_row(header, &widths))
        .block(Block::bordered().title(" per-core load (/proc/stat, /proc/softirqs) "));
    frame.render_widget(table, area);
}

fn render_ifaces(frame: &mut Frame, area: Rect, view: &TopView) {
    let widths = [16u16, 10, 10, 10, 10, 10, 10];
    let rows = table::iface_rows(view).into_iter().map(|cells| body_row(cells, &widths));
    let mut title = " interfaces (/sys/class/net/*/statistics) ".to_string();
    if view.ifaces_not_shown > 0 {
        title.push_str(&format!("+{} not shown ", view.ifaces_not_shown));
    }
    let table = Table::new(rows, widths.map(Constraint::Length))
        .header(header_row(IFACE_HEADER, &widths))
        .block(Block::bordered().title(title));
    frame.render_widget(table, area);
}

fn render_workers(frame: &mut Frame, area: Rect, view: &TopView) {
    let widths = [8u16, 10, 10, 10, 7, 14, 12];
    match table::worker_rows(view) {
        Ok(rows) => {
            let mut title = " picket workers ".to_string();
            if let WorkerView::Workers { age_secs, stale: true, .. } = &view.workers {
                title = format!(" picket workers (snapshot {age_secs:.0} s old: stopped?) ");
            }
            let rows = rows.into_iter().map(|cells| body_row(cells, &widths));
            let table = Table::new(rows, widths.map(Constraint::Length))
                .header(header_row(WORKER_HEADER, &widths))
                .block(Block::bordered().title(title));
            frame.render_widget(table, area);
        }
        Err(why) => {
            frame.render_widget(Paragraph::new(why).block(Block::bordered().title(" picket workers ")), area);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CpuLoad, IfaceRates, WorkerRates};
    use super::*;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn screen(view: Option<&TopView>) -> String {
        let mut terminal = Terminal::new(TestBackend::new(100, 24)).unwrap();
        terminal.draw(|frame| render(frame, view, Duration::from_secs(1))).unwrap();
        let buffer = terminal.backend().buffer().clone();
        let mut text = String::new();
        for y in 0..buffer.area.height {
            for x in 0..buffer.area.width {
                text.push_str(buffer[(x, y)].symbol());
            }
            text.push('\n');
        }
        text
    }

    #[test]
    fn renders_the_three_sections() {
        let cpu = CpuLoad {
            cpu: Some(3),
            user: Some(50.0),
            system: Some(45.0),
            irq: Some(0.0),
            softirq: Some(0.0),
            idle: Some(5.0),
            net_rx_per_sec: Some(12_345.0),
            net_tx_per_sec: Some(1.0),
        };
        let view = TopView {
            interval_secs: 1.0,
            all: None,
            cpus: vec![cpu],
            ifaces: vec![IfaceRates { name: "eth7".into(), rx_packets_per_sec: Some(2e6), ..IfaceRates::default() }],
            ifaces_not_shown: 0,
            workers: WorkerView::Workers {
                rows: vec![WorkerRates { name: "W#01".into(), packets: 9, ..WorkerRates::default() }],
                age_secs: 0.0,
                stale: false,
            },
            xdp: vec![super::super::XdpRate {
                reason: "blocklisted".into(),
                packets_per_sec: Some(25e3),
                packets: 77,
                bytes: 4620,
            }],
            dispatch: Some("adaptive fanout: 12 buckets moved".into()),
            anomalies: 0,
        };
        let text = screen(Some(&view));
        assert!(text.contains("kernel fast path (XDP)") && text.contains("blocklisted"), "{text}");
        assert!(text.contains("25.0k"), "{text}");
        assert!(text.contains("picket top"), "{text}");
        assert!(text.contains("per-core load"), "{text}");
        assert!(text.contains("12.3k"), "{text}");
        assert!(text.contains("██████████"), "{text}"); // 95 % busy: a full bar
        assert!(text.contains("eth7") && text.contains("2.00M"), "{text}");
        assert!(text.contains("W#01"), "{text}");
        assert!(text.contains("12 buckets moved"), "{text}");
        assert!(screen(None).contains("sampling"));
    }
}
