//! A report's document, assembled once: every result's section with its figures drawn, the
//! fleet and consistency sections, the summary that opens it, and the files it carries (each
//! result's JSON file, `fleet.json`).

use crate::doc::{items, Block, Document, Output, Section};
use crate::figures::Figure;
use crate::result::Report;
use anyhow::Result;

/// The document of `report`.
pub fn document(report: &Report) -> Result<Document> {
    let plan = crate::figures::plan(report);
    let draw = |f: &Figure| f.draw(report).map(Block::Figure);
    let mut sections = Vec::new();
    for e in &report.entries {
        let mut s = e.section(report);
        let mine: Vec<Block> = plan
            .iter()
            .filter(|f| f.entries == [e.id.clone()])
            .map(draw)
            .collect::<Result<_>>()?;
        let at = s.figures_at.unwrap_or(s.blocks.len()).min(s.blocks.len());
        if !mine.is_empty() {
            let blocks = std::iter::once(Block::Heading("Figures".into())).chain(mine);
            s.blocks.splice(at..at, blocks);
        }
        sections.push(s);
    }
    let consistency = crate::consistency::section(report);
    let mut fleet = crate::fleet::section(report);
    let (fleet_figures, plan): (Vec<Figure>, Vec<Figure>) =
        plan.into_iter().partition(Figure::is_fleet);
    if let Some(f) = fleet.as_mut().filter(|_| !fleet_figures.is_empty()) {
        f.push(Block::Heading("Figures".into()));
        for figure in &fleet_figures {
            f.push(draw(figure)?);
        }
    }
    let fleet_model = crate::fleet::of(report);
    // Across machines, each result's section names its machine.
    let machines = fleet_model.as_ref().map_or(&[][..], |f| &f.machines);
    let on = |id: &str| machines.iter().find(|m| m.results.iter().any(|r| r == id));
    let machine = |id: &str| on(id).map(|m| m.name.clone());
    for s in &mut sections {
        if let Some(m) = machine(&s.id) {
            s.title = format!("{}, on {m}", s.title);
        }
    }
    let summary = summary(report, &fleet, &consistency, &sections, machine);
    let shared = plan
        .iter()
        .filter(|f| f.entries.len() > 1)
        .map(draw)
        .collect::<Result<_>>()?;
    let mut attachments = report
        .entries
        .iter()
        .map(|e| Ok(Output::new(format!("{}.json", e.id), e.result.to_json()?)))
        .collect::<Result<Vec<_>>>()?;
    if let Some(fleet) = fleet_model {
        let mut bytes = serde_json::to_vec_pretty(&fleet)?;
        bytes.push(b'\n');
        attachments.push(Output::new("fleet.json", bytes));
    }
    Ok(Document {
        verdict: crate::answer::section(report)?,
        summary,
        fleet,
        consistency,
        sections,
        shared,
        attachments,
        warnings: report.entries.iter().map(|e| e.warnings.len()).sum(),
    })
}

/// Each section's sentences, headed with its id (and machine) when the report has several
/// results; what the job left out last.
fn summary(
    report: &Report,
    fleet: &Option<Section>,
    consistency: &Option<Section>,
    sections: &[Section],
    machine: impl Fn(&str) -> Option<String>,
) -> Vec<Block> {
    let mut summary = Vec::new();
    let all = fleet.iter().chain(sections).chain(consistency);
    for s in all.filter(|s| !s.summary.is_empty()) {
        if sections.len() > 1 {
            let heading = match machine(&s.id) {
                Some(m) => format!("`{}` on {m}", s.id),
                None => format!("`{}`", s.id),
            };
            summary.push(Block::Heading(heading));
        }
        summary.push(Block::List(items(s.summary.iter().cloned())));
    }
    if !report.left_out.is_empty() {
        summary.push(Block::Heading("Left out".into()));
        summary.push(Block::List(items(report.left_out.iter().cloned())));
    }
    summary
}

/// The files of `report`'s directory in every format.
pub fn render(report: &Report) -> Result<Vec<Output>> {
    rtrace_doc::render(&document(report)?)
}

/// The terminal report of every result of `report`.
pub fn text(report: &Report, paint: rtrace_doc::terminal::Paint) -> Result<String> {
    Ok(rtrace_doc::terminal::render(&document(report)?, paint))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::sweep;
    use crate::result::AnyResult;

    #[test]
    fn each_section_has_its_figures_before_the_environment_and_shared_ones_stand_apart() {
        let rate = AnyResult::from_json(include_str!("../testdata/rate.json")).unwrap();
        let (a, b) = (sweep("PREEMPT", 2).into(), sweep("PREEMPT_RT", 1).into());
        let report = Report::new([(None, a), (None, b), (None, rate)]);
        let doc = document(&report).unwrap();
        for s in &doc.sections {
            let at = |f: fn(&Block) -> bool| s.blocks.iter().position(f).unwrap();
            let figure = at(|b| matches!(b, Block::Figure(_)));
            assert!(matches!(&s.blocks[figure - 1], Block::Heading(h) if h == "Figures"));
            assert!(
                figure < at(|b| matches!(b, Block::Environment(_))),
                "{}",
                s.id
            );
        }
        let overlay = matches!(&doc.shared[..], [Block::Figure(f)] if f.file.contains("preempt"));
        assert!(
            overlay,
            "the PREEMPT vs PREEMPT_RT overlay: {:?}",
            doc.shared.len()
        );
        let planned = crate::figures::plan(&report).len();
        assert_eq!(doc.figures().len(), planned, "every planned figure, once");
        // The rate result comes from another machine than the fixtures: a fleet, whose
        // sentences answer first.
        assert!(matches!(&doc.summary[0], Block::Heading(h) if h == "`fleet`"));
        let on = |h: &str| h.starts_with("`cyclictest-sweep` on ");
        assert!(
            matches!(&doc.summary[2], Block::Heading(h) if on(h)),
            "its machine named"
        );
        let tables = doc.tables();
        let folded = tables
            .iter()
            .any(|(s, t)| (&*s.id, &*t.id) == ("rate", "points"));
        assert!(folded, "folded tables count");
        let files: Vec<&str> = doc.attachments.iter().map(|a| a.path.as_str()).collect();
        assert_eq!(
            files,
            [
                "cyclictest-sweep.json",
                "cyclictest-sweep-2.json",
                "rate.json",
                "fleet.json"
            ]
        );
    }
}
